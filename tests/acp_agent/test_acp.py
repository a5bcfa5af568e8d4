"""Conformance: the real `magi-code acp` process driven by the ACP SDK's client side."""

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import (
    AgentMessageChunk,
    FileEditToolCallContent,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from magi_code import limits
from magi_code.client import environment
from support.acp import RecordingClient, agent, run, spawned
from support.exec import MAGI_CODE
from support.sessions import records, script


def test_initialize_advertises_what_is_served(workspace: Path, home: Path) -> None:
    async def scenario() -> None:
        async with agent(workspace, home) as (conn, _):
            init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            caps = init.agent_capabilities
            assert caps is not None and caps.load_session is True
            assert caps.prompt_capabilities is not None
            assert caps.prompt_capabilities.image is True
            assert caps.prompt_capabilities.audio is False
            assert init.auth_methods == []
            assert init.agent_info is not None and init.agent_info.name == "magi-code"

    run(scenario)


def test_a_prompt_streams_chunks_and_ends_its_turn(workspace: Path, home: Path) -> None:
    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = script({"text": "Hello there, friend.", "deltas": 4})
            done = await conn.prompt(session_id=session.session_id, prompt=[text_block(prompt)])
            assert done.stop_reason == "end_turn"
            chunks = [u for u in client.updates if isinstance(u, AgentMessageChunk)]
            assert len(chunks) >= 2  # streamed (live redaction holds back a last word)
            assert client.text() == "Hello there, friend."
            with pytest.raises(RequestError):
                await conn.prompt(session_id="no-such-session", prompt=[text_block("hi")])

    run(scenario)


def edit_round(path: str, old: str, new: str) -> dict[str, Any]:
    arguments = {"path": path, "old": old, "new": new}
    return {"tools": [{"name": "edit_file", "arguments": arguments}]}


def test_a_tool_call_asks_permission_with_its_diff(workspace: Path, home: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("colour: red\n")

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            client.answers = ["reject_once"]
            edit = script(edit_round("notes.txt", "red", "blue"), {"text": "ok"})
            done = await conn.prompt(session_id=sid, prompt=[text_block(edit)])
            assert done.stop_reason == "end_turn"
            assert target.read_text() == "colour: red\n"
            (asked,) = client.asked
            (started,) = [u for u in client.updates if isinstance(u, ToolCallStart)]
            assert asked.tool_call_id == started.tool_call_id
            assert started.kind == "edit"
            assert asked.content is not None
            (change,) = asked.content
            assert isinstance(change, FileEditToolCallContent)
            assert (change.path, change.old_text, change.new_text) == (
                str(target),
                "red",
                "blue",
            )
            ended = [u for u in client.updates if isinstance(u, ToolCallProgress)]
            assert [u.status for u in ended] == ["failed"]

            client.answers, client.updates = ["allow_once"], []
            await conn.prompt(session_id=sid, prompt=[text_block(edit)])
            assert target.read_text() == "colour: blue\n"
            ended = [u for u in client.updates if isinstance(u, ToolCallProgress)]
            assert [u.status for u in ended] == ["completed"]

            client.answers = ["allow_always"]
            back = script(edit_round("notes.txt", "blue", "green"))
            await conn.prompt(session_id=sid, prompt=[text_block(back)])
            again = script(edit_round("notes.txt", "green", "red"))
            await conn.prompt(session_id=sid, prompt=[text_block(again)])
            assert target.read_text() == "colour: red\n"
            assert len(client.asked) == 3  # "allow always" was not asked again

    run(scenario)


def test_cancel_mid_stream_ends_cancelled_and_is_recorded(workspace: Path, home: Path) -> None:
    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            hang = script({"text": "thinking... ", "hang": True})
            running = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block(hang)]))
            await client.chunk.wait()
            await conn.cancel(session_id=sid)
            done = await running
            assert done.stop_reason == "cancelled"
            finished = [r for r in records(home, sid) if r["type"] == "run_finished"]
            assert [r["outcome"] for r in finished] == ["cancelled"]
            after = await conn.prompt(session_id=sid, prompt=[text_block("hi")])
            assert after.stop_reason == "end_turn"  # the session goes on

    run(scenario)


def test_load_replays_the_stored_history(workspace: Path, home: Path) -> None:
    (workspace / "a.txt").write_text("x")

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, _client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            first = script(
                {"text": "Let me look.", "tools": [{"name": "list_dir", "arguments": {}}]},
                {"text": "One file."},
            )
            await conn.prompt(session_id=sid, prompt=[text_block(first)])
        async with agent(workspace, home) as (conn, client):
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            users = [u.content.text for u in client.updates if isinstance(u, UserMessageChunk)]
            assert users == [first]
            assert client.text() == "Let me look.One file."
            tools = [u for u in client.updates if isinstance(u, ToolCallStart)]
            assert len(tools) == 1 and tools[0].status == "completed"
            assert "list_dir" in tools[0].title
            kinds = [type(u).__name__ for u in client.updates]
            assert kinds.index("UserMessageChunk") < kinds.index("ToolCallStart")
            client.updates = []
            done = await conn.prompt(session_id=sid, prompt=[text_block("and now?")])
            assert done.stop_reason == "end_turn"
            assert client.text() == "Hello from the fixture model."
        prompts = [r["text"] for r in records(home, sid) if r["type"] == "user"]
        assert prompts == [first, "and now?"]

    run(scenario)


