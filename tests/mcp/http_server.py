"""A real streamable-HTTP MCP server for tests, on the SDK's MCPServer and uvicorn.

`python http_server.py DIR [oauth]` binds 127.0.0.1 at an ephemeral port and writes, in DIR:
`port` (once listening), `pid`, and `requests` (one "METHOD PATH [grant_type]" line per HTTP
request, flushed as it arrives). Tools: `echo(text)`, `nap(seconds)`, `die()` (the server exits
mid-call), `sample()` (asks the client to sample; returns what happened) and `grow()` (adds the
tool `extra` and announces the new list).

With `oauth`, the server is also its own authorization server (in memory: dynamic client
registration, authorization code with PKCE, refresh), approving every authorization at once,
and only a bearer token it issued reaches the MCP endpoint. `POST /test/revoke` forgets every
token it issued (refresh tokens included).
"""

import os
import secrets
import socket
import sys
import time
import warnings
from pathlib import Path
from typing import Any


def main() -> None:
    folder, oauth = Path(sys.argv[1]), sys.argv[2:] == ["oauth"]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # before `port` is written: a client may connect at once
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    (folder / "pid").write_text(str(os.getpid()))
    app = build(base, oauth, folder / "requests")
    import uvicorn

    config = uvicorn.Config(app, log_level="critical", lifespan="on")
    server = uvicorn.Server(config)
    (folder / "port.tmp").write_text(str(port))
    os.replace(folder / "port.tmp", folder / "port")
    server.run(sockets=[sock])


def build(base: str, oauth: bool, log: Path) -> Any:
    warnings.simplefilter("ignore")
    import mcp_types
    from mcp.server.mcpserver import Context, MCPServer

    extra: dict[str, Any] = {}
    if oauth:
        from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions

        provider = MemoryAuthority(base)
        extra = {
            "auth_server_provider": provider,
            "auth": AuthSettings(
                issuer_url=base,
                resource_server_url=f"{base}/mcp",
                validate_token_resource=False,
                client_registration_options=ClientRegistrationOptions(enabled=True),
            ),
        }
    server = MCPServer("http-test", **extra)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool()
    async def nap(seconds: float) -> str:
        """Sleep, then answer."""
        import anyio

        await anyio.sleep(seconds)
        return "awake"

    @server.tool()
    def die() -> str:
        """Exit the server at once."""
        os._exit(1)

    @server.tool()
    async def sample(ctx: Context) -> str:
        """Ask the client to sample a message."""
        message = mcp_types.SamplingMessage(
            role="user", content=mcp_types.TextContent(type="text", text="hi")
        )
        try:
            await ctx.session.create_message([message], max_tokens=5)
        except Exception as exc:  # noqa: BLE001 - the test reads what happened
            return f"refused: {type(exc).__name__}"
        return "sampled"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool `extra`, then announce the new list."""

        def extra_tool() -> str:
            """A tool added at run time."""
            return "extra"

        server.add_tool(extra_tool, name="extra")
        await ctx.session.send_tool_list_changed()
        return "grown"

    if oauth:
        from starlette.requests import Request
        from starlette.responses import Response

        @server.custom_route("/test/revoke", methods=["POST"])
        async def revoke(request: Request) -> Response:
            provider.tokens.clear()
            provider.refresh.clear()
            return Response(status_code=204)

    return Logged(server.streamable_http_app(), log)


class Logged:
    """ASGI middleware: one line per request (with the token grant type), before it runs."""

    def __init__(self, app: Any, log: Path) -> None:
        self.app, self.log = app, log

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = b""
        if scope["path"] == "/token":
            chunks = []
            more = True
            while more:
                message = await receive()
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            body = b"".join(chunks)
            replay = [{"type": "http.request", "body": body, "more_body": False}]

            async def receive() -> Any:  # the body, read once, given again
                return replay.pop() if replay else {"type": "http.disconnect"}

        from urllib.parse import parse_qs

        grant = parse_qs(body.decode()).get("grant_type", [""])[0]
        with self.log.open("a") as handle:
            handle.write(f"{scope['method']} {scope['path']} {grant}".rstrip() + "\n")
        await self.app(scope, receive, send)


class MemoryAuthority:
    """An OAuthAuthorizationServerProvider in memory that approves every authorization."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.clients: dict[str, Any] = {}
        self.codes: dict[str, Any] = {}
        self.tokens: dict[str, Any] = {}
        self.refresh: dict[str, Any] = {}

    async def get_client(self, client_id: str) -> Any:
        return self.clients.get(client_id)

    async def register_client(self, client_info: Any) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: Any, params: Any) -> str:
        from mcp.server.auth.provider import AuthorizationCode, construct_redirect_uri

        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: Any, authorization_code: str) -> Any:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client: Any, authorization_code: Any) -> Any:
        del self.codes[authorization_code.code]
        return self._issue(client.client_id, authorization_code.scopes)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> Any:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: Any, refresh_token: Any, scopes: list[str]
    ) -> Any:
        del self.refresh[refresh_token.token]
        return self._issue(client.client_id, scopes or refresh_token.scopes)

    async def load_access_token(self, token: str) -> Any:
        return self.tokens.get(token)

    async def revoke_token(self, token: Any) -> None:
        self.tokens.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str]) -> Any:
        from mcp.server.auth.provider import AccessToken, RefreshToken
        from mcp.shared.auth import OAuthToken

        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.tokens[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + 3600
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=access, expires_in=3600, refresh_token=refresh, scope=" ".join(scopes)
        )


if __name__ == "__main__":
    main()
