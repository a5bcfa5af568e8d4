"""The providers' HTTP/1.1 client against real local servers: what a request carries, body
framings and when their connection is reused, the pool's bounds (keep-alive, idle connections
per origin, one pool per event loop), connections the server closed while idle, the connect
and inactivity bounds at their edges, and TLS trust."""

import socket
import ssl
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from magi_code.providers import pool
from magi_code.providers.base import ProviderError
from magi_code.providers.client import InvalidURL, TransportError, close_clients, open_response
from magi_code.providers.limits import IDLE_CONNECTIONS_PER_ORIGIN, RESPONSE_HEAD_BYTES
from magi_code.providers.openai_chat import OpenAIChatProvider
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.requests import control_request
from providers.local_server import LocalServer, Reply
from providers.test_http_bounds import OK, PATH, Sleeps
from providers.test_wire_apis import collect

pytestmark = pytest.mark.anyio

ONE = HttpPolicy(attempts=1)
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def kept(body: bytes, **framing: bool) -> Reply:
    return Reply(chunks=[body], keep_alive=True, **({"chunked": True} | framing))


async def fetch(url: str, policy: HttpPolicy = ONE) -> tuple[int, bytes]:
    async with open_response("GET", url, policy, {}) as response:
        return response.status, b"".join([chunk async for chunk in response])


async def soon(holds: Callable[[], bool]) -> None:
    with anyio.fail_after(5):
        while not holds():
            await anyio.sleep(0.01)


# ---- what a request carries -----------------------------------------------------------------


async def test_a_request_names_its_client_and_frames_its_json_body(server: LocalServer) -> None:
    server.script("/x", Reply.json({}))
    caller = {"X-Test": "yes", "Accept-Encoding": "gzip", "Content-Type": "application/json"}
    async with open_response(
        "POST", server.url + "/x", ONE, caller, json={"text": "é ☃", "n": 1}
    ) as response:
        assert response.status == 200
    (seen,) = server.requests
    assert seen.body == '{"text":"é ☃","n":1}'.encode()
    version = tomllib.loads(PYPROJECT.read_text())["project"]["version"]
    assert seen.headers == {
        "host": server.url.removeprefix("http://"),
        "user-agent": f"magi-code/{version}",
        "content-type": "application/json",
        "x-test": "yes",
        "accept-encoding": "identity",  # a body is never decoded: the caller cannot change that
        "content-length": str(len(seen.body)),
    }


async def test_a_form_is_urlencoded_and_user_info_is_never_sent(server: LocalServer) -> None:
    server.script("/token", Reply.json({"ok": True}))
    url = server.url.replace("http://", "http://user:secret@") + "/token?q=1"
    answer = await control_request("POST", url, ONE, form={"a": "b c", "é": "&"})
    assert (answer.status, answer.body.text) == (200, '{"ok": true}')
    (seen,) = server.requests
    assert (seen.path, seen.body) == ("/token?q=1", b"a=b+c&%C3%A9=%26")
    assert seen.headers["content-type"] == "application/x-www-form-urlencoded"
    assert "authorization" not in seen.headers


