"""OAuth for streamable-HTTP MCP servers, on the SDK's `OAuthClientProvider`.

Rules:
- Tokens, the registered client and the authorization server's metadata of a server live in
  the credential store (0600) under its settings name, bound to its URL: state stored for
  another URL is never sent (a project cannot borrow a token by reusing a name).
- Startup (`startup_auth`) refreshes an expired access token through the stored token
  endpoint, with no prompt: where the flow would need a person (no token, or its refresh
  refused), `LoginRequired` ends it and the server fails with `mcp_unavailable`.
- `magi-code mcp login` (`LoginFlow`) registers afresh, then runs the authorization-code flow
  with PKCE: the URL is printed (and opened in a browser when a terminal is there), and the
  code comes back to a one-shot listener on 127.0.0.1 at an ephemeral port, bounded in time
  and in bytes.
- Nothing here prints, logs or returns a token.
"""

import contextlib
import sys
import time
import webbrowser
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, ValidationError

from magi_code.config.credentials import CredentialStore
from magi_code.mcp.limits import CALLBACK_BYTES, LOGIN_S

CALLBACK_PATH = "/callback"
CLIENT_NAME = "magi-code"
_PAGE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"magi-code: sign-in received; you can close this tab.\n"
)
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n"


class LoginRequired(Exception):
    """The flow reached the step that needs a person; raised where no person may be asked."""


class CredentialTokenStorage:
    """The SDK's TokenStorage over the credential store, for one server and URL."""

    def __init__(self, store: CredentialStore, server: str, url: str) -> None:
        self.store, self.server, self.url = store, server, url

    def _state(self) -> dict[str, Any]:
        state = self.store.mcp_oauth(self.server)
        return state if state is not None and state.get("url") == self.url else {"url": self.url}

    def _update(self, **fields: object) -> None:
        self.store.set_mcp_oauth(self.server, {**self._state(), **fields})

    def has_tokens(self) -> bool:
        return isinstance(self._state().get("tokens"), dict)

    async def get_tokens(self) -> OAuthToken | None:
        state = self._state()
        tokens, expires_at = state.get("tokens"), state.get("expires_at")
        if not isinstance(tokens, dict):
            return None
        try:
            token = OAuthToken.model_validate(tokens)
        except ValidationError:
            return None
        if isinstance(expires_at, int | float) and not isinstance(expires_at, bool):
            token.expires_in = int(expires_at - time.time())  # may be negative: expired
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = None if tokens.expires_in is None else time.time() + int(tokens.expires_in)
        self._update(
            tokens=tokens.model_dump(mode="json", exclude={"expires_in"}), expires_at=expires_at
        )

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = self._state().get("client")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._update(client=client_info.model_dump(mode="json", exclude_none=True))

    def metadata(self) -> OAuthMetadata | None:
        raw = self._state().get("metadata")
        try:
            return OAuthMetadata.model_validate(raw) if raw is not None else None
        except ValidationError:
            return None

    def set_metadata(self, metadata: OAuthMetadata | None) -> None:
        if metadata is not None:
            self._update(metadata=metadata.model_dump(mode="json", exclude_none=True))


class StoredOAuthProvider(OAuthClientProvider):
    """The SDK's provider, also restoring what the SDK keeps only in memory: the token's expiry
    (so an expired token is refreshed before use, not sent) and the token endpoint."""

    def __init__(self, storage: CredentialTokenStorage, **kwargs: Any) -> None:
        super().__init__(storage.url, storage=storage, **kwargs)
        self.credentials = storage

    async def _initialize(self) -> None:
        await super()._initialize()
        tokens = self.context.current_tokens
        if tokens is not None and tokens.expires_in is not None:
            self.context.update_token_expiry(tokens)
        if self.context.oauth_metadata is None:
            self.context.oauth_metadata = self.credentials.metadata()


def client_metadata(redirect_uri: str) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


def startup_auth(
    store: CredentialStore, server: str, url: str, on_login_needed: Callable[[], None]
) -> StoredOAuthProvider | None:
    """The auth of a server with a stored login; None when it has none. Never prompts."""
    storage = CredentialTokenStorage(store, server, url)
    if not storage.has_tokens():
        return None

    async def refuse(*_: object) -> Any:
        on_login_needed()
        raise LoginRequired

    return StoredOAuthProvider(
        storage,
        client_metadata=client_metadata(f"http://127.0.0.1{CALLBACK_PATH}"),
        redirect_handler=refuse,
        callback_handler=refuse,
    )


class LoginFlow:
    """One interactive login: the loopback listener and the provider that uses it."""

    def __init__(self, store: CredentialStore, server: str, url: str, show: Callable[[str], None]):
        self.storage = CredentialTokenStorage(store, server, url)
        self.show = show
        self.result: AuthorizationCodeResult | None = None
        self.received = anyio.Event()

    async def serve(self, listener: anyio.abc.Listener[anyio.abc.SocketStream]) -> None:
        """Answer requests on the listener until cancelled (run_login cancels it once the
        sign-in is over); the first that brings the authorization response is kept."""
        async with listener:
            await listener.serve(self._one)

    async def _one(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            head = b""
            with anyio.move_on_after(LOGIN_S):
                while b"\r\n\r\n" not in head and len(head) <= CALLBACK_BYTES:
                    try:
                        head += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                        return
            line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            target = urlsplit(line[1]) if len(line) == 3 and line[0] == "GET" else None
            taken = self.result is not None or len(head) > CALLBACK_BYTES
            if target is None or target.path != CALLBACK_PATH or taken:
                await stream.send(_NOT_FOUND)
                return
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            self.result = AuthorizationCodeResult(
                code=query.get("code", ""), state=query.get("state"), iss=query.get("iss")
            )
            self.received.set()
            await stream.send(_PAGE)

    def provider(self, port: int) -> StoredOAuthProvider:
        async def redirect(url: str) -> None:
            self.show(url)
            if sys.stderr.isatty():  # a person is there; never a browser under tests or pipes
                with contextlib.suppress(webbrowser.Error):
                    webbrowser.open(url)

        async def callback() -> AuthorizationCodeResult:
            await self.received.wait()
            assert self.result is not None
            return self.result

        return StoredOAuthProvider(
            self.storage,
            client_metadata=client_metadata(f"http://127.0.0.1:{port}{CALLBACK_PATH}"),
            redirect_handler=redirect,
            callback_handler=callback,
        )