def test_a_client_gone_mid_prompt_leaves_the_cancel_recorded(workspace: Path, home: Path) -> None:
    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            hang = script({"text": "working ", "hang": True})
            running = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block(hang)]))
            await client.chunk.wait()
        with pytest.raises(Exception):  # noqa: B017 - the connection is gone, whatever it says
            await running
        finished = [r for r in records(home, sid) if r["type"] == "run_finished"]
        assert [r["outcome"] for r in finished] == ["cancelled"]
        assert any(r["type"] == "assistant_chunk" for r in records(home, sid))

    run(scenario)


def test_prompt_bounds_and_a_failed_turn(workspace: Path, home: Path) -> None:
    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            at_limit = await conn.prompt(
                session_id=sid, prompt=[text_block("x" * limits.PROMPT_BYTES)]
            )
            assert at_limit.stop_reason == "end_turn"
            with pytest.raises(RequestError) as over:
                await conn.prompt(
                    session_id=sid, prompt=[text_block("x" * (limits.PROMPT_BYTES + 1))]
                )
            assert over.value.data == {"code": "invalid_prompt"}
            with pytest.raises(RequestError) as unstorable:
                await conn.prompt(session_id=sid, prompt=[text_block("lone \ud800")])
            assert unstorable.value.data == {"code": "invalid_prompt"}
            client.updates = []
            with pytest.raises(RequestError) as failed:
                await conn.prompt(
                    session_id=sid, prompt=[text_block(script({"error": "server_error"}))]
                )
            assert failed.value.data == {"code": "execution_failed", "failure": "server_error"}
            assert str(failed.value).startswith("server_error: ")  # readable, with its class
            assert "[server_error]" in client.text()  # the diagnostic reaches the user
            with pytest.raises(RequestError) as elsewhere:
                await conn.new_session(cwd="relative/path", mcp_servers=[])
            assert elsewhere.value.data == {"code": "cwd_invalid"}
            with pytest.raises(RequestError) as missing:
                await conn.load_session(cwd=str(workspace), session_id="nothing", mcp_servers=[])
            assert missing.value.data == {"code": "session_missing"}
            both = await asyncio.gather(
                *(conn.new_session(cwd=str(workspace.parent), mcp_servers=[]) for _ in range(2))
            )
            assert len({made.session_id for made in both}) == 2

    run(scenario)


def test_sigterm_mid_prompt_records_the_cancel_and_exits(workspace: Path, home: Path) -> None:
    async def scenario() -> None:
        client = RecordingClient()
        async with spawned(workspace, home, client) as (conn, process):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            hang = script({"text": "working ", "hang": True})
            running = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block(hang)]))
            await client.chunk.wait()
            process.terminate()
            assert await asyncio.wait_for(process.wait(), timeout=10) == 0
            running.cancel()
        finished = [r for r in records(home, sid) if r["type"] == "run_finished"]
        assert [r["outcome"] for r in finished] == ["cancelled"]

    run(scenario)


def initialize_line(size: int) -> bytes:
    """An `initialize` request of exactly `size` bytes, LF excluded."""
    head = (
        '{"jsonrpc":"2.0","id":1,"method":"initialize",'
        '"params":{"protocolVersion":1,"_meta":{"pad":"'
    )
    tail = '"}}}'
    return (head + "x" * (size - len(head) - len(tail)) + tail).encode() + b"\n"


@pytest.mark.parametrize(
    ("size", "answered"), [(limits.ACP_MESSAGE_BYTES, True), (limits.ACP_MESSAGE_BYTES + 1, False)]
)
def test_a_message_is_bounded_at_its_exact_edge(
    workspace: Path, home: Path, size: int, answered: bool
) -> None:
    done = subprocess.run(
        [MAGI_CODE, "acp"],
        input=initialize_line(size),
        capture_output=True,
        cwd=workspace,
        env=environment(home),
        timeout=60,
    )
    assert done.returncode == 0
    answer = json.loads(done.stdout)
    if answered:
        assert answer["result"]["agentCapabilities"]["loadSession"] is True
    else:  # refused with its error; the process went on (tests/acp_agent/test_acp_lines.py)
        assert (answer["id"], answer["error"]["code"]) == (None, -32600)
        assert done.stderr == b""


def test_a_session_has_its_melchior_tools(workspace: Path, home: Path) -> None:
    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            listing = script({"tools": [{"name": "melchior_list", "arguments": {}}]})
            await conn.prompt(session_id=session.session_id, prompt=[text_block(listing)])
            ended = [u for u in client.updates if isinstance(u, ToolCallProgress)]
            assert [u.status for u in ended] == ["completed"], ended

    run(scenario)


def test_a_turn_past_its_model_requests_stops_with_max_turn_requests(
    workspace: Path, home: Path
) -> None:
    """A stop ACP has a reason for (here `[turn] max_rounds`) ends the prompt with that reason,
    not an error; the session goes on."""
    home.mkdir()
    (home / "settings.toml").write_text("[turn]\nmax_rounds = 1\n")

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            looping = script({"tools": [{"name": "list_dir", "arguments": {"path": "."}}]})
            done = await conn.prompt(session_id=session.session_id, prompt=[text_block(looping)])
            assert done.stop_reason == "max_turn_requests"
            again = script({"text": "still here"})
            after = await conn.prompt(session_id=session.session_id, prompt=[text_block(again)])
            assert after.stop_reason == "end_turn"

    run(scenario)
