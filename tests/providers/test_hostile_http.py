"""The providers' HTTP client against hostile local servers (hostile_server.py), plain, TLS and
HTTP/2: an answer nobody asked for, left on an idle connection, is never read as the next
request's (however its bytes were split); whatever breaks a body after its head, over HTTP/2 as
over HTTP/1.1, is a transport failure, retried while nothing was handed on; a dripped head, a
flood of 1xx heads and a server that never answers are bounded in time, with the retries; a
2xx answer that is no event stream, or a stream with no event, says so."""

import time
from collections.abc import AsyncIterator, Callable

import anyio
import pytest
from hyperframe.frame import DataFrame, WindowUpdateFrame

from magi_code.providers.base import ProviderError, failure_summary
from magi_code.providers.client import TransportError, close_clients, open_response
from magi_code.providers.limits import INFORMATIONAL_HEADS
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.requests import stream_sse
from magi_code.providers.sse import SSEEvent
from providers.hostile_server import H2Peer, HostileServer, Peer

pytestmark = pytest.mark.anyio

ONE = HttpPolicy(attempts=1)
EVENT = b'data: {"n": 1}\n\n'
HALF = b'data: {"n"'  # the first event, cut before its end
WHOLE = EVENT + b'data: {"n": 2}\n\n'


async def no_wait(_: float) -> None:
    pass


@pytest.fixture(autouse=True)
async def fresh_pool() -> AsyncIterator[None]:
    yield
    await close_clients()


def serve(request: pytest.FixtureRequest, handler: Callable[..., None], kind: str) -> HostileServer:
    """A hostile server of `kind`: "plain", "tls" (HTTP/1.1) or "h2"."""
    certificate = None if kind == "plain" else request.getfixturevalue("trusted")
    server = HostileServer(handler, certificate, h2=kind == "h2")
    request.addfinalizer(server.close)
    return server


def head(length: int, status: bytes = b"200 OK", fields: bytes = b"") -> bytes:
    return b"HTTP/1.1 " + status + b"\r\n" + fields + b"content-length: %d\r\n\r\n" % length


def answer(body: bytes, fields: bytes = b"content-type: text/event-stream\r\n") -> bytes:
    return head(len(body), fields=fields) + body


async def fetch(url: str, policy: HttpPolicy = ONE) -> tuple[int, bytes]:
    async with open_response("GET", url, policy, {}) as response:
        return response.status, b"".join([chunk async for chunk in response])


async def events(url: str, policy: HttpPolicy) -> list[SSEEvent]:
    got: list[SSEEvent] = []
    async for batch in stream_sse(url + "/v1/x", {}, {"q": 1}, policy):
        got += batch
    return got


async def failing(url: str, policy: HttpPolicy, got: list[SSEEvent] | None = None) -> ProviderError:
    got = [] if got is None else got
    with anyio.fail_after(10), pytest.raises(ProviderError) as err:
        async for batch in stream_sse(url + "/v1/x", {}, {"q": 1}, policy):
            got += batch
    return err.value


# ---- 1. an answer nobody asked for ----------------------------------------------------------

# A body the client's one read takes exactly (anyio reads at most 64 KiB at a time): what
# follows it stays in the stream's own buffer, not in the kernel's.
BUFFERED_BODY = 65536


@pytest.mark.parametrize("kind", ["plain", "tls"])
@pytest.mark.parametrize("arriving", ["while idle", "with the body's end"])
async def test_an_answer_nobody_asked_for_is_never_the_next_requests(
    request: pytest.FixtureRequest, kind: str, arriving: str
) -> None:
    """The first connection's response is followed by a second one nobody asked for: 100 ms
    later (it waits in the idle socket), or at once (it waits in the stream's buffer, the read
    that took the body's end having taken nothing of it). The next request opens a new
    connection and gets its own answer."""

    def handler(peer: Peer) -> None:
        peer.request()
        if peer.index > 0:
            peer.send(answer(b"fresh"))
        elif arriving == "while idle":
            peer.send(answer(b"first"))
            time.sleep(0.1)
            peer.send(answer(b"stale"))
        else:
            peer.send(head(BUFFERED_BODY))
            time.sleep(0.2)  # the head is read alone; the client then waits to read the body
            peer.send(b"f" * BUFFERED_BODY)
            peer.send(answer(b"stale"))
        while peer.request() is not None:  # a client that took the connection again
            pass

    server = serve(request, handler, kind)
    async with open_response("GET", server.url + "/x", ONE, {}) as response:
        if arriving != "while idle":
            await anyio.sleep(0.5)  # the body and the stale answer both come before it is read
        body = b"".join([chunk async for chunk in response])
    assert len(body) in (5, BUFFERED_BODY)
    await anyio.sleep(0.3)
    assert await fetch(server.url + "/x") == (200, b"fresh")
    assert server.connections == 2 and not server.errors


