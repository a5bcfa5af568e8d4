"""The streamable-HTTP transport of one MCP server, on the SDK's client: headers, credentials.

Rules:
- Header values are literal, or `env:NAME` read from the environment of this process at
  startup; `bearer_token_env` becomes `Authorization: Bearer <value>`. A named variable that
  is unset or empty fails the server (McpUnavailable): no request goes out half-credentialed.
- A server with a stored OAuth login and no static Authorization uses it (mcp/oauth.py);
  a 401 from a server we have no login for marks it as needing one. Startup never prompts.
- The SDK's client context owns the HTTP session: leaving it in order sends the DELETE that
  ends the session, so the owner leaves it in order (manager.py), never by a bare cancel.
- Every answer goes through http_answers.py (bounded at MESSAGE_BYTES, never decompressed,
  a failed exchange failing its call only), on a direct connection or through the proxy that
  the provider client would take (providers/network.py: the environment, `[network]`).
"""

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager

import httpx2
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client

from magi_code.config.credentials import CredentialStore
from magi_code.mcp.definitions import ENV_PREFIX, ServerDef
from magi_code.mcp.errors import McpUnavailable
from magi_code.mcp.http_answers import REFUSED, BoundedTransport
from magi_code.mcp.limits import CALL_TIMEOUT_S, HTTP_TIMEOUT_S, MESSAGE_BYTES
from magi_code.mcp.oauth import startup_auth
from magi_code.providers.network import NetworkFailure
from magi_code.providers.pool import outbound

UNSET = "a variable its headers or bearer_token_env name is unset or empty"


def resolve_headers(server: ServerDef, env: Mapping[str, str]) -> dict[str, str]:
    """The headers to send, `env:` values and the bearer variable read from `env`."""
    out: dict[str, str] = {}
    for key, value in server.headers.items():
        if value.startswith(ENV_PREFIX):
            value = env.get(value[len(ENV_PREFIX) :], "")
            if not value:
                raise McpUnavailable(server.name, UNSET)
        out[key] = value
    if server.bearer_token_env is not None:
        token = env.get(server.bearer_token_env, "")
        if not token:
            raise McpUnavailable(server.name, UNSET)
        out["Authorization"] = f"Bearer {token}"
    return out


def http_client(
    server: ServerDef,
    env: Mapping[str, str],
    credentials: CredentialStore | None,
    on_login_needed: Callable[[], None],
    login: httpx2.Auth | None = None,
    on_error_status: Callable[[int, str | None], None] | None = None,
) -> httpx2.AsyncClient:
    """The client of one server; `login` is the interactive auth of `mcp login`, else the
    stored login is used without prompting. `on_error_status` hears each status >= 400, with
    our word for a failed exchange (http_answers.REFUSED) when the 502 is our stand-in."""
    assert server.url is not None
    headers = resolve_headers(server, env)
    static = any(key.lower() == "authorization" for key in headers)
    auth = login
    if auth is None and credentials is not None and not static:
        auth = startup_auth(credentials, server.name, server.url, on_login_needed)

    async def on_response(response: httpx2.Response) -> None:
        if response.status_code == 401 and auth is None and not static:
            on_login_needed()
        if response.status_code >= 400 and on_error_status is not None:
            on_error_status(response.status_code, response.extensions.get(REFUSED))

    return httpx2.AsyncClient(
        headers={**headers, "Accept-Encoding": "identity"},
        auth=auth,
        timeout=httpx2.Timeout(HTTP_TIMEOUT_S, read=CALL_TIMEOUT_S),
        event_hooks={"response": [on_response]},
        transport=BoundedTransport(outbound_transport(server.url)),
    )


def outbound_transport(url: str) -> httpx2.AsyncHTTPTransport:
    """The way out to `url` the provider client would take (providers/network.py): through the
    proxy the environment or `[network] proxy` names for it, if any, with the certificate
    authorities and client certificate of `[network]`. A setting that cannot be used makes the
    server unavailable."""
    try:
        proxy, tls = outbound(url)
    except (NetworkFailure, ValueError):
        raise McpUnavailable(None, "the [network] settings for it cannot be used") from None
    if proxy is None:
        return httpx2.AsyncHTTPTransport(verify=tls)
    over_tls = proxy.startswith("https:")  # an https proxy's certificate is checked alike
    through = httpx2.Proxy(proxy, ssl_context=tls if over_tls else None)
    return httpx2.AsyncHTTPTransport(verify=tls, proxy=through)


@asynccontextmanager
async def open_http(
    server: ServerDef,
    env: Mapping[str, str],
    credentials: CredentialStore | None,
    on_login_needed: Callable[[], None],
    login: httpx2.Auth | None = None,
    on_error_status: Callable[[int, str | None], None] | None = None,
) -> AsyncIterator[TransportStreams]:
    assert server.url is not None
    async with (
        http_client(server, env, credentials, on_login_needed, login, on_error_status) as client,
        streamable_http_client(
            server.url, http_client=client, max_sse_event_size=MESSAGE_BYTES
        ) as streams,
    ):
        yield streams
