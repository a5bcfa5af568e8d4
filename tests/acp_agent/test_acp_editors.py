"""ACP as editors use it: the real `acpx` CLI (npm) and the SDK client against `magi-code acp`.

acpx and the ACP TypeScript SDK are npm peers (support/npm.py; skipped, with the reason, only
when npm is absent).
"""

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, resource_link_block, text_block
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    HttpMcpServer,
    McpServerStdio,
    SseMcpServer,
    TerminalToolCallContent,
    ToolCallProgress,
    ToolCallStart,
)

from magi_code.client import environment
from support import npm
from support.acp import TERMINAL, EditorClient, agent, run
from support.exec import MAGI_CODE
from support.sessions import call, records, script

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def acpx() -> Path:
    return npm.peer(".bin", "acpx")


def test_acpx_sessions_new_then_prompt_uses_that_session(acpx: Path, tmp_path: Path) -> None:
    workspace, home = tmp_path / "workspace", tmp_path / "mc-home"
    workspace.mkdir()
    env = environment(home, HOME=str(tmp_path / "user-home"))
    command = ["--agent", f"{MAGI_CODE} acp", "--ttl", "1", "--approve-all"]

    def acpx_run(*args: str) -> str:
        done = subprocess.run(
            [str(acpx), *command, *args],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    made = acpx_run("sessions", "new").split()[-1]
    said = acpx_run(script({"text": "Hello from the editor."}))
    assert "Hello from the editor." in said
    stored = sorted(p.name for p in (home / "sessions").iterdir() if p.suffix == ".jsonl")
    assert stored == [f"{made}.jsonl"]  # the prompt went to the session `sessions new` made
    prompts = [r["text"] for r in records(home, made) if r["type"] == "user"]
    assert prompts == [script({"text": "Hello from the editor."})]
    acpx_run("sessions", "close")


def test_tool_calls_carry_content_places_kind_and_status_live_and_in_replay(
    workspace: Path, home: Path
) -> None:
    notes = workspace / "notes.txt"
    notes.write_text("colour: red\n")
    turn = script(
        call("read_file", path="notes.txt"),
        call("edit_file", path="notes.txt", old="red", new="blue"),
        call("read_file", path="missing.txt"),
        {"text": "done"},
    )

    def check(starts: list[ToolCallStart], ends: dict[str, Any]) -> None:
        assert [s.kind for s in starts] == ["read", "edit", "read"]
        places = [[loc.path for loc in s.locations or []] for s in starts]
        assert places == [[str(notes)], [str(notes)], [str(workspace / "missing.txt")]]
        read, edit, missing = (ends[s.tool_call_id] for s in starts)
        assert [read.status, edit.status, missing.status] == ["completed", "completed", "failed"]
        (shown,) = read.content
        assert isinstance(shown, ContentToolCallContent) and "colour: red" in shown.content.text
        diffs = [c for c in edit.content if isinstance(c, FileEditToolCallContent)]
        assert [(d.path, d.old_text, d.new_text) for d in diffs] == [(str(notes), "red", "blue")]
        assert missing.content and isinstance(missing.content[0], ContentToolCallContent)

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            client.answers = ["allow_once"]
            done = await conn.prompt(session_id=sid, prompt=[text_block(turn)])
            assert done.stop_reason == "end_turn"
            starts = [u for u in client.updates if isinstance(u, ToolCallStart)]
            ends = {
                u.tool_call_id: u
                for u in client.updates
                if isinstance(u, ToolCallProgress) and u.status in ("completed", "failed")
            }
            for start in starts:  # live, the places come with the start
                assert start.status == "in_progress"
                ends[start.tool_call_id].locations = start.locations
            check(starts, ends)
        async with agent(workspace, home) as (conn, client):
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            replayed = [u for u in client.updates if isinstance(u, ToolCallStart)]
            check(replayed, {u.tool_call_id: u for u in replayed})

    run(scenario)
    assert notes.read_text() == "colour: blue\n"


class TerminalWatcher(EditorClient):
    """An editor that notes, among its calls, each tool call update showing a terminal."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        await super().session_update(session_id, update, **kwargs)
        for shown in getattr(update, "content", None) or []:
            if isinstance(shown, TerminalToolCallContent):
                self.calls.append(("shown", (update.tool_call_id, shown.terminal_id)))


def test_a_command_in_a_client_terminal_is_shown_in_its_tool_call(
    workspace: Path, home: Path
) -> None:
    client = TerminalWatcher({})

    async def scenario() -> None:
        async with agent(workspace, home, client, TERMINAL) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            client.answers = ["allow_once"]
            turn = script(call("shell", command="echo from-the-terminal"), {"text": "ok"})
            done = await conn.prompt(session_id=session.session_id, prompt=[text_block(turn)])
            assert done.stop_reason == "end_turn"

    run(scenario)
    (start,) = [u for u in client.updates if isinstance(u, ToolCallStart)]
    assert start.kind == "execute"
    shown = [what for kind, what in client.calls if kind == "shown"]
    assert shown[0] == (start.tool_call_id, "term-0")  # while it ran, before its release
    kinds = client.kinds()
    assert kinds.index("shown") < kinds.index("release")
    assert shown[-1] == (start.tool_call_id, "term-0")  # and kept when it ended


def test_a_resource_link_is_its_own_part_of_the_prompt(workspace: Path, home: Path) -> None:
    async def scenario() -> None:
        async with agent(workspace, home) as (conn, _client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            link = resource_link_block("notes", "file:///w/notes.txt")
            blocks = [text_block("Read"), link, text_block("and summarize it.")]
            done = await conn.prompt(session_id=session.session_id, prompt=blocks)
            assert done.stop_reason == "end_turn"
            (said,) = [r["text"] for r in records(home, session.session_id) if r["type"] == "user"]
            assert said.split("\n") == [
                "Read",
                '<resource_link uri="file:///w/notes.txt" name="notes" />',
                "and summarize it.",
            ]

    run(scenario)


def current(options: list[Any], option_id: str) -> str:
    (option,) = [o.root if hasattr(o, "root") else o for o in options if _id(o) == option_id]
    return str(option.current_value)


def _id(option: Any) -> str:
    return str((option.root if hasattr(option, "root") else option).id)


def test_session_modes_decide_what_is_asked(workspace: Path, home: Path) -> None:
    notes = workspace / "notes.txt"
    notes.write_text("colour: red\n")

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            assert session.modes is not None and session.modes.current_mode_id == "ask"
            ids = [mode.id for mode in session.modes.available_modes]
            assert ids == ["ask", "edits", "auto", "full"]
            assert current(session.config_options or [], "mode") == "ask"
            await conn.set_session_mode(session_id=sid, mode_id="edits")
            edit = script(call("edit_file", path="notes.txt", old="red", new="blue"))
            await conn.prompt(session_id=sid, prompt=[text_block(edit)])
            assert notes.read_text() == "colour: blue\n" and client.asked == []  # not asked
            changed = await conn.set_config_option(config_id="mode", session_id=sid, value="ask")
            assert current(changed.config_options, "mode") == "ask"
            client.answers = ["reject_once"]
            back = script(call("edit_file", path="notes.txt", old="blue", new="red"))
            await conn.prompt(session_id=sid, prompt=[text_block(back)])
            assert len(client.asked) == 1 and notes.read_text() == "colour: blue\n"
            with pytest.raises(RequestError) as unknown:
                await conn.set_session_mode(session_id=sid, mode_id="yolo")
            assert unknown.value.data == {"code": "mode_unknown"}

    run(scenario)


def test_the_model_is_chosen_through_the_session_configuration(workspace: Path, home: Path) -> None:
    home.mkdir()
    (home / "settings.toml").write_text(
        '[providers.fixture]\nwire_api = "fixture"\nmodels = ["fixture-model", "other-model"]\n'
    )

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, _client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            options = session.config_options or []
            assert current(options, "model") == "fixture/fixture-model"
            (model,) = [o.root if hasattr(o, "root") else o for o in options if _id(o) == "model"]
            assert "fixture/other-model" in [choice.value for choice in model.options]
            chosen = await conn.set_config_option(
                config_id="model", session_id=sid, value="fixture/other-model"
            )
            assert current(chosen.config_options, "model") == "fixture/other-model"
            with pytest.raises(RequestError) as refused:
                await conn.set_config_option(
                    config_id="model", session_id=sid, value="fixture/no-such-model"
                )
            assert refused.value.data == {"code": "model_unavailable"}
        async with agent(workspace, home) as (conn, _client):
            loaded = await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            assert current(loaded.config_options or [], "model") == "fixture/other-model"

    run(scenario)


MCP_TESTS = REPO / "tests" / "mcp"


@pytest.fixture
def http_mcp(tmp_path: Path) -> Iterator[str]:
    """The MCP suite's real streamable-HTTP server (tests/mcp/http_server.py); its URL."""
    folder = tmp_path / "http-mcp"
    folder.mkdir()
    server = subprocess.Popen(
        [sys.executable, str(MCP_TESTS / "http_server.py"), str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not (folder / "port").exists():
            assert server.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        yield f"http://127.0.0.1:{(folder / 'port').read_text()}/mcp"
    finally:
        server.kill()
        server.wait()


def test_the_clients_mcp_servers_serve_that_session_only(
    workspace: Path, home: Path, tmp_path: Path, http_mcp: str
) -> None:
    stdio = McpServerStdio(
        name="editor-echo",
        command=sys.executable,
        args=[str(MCP_TESTS / "echo_server.py"), "ok", str(tmp_path / "echo.pid")],
        env=[],
    )
    http = HttpMcpServer(type="http", name="editor-web", url=http_mcp, headers=[])
    both = script(
        call("mcp__editor-echo__echo", text="over stdio"),
        call("mcp__editor-web__echo", text="over http"),
        {"text": "ok"},
    )

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            mcp = init.agent_capabilities.mcp_capabilities if init.agent_capabilities else None
            assert mcp is not None and mcp.http is True and mcp.sse is False
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[stdio, http])
            sid = session.session_id
            client.answers = ["allow_once", "allow_once"]  # asked as every MCP tool is
            done = await conn.prompt(session_id=sid, prompt=[text_block(both)])
            assert done.stop_reason == "end_turn"
            assert client.text().startswith(
                "MCP servers from your editor, for this session only: "
                f"editor-echo ({sys.executable}), editor-web ({http_mcp})"
            )
            outputs = [
                u.content[0].content.text
                for u in client.updates
                if isinstance(u, ToolCallProgress) and u.status == "completed"
            ]
            assert outputs == ["over stdio", "over http"]
            other = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            client.updates = []
            await conn.prompt(session_id=other.session_id, prompt=[text_block(both)])
            ended = [u for u in client.updates if isinstance(u, ToolCallProgress)]
            assert [u.status for u in ended] == ["failed", "failed"]  # not this session's
            assert len(client.asked) == 2
            with pytest.raises(RequestError) as refused:
                sse = SseMcpServer(type="sse", name="old", url=http_mcp, headers=[])
                await conn.new_session(cwd=str(workspace), mcp_servers=[sse])
            assert refused.value.data == {"code": "mcp_server_refused"}

    run(scenario)