async def test_a_quiet_idle_connection_is_still_reused(request: pytest.FixtureRequest) -> None:
    def handler(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(answer(b"again"))

    server = serve(request, handler, "plain")
    for _ in range(3):
        assert await fetch(server.url + "/x") == (200, b"again")
    assert (server.connections, server.requests) == (1, 3)


# ---- 2. a body broken after its head --------------------------------------------------------

H2_FAULTS = ["reset", "closed", "flow control", "oversized frame", "stalled"]


def h2_breaking(fault: str, sent: bytes) -> Callable[[H2Peer], None]:
    """The first request's answer: its head, `sent`, then `fault`; any later one whole."""

    def handler(peer: H2Peer) -> None:
        while (stream_id := peer.request()) is not None:
            peer.respond(stream_id)
            if peer.server.requests > 1:
                peer.data(stream_id, WHOLE, end=True)
                continue
            peer.data(stream_id, sent)
            time.sleep(0.2)  # what was sent is read (and handed on) before the fault
            if fault == "reset":
                peer.reset(stream_id)
            elif fault == "closed":
                return
            elif fault == "flow control":  # a window past 2^31-1 (RFC 9113 6.9.1)
                peer.raw(WindowUpdateFrame(0, window_increment=2**31 - 1).serialize())
            elif fault == "oversized frame":  # past the client's SETTINGS_MAX_FRAME_SIZE
                peer.raw(DataFrame(stream_id, data=b"x" * 20_000).serialize())
            # "stalled": nothing more
        peer.drain()

    return handler


@pytest.mark.parametrize("fault", H2_FAULTS)
async def test_an_http2_body_broken_before_any_event_is_retried(
    request: pytest.FixtureRequest, fault: str
) -> None:
    server = serve(request, h2_breaking(fault, HALF), "h2")
    policy = HttpPolicy(attempts=2, inactivity_s=0.5, sleep=no_wait)
    with anyio.fail_after(10):
        got = await events(server.url, policy)
    assert [e.data for e in got] == ['{"n": 1}', '{"n": 2}']
    assert server.requests == 2 and not server.errors


@pytest.mark.parametrize("fault", H2_FAULTS)
async def test_an_http2_body_broken_after_an_event_is_a_transport_failure(
    request: pytest.FixtureRequest, fault: str
) -> None:
    server = serve(request, h2_breaking(fault, EVENT), "h2")
    got: list[SSEEvent] = []
    error = await failing(server.url, HttpPolicy(attempts=4, inactivity_s=0.5, sleep=no_wait), got)
    assert (error.code, error.retryable) == ("transport_failed", True)
    assert [e.data for e in got] == ['{"n": 1}']
    assert server.requests == 1, "an event was handed on: no retry would repeat it"


@pytest.mark.parametrize("kind", ["plain", "tls"])
@pytest.mark.parametrize("fault", ["closed", "stalled"])
async def test_an_http1_body_broken_alike_fails_alike(
    request: pytest.FixtureRequest, kind: str, fault: str
) -> None:
    def handler(peer: Peer) -> None:
        while peer.request() is not None:
            fields = b"content-type: text/event-stream\r\n"
            if peer.server.requests > 1:
                peer.send(answer(WHOLE, fields))
                continue
            peer.send(head(len(WHOLE), fields=fields) + HALF)
            if fault == "closed":
                return

    server = serve(request, handler, kind)
    policy = HttpPolicy(attempts=2, inactivity_s=0.5, sleep=no_wait)
    with anyio.fail_after(10):
        got = await events(server.url, policy)
    assert [e.data for e in got] == ['{"n": 1}', '{"n": 2}']
    assert server.requests == 2


# ---- 9. slow servers ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["plain", "tls"])
@pytest.mark.parametrize(("pause_s", "fails"), [(0.01, False), (0.05, True)])
async def test_a_dripped_head_is_bounded_in_total(
    request: pytest.FixtureRequest, kind: str, pause_s: float, fails: bool
) -> None:
    """A 38-byte head, one byte at a time: each pause is far within the inactivity bound,
    the whole within `head_s` (0.38 s) or past it (1.9 s)."""
    dripped = head(2)
    assert len(dripped) == 38

    def handler(peer: Peer) -> None:
        peer.request()
        for byte in dripped:
            peer.send(bytes([byte]))
            time.sleep(pause_s)
        peer.send(b"ok")

    server = serve(request, handler, kind)
    policy = HttpPolicy(attempts=1, head_s=1.0, inactivity_s=0.5)
    started = anyio.current_time()
    with anyio.fail_after(5):
        if not fails:
            assert await fetch(server.url + "/x", policy) == (200, b"ok")
            return
        with pytest.raises(TransportError):
            await fetch(server.url + "/x", policy)
    assert 1.0 <= anyio.current_time() - started < 1.6


async def test_an_http2_head_is_bounded_in_total(request: pytest.FixtureRequest) -> None:
    def handler(peer: H2Peer) -> None:
        peer.request()
        peer.drain()

    server = serve(request, handler, "h2")
    policy = HttpPolicy(attempts=1, head_s=0.5, inactivity_s=5)
    started = anyio.current_time()
    with anyio.fail_after(3), pytest.raises(TransportError):
        await fetch(server.url + "/x", policy)
    assert 0.5 <= anyio.current_time() - started < 1.2


@pytest.mark.parametrize("kind", ["plain", "tls", "h2"])
@pytest.mark.parametrize("count", [INFORMATIONAL_HEADS, INFORMATIONAL_HEADS + 1])
async def test_informational_heads_are_capped_at_their_edge(
    request: pytest.FixtureRequest, kind: str, count: int
) -> None:
    def http1(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 100 Continue\r\n\r\n" * count + answer(b"ok"))

    def http2(peer: H2Peer) -> None:
        stream_id = peer.request()
        assert stream_id is not None
        for _ in range(count):
            peer.informational(stream_id)
        peer.respond(stream_id)
        peer.data(stream_id, b"ok", end=True)
        peer.drain()

    server = serve(request, http2 if kind == "h2" else http1, kind)
    with anyio.fail_after(5):
        if count <= INFORMATIONAL_HEADS:
            assert await fetch(server.url + "/x") == (200, b"ok")
        else:
            with pytest.raises(TransportError):
                await fetch(server.url + "/x")
    assert not server.errors


async def test_a_flood_of_1xx_heads_is_refused_at_once(request: pytest.FixtureRequest) -> None:
    def handler(peer: Peer) -> None:
        peer.request()
        flood = b"HTTP/1.1 100 Continue\r\n\r\n" * 1000
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            peer.send(flood)

    server = serve(request, handler, "plain")
    started, cpu = anyio.current_time(), time.process_time()
    with anyio.fail_after(5), pytest.raises(TransportError):
        await fetch(server.url + "/x")
    assert anyio.current_time() - started < 1.0
    assert time.process_time() - cpu < 1.0


def never_answering(peer: Peer) -> None:
    while peer.request() is not None:
        pass


async def test_a_request_with_its_retries_ends_at_its_deadline(
    request: pytest.FixtureRequest,
) -> None:
    """Each attempt waits 0.4 s for a head that never comes; four would take 1.95 s with their
    backoff. No attempt starts, nor waits, past `request_s`."""
    server = serve(request, never_answering, "plain")
    policy = HttpPolicy(attempts=4, head_s=0.4, inactivity_s=0.4, base_delay_s=0.05, request_s=1)
    started = anyio.current_time()
    error = await failing(server.url, policy)
    elapsed = anyio.current_time() - started
    assert (error.code, error.retryable) == ("transport_failed", True)
    assert 1.0 <= elapsed < 1.5
    assert 2 <= server.requests <= 3


def keeping_alive(first_attempt_cut: bool) -> Callable[[Peer], None]:
    """Answers whose stream holds comments only, one every 0.1 s for 1.5 s, then an event;
    the first attempt's cut before its first event if `first_attempt_cut`."""

    def handler(peer: Peer) -> None:
        fields = b"content-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
        while peer.request() is not None:
            peer.send(b"HTTP/1.1 200 OK\r\n" + fields + b"\r\n")
            if first_attempt_cut and peer.server.requests == 1:
                peer.send(b"%x\r\n%s\r\n" % (len(HALF), HALF))
                return
            for _ in range(15):
                time.sleep(0.1)
                peer.send(b"e\r\n: still here\n\n\r\n")
            peer.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(WHOLE), WHOLE))

    return handler


