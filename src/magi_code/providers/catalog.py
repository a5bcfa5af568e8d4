"""Model discovery: each provider with `discover = true` lists its models from its endpoint;
the listings are cached in MC_HOME for DISCOVERY_CACHE_S.

Rules: a successful listing, even an empty one, replaces that provider's cached listing; a
failed request keeps the last one and names the provider in `failed`; `refresh` bypasses
freshness. Listing only: this module must never run inference or log a body or credential.
"""

import json
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from magi_code import untrusted_json
from magi_code.config.credentials import CredentialsError, CredentialStore
from magi_code.limits import DISCOVERY_CACHE_S
from magi_code.providers.base import ProviderError
from magi_code.providers.http import HttpPolicy, control_request, status_error
from magi_code.providers.limits import CATALOG_BODY_BYTES
from magi_code.providers.registry import (
    ConfigurationInvalid,
    api_key,
    base_url,
    scoped_credentials,
    wire_api,
)

CACHE_FILE = "models-cache.json"


@dataclass(frozen=True)
class Catalog:
    cards: list[dict[str, object]]
    failed: list[str]
    refreshed: bool

    def as_json(self) -> dict[str, object]:
        return {"models": self.cards, "refreshed": self.refreshed, "failed": self.failed}


def parse_listing(text: str) -> list[str]:
    """Model ids from `{"data": [{"id": ...}]}` (OpenAI, Anthropic, compatible servers) or
    `{"models": [{"id"|"slug": ...}]}`; anything else is a failed listing."""
    try:
        value = untrusted_json.loads(text)
    except ValueError:
        raise ProviderError("malformed_stream", detail="listing is not JSON") from None
    rows = value.get("data", value.get("models")) if isinstance(value, dict) else None
    if not isinstance(rows, list):
        raise ProviderError("malformed_stream", detail="listing has no model list")
    ids: list[str] = []
    for row in rows:
        name = row.get("id", row.get("slug")) if isinstance(row, dict) else None
        if isinstance(name, str) and name and name not in ids:
            ids.append(name)
    return ids


async def _headers(
    provider_id: str,
    wire: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    policy: HttpPolicy,
) -> dict[str, str]:
    if wire == "codex":
        from magi_code.providers.codex import CodexAuth, auth_settings

        token_url, client_id = auth_settings(conf)
        auth = CodexAuth(provider_id, credentials, token_url, client_id, policy)
        tokens = await auth.tokens()
        headers = {"authorization": f"Bearer {tokens.access_token}"}
        if tokens.account_id:
            headers["chatgpt-account-id"] = tokens.account_id
        return headers
    key = api_key(provider_id, conf, credentials, env)
    if wire == "anthropic":
        from magi_code.providers.anthropic import API_VERSION

        return {"anthropic-version": API_VERSION, **({"x-api-key": key} if key else {})}
    return {"authorization": f"Bearer {key}"} if key else {}


async def fetch_listing(
    provider_id: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    policy: HttpPolicy,
) -> list[str]:
    """GET {base_url}/models under the control-response bounds; raises ProviderError."""
    wire = wire_api(provider_id, conf)
    url = base_url(conf, wire).rstrip("/") + "/models"
    headers = await _headers(provider_id, wire, conf, credentials, env, policy)
    answer = await control_request(
        "GET", url, policy, headers=headers, body_bytes=CATALOG_BODY_BYTES
    )
    if answer.status >= 400:
        raise status_error(answer.status, answer.body, policy)
    if not answer.body.complete:
        raise ProviderError("transport_failed", retryable=True, detail="listing cut short")
    return parse_listing(answer.body.text)


def load_cache(mc_home: Path) -> dict[str, dict[str, object]]:
    try:
        value = json.loads((mc_home / CACHE_FILE).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(v, dict)}


def save_cache(mc_home: Path, cache: Mapping[str, object]) -> None:
    mc_home.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".models.", dir=mc_home)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(cache, f, indent=1, sort_keys=True)
    os.replace(tmp, mc_home / CACHE_FILE)


def _fresh(entry: Mapping[str, object] | None, now: float) -> bool:
    fetched = entry.get("fetched_at") if entry else None
    return isinstance(fetched, int | float) and 0 <= now - fetched < DISCOVERY_CACHE_S


def _cached_models(entry: Mapping[str, object] | None) -> list[str]:
    models = entry.get("models") if entry else None
    return [m for m in models if isinstance(m, str)] if isinstance(models, list) else []


async def build_catalog(
    providers: Mapping[str, Mapping[str, object]],
    mc_home: Path,
    credentials: CredentialStore,
    env: Mapping[str, str],
    *,
    refresh: bool = False,
    policy: HttpPolicy | None = None,
    now: float | None = None,
    sent_to: Mapping[str, Mapping[str, object]],  # registry: where credentials may go
) -> Catalog:
    policy = policy or HttpPolicy(attempts=1)
    now = time.time() if now is None else now
    cache = load_cache(mc_home)
    cards: list[dict[str, object]] = []
    failed: list[str] = []
    for provider_id, conf in providers.items():
        configured = conf.get("models", [])
        seen = [m for m in configured if isinstance(m, str)] if isinstance(configured, list) else []
        cards += [{"provider": provider_id, "model": m, "source": "configured"} for m in seen]
        if conf.get("discover") is not True:
            continue
        entry = cache.get(provider_id)
        if refresh or not _fresh(entry, now):
            try:
                origin = sent_to.get(provider_id)
                store, scoped_env = scoped_credentials(provider_id, conf, credentials, env, origin)
                models = await fetch_listing(provider_id, conf, store, scoped_env, policy)
            except (ProviderError, ConfigurationInvalid, CredentialsError):
                failed.append(provider_id)
            else:
                entry = {"fetched_at": now, "models": models}
                cache[provider_id] = entry
        cards += [
            {"provider": provider_id, "model": m, "source": "discovered"}
            for m in _cached_models(entry)
            if m not in seen
        ]
    save_cache(mc_home, cache)
    return Catalog(cards, failed, refresh)
