"""The providers' HTTP client over HTTP/2, against a real local h2 server over TLS: an origin
that offers h2 gets it, one connection carries every request (one after another, and at
once), a cancelled or abandoned response resets its own stream and not the connection, a
request body larger than the flow-control window goes whole, the response's header list is
bounded at its exact edge, a connection the server ended (GOAWAY or a plain close) or a stream
it refused costs one new connection, an idle one past the keep-alive closes, shutdown says
goodbye, and a provider's model calls ride one connection; plain http never loads h2."""

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from magi_code.providers import pool
from magi_code.providers.client import TransportError, close_clients, open_response
from magi_code.providers.limits import RESPONSE_HEAD_BYTES
from magi_code.providers.policy import HttpPolicy
from providers.h2_server import H2Reply, H2Server
from providers.test_http_client import soon
from providers.test_wire_apis import collect
from source_imports import loaded_running

pytestmark = pytest.mark.anyio

ONE = HttpPolicy(attempts=1)
CANCEL = 0x8  # RFC 9113's error code


@pytest.fixture
def h2_server(trusted: tuple[Path, Path]) -> Iterator[H2Server]:
    with H2Server(trusted) as server:
        yield server


async def fetch(url: str, policy: HttpPolicy = ONE, **body: object) -> tuple[int, bytes]:
    method = "POST" if body else "GET"
    async with open_response(method, url, policy, {}, json=body or None) as response:
        return response.status, b"".join([chunk async for chunk in response])


async def test_an_origin_offering_h2_gets_it_and_one_connection_carries_each_request(
    h2_server: H2Server,
) -> None:
    h2_server.script("/x", *[H2Reply(chunks=[b"he", b"llo"]) for _ in range(3)])
    for _ in range(3):
        assert await fetch(h2_server.url + "/x?q=1") == (200, b"hello")
    assert (h2_server.connections, len(h2_server.requests)) == (1, 3)
    seen = h2_server.requests[0].headers
    assert seen[":method"] == "GET" and seen[":scheme"] == "https"
    assert (seen[":authority"], seen[":path"]) == (f"localhost:{h2_server.port}", "/x?q=1")
    assert seen["user-agent"].startswith("magi-code/")
    assert seen["accept-encoding"] == "identity"
    assert "host" not in seen and "connection" not in seen  # HTTP/1.1's fields stay there
    assert "magi_code.providers.http2" in sys.modules
    await close_clients()


async def test_requests_at_once_share_the_connection(h2_server: H2Server) -> None:
    h2_server.script("/x", *[H2Reply(chunks=[b"a", b"b"], delay_s=0.2) for _ in range(3)])
    bodies: list[tuple[int, bytes]] = []

    async def one() -> None:
        bodies.append(await fetch(h2_server.url + "/x"))

    assert await fetch_connected(h2_server)  # the connection first, then three at once on it
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(one)
    assert bodies == [(200, b"ab")] * 3
    assert (h2_server.connections, h2_server.peak_streams) == (1, 3)
    await close_clients()


async def fetch_connected(server: H2Server) -> bool:
    server.script("/warm", H2Reply(chunks=[b"ok"]))
    return await fetch(server.url + "/warm") == (200, b"ok")


async def test_a_cancelled_response_resets_its_stream_and_the_connection_goes_on(
    h2_server: H2Server,
) -> None:
    h2_server.script("/slow", H2Reply(chunks=[b"first"], open_ended=True))
    h2_server.script("/x", H2Reply(chunks=[b"next"]))
    with anyio.move_on_after(0.3) as scope:
        async with open_response("GET", h2_server.url + "/slow", ONE, {}) as response:
            assert await response.__anext__() == b"first"
            await response.__anext__()  # the rest never comes: the cancel ends the wait
    assert scope.cancelled_caught
    await soon(lambda: h2_server.resets == [(1, CANCEL)])
    assert await fetch(h2_server.url + "/x") == (200, b"next")
    assert h2_server.connections == 1
    await close_clients()


async def test_an_abandoned_response_resets_its_stream(h2_server: H2Server) -> None:
    h2_server.script(
        "/x", H2Reply(chunks=[b"a", b"b", b"c"], delay_s=0.05), H2Reply(chunks=[b"ok"])
    )
    async with open_response("GET", h2_server.url + "/x", ONE, {}) as response:
        assert await response.__anext__() == b"a"
    await soon(lambda: h2_server.resets == [(1, CANCEL)])
    assert await fetch(h2_server.url + "/x") == (200, b"ok")
    assert h2_server.connections == 1
    await close_clients()


async def test_a_body_larger_than_the_window_goes_whole(h2_server: H2Server) -> None:
    text = "é" * 150_000  # 300,000 bytes: more than four default windows of 65,535
    h2_server.script("/x", H2Reply(status=201))
    assert await fetch(h2_server.url + "/x", text=text) == (201, b"")
    (seen,) = h2_server.requests
    assert json.loads(seen.body) == {"text": text}
    assert seen.headers["content-length"] == str(len(seen.body))
    await close_clients()


