"""Model discovery, and the cards `magi-code models` lists.

Cards: each provider's configured models; a preset's models from the built-in catalog
(providers/models.json, read by known_models.py: context window, prices, images) when the
preset is in use (selected, or its credential at hand); then what discovery cached, in
MC_HOME for DISCOVERY_CACHE_S. A provider with `discover = true` lists its models from its
endpoint when its listing is stale; `refresh` bypasses freshness and also asks each preset in
use, at its own listing (Ollama's /api/tags).

Rules: a successful listing, even an empty one, replaces that provider's cached listing; a
failed request keeps the last one and names the provider in `failed`, with what the provider
said in `reasons` (a bounded, redacted message, for a person). Listing only: this module must
never run inference or log a body or credential.
"""

import json
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urljoin

from magi_code import untrusted_json
from magi_code.config.credentials import CredentialsError, CredentialStore
from magi_code.limits import DISCOVERY_CACHE_S
from magi_code.providers import known_models
from magi_code.providers.anthropic import API_VERSION
from magi_code.providers.base import ProviderError, failure_detail, failure_summary
from magi_code.providers.codex import CodexAuth, auth_settings
from magi_code.providers.failures import Advice
from magi_code.providers.known_models import CACHE_FILE as CACHE_FILE
from magi_code.providers.known_models import cached_models
from magi_code.providers.limits import CATALOG_BODY_BYTES
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.registry import (
    ConfigurationInvalid,
    api_key,
    base_url,
    credential_at_hand,
    scoped_credentials,
    wire_api,
)
from magi_code.providers.requests import control_request, status_error
from magi_code.records import field, record


@record
class Catalog:
    cards: list[dict[str, object]]
    failed: list[str]
    refreshed: bool
    # Why each failed listing failed, for a person (failure_detail: never on a wire or in JSON)
    reasons: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        return {"models": self.cards, "refreshed": self.refreshed, "failed": self.failed}


def parse_listing(text: str) -> list[str]:
    """Model ids from `{"data": [{"id": ...}]}` (OpenAI, Anthropic, compatible servers) or
    `{"models": [{"id"|"slug"|"name"|"model": ...}]}` (Codex; Ollama's /api/tags); anything
    else is a failed listing."""
    try:
        value = untrusted_json.loads(text)
    except ValueError:
        raise ProviderError("malformed_stream", detail="listing is not JSON") from None
    rows = value.get("data", value.get("models")) if isinstance(value, dict) else None
    if not isinstance(rows, list):
        raise ProviderError("malformed_stream", detail="listing has no model list")
    ids: list[str] = []
    for row in rows:
        name = _row_name(row) if isinstance(row, dict) else None
        if isinstance(name, str) and name and name not in ids:
            ids.append(name)
    return ids


def _row_name(row: Mapping[str, object]) -> object:
    return next((row[key] for key in ("id", "slug", "name", "model") if key in row), None)


async def _headers(
    provider_id: str,
    wire: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    policy: HttpPolicy,
) -> dict[str, str]:
    if wire == "codex":
        token_url, client_id = auth_settings(conf)
        auth = CodexAuth(provider_id, credentials, token_url, client_id, policy)
        tokens = await auth.tokens()
        headers = {"authorization": f"Bearer {tokens.access_token}"}
        if tokens.account_id:
            headers["chatgpt-account-id"] = tokens.account_id
        return headers
    key = api_key(provider_id, conf, credentials, env)
    if wire == "anthropic":
        return {"anthropic-version": API_VERSION, **({"x-api-key": key} if key else {})}
    return {"authorization": f"Bearer {key}"} if key else {}


def listing_url(provider_id: str, conf: Mapping[str, object]) -> str:
    """Where the provider lists its models: `{base_url}/models`, or the preset's own listing
    (a path from the origin when it starts with "/": Ollama's /api/tags)."""
    entry = known_models.preset(provider_id, conf)
    path = str(entry["listing"]) if entry is not None else "models"
    return urljoin(base_url(conf, wire_api(provider_id, conf)).rstrip("/") + "/", path)


