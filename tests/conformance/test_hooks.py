"""Hooks and Code Mode through the real `serve --stdio` child: a hook's additional context
reaches a real HTTP provider's request, hook runs and bridged calls are `activity` events and
history entries, and an untrusted project's hooks never run."""

import json
from pathlib import Path

from providers.local_server import LocalServer, Reply, sse
from support.sessions import script
from support.settings import local_provider_settings

from .conftest import Spawn
from .turns import attach, pages, run

REPLY = sse(
    (None, {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}),
    (None, "[DONE]"),
)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_additional_context_reaches_the_provider_request(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    with LocalServer() as server:
        server.script("/v1/chat/completions", Reply(chunks=[REPLY]))
        write(
            home / "settings.toml",
            local_provider_settings(server) + "[[hooks.session_start]]\n"
            'command = """echo \'{"additional_context": "HOOK-SESSION-NOTE"}\'"""\n'
            "[[hooks.user_prompt_submit]]\n"
            'command = """echo \'{"additional_context": "HOOK-PROMPT-NOTE"}\'"""\n',
        )
        child = spawn()
        session_id = attach(child)
        _, events = run(child, session_id, "hello")
        assert events[-1].data["outcome"] == "completed"
        [request] = server.requests
        body = json.loads(request.body)
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        assert users[0] == "hello"
        assert "[context from a session_start hook]\nHOOK-SESSION-NOTE" in users[1]
        assert "[context from a user_prompt_submit hook]\nHOOK-PROMPT-NOTE" in users[-1]
        hook_events = [e.data for e in events if e.name == "activity"]
        assert [(a["name"], a["state"]) for a in hook_events] == [
            ("hook:session_start", "started"),
            ("hook:session_start", "completed"),
            ("hook:user_prompt_submit", "started"),
            ("hook:user_prompt_submit", "completed"),
        ]
        assert all(a["kind"] == "tool" for a in hook_events)


def test_untrusted_project_hooks_never_run(spawn: Spawn, home: Path, workspace: Path) -> None:
    marker = workspace.parent / "hook-ran"
    write(
        workspace / ".magi-code" / "settings.toml",
        f'[[hooks.user_prompt_submit]]\ncommand = "touch {marker}"\n',
    )
    child = spawn()
    session_id = attach(child)
    _, events = run(child, session_id, "hello")
    assert events[-1].data["outcome"] == "completed"
    assert not marker.exists()
    assert not [e for e in events if e.name == "activity"]


def test_code_mode_calls_are_activities_in_events_and_history(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    write(home / "settings.toml", "code_mode = true\n")
    (workspace / "a.txt").write_text("alpha\n")
    program = "result = tools.read_file(path='a.txt').count('alpha')"
    turn = script({"tools": [{"name": "code", "arguments": {"program": program}}]}, {"text": "1"})
    child = spawn()
    session_id = attach(child)
    _, events = run(child, session_id, turn)
    finished = events[-1].data
    assert finished["outcome"] == "completed"
    names = [(e.data["name"], e.data["state"]) for e in events if e.name == "activity"]
    assert names == [
        ("code", "started"),
        ("code:read_file", "started"),
        ("code:read_file", "completed"),
        ("code", "completed"),
    ]
    entries = [e for p in pages(child, session_id, finished["revision"]) for e in p["entries"]]
    shown = [e["text"] for e in entries if e["kind"] == "activity"]
    assert shown[0].startswith("code completed: code: result = tools.read_file")
    assert shown[1] == "code:read_file completed: read a.txt (lines 1-1)"