async def test_a_response_larger_than_the_window_arrives_whole(h2_server: H2Server) -> None:
    """The client gives each window back as it reads, or the server could send no more than
    65,535 bytes of a stream, and of the connection."""
    chunks = [bytes([65 + n % 26]) * 64 * 1024 for n in range(16)]  # 1 MiB
    h2_server.script("/x", H2Reply(chunks=chunks), H2Reply(chunks=chunks))
    for _ in range(2):  # the connection's window comes back too
        with anyio.fail_after(20):
            assert await fetch(h2_server.url + "/x") == (200, b"".join(chunks))
    assert h2_server.connections == 1
    await close_clients()


def header_list(size: int) -> list[tuple[str, str]]:
    """One field that brings the response's header list to `size` as HTTP/2 counts it (RFC
    9113 6.5.2: each field's name and value and 32), with `:status: 200`."""
    status = len(":status") + len("200") + 32
    return [("x-big", "v" * (size - status - len("x-big") - 32))]


@pytest.mark.parametrize("over", [0, 1])
async def test_the_header_list_is_bounded_at_its_edge(h2_server: H2Server, over: int) -> None:
    h2_server.script("/x", H2Reply(headers=header_list(RESPONSE_HEAD_BYTES + over), chunks=[b"b"]))
    if over:
        with pytest.raises(TransportError):
            await fetch(h2_server.url + "/x")
    else:
        assert await fetch(h2_server.url + "/x") == (200, b"b")
    await close_clients()


@pytest.mark.parametrize("ending", ["goaway", "close"])
async def test_a_connection_the_server_ended_costs_one_new_connection(
    h2_server: H2Server, ending: str
) -> None:
    h2_server.script("/x", H2Reply(chunks=[b"one"], then=ending), H2Reply(chunks=[b"two"]))
    assert await fetch(h2_server.url + "/x") == (200, b"one")
    await soon(lambda: h2_server.ended == 1)
    assert await fetch(h2_server.url + "/x") == (200, b"two")  # attempts=1: no provider retry
    assert h2_server.connections == 2
    await close_clients()


async def test_a_refused_stream_is_sent_again_on_a_new_connection(h2_server: H2Server) -> None:
    h2_server.script("/x", H2Reply(refuse=True), H2Reply(chunks=[b"taken"]))
    assert await fetch(h2_server.url + "/x") == (200, b"taken")  # attempts=1: the pool's retry
    assert (h2_server.connections, len(h2_server.requests)) == (2, 2)
    await close_clients()


async def test_an_idle_connection_past_the_keepalive_closes(h2_server: H2Server) -> None:
    h2_server.script("/x", H2Reply(chunks=[b"one"]), H2Reply(chunks=[b"two"]))
    policy = HttpPolicy(attempts=1, keepalive_s=0.2)
    assert await fetch(h2_server.url + "/x", policy) == (200, b"one")
    await anyio.sleep(0.3)
    assert await fetch(h2_server.url + "/x", policy) == (200, b"two")
    assert h2_server.connections == 2
    await soon(lambda: h2_server.ended == 1)  # the expired one closed, with a goodbye
    assert h2_server.goaways_received == 1
    await close_clients()


async def test_shutdown_says_goodbye_and_closes_the_connection(h2_server: H2Server) -> None:
    h2_server.script("/x", H2Reply(chunks=[b"one"]))
    assert await fetch(h2_server.url + "/x") == (200, b"one")
    await close_clients()
    await soon(lambda: h2_server.ended == 1)
    assert h2_server.goaways_received == 1
    assert not pool._shared


async def test_a_turns_model_calls_share_one_h2_connection(
    h2_server: H2Server, tmp_path: Path
) -> None:
    from magi_code.providers.openai_responses import OpenAIResponsesProvider

    done = b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        for name, data in [
            ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "hi"}),
            ("response.completed", {"type": "response.completed", "response": {}}),
        ]
    )
    sse = [("content-type", "text/event-stream")]
    h2_server.script("/v1/responses", *[H2Reply(headers=sse, chunks=[done]) for _ in range(3)])
    provider = OpenAIResponsesProvider("p", h2_server.url + "/v1", "k", ONE)
    for _ in range(3):
        with anyio.fail_after(10):
            events = await collect(provider)
        assert "Completed" in str(events[-1])
    assert (h2_server.connections, len(h2_server.requests), h2_server.resets) == (1, 3, [])
    assert h2_server.requests[0].headers["authorization"] == "Bearer k"
    await close_clients()


def test_plain_http_never_loads_h2() -> None:
    code = (
        "import anyio\n"
        "from magi_code.providers.client import TransportError, open_response\n"
        "from magi_code.providers.requests import HttpPolicy\n"
        "async def main():\n"
        "    try:\n"
        "        async with open_response('GET', 'http://127.0.0.1:9/', HttpPolicy(), {}):\n"
        "            pass\n"
        "    except TransportError:\n"
        "        pass\n"
        "anyio.run(main)"
    )
    assert loaded_running(code, ("h2", "hpack", "hyperframe")) == []
