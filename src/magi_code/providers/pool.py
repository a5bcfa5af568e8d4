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

A new connection goes directly, or through the proxy `network` chooses for its origin: to an
https origin through a CONNECT tunnel (the proxy's Basic credentials on the CONNECT alone), so
TLS, ALPN and HTTP/2 are the origin's own; to an http origin the requests go to the proxy whole
(`Connection.forward`: the client frames them for it). An https proxy is reached over TLS of its
own (HTTP/1.1). Connecting, the proxy's answer and the TLS handshakes are bounded together by
the policy's `connect_s`.

A TLS context is built on the first https use, once per choice of certificates and protocols,
with the trust roots httpx2 used (`httpx2.create_ssl_context(verify=True, trust_env=False)`:
the platform's store through truststore on Windows and macOS, OpenSSL's compiled-in paths
elsewhere, then the common CA bundle files), `SSL_CERT_FILE` and `SSL_CERT_DIR` in place of
the compiled-in ones, `[network] ca_bundle` on top, and the client certificate (`network`); an
http origin never builds one. What the user must fix fails as `network.NetworkFailure`, its
sentence naming the certificate (the server's, the proxy's, our own) or the proxy's answer and
the setting to change: a certificate not trusted, a client certificate refused, a file that
does not load, a CONNECT refused. Other failures go up as they are (`OSError`, `TimeoutError`,
anyio's stream errors) for the client to classify. `outbound` gives a client of its own (the
MCP client's) the proxy and TLS context for a URL.
"""

from __future__ import annotations

import asyncio
import os
import sys
from contextlib import suppress
from typing import TYPE_CHECKING

import anyio

from magi_code.providers import network
from magi_code.providers.http1 import NEED_DATA, Head, ProtocolError, ResponseReader, request_bytes
from magi_code.providers.limits import IDLE_CONNECTIONS_PER_ORIGIN, QUIET_CHECK_S
from magi_code.providers.network import (
    CLIENT_CERTIFICATE_ALERTS,
    CLIENT_CERTIFICATE_REFUSED,
    NetworkFailure,
)
from magi_code.providers.origins import Origin

if TYPE_CHECKING:
    import socket
    import ssl
    from collections.abc import Callable

    from anyio.abc import ByteStream

    from magi_code.providers.http2 import Http2Connection
    from magi_code.providers.network import Certificates, Proxy
    from magi_code.providers.policy import HttpPolicy

# Where truststore looks on Linux when OpenSSL's compiled-in paths hold no certificate.
CA_FILE_CANDIDATES = (
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/cert.pem",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/ca-bundle.pem",
)
ORIGIN_PROTOCOLS = ("h2", "http/1.1")  # what an https origin is offered (ALPN)
PROXY_PROTOCOLS = ("http/1.1",)  # a proxy's own TLS, and a client that speaks HTTP/1.1 alone
_HOSTNAME_MISMATCH = 62  # X509_V_ERR_HOSTNAME_MISMATCH
_CA_SETTINGS = "[network] ca_bundle in the global settings (or in SSL_CERT_FILE)"


class Connection:
    """One socket to an origin, and what the pool and the client count of its exchanges: an
    HTTP/1.1 connection, or a new one that took h2, until the client frames it (`http2`)."""

    __slots__ = ("forward", "idle_since", "origin", "protocol", "received", "reused", "stream")

    def __init__(
        self,
        origin: Origin,
        stream: ByteStream,
        protocol: str = "http/1.1",
        forward: Proxy | None = None,  # the proxy an http origin's requests go to whole
    ) -> None:
        self.origin, self.stream, self.protocol, self.forward = origin, stream, protocol, forward
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
_contexts: dict[tuple[Certificates, tuple[str, ...]], ssl.SSLContext] = {}


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
    """A new connection to `origin`, directly or through its proxy, within the policy's
    `connect_s`; its `protocol` is what the origin took: "h2" (for the client to frame with
    `http2` and `share`) or "http/1.1"."""
    chosen = network.current()
    proxy = chosen.proxy_for(origin.scheme, origin.host, origin.port)
    with anyio.fail_after(policy.connect_s):
        if proxy is None:
            stream: ByteStream = await anyio.connect_tcp(origin.host, origin.port)
        else:
            stream = await _to_proxy(proxy, chosen.certificates)
        try:
            if origin.scheme == "http":
                return Connection(origin, stream, forward=proxy)
            if proxy is not None:
                await _tunnel(stream, proxy, origin)
            stream = await _tls(stream, origin.host, chosen.certificates, ORIGIN_PROTOCOLS)
        except BaseException:
            await anyio.aclose_forcefully(stream)
            raise
    return Connection(origin, stream, _negotiated(stream) or "http/1.1")


def outbound(url: str) -> tuple[str | None, ssl.SSLContext]:
    """For a client of its own (the MCP client's): the URL of the proxy that requests to `url`
    go through (its credentials in it: for that client alone, never to be shown), or None, and
    the TLS context (HTTP/1.1) that checks the server's certificate and an https proxy's, and
    shows ours. Raises `NetworkFailure` (a proxy setting that names no proxy, a certificate
    file that does not load) and ValueError (a URL with no http or https origin)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("no http or https origin")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    chosen = network.current()
    proxy = chosen.proxy_for(parts.scheme, parts.hostname, port)
    return (None if proxy is None else proxy.url), tls_context(chosen.certificates, PROXY_PROTOCOLS)


async def _to_proxy(proxy: Proxy, certificates: Certificates) -> ByteStream:
    """A connection to `proxy` (over TLS for an https one)."""
    try:
        stream: ByteStream = await anyio.connect_tcp(proxy.host, proxy.port)
    except OSError:
        raise NetworkFailure(
            f"The proxy in {proxy.setting} could not be reached: check it, and NO_PROXY.",
            retryable=True,
        ) from None
    if proxy.scheme == "https":
        try:
            stream = await _tls(stream, proxy.host, certificates, PROXY_PROTOCOLS, proxy)
        except BaseException:
            await anyio.aclose_forcefully(stream)
            raise
    return stream


async def _tunnel(stream: ByteStream, proxy: Proxy, origin: Origin) -> None:
    """Ask the proxy for a tunnel to `origin` (CONNECT, its credentials on it); returns once
    the proxy opened it. A refusal is a `NetworkFailure`; a broken answer a `ProtocolError`."""
    authority = (
        f"[{origin.host}]:{origin.port}" if ":" in origin.host else f"{origin.host}:{origin.port}"
    )
    fields = [("host", authority)]
    if proxy.authorization is not None:
        fields.append(("proxy-authorization", proxy.authorization))
    await stream.send(request_bytes("CONNECT", authority, fields, b""))
    reader = ResponseReader("CONNECT")
    while (event := reader.next_event()) is NEED_DATA:
        try:
            data = await stream.receive()
        except anyio.EndOfStream:
            data = b""
        reader.receive(data)
    assert isinstance(event, Head)  # a reader's first event
    if 200 <= event.status < 300:
        if reader.overrun:
            raise ProtocolError("the proxy sent bytes before the tunnel's first")
        return
    raise NetworkFailure(_refusal(event.status, proxy), retryable=event.status >= 500)


def _refusal(status: int, proxy: Proxy) -> str:
    if status == 407 and proxy.authorization is None:
        return (
            f"The proxy asks for credentials (HTTP 407): put them in {proxy.setting} "
            "(http://user:password@host:port)."
        )
    if status == 407:
        return f"The proxy refused the credentials in {proxy.setting} (HTTP 407)."
    return (
        f"The proxy in {proxy.setting} did not open a tunnel to the server (HTTP {status}): "
        "check the server's address, or list it in NO_PROXY if it is to be reached directly."
    )


async def _tls(
    stream: ByteStream,
    hostname: str,
    certificates: Certificates,
    protocols: tuple[str, ...],
    proxy: Proxy | None = None,  # the proxy whose own TLS this is; None: the origin's
) -> ByteStream:
    """TLS over `stream` to `hostname`, its certificate checked; a certificate that fails
    the check, or a server that refuses ours, is a `NetworkFailure` saying whose."""
    import ssl

    from anyio.streams.tls import TLSStream

    context = tls_context(certificates, protocols)
    try:
        return await TLSStream.wrap(
            stream,
            hostname=hostname,
            ssl_context=context,
            standard_compatible=False,  # HTTP frames its own end
        )
    except ssl.SSLCertVerificationError as exc:
        raise NetworkFailure(_untrusted(exc, proxy)) from None
    except ssl.SSLError as exc:
        if exc.reason in CLIENT_CERTIFICATE_ALERTS:
            raise NetworkFailure(CLIENT_CERTIFICATE_REFUSED) from None
        raise


def _untrusted(exc: ssl.SSLCertVerificationError, proxy: Proxy | None) -> str:
    whose = "The server's" if proxy is None else f"The proxy's (in {proxy.setting})"
    if exc.verify_code == _HOSTNAME_MISMATCH:
        where = "the URL" if proxy is None else proxy.setting
        return f"{whose} certificate is for another host name: check {where}."
    return (
        f"{whose} certificate is not trusted: if your network inspects TLS, add the "
        f"certificate of the authority that signed it to {_CA_SETTINGS}."
    )


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
    """Whether the stream received bytes (or an end) not yet handed over: TLS's buffers (the
    origin's, then an https proxy's under it), then anyio's read queue of the socket under them
    (asyncio backend; anyio pauses a socket's reading between receives, so nothing else can
    hold them). None where it cannot tell."""
    from anyio.streams.tls import TLSStream

    under: object = stream
    while isinstance(under, TLSStream):
        ssl_object, incoming = (
            getattr(under, "_ssl_object", None),
            getattr(under, "_read_bio", None),
        )
        if ssl_object is None or incoming is None:
            return None
        if ssl_object.pending() or incoming.pending:
            return True
        under = under.transport_stream
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


def tls_context(certificates: Certificates, protocols: tuple[str, ...]) -> ssl.SSLContext:
    """The client context (certificate and host name checked) for `certificates`, offering
    `protocols`: built once, on its first use. Raises `NetworkFailure` naming the setting
    whose file does not load."""
    key = (certificates, protocols)
    context = _contexts.get(key)
    if context is None:
        context = _trusting(certificates)
        context.set_alpn_protocols(list(protocols))
        _contexts[key] = context
    return context


def _trusting(certificates: Certificates) -> ssl.SSLContext:
    """The system's roots (`SSL_CERT_FILE`/`SSL_CERT_DIR` in place of OpenSSL's compiled-in
    ones), `[network] ca_bundle` on top, and our client certificate."""
    import ssl

    context = _system_trust(certificates.ca_file, certificates.ca_dir)
    bundle = certificates.ca_bundle
    if bundle is not None:
        folder = os.path.isdir(bundle)
        _load(
            lambda: context.load_verify_locations(
                None if folder else bundle, bundle if folder else None
            ),
            "[network] ca_bundle could not be loaded: give a file of PEM certificates, or a "
            "folder of hashed ones.",
        )
    if certificates.client_cert is not None:
        cert, key = certificates.client_cert, certificates.client_key
        _load(
            lambda: context.load_cert_chain(cert, key, password=_no_password),
            "[network] client_cert and client_key could not be loaded: give a PEM certificate "
            "and its key, unencrypted (or both in client_cert).",
        )
    assert isinstance(context, ssl.SSLContext)
    return context


def _load(step: Callable[[], None], failure: str) -> None:
    import ssl

    try:
        step()
    except (OSError, ssl.SSLError, ValueError):
        raise NetworkFailure(failure) from None


def _no_password() -> bytes:
    """An encrypted key fails to load rather than have OpenSSL ask on the terminal."""
    return b""


def _system_trust(ca_file: str | None, ca_dir: str | None) -> ssl.SSLContext:
    """A client context (certificate and host name checked) trusting the system's roots, and
    `ca_file` and `ca_dir` (SSL_CERT_FILE, SSL_CERT_DIR) in place of OpenSSL's compiled-in
    file and folder."""
    import ssl

    if sys.platform in ("win32", "darwin"):
        import truststore

        context: ssl.SSLContext = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if ca_file or ca_dir:
            _load(lambda: context.load_verify_locations(ca_file, ca_dir), _NOT_LOADED)
        return context
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    # The compiled-in paths, since `set_default_verify_paths()` would read SSL_CERT_* again.
    paths = ssl.get_default_verify_paths()
    cafile = ca_file or (paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None)
    capath = ca_dir or (paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None)
    if capath and not ca_dir and not cafile and not any(map(_is_hashed_cert, os.listdir(capath))):
        capath = None
    if not cafile and not capath:
        cafile = next(filter(os.path.isfile, CA_FILE_CANDIDATES), None)
    if ca_file or ca_dir:
        _load(lambda: context.load_verify_locations(cafile, capath), _NOT_LOADED)
    elif cafile or capath:
        context.load_verify_locations(cafile, capath)
    return context


_NOT_LOADED = (
    "SSL_CERT_FILE or SSL_CERT_DIR could not be loaded: give a file of PEM certificates, or a "
    "folder of hashed ones (or unset them)."
)


def _is_hashed_cert(name: str) -> bool:
    """OpenSSL's name for a certificate in a hashed directory."""
    import re

    return re.fullmatch(r"[0-9a-fA-F]{8}\.\d", name) is not None