async def test_environment_proxies_are_used_but_for_no_proxy(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment's proxy is used (test_proxy.py goes through a real one): one where
    nothing listens fails, named; NO_PROXY sends the host directly."""
    from magi_code.providers import network

    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    server.script("/x", Reply.json([]))
    with pytest.raises(TransportError) as failed:
        await fetch(server.url + "/x")
    assert failed.value.summary.startswith("The proxy in http_proxy could not be reached")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    network._current = None  # the process's choice is read once: read it again
    assert await fetch(server.url + "/x") == (200, b"[]")


@pytest.mark.parametrize("url", ["ftp://h/x", "http:///x", "http://h:99999/x", "http://a:b:c/"])
async def test_a_url_without_an_http_origin_is_invalid(url: str) -> None:
    with pytest.raises(InvalidURL) as err:
        await fetch(url)
    assert str(err.value) == "invalid URL"


# ---- body framings ----------------------------------------------------------------------------

FRAMINGS = {
    "chunked": (kept(b"abcd"), 1),
    "content-length": (kept(b"abcd", chunked=False, content_length=True), 1),
    # the server announces its close: the connection is not kept even though the body is framed
    "content-length, then close": (Reply(chunks=[b"abcd"], content_length=True), 2),
    "close-delimited": (Reply(chunks=[b"ab", b"cd"]), 2),
}


@pytest.mark.parametrize("framing", sorted(FRAMINGS))
async def test_each_framing_gives_the_whole_body_and_reuses_only_a_kept_connection(
    server: LocalServer, framing: str
) -> None:
    reply, opened = FRAMINGS[framing]
    server.script("/x", reply, reply)
    assert await fetch(server.url + "/x") == (200, b"abcd")
    assert await fetch(server.url + "/x") == (200, b"abcd")
    assert server.connections == opened


async def test_a_response_abandoned_mid_body_closes_its_connection(server: LocalServer) -> None:
    server.script("/x", Reply(chunks=[b"first"], chunked=True, hang=True), kept(b"a"), kept(b"b"))
    async with open_response("GET", server.url + "/x", ONE, {}) as response:
        assert await anext(response) == b"first"
    assert await anyio.to_thread.run_sync(server.client_closed.wait, 5.0)
    assert await fetch(server.url + "/x") == (200, b"a")
    assert await fetch(server.url + "/x") == (200, b"b")
    assert server.connections == 2, "a new connection after the abandoned one, then reused"


# ---- the pool's bounds ------------------------------------------------------------------------


async def test_an_idle_connection_past_its_keepalive_is_closed_not_reused(
    server: LocalServer,
) -> None:
    policy = HttpPolicy(attempts=1, keepalive_s=0.6)
    server.script("/x", *[kept(b"ok") for _ in range(4)])
    await fetch(server.url + "/x", policy)
    await anyio.sleep(0.1)  # idle for a sixth of its keep-alive: reused
    await fetch(server.url + "/x", policy)
    assert server.connections == 1
    await anyio.sleep(0.9)  # idle past its keep-alive: closed, and a new one opened
    await fetch(server.url + "/x", policy)
    assert server.connections == 2
    await soon(lambda: server.disconnects == 1)
    await fetch(server.url + "/x", policy)
    assert server.connections == 2


async def test_an_origin_keeps_a_bounded_number_of_idle_connections(server: LocalServer) -> None:
    many = IDLE_CONNECTIONS_PER_ORIGIN + 1
    server.script(
        "/x", *[Reply(chunks=[b"ok"], chunked=True, keep_alive=True, delay_s=0.3)] * 2 * many
    )

    async def at_once() -> None:  # every request in flight together, so none can reuse another's
        async with anyio.create_task_group() as tg:
            for _ in range(many):
                tg.start_soon(fetch, server.url + "/x")

    await at_once()
    assert server.connections == many
    await soon(lambda: server.disconnects == 1)  # one more than the bound came back: it closed
    await at_once()
    assert server.connections == many + 1, "the idle ones served all but one"
    await close_clients()
    await soon(lambda: server.disconnects == many + 1)


def test_each_event_loop_has_connections_of_its_own(server: LocalServer) -> None:
    server.script("/x", kept(b"a"), kept(b"b"))
    assert anyio.run(fetch, server.url + "/x") == (200, b"a")
    assert anyio.run(fetch, server.url + "/x") == (200, b"b")  # the first loop's is unusable
    assert server.connections == 2
    anyio.run(close_clients)
    assert not pool._idle, "this loop's idle connections closed, a closed loop's forgotten"


# ---- connections the server closed ------------------------------------------------------------


async def test_a_connection_the_server_closed_while_idle_is_replaced(server: LocalServer) -> None:
    server.script("/x", kept(b"a", close_when_idle=True), kept(b"b"))
    assert await fetch(server.url + "/x") == (200, b"a")
    await soon(lambda: server.disconnects == 1)
    assert await fetch(server.url + "/x") == (200, b"b")
    assert (len(server.requests), server.connections) == (2, 2)


async def test_a_reused_connection_closed_unanswered_is_retried_once_on_a_new_one(
    server: LocalServer,
) -> None:
    server.script("/x", kept(b"a"), Reply(unanswered=True), kept(b"b"))
    assert await fetch(server.url + "/x") == (200, b"a")
    assert await fetch(server.url + "/x") == (200, b"b")
    assert (len(server.requests), server.connections) == (3, 2)


async def test_a_new_connection_closed_unanswered_is_not_retried(server: LocalServer) -> None:
    server.script("/x", Reply(unanswered=True), kept(b"b"))
    with pytest.raises(TransportError):
        await fetch(server.url + "/x")
    assert len(server.requests) == 1


class RawPeer:
    """One connection, answered byte for byte: each request gets its list of pieces, sent with
    a pause between them; the connection closes after the last answer."""

    def __init__(self, *answers: list[bytes]) -> None:
        self.answers = answers
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/x"
        self.requests = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            for pieces in self.answers:
                while b"\r\n\r\n" not in conn.recv(65536):
                    pass
                self.requests += 1
                for n, piece in enumerate(pieces):
                    if n:
                        time.sleep(0.1)
                    conn.sendall(piece)

    def __enter__(self) -> "RawPeer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(5)
        self.listener.close()


async def test_a_reused_connection_that_answered_in_part_is_not_retried() -> None:
    with RawPeer([b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"], [b"HTTP/1.1 2"]) as peer:
        assert await fetch(peer.url) == (200, b"ok")
        with pytest.raises(TransportError):
            await fetch(peer.url)
    assert peer.requests == 2


@pytest.mark.parametrize("size", [RESPONSE_HEAD_BYTES, RESPONSE_HEAD_BYTES + 1])
async def test_a_response_head_is_bounded_however_it_comes(size: int) -> None:
    """A head of `size` bytes comes in two writes: all but its last byte, then (after a
    pause) that byte and the body."""
    status, length = b"HTTP/1.1 200 OK\r\n", b"content-length: 2\r\n\r\n"
    filler = b"x-filler: " + b"f" * (size - len(status + length) - 12) + b"\r\n"
    head = status + filler + length
    assert len(head) == size
    with RawPeer([head[:-1], head[-1:] + b"ok"]) as peer:
        if size > RESPONSE_HEAD_BYTES:
            with pytest.raises(TransportError):
                await fetch(peer.url)
        else:
            assert await fetch(peer.url) == (200, b"ok")


# ---- the connect and inactivity bounds --------------------------------------------------------


@pytest.fixture
def unanswering() -> Iterator[str]:
    """A URL whose listener accepts connections (in the kernel) and never reads or answers."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/x"


async def elapsed_failing(
    url: str, policy: HttpPolicy, json: dict[str, object] | None = None
) -> float:
    started = anyio.current_time()
    with anyio.fail_after(10), pytest.raises(TransportError):
        async with open_response("GET" if json is None else "POST", url, policy, {}, json=json):
            pass
    return anyio.current_time() - started


async def test_connecting_is_bounded_by_connect_s() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/x"
        # the backlog is full: the next connection's handshake goes unanswered
        with socket.create_connection(listener.getsockname()):
            waited = await elapsed_failing(url, HttpPolicy(connect_s=0.3, inactivity_s=60))
    assert 0.3 <= waited < 1.3


async def test_sending_is_bounded_by_connect_s(unanswering: str) -> None:
    body = {"text": "x" * (32 * 1024 * 1024)}  # more than the socket buffers take unread
    waited = await elapsed_failing(
        unanswering, HttpPolicy(connect_s=0.3, inactivity_s=60), json=body
    )
    assert 0.3 <= waited < 2.0


async def test_waiting_for_the_status_is_bounded_by_inactivity_s(unanswering: str) -> None:
    waited = await elapsed_failing(unanswering, HttpPolicy(connect_s=60, inactivity_s=0.3))
    assert 0.3 <= waited < 1.3


@pytest.mark.parametrize(("pause", "fails"), [(0.15, False), (0.6, True)])
async def test_a_pause_in_the_body_is_bounded_by_inactivity_s(
    server: LocalServer, pause: float, fails: bool
) -> None:
    server.script("/x", Reply(chunks=[b"a", b"b", b"c", b"d"], chunked=True, delay_s=pause))
    policy = HttpPolicy(inactivity_s=0.4)
    if fails:
        with pytest.raises(TransportError):
            await fetch(server.url + "/x", policy)
    else:  # four pauses outlast the bound together; each is within it
        assert await fetch(server.url + "/x", policy) == (200, b"abcd")


# ---- TLS --------------------------------------------------------------------------------------


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[LocalServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    with LocalServer(tls=context) as server:
        yield server


async def test_a_self_signed_https_origin_is_refused_within_the_attempts(
    tls_server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "_contexts", {})  # built by this test, then forgotten
    tls_server.script(PATH, Reply(chunks=[OK]))
    sleeps = Sleeps()
    policy = HttpPolicy(attempts=3, sleep=sleeps)
    with pytest.raises(ProviderError) as err:
        await collect(OpenAIChatProvider("p", tls_server.url + "/v1", "k", policy))
    # A certificate no retry can fix: refused at once, saying whose and what to set.
    assert (err.value.code, err.value.retryable) == ("transport_failed", False)
    assert "server's certificate is not trusted" in err.value.summary
    assert (tls_server.connections, len(sleeps.delays), tls_server.requests) == (1, 0, [])
    (context,) = pool._contexts.values()
    assert context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED


async def test_a_trusted_https_origin_is_reused_and_its_name_checked(
    tls_server: LocalServer, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    trusted = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    trusted.load_verify_locations(certificate[0])
    monkeypatch.setattr(pool, "_system_trust", lambda *_: trusted)
    monkeypatch.setattr(pool, "_contexts", {})
    port = tls_server.httpd.server_address[1]
    tls_server.script("/x", kept(b"one"), kept(b"two"), Reply(chunks=[b"three"]))
    by_name = f"https://localhost:{port}/x"
    assert await fetch(by_name) == (200, b"one")
    assert await fetch(by_name) == (200, b"two")
    assert await fetch(by_name) == (200, b"three")  # close-delimited: TLS ends without notice
    assert tls_server.connections == 1
    with pytest.raises(TransportError):  # the certificate names localhost, not this address
        await fetch(f"https://127.0.0.1:{port}/x")
    assert (tls_server.connections, len(tls_server.requests)) == (2, 3)
