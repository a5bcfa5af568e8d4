"""Codex through ChatGPT sign-in: the Responses wire with OAuth tokens that expire.

Owns token freshness: refresh before a request when the access token is (nearly) expired,
and once more when the server answers 401. It must never log, print or raise a token; the
refresh answer is a bounded control response.
"""

import base64
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import aclosing

from magi_code import untrusted_json
from magi_code.config.credentials import CredentialStore, OAuthTokens
from magi_code.providers.base import ModelRequest, ProviderError, ProviderEvent
from magi_code.providers.limits import TOKEN_REFRESH_MARGIN_S
from magi_code.providers.openai_responses import request_body, stream_responses
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.registry import ConfigurationInvalid, base_url
from magi_code.providers.requests import control_request, status_error
from magi_code.records import field, record

DEFAULT_BASE_URL = "https://chatgpt.com/backend-api/codex"
DEFAULT_TOKEN_URL = "https://auth.openai.com/oauth/token"
DEFAULT_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"  # the Codex CLI's public OAuth client


def account_id_from_id_token(id_token: object) -> str | None:
    """The ChatGPT account id claim of an id token (read, not verified: it only routes)."""
    if not isinstance(id_token, str) or id_token.count(".") != 2:
        return None
    payload = id_token.split(".")[1]
    try:
        claims = untrusted_json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError:
        return None
    auth = claims.get("https://api.openai.com/auth") if isinstance(claims, dict) else None
    account = auth.get("chatgpt_account_id") if isinstance(auth, dict) else None
    return account if isinstance(account, str) else None


def tokens_from_answer(
    text: str, previous_refresh: str, now: float, account_id: str | None
) -> OAuthTokens:
    """Tokens from a token endpoint's JSON answer; any other shape is an auth failure."""
    try:
        value = untrusted_json.loads(text)
    except ValueError:
        raise ProviderError("auth_failed", detail="token answer is not JSON") from None
    if not isinstance(value, dict) or not isinstance(value.get("access_token"), str):
        raise ProviderError("auth_failed", detail="token answer has no access token")
    refresh = value.get("refresh_token")
    expires_in = value.get("expires_in")
    lifetime = float(expires_in) if isinstance(expires_in, int | float) else 3600.0
    return OAuthTokens(
        value["access_token"],
        refresh if isinstance(refresh, str) and refresh else previous_refresh,
        now + lifetime,
        account_id_from_id_token(value.get("id_token")) or account_id,
    )


@record(frozen=False)
class CodexAuth:
    provider_id: str
    store: CredentialStore
    token_url: str = DEFAULT_TOKEN_URL
    client_id: str = DEFAULT_CLIENT_ID
    policy: HttpPolicy = field(default_factory=HttpPolicy)
    clock: Callable[[], float] = time.time

    async def tokens(self, *, force_refresh: bool = False) -> OAuthTokens:
        tokens = self.store.oauth(self.provider_id)
        if tokens is None:
            raise ProviderError("auth_failed", detail="not signed in")
        if force_refresh or tokens.expires_at - TOKEN_REFRESH_MARGIN_S <= self.clock():
            tokens = await self.refresh(tokens)
        return tokens

    async def refresh(self, tokens: OAuthTokens) -> OAuthTokens:
        if not tokens.refresh_token:
            raise ProviderError("auth_failed", detail="token expired and cannot refresh")
        answer = await control_request(
            "POST",
            self.token_url,
            self.policy,
            json={
                "client_id": self.client_id,
                "grant_type": "refresh_token",
                "refresh_token": tokens.refresh_token,
                "scope": "openid profile email",
            },
        )
        if answer.status >= 400:
            error = status_error(answer.status, answer.body, self.policy)
            if error.code in ("refused", "context_overflow"):
                error = ProviderError("auth_failed", status=answer.status)
            raise error
        if not answer.body.complete:
            raise ProviderError("transport_failed", retryable=True, detail="token answer cut")
        fresh = tokens_from_answer(
            answer.body.text, tokens.refresh_token, self.clock(), tokens.account_id
        )
        self.store.set_oauth(self.provider_id, fresh)
        return fresh


@record(frozen=False)
class CodexProvider:
    id: str
    auth: CodexAuth
    base_url: str = DEFAULT_BASE_URL
    policy: HttpPolicy = field(default_factory=HttpPolicy)

    def _headers(self, tokens: OAuthTokens) -> dict[str, str]:
        headers = {
            "accept": "text/event-stream",
            "authorization": f"Bearer {tokens.access_token}",
            "openai-beta": "responses=experimental",
            "originator": "codex_cli_rs",
        }
        if tokens.account_id:
            headers["chatgpt-account-id"] = tokens.account_id
        return headers

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        body = request_body(request)
        url = self.base_url.rstrip("/") + "/responses"
        for second in (False, True):
            tokens = await self.auth.tokens(force_refresh=second)
            delivered = False
            events = stream_responses(url, self._headers(tokens), body, self.policy)
            try:
                async with aclosing(events):
                    async for event in events:
                        delivered = True
                        yield event
                return
            except ProviderError as error:
                if error.code != "auth_failed" or delivered or second:
                    raise


def build(
    provider_id: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    policy: HttpPolicy | None,
) -> CodexProvider:
    """The registry's row for `codex` (providers/registry.py)."""
    url = base_url(conf, "codex")
    policy = policy or HttpPolicy()
    token_url, client_id = auth_settings(conf)
    return CodexProvider(
        provider_id, CodexAuth(provider_id, credentials, token_url, client_id, policy), url, policy
    )


def auth_settings(conf: Mapping[str, object]) -> tuple[str, str]:
    """The sign-in's token URL and client id: the provider's own, else the Codex CLI's."""
    token_url = conf.get("token_url", DEFAULT_TOKEN_URL)
    client_id = conf.get("client_id", DEFAULT_CLIENT_ID)
    if not isinstance(token_url, str) or not isinstance(client_id, str):
        raise ConfigurationInvalid("token_url and client_id must be strings")
    return token_url, client_id
