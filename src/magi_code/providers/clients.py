"""One HTTP client per provider origin per process: built on the first request to that origin,
reused by every later request of every turn (keep-alive), closed at shutdown.

A client belongs to the event loop that built it (its connections are that loop's sockets):
a request from another loop gets a client of its own. The system's TLS context is built once,
on the first https origin, and shared; an http origin's client gets a context that trusts
nothing, because it never opens TLS (redirects are not followed, environment proxies are
ignored). httpx2 and ssl are imported here, on the first request, never before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from magi_code.providers.limits import KEEPALIVE_S

if TYPE_CHECKING:
    import ssl

    import httpx2

    from magi_code.providers.http import HttpPolicy

T = TypeVar("T")
# origin and timeouts -> (the loop it belongs to, the client)
_Key = tuple[str, str, int | None, float, float]
_clients: dict[_Key, tuple[asyncio.AbstractEventLoop, httpx2.AsyncClient]] = {}
_system_tls: ssl.SSLContext | None = None


def client_for(url: str, policy: HttpPolicy) -> httpx2.AsyncClient:
    """The client for `url`'s origin in the running loop; raises `httpx2.InvalidURL`."""
    import httpx2

    try:
        parts = urlsplit(url)
        key: _Key = (
            parts.scheme,
            parts.hostname or "",
            parts.port,
            policy.connect_s,
            policy.inactivity_s,
        )
    except ValueError:
        raise httpx2.InvalidURL("invalid URL") from None
    loop = asyncio.get_running_loop()
    held = _clients.get(key)
    if held is not None and held[0] is loop and not held[1].is_closed:
        return held[1]
    client = _new_client(policy, https=parts.scheme == "https")
    _clients[key] = (loop, client)
    return client


async def closing(work: Awaitable[T]) -> T:
    """Await `work`, then close this loop's clients: for a command that runs one loop."""
    try:
        return await work
    finally:
        await close_clients()


async def close_clients() -> None:
    """Close the clients of the running loop (shutdown); a later request builds a new one."""
    loop = asyncio.get_running_loop()
    for key, (owner, client) in list(_clients.items()):
        if owner is loop or owner.is_closed():
            del _clients[key]
        if owner is loop:
            await client.aclose()


def _new_client(policy: HttpPolicy, *, https: bool) -> httpx2.AsyncClient:
    import httpx2

    from magi_code.providers.http import quiet_transport_logs

    quiet_transport_logs()
    timeout = httpx2.Timeout(
        connect=policy.connect_s,
        read=policy.inactivity_s,  # between received chunks: the inactivity bound
        write=policy.inactivity_s,
        pool=policy.connect_s,
    )
    limits = httpx2.Limits(keepalive_expiry=KEEPALIVE_S)
    return httpx2.AsyncClient(
        timeout=timeout,
        limits=limits,
        verify=_tls_context(https),
        trust_env=False,
        follow_redirects=False,
    )


def _tls_context(https: bool) -> ssl.SSLContext:
    global _system_tls
    import ssl

    if not https:
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, and trusts no certificate
    if _system_tls is None:
        import httpx2

        _system_tls = httpx2.create_ssl_context(verify=True, trust_env=False)
    return _system_tls
