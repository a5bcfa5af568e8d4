"""One HTTP connection carries every model call of a turn, and of the next turn: counted by a
local provider server over the real `serve --stdio` pipes, and per wire in-process."""

import json
from pathlib import Path

import anyio
import pytest

from magi_code.client import LocalAgentClient, environment
from magi_code.providers import pool
from magi_code.providers.client import close_clients
from magi_code.providers.limits import STREAM_DRAIN_S
from magi_code.providers.policy import HttpPolicy
from providers.local_server import LocalServer, Reply, sse
from providers.test_wire_apis import collect
from providers.test_wire_errors import WIRES
from support.local_agent import turn
from support.settings import local_provider_settings, places


def tool_call(n: int) -> bytes:
    item = {
        "type": "function_call",
        "id": f"fc{n}",
        "call_id": f"call{n}",
        "name": "list_dir",
        "arguments": '{"path": "."}',
    }
    return sse(
        ("response.output_item.done", {"type": "response.output_item.done", "item": item}),
        ("response.completed", {"type": "response.completed", "response": {}}),
    )


def reply(text: str) -> bytes:
    return sse(
        ("response.output_text.delta", {"type": "response.output_text.delta", "delta": text}),
        ("response.completed", {"type": "response.completed", "response": {}}),
    )


def kept(body: bytes) -> Reply:
    return Reply(
        chunks=[body], headers={"content-type": "text/event-stream"}, chunked=True, keep_alive=True
    )


def test_three_model_calls_and_two_turns_share_one_connection(
    server: LocalServer, tmp_path: Path
) -> None:
    server.script(
        "/v1/responses",
        kept(tool_call(1)),
        kept(tool_call(2)),
        kept(reply("first")),
        kept(reply("second")),
    )
    settings = local_provider_settings(server, "openai-responses", table='models = ["m"]\n')
    home, workspace = places(tmp_path, settings)
    with LocalAgentClient.spawn(cwd=workspace, env=environment(home)) as child:
        child.request("initialize", {"required_capabilities": ["turn.start"]})
        session_id = child.request("session.create")["session_id"]
        first = turn(child, session_id, "look around")
        assert first[-1].data["outcome"] == "completed", first[-1]
        assert [e.data["state"] for e in first if e.name == "activity"] == [
            "started",
            "completed",
        ] * 2
        assert (len(server.requests), server.connections) == (3, 1)
        second = turn(child, session_id, "look around")
        assert second[-1].data["outcome"] == "completed", second[-1]
        assert (len(server.requests), server.connections) == (4, 1)
        assert child.finish() == 0


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(WIRES))
async def test_each_wire_reads_its_stream_to_the_end_and_reuses_the_connection(
    server: LocalServer, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "_contexts", {})  # what earlier tests built (MCP's, an https test's)
    path, build, ok = WIRES[name]
    trailer = b": the server's last words after the terminal event\n\n"
    server.script(path, *[kept(ok + trailer) for _ in range(3)])
    provider = build(server, tmp_path, HttpPolicy(attempts=1))
    for _ in range(3):
        with anyio.fail_after(10):
            events = await collect(provider)
        assert events and json.dumps(str(events[-1])).count("Completed") == 1
    assert len(server.requests) >= 3
    assert server.connections == 1, "the stream was read to its end and its connection reused"
    assert not pool._contexts, "no TLS context is built for an http origin"
    assert server.disconnects == 0
    await close_clients()  # shutdown closes the pooled connection
    with anyio.fail_after(5):
        while server.disconnects < 1:
            await anyio.sleep(0.01)


@pytest.mark.anyio
async def test_cancelling_a_request_closes_its_connection_not_the_pool(
    server: LocalServer, tmp_path: Path
) -> None:
    path, build, ok = WIRES["openai-responses"]
    server.script(path, Reply(chunks=[ok[: ok.index(b"\n\n") + 2]], chunked=True, hang=True))
    server.script(path, kept(ok), kept(ok))
    provider = build(server, tmp_path, HttpPolicy(attempts=1))
    with anyio.move_on_after(0.3) as scope:
        await collect(provider)
    assert scope.cancelled_caught
    with anyio.fail_after(5):
        assert await anyio.to_thread.run_sync(server.client_closed.wait, 5.0)
        await collect(provider)
        await collect(provider)
    assert (len(server.requests), server.connections) == (3, 2)
    await close_clients()


@pytest.mark.anyio
async def test_a_stream_that_never_ends_after_its_terminal_event_costs_only_its_connection(
    server: LocalServer, tmp_path: Path
) -> None:
    path, build, ok = WIRES["openai-responses"]
    server.script(path, Reply(chunks=[ok], chunked=True, hang=True), kept(ok))
    provider = build(server, tmp_path, HttpPolicy(attempts=1))
    started = anyio.current_time()
    with anyio.fail_after(5):
        first = await collect(provider)
    waited = anyio.current_time() - started
    assert STREAM_DRAIN_S <= waited < STREAM_DRAIN_S + 2, "the drain is bounded"
    assert await anyio.to_thread.run_sync(server.client_closed.wait, 5.0)
    with anyio.fail_after(5):
        assert await collect(provider) == first
    assert server.connections == 2
    await close_clients()
