"""The pool of HTTP/1.1 connections to provider origins: opened on demand, kept idle for the
next request of this turn or the next, closed at shutdown.

A connection belongs to one origin (scheme, host, port) and to the event loop that opened it
(its socket is that loop's): a request from another loop opens its own. An idle connection
is kept up to the policy's keep-alive and reused most recent first; each origin keeps at most
`IDLE_CONNECTIONS_PER_ORIGIN` idle, the one idle longest closing to make room. Whoever holds a
connection gives it back only when its exchange is over and its response's reader says the
connection may carry another (`http1`); anything else closes that connection, never the pool.

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
from typing import TYPE_CHECKING, NamedTuple

import anyio

from magi_code.providers.limits import IDLE_CONNECTIONS_PER_ORIGIN

if TYPE_CHECKING:
    import ssl

    from anyio.abc import ByteStream

    from magi_code.providers.http import HttpPolicy

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


class Connection:
    """One socket to an origin, and what the pool and the client count of its exchanges."""

    __slots__ = ("idle_since", "origin", "received", "reused", "stream")

    def __init__(self, origin: Origin, stream: ByteStream) -> None:
        self.origin, self.stream = origin, stream
        self.reused = False  # it carried an earlier exchange
        self.received = 0  # bytes of the current exchange's response so far
        self.idle_since = 0.0

    async def aclose(self) -> None:
        """Close the socket now, even under cancellation."""
        await anyio.aclose_forcefully(self.stream)


_Key = tuple[asyncio.AbstractEventLoop, Origin]
_idle: dict[_Key, list[Connection]] = {}  # oldest first
_system_tls: ssl.SSLContext | None = None


async def take(origin: Origin, policy: HttpPolicy) -> Connection:
    """The origin's most recently idle connection in this loop if it is within the policy's
    keep-alive, else a new one (idle ones past the keep-alive close)."""
    idle = _idle.get((asyncio.get_running_loop(), origin))
    if idle:
        newest = idle.pop()
        if anyio.current_time() - newest.idle_since <= policy.keepalive_s:
            newest.reused = True
            return newest
        expired = [newest, *idle]  # the others have been idle longer still
        idle.clear()
        for connection in expired:
            await connection.aclose()
    return await connect(origin, policy)


async def connect(origin: Origin, policy: HttpPolicy) -> Connection:
    """A new connection to `origin`, within the policy's `connect_s`."""
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
    return Connection(origin, stream)


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
    """Close the running loop's idle connections and forget those of closed loops."""
    loop = asyncio.get_running_loop()
    for key in list(_idle):
        owner = key[0]
        if owner is loop or owner.is_closed():
            held = _idle.pop(key)
            if owner is loop:
                for connection in held:
                    await connection.aclose()


def _tls_context() -> ssl.SSLContext:
    global _system_tls
    if _system_tls is None:
        _system_tls = _system_trust()
        _system_tls.set_alpn_protocols(["http/1.1"])
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