@pytest.mark.parametrize("retried", [False, True])
async def test_only_a_retry_must_hand_on_its_first_event_by_the_deadline(
    request: pytest.FixtureRequest, retried: bool
) -> None:
    """A stream kept alive with comments for 1.5 s, `request_s` 1 s: the first attempt is a
    provider at work and is waited for; a retry is not, past the deadline."""
    server = serve(request, keeping_alive(first_attempt_cut=retried), "plain")
    policy = HttpPolicy(attempts=2, inactivity_s=0.5, request_s=1, sleep=no_wait)
    started = anyio.current_time()
    if not retried:
        with anyio.fail_after(5):
            assert [e.data for e in await events(server.url, policy)] == ['{"n": 1}', '{"n": 2}']
        return
    error = await failing(server.url, policy)
    assert (error.code, error.retryable) == ("transport_failed", True)
    assert 1.0 <= anyio.current_time() - started < 1.5
    assert server.requests == 2


async def test_a_retry_after_past_the_deadline_is_not_waited_for(
    request: pytest.FixtureRequest,
) -> None:
    def handler(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(head(0, b"503 Service Unavailable", b"retry-after: 5\r\n"))

    server = serve(request, handler, "plain")
    started = anyio.current_time()
    error = await failing(server.url, HttpPolicy(attempts=4, request_s=1))
    assert (error.code, error.status) == ("server_error", 503)
    assert anyio.current_time() - started < 0.5
    assert server.requests == 1


# ---- 10a. what the diagnostics say ----------------------------------------------------------

BODY_MARKER = b"body-text-never-shown"


@pytest.mark.parametrize(
    ("content_type", "says"),
    [
        (b"application/json", "The provider answered with JSON, not an event stream"),
        (b"application/problem+json; charset=utf-8", "with JSON, not an event stream"),
        (b"text/html; charset=UTF-8", "The provider answered with HTML, not an event stream"),
        (b"text/plain", "The provider answered, but not with an event stream"),
    ],
)
async def test_a_2xx_answer_that_is_no_event_stream_says_so_unretried(
    request: pytest.FixtureRequest, content_type: bytes, says: str
) -> None:
    def handler(peer: Peer) -> None:
        while peer.request() is not None:
            body = b'{"data": "' + BODY_MARKER + b'"}\n\n'
            peer.send(answer(body, b"content-type: " + content_type + b"\r\n"))

    server = serve(request, handler, "plain")
    error = await failing(server.url, HttpPolicy(attempts=4, sleep=no_wait))
    assert (error.code, error.status, error.retryable) == ("malformed_stream", 200, False)
    summary = failure_summary(error)
    assert says in summary and summary.endswith("check the base URL. (HTTP 200)")
    assert BODY_MARKER.decode() not in summary + repr(error) + str(error)
    assert server.requests == 1


@pytest.mark.parametrize("content_type", [b"text/event-stream; charset=utf-8", b""])
async def test_an_event_stream_or_an_untyped_answer_is_read(
    request: pytest.FixtureRequest, content_type: bytes
) -> None:
    def handler(peer: Peer) -> None:
        peer.request()
        fields = b"content-type: " + content_type + b"\r\n" if content_type else b""
        peer.send(answer(WHOLE, fields))

    server = serve(request, handler, "plain")
    got = await events(server.url, HttpPolicy(attempts=1))
    assert [e.data for e in got] == ['{"n": 1}', '{"n": 2}']


async def test_a_stream_of_comments_only_says_no_event_came(
    request: pytest.FixtureRequest,
) -> None:
    def handler(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(answer(b": keep-alive\n\n: still here\n\n"))

    server = serve(request, handler, "plain")
    error = await failing(server.url, HttpPolicy(attempts=3, sleep=no_wait))
    assert (error.code, error.retryable) == ("transport_failed", True)
    assert failure_summary(error) == "The provider's answer ended before its first event."
    assert server.requests == 3, "a cut stream may come whole: retried within the bound"
