"""The pool of connections to provider origins: opened on demand, kept idle for the next
request of this turn or the next, closed at shutdown.

A connection belongs to one origin (scheme, host, port) and to the event loop that opened it
(its socket is that loop's): a request from another loop opens its own. An https origin is
offered HTTP/2 and HTTP/1.1 (ALPN); one that takes `h2` gets one shared connection (`http2`)
that every request of the loop multiplexes on, while it has room for another stream, and that
is closed once idle past the keep-alive. An HTTP/1.1 connection carries one exchange at a time:
an idle one is kept up to the policy's keep-alive and reused most recent first, and only if it
is quiet (nothing came on it while idle: a byte there would be read as the next request's
response, and an end means the peer closed it); each origin keeps at most
`IDLE_CONNECTIONS_PER_ORIGIN` idle, the one idle longest closing to make room. Whoever holds
one gives it back only when its exchange is over and its response's reader says the connection
may carry another (`http1`); anything else closes that connection, never the pool.

The TLS context is built once, on the first https origin, with the trust roots httpx2 used
(`httpx2.create_ssl_context(verify=True, trust_env=False)`: the platform's store through
truststore on Windows and macOS, OpenSSL's compiled-in paths elsewhere, then the common CA
bundle files); an http origin never builds one. Connecting and the TLS handshake are bounded
by the policy's `connect_s`; their failures go up as they are (`OSError`, `TimeoutError`,
anyio's stream errors) for the client to classify.
"""

from __future__ import annotations

import asyncio
import os
import sys
from contextlib import suppress
from typing import TYPE_CHECKING, NamedTuple

import anyio

from magi_code.providers.limits import IDLE_CONNECTIONS_PER_ORIGIN, QUIET_CHECK_S

if TYPE_CHECKING:
    import socket
    import ssl

    from anyio.abc import ByteStream

    from magi_code.providers.http import HttpPolicy
    from magi_code.providers.http2 import Http2Connection

# Where truststore looks on Linux when OpenSSL's compiled-in paths hold no certificate.
CA_FILE_CANDIDATES = (
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/cert.pem",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/ca-bundle.pem",
)


class Origin(NamedTuple):
    scheme: str  # "http" or "https"
    host: str  # as connected to and checked against the certificate (IDNA, no brackets)
    port: int


class Unprocessed(ConnectionError):
    """The peer closed a connection before taking up the request on it: the request is
    worth one new connection."""


class Connection:
    """One socket to an origin, and what the pool and the client count of its exchanges: an
    HTTP/1.1 connection, or a new one that took h2, until the client frames it (`http2`)."""

    __slots__ = ("idle_since", "origin", "protocol", "received", "reused", "stream")

    def __init__(self, origin: Origin, stream: ByteStream, protocol: str = "http/1.1") -> None:
        self.origin, self.stream, self.protocol = origin, stream, protocol
        self.reused = False  # it carried an earlier exchange
        self.received = 0  # bytes of the current exchange's response so far
        self.idle_since = 0.0

    async def aclose(self) -> None:
        """Close the socket now, even under cancellation."""
        await anyio.aclose_forcefully(self.stream)


# What a receive on a connection that ended or broke raises.
_RECEIVE_ERRORS = (OSError, anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError)
_Key = tuple[asyncio.AbstractEventLoop, Origin]
_idle: dict[_Key, list[Connection]] = {}  # oldest first
_shared: dict[_Key, list[Http2Connection]] = {}  # oldest first
_system_tls: ssl.SSLContext | None = None


async def take(origin: Origin, policy: HttpPolicy) -> Connection | Http2Connection:
    """The origin's HTTP/2 connection in this loop if one has room (idle ones past the
    keep-alive, or spent, close); else its most recently idle HTTP/1.1 connection that is
    within the keep-alive and quiet (idle ones past it, or not quiet, close); else a new
    connection."""
    key = (asyncio.get_running_loop(), origin)
    now, shared = anyio.current_time(), _shared.get(key, [])
    for spent in [
        c for c in shared if c.idle and (not c.usable or now - c.idle_since > policy.keepalive_s)
    ]:
        shared.remove(spent)
        await spent.aclose()
    for multiplexed in shared:
        if multiplexed.usable:
            multiplexed.reused = True
            return multiplexed
    idle = _idle.get(key, [])
    while idle:
        newest = idle.pop()
        if anyio.current_time() - newest.idle_since > policy.keepalive_s:
            expired = [newest, *idle]  # the others have been idle longer still
            idle.clear()
            for connection in expired:
                await connection.aclose()
        elif await _quiet(newest):
            newest.reused = True
            return newest
        else:
            await newest.aclose()
    return await connect(origin, policy)


