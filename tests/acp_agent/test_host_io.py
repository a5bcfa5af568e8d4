"""The client's files and terminals: the real `magi-code acp` uses what the client declares in
`initialize` (ACP `fs/*` and `terminal/*`), and the local disk for what it does not."""

import asyncio
import json
from pathlib import Path

import pytest
from acp import text_block

from magi_code.client import environment
from magi_code.limits import ACP_FILE_BYTES
from magi_code.tools.limits import SHELL_OUTPUT_BYTES
from support.acp import FILES, TERMINAL, EditorClient, agent, run
from support.sessions import call, records, script


def results(home: Path, session_id: str) -> dict[str, str]:
    ended = [r for r in records(home, session_id) if r["type"] == "tool" and "result" in r]
    return {r["name"]: r["result"] for r in ended}


def test_a_client_with_fs_serves_reads_and_takes_writes(workspace: Path, home: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("colour: red\n")
    buffer = "colour: red\nunsaved: yes\n"
    client = EditorClient({str(target): buffer})

    async def scenario() -> None:
        async with agent(workspace, home, client, FILES) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            client.answers = ["allow_once", "allow_once"]
            turn = script(
                call("read_file", path="notes.txt"),
                call("edit_file", path="notes.txt", old="red", new="blue"),
                call("write_file", path="new.txt", content="fresh\n"),
                {"text": "done"},
            )
            done = await conn.prompt(session_id=sid, prompt=[text_block(turn)])
            assert done.stop_reason == "end_turn"
            seen = results(home, sid)
            assert "unsaved: yes" in seen["read_file"]  # the buffer, not the disk
            assert seen["edit_file"] == "edited notes.txt: 1 replacement"
            assert seen["write_file"] == "wrote new.txt (6 bytes)"

    run(scenario)
    assert target.read_text() == "colour: red\n"  # the agent left the disk to the editor
    assert not (workspace / "new.txt").exists()
    assert client.kinds() == ["read", "permission", "read", "write", "permission", "write"]
    writes = [what for kind, what in client.calls if kind == "write"]
    assert writes == [
        (str(target), "colour: blue\nunsaved: yes\n"),
        (str(workspace / "new.txt"), "fresh\n"),
    ]


def test_a_rejected_edit_never_reaches_the_client(workspace: Path, home: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("colour: red\n")
    client = EditorClient({})

    async def scenario() -> None:
        async with agent(workspace, home, client, FILES) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            client.answers = ["reject_once"]
            turn = script(call("edit_file", path="notes.txt", old="red", new="blue"))
            await conn.prompt(session_id=session.session_id, prompt=[text_block(turn)])

    run(scenario)
    assert client.kinds() == ["permission"]
    assert target.read_text() == "colour: red\n"


def test_a_client_with_a_terminal_runs_the_shell_there(workspace: Path, home: Path) -> None:
    client = EditorClient({})
    line = 'echo in-terminal; pwd; echo "key=$EDITOR_API_KEY home=$HOME"; exit 3'

    async def scenario() -> None:
        async with agent(workspace, home, client, TERMINAL) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            client.answers = ["allow_once"]
            turn = script(call("shell", command=line), {"text": "ok"})
            await conn.prompt(session_id=sid, prompt=[text_block(turn)])
            result = results(home, sid)["shell"]
            tool_home = environment(home)["HOME"]
            expected = f"in-terminal\n{workspace.resolve()}\nkey= home={tool_home}\n[exit code 3]"
            assert result == expected  # the tools' environment, not the editor's

    run(scenario)
    assert client.kinds() == ["permission", "create", "wait", "output", "release"]
    (_, (command, args, cwd, limit)), *_ = [c for c in client.calls if c[0] == "create"]
    assert command == "/usr/bin/env" and args[0] == "-i"
    assert args[-3:] == ["/bin/sh", "-c", line]
    assert cwd == str(workspace.resolve()) and limit == SHELL_OUTPUT_BYTES


def test_a_cancelled_shell_kills_and_releases_its_terminal(workspace: Path, home: Path) -> None:
    client = EditorClient({})

    async def scenario() -> None:
        async with agent(workspace, home, client, TERMINAL) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            client.answers = ["allow_once"]
            turn = script(call("shell", command="sleep 30"))
            running = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block(turn)]))
            await client.created.wait()
            await conn.cancel(session_id=sid)
            assert (await running).stop_reason == "cancelled"

    run(scenario)
    assert client.kinds()[-2:] == ["kill", "release"]
    assert all(t.process.returncode is not None for t in client.terminals.values())


def test_a_client_offering_nothing_leaves_the_tools_local(workspace: Path, home: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("colour: red\n")
    client = EditorClient({str(target): "a buffer the agent must not see\n"})

    async def scenario() -> None:
        async with agent(workspace, home, client, None) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            client.answers = ["allow_once", "allow_once"]
            turn = script(
                call("read_file", path="notes.txt"),
                call("edit_file", path="notes.txt", old="red", new="blue"),
                call("shell", command="echo local"),
            )
            await conn.prompt(session_id=sid, prompt=[text_block(turn)])
            seen = results(home, sid)
            assert seen["read_file"] == "     1\tcolour: red"
            assert seen["shell"] == "local\n[exit code 0; sandbox: workspace-write, network off]"

    run(scenario)
    assert client.kinds() == ["permission", "permission"]
    assert target.read_text() == "colour: blue\n"
    assert json.dumps(client.buffers)  # untouched by the agent


@pytest.mark.parametrize(("size", "hosted"), [(ACP_FILE_BYTES, True), (ACP_FILE_BYTES + 1, False)])
def test_a_file_past_the_acp_bound_is_read_locally(
    workspace: Path, home: Path, size: int, hosted: bool
) -> None:
    target = workspace / "big.txt"
    target.write_text("d" * size)
    client = EditorClient({str(target): "from the editor\n"})

    async def scenario() -> None:
        async with agent(workspace, home, client, FILES) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            turn = script(call("read_file", path="big.txt"))
            await conn.prompt(session_id=session.session_id, prompt=[text_block(turn)])
            result = results(home, session.session_id)["read_file"]
            assert ("from the editor" in result) is hosted

    run(scenario)
    assert client.kinds() == (["read"] if hosted else [])


def test_a_terminal_past_its_timeout_is_killed_then_read(workspace: Path, home: Path) -> None:
    client = EditorClient({})

    async def scenario() -> None:
        async with agent(workspace, home, client, TERMINAL) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            client.answers = ["allow_once"]
            turn = script(call("shell", command="echo started; exec sleep 30", timeout=0.5))
            await conn.prompt(session_id=sid, prompt=[text_block(turn)])
            result = results(home, sid)["shell"]
            assert result == "started\n[timed out after 0.5 s; process killed]"

    run(scenario)
    assert client.kinds() == ["permission", "create", "wait", "kill", "output", "release"]
