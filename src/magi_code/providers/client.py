"""The HTTP client of the provider layer: one request and its response over a pooled
connection (`pool`), framed by `http1`, or by `http2` where an https origin took it.

A request carries Host, User-Agent `magi-code/<version>`, `Accept-Encoding: identity` and,
with a body (compact UTF-8 JSON, or a urlencoded form), its Content-Type and Content-Length;
the caller's headers are merged in. Redirects are never followed (a 3xx is a status like any
other), and a URL's user info is never sent. A request goes through the proxy `network` chooses
for its URL (`pool`: a tunnel to an https origin; to an http origin, the request in
absolute form with the proxy's credentials). Connecting (through a proxy included), the TLS
handshake and sending the request are bounded by the policy's `connect_s`; the response's
whole head by its `head_s` (a total: a drip does not extend it); each wait for response bytes
by its `inactivity_s`; and all of it together, if the caller says so, by `within_s` (what is
left of a request's deadline with its retries). A reused connection that fails before any byte
of its response came (the server closed it while it was idle) is retried once on a new
connection.

A response read to its end gives its connection back to the pool; closed sooner (abandoned,
failed, cancelled), it closes its HTTP/1.1 connection, or resets its HTTP/2 stream. Failures
are `TransportError` (connecting, TLS, I/O, timeouts, HTTP framing, an HTTP/2 stream reset or
connection error, before the head or while reading the body alike) and `InvalidURL`, whose
messages name the failed step and the cause's class, never a URL, a header value or a body; a
failure the user must fix (a proxy's or a certificate's: `network.NetworkFailure`) gives its
fixed sentence as the `TransportError`'s `summary`, and is not worth a retry.
`close_clients` and `closing` close the pool's connections at shutdown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from json import dumps as json_dumps
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import quote, urlencode, urlsplit

import anyio

from magi_code import __version__
from magi_code.providers import network, pool
from magi_code.providers.http1 import (
    NEED_DATA,
    Head,
    Marker,
    ProtocolError,
    ResponseReader,
    request_bytes,
)
from magi_code.providers.origins import Origin, Unprocessed
from magi_code.providers.pool import Connection
from magi_code.records import record

if TYPE_CHECKING:
    from magi_code.providers.http2 import Http2Connection, Http2Response
    from magi_code.providers.network import Proxy
    from magi_code.providers.policy import HttpPolicy

T = TypeVar("T")
USER_AGENT = f"magi-code/{__version__}"
DEFAULT_PORTS = {"http": 80, "https": 443}
# What a failing connection raises. OSError holds refusals, resets, name resolution, TLS
# (ssl.SSLError) and timeouts (TimeoutError).
_IO_ERRORS = (
    OSError,
    anyio.EndOfStream,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    ProtocolError,
)
# Characters a request target keeps as they are; any other is percent-encoded.
_TARGET_SAFE = "/?:@!$&'()*+,;=%~"


class TransportError(Exception):
    """No usable response: connecting, TLS, sending or receiving failed, timed out, or the
    peer broke HTTP framing. `summary` is a fixed sentence for the user when the failure is
    theirs to fix (a proxy, a certificate: which, and the setting to change); `retryable`
    whether another attempt may fare better."""

    summary = ""
    retryable = True


class InvalidURL(Exception):
    """A URL that names no http or https origin (no host, a bad port, another scheme)."""


class Response:
    """A response's status and headers (names lower-cased); iterating it gives the body's
    bytes as they arrive, each wait bounded by the inactivity bound. Whatever breaks the body,
    over HTTP/1.1 or HTTP/2, is a `TransportError`."""

    def __init__(self, head: Head, body: Http1Body | Http2Response) -> None:
        self.status = head.status
        self.headers = dict(head.headers)
        self._body = body
        # The body's end is its own (a length, a last chunk, HTTP/2's end of stream), not
        # merely the connection closing, which a cut connection looks like too.
        coding = self.headers.get("transfer-encoding", "").lower()
        self.framed = (
            not isinstance(body, Http1Body)
            or "content-length" in self.headers
            or coding.rstrip(" \t").endswith("chunked")
        )

    def __aiter__(self) -> Response:
        return self

    async def __anext__(self) -> bytes:
        try:
            chunk = await self._body.next_chunk()
        except _IO_ERRORS as exc:
            raise _failed("receiving the body", exc) from None
        if chunk is None:
            raise StopAsyncIteration
        return chunk

    async def aclose(self) -> None:
        """Over HTTP/1.1: give the connection back if it may carry another exchange, else
        close it; over HTTP/2: reset the stream unless it ended."""
        await self._body.aclose()


class Http1Body:
    """An HTTP/1.1 response's body on its connection: its data as it arrives, then None; its
    failures are `_IO_ERRORS`, for `Response` to classify."""

    def __init__(self, connection: Connection, reader: ResponseReader, inactivity_s: float) -> None:
        self._connection, self._reader, self._inactivity_s = connection, reader, inactivity_s

    async def next_chunk(self) -> bytes | None:
        event = await _next_event(self._connection, self._reader, self._inactivity_s)
        return event if isinstance(event, bytes) else None  # END: said again if asked again

    async def aclose(self) -> None:
        if self._reader.reusable:
            await pool.give_back(self._connection)
        else:
            await self._connection.aclose()


@asynccontextmanager
async def open_response(
    method: str,
    url: str,
    policy: HttpPolicy,
    headers: Mapping[str, str],
    *,
    json: Mapping[str, object] | None = None,
    form: Mapping[str, str] | None = None,
    within_s: float | None = None,
) -> AsyncIterator[Response]:
    """Send one request and hold its response (status and headers read) until the block
    ends; `within_s` bounds connecting, sending and the head together. Raises `InvalidURL` or
    `TransportError`."""
    try:
        request = _request(method, url, headers, json, form)
        with anyio.fail_after(within_s):
            response = await _exchange(request, policy)
    except _IO_ERRORS as exc:
        raise _failed("the request", exc) from None
    try:
        yield response
    finally:
        await response.aclose()


async def closing(work: Awaitable[T]) -> T:
    """Await `work`, then close this loop's idle connections: for a command that runs one
    loop."""
    try:
        return await work
    finally:
        await close_clients()


async def close_clients() -> None:
    """Close the running loop's idle and HTTP/2 connections (shutdown); a later request
    opens anew."""
    await pool.close_idle()


@record
class _Request:
    origin: Origin
    method: str
    target: str
    fields: list[tuple[str, str]]  # names lower-cased, Host first
    body: bytes
    http1: bytes  # the whole request as HTTP/1.1 sends it


def _request(
    method: str,
    url: str,
    caller_headers: Mapping[str, str],
    json: Mapping[str, object] | None,
    form: Mapping[str, str] | None,
) -> _Request:
    """The request's origin and parts. Raises `ProtocolError` for what no framing sends."""
    try:
        parts = urlsplit(url)
        scheme, host, port = parts.scheme, parts.hostname, parts.port
        if scheme not in DEFAULT_PORTS or not host:
            raise ValueError("no http or https origin")
        host = host if host.isascii() else host.encode("idna").decode("ascii")
    except ValueError:  # UnicodeError included
        raise InvalidURL("invalid URL") from None
    default_port = DEFAULT_PORTS[scheme]
    port = default_port if port is None else port
    authority = f"[{host}]" if ":" in host else host
    fields = {
        "host": authority if port == default_port else f"{authority}:{port}",
        "user-agent": USER_AGENT,
    }
    body = b""
    if json is not None:
        body = json_dumps(json, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        fields["content-type"] = "application/json"
    elif form is not None:
        body = urlencode(form).encode()
        fields["content-type"] = "application/x-www-form-urlencoded"
    fields.update((name.lower(), value) for name, value in caller_headers.items())
    fields["accept-encoding"] = "identity"  # a body is never decoded
    if json is not None or form is not None:
        fields["content-length"] = str(len(body))
    target = quote(
        (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), safe=_TARGET_SAFE
    )
    headers = [*fields.items()]
    framed = request_bytes(method, target, headers, body)  # refuses what would break framing
    return _Request(Origin(scheme, host, port), method, target, headers, body, framed)


async def _exchange(request: _Request, policy: HttpPolicy) -> Response:
    connection = await _connection(pool.take, request.origin, policy)
    try:
        return await _round_trip(connection, request, policy)
    except _IO_ERRORS as exc:
        if not _went_stale(connection, exc):
            raise
    fresh = await _connection(pool.connect, request.origin, policy)
    return await _round_trip(fresh, request, policy)


async def _connection(
    get: Callable[[Origin, HttpPolicy], Awaitable[Connection | Http2Connection]],
    origin: Origin,
    policy: HttpPolicy,
) -> Connection | Http2Connection:
    """A connection from `get` (the pool's `take` or `connect`); a new one that took h2 is
    framed by `http2` and shared from then on."""
    connection = await get(origin, policy)
    if isinstance(connection, Connection) and connection.protocol == "h2":
        from magi_code.providers.http2 import Http2Connection  # h2 loads with its first use

        return pool.share(Http2Connection(origin, connection.stream))
    return connection


def _went_stale(connection: Connection | Http2Connection, exc: BaseException) -> bool:
    """A reused connection that failed before any byte of its response came was, most
    likely, closed by the server while idle: the request is worth one new connection."""
    if isinstance(exc, Unprocessed):
        return True
    if not isinstance(connection, Connection):
        return False  # HTTP/2 says which of its requests went unprocessed
    return connection.reused and connection.received == 0 and not isinstance(exc, TimeoutError)


async def _round_trip(
    connection: Connection | Http2Connection, request: _Request, policy: HttpPolicy
) -> Response:
    """Send the request and read the response's head; any failure closes an HTTP/1.1
    connection (an HTTP/2 one resets the request's stream)."""
    if not isinstance(connection, Connection):
        multiplexed = await connection.request(
            request.method, request.target, request.fields, request.body, policy
        )
        return Response(multiplexed.head, multiplexed)
    connection.received = 0
    reader = ResponseReader(request.method)
    try:
        with anyio.fail_after(policy.connect_s):
            await connection.stream.send(_framed(request, connection.forward))
        with anyio.fail_after(policy.head_s):  # however the head's bytes are spaced
            head = await _next_event(connection, reader, policy.inactivity_s)
        assert isinstance(head, Head)  # a reader's first event
        return Response(head, Http1Body(connection, reader, policy.inactivity_s))
    except BaseException:
        await connection.aclose()
        raise


async def _next_event(
    connection: Connection, reader: ResponseReader, inactivity_s: float
) -> Head | bytes | Marker:
    """The reader's next event other than NEED_DATA, reading as needed, each wait bounded."""
    while (event := reader.next_event()) is NEED_DATA:
        with anyio.fail_after(inactivity_s):
            try:
                data = await connection.stream.receive()
            except anyio.EndOfStream:
                data = b""
        connection.received += len(data)
        reader.receive(data)
    return event


def _framed(request: _Request, proxy: Proxy | None) -> bytes:
    """The request's HTTP/1.1 bytes: to the origin, or in absolute form to a proxy that
    forwards it (its credentials for the proxy alone, which takes them off)."""
    if proxy is None:
        return request.http1
    fields = request.fields
    if proxy.authorization is not None:
        fields = [*fields, ("proxy-authorization", proxy.authorization)]
    absolute = f"{request.origin.scheme}://{request.fields[0][1]}{request.target}"  # Host first
    return request_bytes(request.method, absolute, fields, request.body)


def _failed(step: str, cause: BaseException) -> TransportError:
    error = TransportError(f"{step} failed: {type(cause).__name__}")
    known = network.explained(cause)
    if known is not None:
        error.summary, error.retryable = known.summary, known.retryable
    return error