async def connect(origin: Origin, policy: HttpPolicy) -> Connection:
    """A new connection to `origin`, within the policy's `connect_s`; its `protocol` is what
    the origin took: "h2" (for the client to frame with `http2` and `share`) or "http/1.1"."""
    with anyio.fail_after(policy.connect_s):
        if origin.scheme == "https":
            stream: ByteStream = await anyio.connect_tcp(
                origin.host,
                origin.port,
                ssl_context=_tls_context(),
                tls_hostname=origin.host,
                tls_standard_compatible=False,  # HTTP frames its own end
            )
        else:
            stream = await anyio.connect_tcp(origin.host, origin.port)
    protocol = _negotiated(stream) if origin.scheme == "https" else None
    return Connection(origin, stream, protocol or "http/1.1")


def share(multiplexed: Http2Connection) -> Http2Connection:
    """Keep an HTTP/2 connection for every request of this loop to its origin."""
    _shared.setdefault((asyncio.get_running_loop(), multiplexed.origin), []).append(multiplexed)
    return multiplexed


async def give_back(connection: Connection) -> None:
    """Keep `connection` for the next request to its origin; its last exchange must be over,
    nothing of it left unread."""
    key = (asyncio.get_running_loop(), connection.origin)
    idle = _idle.setdefault(key, [])
    if len(idle) >= IDLE_CONNECTIONS_PER_ORIGIN:
        await idle.pop(0).aclose()
    connection.idle_since = anyio.current_time()
    idle.append(connection)


async def close_idle() -> None:
    """Close the running loop's idle connections and HTTP/2 connections, and forget those of
    closed loops."""
    loop = asyncio.get_running_loop()
    for key in list(_idle):
        owner = key[0]
        if owner is loop or owner.is_closed():
            held = _idle.pop(key)
            if owner is loop:
                for connection in held:
                    await connection.aclose()
    for key in list(_shared):
        owner = key[0]
        if owner is loop or owner.is_closed():
            for shared in _shared.pop(key):
                if owner is loop:
                    await shared.aclose()


async def _quiet(connection: Connection) -> bool:
    """Nothing came on an idle connection since its last response: no byte and no end, neither
    in the kernel's buffer (a poll that does not wait) nor in the stream's own (anyio's read
    queue, TLS records already received). Where the stream's buffers cannot be looked at, a
    receive of QUIET_CHECK_S hands over what they hold; bytes it takes are dropped with the
    connection."""
    from anyio.abc import SocketAttribute

    sock = connection.stream.extra(SocketAttribute.raw_socket, None)
    if sock is not None and _readable(sock):
        return False
    held = _holds_bytes(connection.stream)
    if held is not None:
        return not held
    with anyio.move_on_after(QUIET_CHECK_S):
        with suppress(*_RECEIVE_ERRORS):
            await connection.stream.receive()
        return False
    return True


def _holds_bytes(stream: ByteStream) -> bool | None:
    """Whether the stream received bytes (or an end) not yet handed over: TLS's buffers, then
    anyio's read queue of the socket under it (asyncio backend; anyio pauses a socket's reading
    between receives, so nothing else can hold them). None where it cannot tell."""
    from anyio.streams.tls import TLSStream

    under: object = stream
    if isinstance(stream, TLSStream):
        ssl_object, incoming = (
            getattr(stream, "_ssl_object", None),
            getattr(stream, "_read_bio", None),
        )
        if ssl_object is None or incoming is None:
            return None
        if ssl_object.pending() or incoming.pending:
            return True
        under = stream.transport_stream
    protocol = getattr(under, "_protocol", None)
    queue = getattr(protocol, "read_queue", None)
    if queue is None:
        return None
    return bool(queue) or bool(getattr(protocol, "is_at_eof", True))


def _readable(sock: socket.socket) -> bool:
    """The socket has bytes to read, an end or an error, now (no wait)."""
    import select

    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])  # Windows: no poll


def _negotiated(stream: ByteStream) -> str | None:
    """The protocol the TLS handshake settled on (ALPN), if any."""
    from anyio.streams.tls import TLSAttribute

    protocol: str | None = stream.extra(TLSAttribute.alpn_protocol, None)
    return protocol


def _tls_context() -> ssl.SSLContext:
    global _system_tls
    if _system_tls is None:
        _system_tls = _system_trust()
        _system_tls.set_alpn_protocols(["h2", "http/1.1"])
    return _system_tls


def _system_trust() -> ssl.SSLContext:
    """A client context (certificate and host name checked) trusting the system's roots."""
    import ssl

    if sys.platform in ("win32", "darwin"):
        import truststore

        return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    # The compiled-in paths, since `set_default_verify_paths()` would read SSL_CERT_*.
    paths = ssl.get_default_verify_paths()
    cafile = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    capath = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    if capath and not cafile and not any(map(_is_hashed_cert, os.listdir(capath))):
        capath = None
    if not cafile and not capath:
        cafile = next(filter(os.path.isfile, CA_FILE_CANDIDATES), None)
    if cafile or capath:
        context.load_verify_locations(cafile, capath)
    return context


def _is_hashed_cert(name: str) -> bool:
    """OpenSSL's name for a certificate in a hashed directory."""
    import re

    return re.fullmatch(r"[0-9a-fA-F]{8}\.\d", name) is not None