async def fetch_listing(
    provider_id: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    policy: HttpPolicy,
) -> list[str]:
    """GET the provider's listing under the control-response bounds; raises ProviderError."""
    wire = wire_api(provider_id, conf)
    url = listing_url(provider_id, conf)
    headers = await _headers(provider_id, wire, conf, credentials, env, policy)
    answer = await control_request(
        "GET", url, policy, headers=headers, body_bytes=CATALOG_BODY_BYTES
    )
    if answer.status >= 400:
        raise status_error(answer.status, answer.body, policy)
    if not answer.body.complete:
        raise ProviderError("transport_failed", retryable=True, detail="listing cut short")
    return parse_listing(answer.body.text)


def save_cache(mc_home: Path, cache: Mapping[str, object]) -> None:
    mc_home.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".models.", dir=mc_home)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(cache, f, indent=1, sort_keys=True)
    os.replace(tmp, mc_home / CACHE_FILE)


def _fresh(entry: Mapping[str, object] | None, now: float) -> bool:
    fetched = entry.get("fetched_at") if entry else None
    return isinstance(fetched, int | float) and 0 <= now - fetched < DISCOVERY_CACHE_S


def in_use(
    provider_id: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    *,
    selected: str | None,
    sent_to: Mapping[str, Mapping[str, object]],
) -> bool:
    """Whether a provider's models are listed: any but a preset always; a preset when it is
    selected or its credential is at hand (a keyless local one only when selected)."""
    if known_models.preset(provider_id, conf) is None or provider_id == selected:
        return True
    origin = sent_to.get(provider_id)
    return credential_at_hand(provider_id, conf, credentials, env, sent_to=origin)


def offered_models(
    providers: Mapping[str, Mapping[str, object]],
    mc_home: Path,
    credentials: CredentialStore,
    env: Mapping[str, str],
    *,
    selected: str | None,
    sent_to: Mapping[str, Mapping[str, object]],
) -> dict[str, list[str]]:
    """The models of each provider in use, as `models` lists them (no request: what discovery
    cached)."""
    cache = known_models.load_cache(mc_home)
    found: dict[str, list[str]] = {}
    for provider_id, conf in providers.items():
        if in_use(provider_id, conf, credentials, env, selected=selected, sent_to=sent_to):
            found[provider_id] = known_models.offered(provider_id, conf, cache)[0]
    return found


def _card(
    provider_id: str, conf: Mapping[str, object], model: str, source: str
) -> dict[str, object]:
    """One listed model: the catalog's facts with it when it has them."""
    card: dict[str, object] = {"provider": provider_id, "model": model, "source": source}
    facts = known_models.card(provider_id, conf, model)
    if facts is not None:
        card.update(facts)
        card["default"] = known_models.default_model(provider_id, conf) == model
    return card


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
    selected: str | None = None,  # the selected provider: its preset's models are listed
) -> Catalog:
    policy = policy or HttpPolicy(attempts=1)
    now = time.time() if now is None else now
    cache = known_models.load_cache(mc_home)
    cards: list[dict[str, object]] = []
    failed: list[str] = []
    reasons: dict[str, str] = {}
    for provider_id, conf in providers.items():
        if not in_use(provider_id, conf, credentials, env, selected=selected, sent_to=sent_to):
            continue
        configured = conf.get("models", [])
        seen = [m for m in configured if isinstance(m, str)] if isinstance(configured, list) else []
        cards += [_card(provider_id, conf, m, "configured") for m in seen]
        preset = known_models.preset(provider_id, conf)
        catalog = [m for m in preset["models"] if m not in seen] if preset is not None else []
        cards += [_card(provider_id, conf, m, "catalog") for m in catalog]
        seen += catalog
        discovering = conf.get("discover") is True or (refresh and preset is not None)
        entry = cache.get(provider_id) if conf.get("discover") is True or preset else None
        if discovering and (refresh or not _fresh(entry, now)):
            try:
                origin = sent_to.get(provider_id)
                store, scoped_env = scoped_credentials(provider_id, conf, credentials, env, origin)
                models = await fetch_listing(provider_id, conf, store, scoped_env, policy)
            except ProviderError as error:
                failed.append(provider_id)
                error.advice = error.advice or Advice.of(provider_id, conf)(error, False)
                reasons[provider_id] = failure_detail(error) or failure_summary(error)
            except (ConfigurationInvalid, CredentialsError):
                failed.append(provider_id)
            else:
                entry = {"fetched_at": now, "models": models}
                cache[provider_id] = entry
        cards += [
            _card(provider_id, conf, m, "discovered") for m in cached_models(entry) if m not in seen
        ]
    save_cache(mc_home, cache)
    return Catalog(cards, failed, refresh, reasons)
