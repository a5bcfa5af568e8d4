"""`magi-code mcp login NAME`: one interactive OAuth sign-in to a streamable-HTTP server.

The previous sign-in of the server is forgotten first (a new loopback port means a new
registration). Then the server is connected through the SDK with the interactive provider of
`oauth.LoginFlow`: its 401 starts discovery, registration and the authorization-code flow with
PKCE; the code arrives on the loopback listener; the tokens, the client and the authorization
server's metadata land in the credential store. The whole sign-in is bounded by LOGIN_S.
Failures are LoginFailed with a fixed phrase: never a server's text, never a token.
"""

import os
from collections.abc import Callable

import anyio
import httpx2
from anyio.abc import SocketAttribute
from mcp import ClientSession

from magi_code.config.credentials import CredentialStore
from magi_code.mcp.definitions import ServerDef
from magi_code.mcp.errors import McpUnavailable
from magi_code.mcp.http_transport import open_http, resolve_headers
from magi_code.mcp.limits import LOGIN_S
from magi_code.mcp.manager import CLIENT_INFO, list_tools
from magi_code.mcp.oauth import LoginFlow


class LoginFailed(Exception):
    """A fixed phrase saying why the sign-in failed."""


async def run_login(
    server: ServerDef, store: CredentialStore, show: Callable[[str], None]
) -> int | None:
    """Sign in; the server's tool count, or None when it asked for no sign-in."""
    assert server.url is not None
    try:
        headers = resolve_headers(server, os.environ)
    except McpUnavailable:
        raise LoginFailed("an environment variable its headers name is not set") from None
    if any(key.lower() == "authorization" for key in headers):
        raise LoginFailed("it is configured with a static Authorization; there is no sign-in")
    store.remove_mcp_oauth(server.name)
    flow = LoginFlow(store, server.name, server.url, show)
    try:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    except OSError:
        raise LoginFailed("no loopback port for the sign-in callback") from None
    provider = flow.provider(listener.extra(SocketAttribute.local_port))
    try:
        with anyio.fail_after(LOGIN_S):
            async with anyio.create_task_group() as group:
                group.start_soon(flow.serve, listener)
                count = await _connect(server, provider)
                group.cancel_scope.cancel()
    except TimeoutError:
        raise LoginFailed("no sign-in arrived in time") from None
    except Exception:  # noqa: BLE001 - whatever the SDK's flow raises is one fixed phrase
        raise LoginFailed("the server or its authorization server refused it") from None
    if not flow.storage.has_tokens():
        return None
    flow.storage.set_metadata(provider.context.oauth_metadata)
    return count


async def _connect(server: ServerDef, auth: httpx2.Auth) -> int:
    def never() -> None:
        pass  # interactive: the provider asks the person instead

    async with (
        open_http(server, os.environ, None, never, login=auth) as (read, write),
        ClientSession(read, write, client_info=CLIENT_INFO) as session,
    ):
        await session.initialize()
        return len(await list_tools(session))
