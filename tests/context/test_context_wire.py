"""What the model is told and offered, seen from a real local HTTP provider (openai-chat
wire) that records request bodies, through the real `magi-code serve --stdio`."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from magi_code.client import ErrorResponse, Event, LocalAgentClient, environment
from magi_code.context.profiles import DEFAULT_BODY
from providers.local_server import LocalServer, Reply, sse
from support.local_agent import one_turn
from support.settings import local_provider_settings

from .files import profile, skill, trust

CHAT = "/v1/chat/completions"


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """MC_HOME, a repository root and the cwd (one level below the root)."""
    home, root = tmp_path / "home", tmp_path / "repo"
    cwd = root / "app"
    cwd.mkdir(parents=True)
    (root / ".git").mkdir()
    home.mkdir()
    return home, root, cwd


def provider_settings(server: LocalServer, extra: str = "") -> str:
    return local_provider_settings(server, top=extra, table='models = ["m", "m2"]\n')


def text_reply(text: str = "ok") -> Reply:
    return Reply(
        chunks=[
            sse(
                (None, {"choices": [{"index": 0, "delta": {"content": text}}]}),
                (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
                (None, "[DONE]"),
            )
        ]
    )


def call_reply(name: str, arguments: dict[str, Any]) -> Reply:
    call = {"index": 0, "id": f"call_{name}", "type": "function"}
    call["function"] = {"name": name, "arguments": json.dumps(arguments)}
    return Reply(
        chunks=[
            sse(
                (None, {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}),
                (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
                (None, "[DONE]"),
            )
        ]
    )


def turn(cwd: Path, home: Path, prompt: str = "go") -> list[Event]:
    """One turn in a fresh child; every event up to run.finished."""
    return one_turn(cwd, home, prompt)[0]


def bodies(server: LocalServer) -> list[dict[str, Any]]:
    return [json.loads(seen.body) for seen in server.requests if seen.path.endswith(CHAT)]


def system(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    text: str = first["content"]
    return text


def offered(body: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def test_the_model_is_told_exactly_these_sources_in_order(
    server: LocalServer, dirs: tuple[Path, Path, Path]
) -> None:
    home, root, cwd = dirs
    (home / "settings.toml").write_text(provider_settings(server, 'instructions = ["x.md"]'))
    (home / "AGENTS.md").write_text("GLOBAL RULES\n")
    (root / "AGENTS.md").write_text("ROOT RULES\n")
    (cwd / "AGENTS.md").write_text("CWD RULES\n")
    (home / "x.md").write_text("EXTRA RULES\n")
    skill(home, "pdf", "Work with PDF files")
    server.script(CHAT, text_reply())
    assert turn(cwd, home)[-1].data["outcome"] == "completed"
    listing = (
        "Skills: call the `skill` tool with a name to load that skill's instructions when a "
        "task matches its description.\n- pdf: Work with PDF files"
    )
    assert system(bodies(server)[0]) == "\n\n".join(
        [DEFAULT_BODY, "GLOBAL RULES", "ROOT RULES", "CWD RULES", "EXTRA RULES", listing]
    )


def test_skill_bodies_appear_only_when_the_skill_tool_loads_them(
    server: LocalServer, dirs: tuple[Path, Path, Path]
) -> None:
    home, _, cwd = dirs
    (home / "settings.toml").write_text(provider_settings(server))
    folder = skill(home, "pdf", "Work with PDF files", body="BODY: use pdftotext")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "fill.py").write_text("RESOURCE CONTENT\n")
    resource = str(folder.resolve() / "scripts" / "fill.py")
    server.script(
        CHAT,
        call_reply("skill", {"name": "pdf"}),
        call_reply("read_file", {"path": resource}),
        text_reply(),
    )
    events = turn(cwd, home)
    assert events[-1].data["outcome"] == "completed"
    assert not [e for e in events if e.name == "approval.requested"]  # outside the workspace
    first, second, third = bodies(server)
    assert "- pdf: Work with PDF files" in system(first)
    assert "pdftotext" not in json.dumps(first)
    assert "skill" in offered(first)
    loaded = second["messages"][-1]
    assert loaded["role"] == "tool" and "BODY: use pdftotext" in loaded["content"]
    assert resource in loaded["content"]
    assert "RESOURCE CONTENT" in third["messages"][-1]["content"]


def test_collisions_disabled_invalid_and_trust_over_the_wire(
    server: LocalServer, dirs: tuple[Path, Path, Path]
) -> None:
    home, root, cwd = dirs
    project = root / ".magi-code"
    skill(home, "pdf", "GLOBAL PDF")
    skill(home, "off", "DISABLED SKILL")
    skill(home, "lint", "LINTS")
    skill(project, "pdf", "PROJECT PDF")
    skill(project, "only-here", "PROJECT ONLY")
    (home / "skills" / "broken").mkdir()
    (home / "skills" / "broken" / "SKILL.md").write_text("---\nname: broken\n")
    disabled = '[skills]\ndisabled = ["off"]'
    (home / "settings.toml").write_text(provider_settings(server, disabled))
    server.script(CHAT, text_reply(), text_reply())
    turn(cwd, home)  # untrusted: the project's skills are not looked at
    trust(home, root, provider_settings(server, "").rstrip() + "\n" + disabled)
    turn(cwd, home)
    untrusted, trusted = (system(b) for b in bodies(server))
    assert "- lint: LINTS\n- pdf: GLOBAL PDF" in untrusted
    assert "PROJECT" not in untrusted
    assert "- lint: LINTS\n- only-here: PROJECT ONLY\n- pdf: PROJECT PDF" in trusted
    assert "GLOBAL PDF" not in trusted
    for told in (untrusted, trusted):
        assert "DISABLED" not in told and "broken" not in told


def test_a_profile_allow_list_is_what_the_model_is_offered(
    server: LocalServer, dirs: tuple[Path, Path, Path]
) -> None:
    home, _, cwd = dirs
    skill(home, "pdf")
    profile(home, "reader", "mode: primary\nmodel: m2\ntools: [read_file, 'gr*']", "READER")
    (home / "settings.toml").write_text(provider_settings(server, 'agent = "reader"'))
    server.script(CHAT, text_reply())
    turn(cwd, home)
    (body,) = bodies(server)
    assert offered(body) == ["read_file", "grep"]
    assert body["model"] == "m2"
    assert system(body) == "READER"  # no skill listing without the skill tool


def test_a_profile_rule_narrows_the_global_policy(
    server: LocalServer, dirs: tuple[Path, Path, Path]
) -> None:
    home, _, cwd = dirs
    (cwd / "notes.txt").write_text("SECRET NOTES\n")
    profile(home, "careful", "mode: primary\npermissions:\n  - deny read_file notes.txt")
    (home / "settings.toml").write_text(provider_settings(server, 'agent = "careful"'))
    server.script(CHAT, call_reply("read_file", {"path": "notes.txt"}), text_reply())
    events = turn(cwd, home)
    assert [e.data["state"] for e in events if e.name == "activity"][-1] == "failed"
    assert "SECRET NOTES" not in json.dumps(bodies(server)[1])


@pytest.mark.parametrize(
    ("front", "settings_text"),
    [
        (None, 'agent = "x"'),  # missing
        ("mode: primary\ndisabled: true", 'agent = "x"'),  # disabled in its file
        ("mode: primary", 'agent = "x"\n[agents]\ndisabled = ["x"]'),  # disabled in settings
        ("mode: subagent", 'agent = "x"'),  # subagent only
        ("mode: primary\ntools: {read_file}", 'agent = "x"'),  # malformed front matter
        ("mode: primary\nprovider: nowhere", 'agent = "x"'),  # names no configured provider
        (None, '[agents]\ndisabled = ["default"]'),  # the built-in default, disabled
    ],
)
def test_profile_invalid_over_serve_stdio(
    dirs: tuple[Path, Path, Path], front: str | None, settings_text: str
) -> None:
    home, _, cwd = dirs
    if front is not None:
        profile(home, "x", front)
    (home / "settings.toml").write_text(settings_text + "\n")
    with LocalAgentClient.spawn(cwd=cwd, env=environment(home)) as child:
        with pytest.raises(ErrorResponse) as caught:
            child.request("initialize", {"required_capabilities": ["status"]})
        assert caught.value.code == "profile_invalid"
        status = child.request("status")
        assert (status["state"], status["readiness"]) == ("failed", "profile_invalid")
