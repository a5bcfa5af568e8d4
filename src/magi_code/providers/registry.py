"""From settings to a provider: `build_provider` and the local `check_readiness`.

Settings per provider are a plain mapping (from TOML): wire_api, base_url, api_key_env,
models, discover, and for Codex token_url / client_id. Readiness is local only: it must
never touch the network, and it runs before `initialize` answers, so this module imports
nothing heavy. Wire modules and the HTTP layer are imported only when a provider is built.

Credentials go only where the user sent them: `sent_to` is the provider's table as the global
settings or a built-in preset define it (None for a provider only a project defines). A stored
or environment credential is attached only when the effective wire, base URL and credential
source are exactly those; otherwise the provider is built with no credential at all. (The
HTTP client never follows redirects, so no credential reaches another origin that way.)
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from magi_code.errors import MagiError
from magi_code.records import record

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:  # readiness runs on the path to `initialize`: the HTTP layer is not loaded
    from collections.abc import Callable
    from typing import Literal

    from magi_code.config.credentials import CredentialStore, OAuthTokens
    from magi_code.providers.base import Provider
    from magi_code.providers.policy import HttpPolicy

    ReadinessCode = Literal["configuration_invalid", "provider_unavailable"]


@record
class Wire:
    """One row of the dispatch table: the module whose `build(provider_id, conf, credentials,
    env, policy)` makes the provider, its default base URL, and what readiness asks for:
    "api_key" (a key, or a loopback URL), "oauth" (Codex tokens) or None (nothing)."""

    module: str
    default_url: str | None
    credential: str | None


_OPENAI = "https://api.openai.com/v1"
WIRES = {
    "openai-responses": Wire("magi_code.providers.openai_responses", _OPENAI, "api_key"),
    "openai-chat": Wire("magi_code.providers.openai_chat", _OPENAI, "api_key"),
    "anthropic": Wire("magi_code.providers.anthropic", "https://api.anthropic.com/v1", "api_key"),
    "codex": Wire("magi_code.providers.codex", "https://chatgpt.com/backend-api/codex", "oauth"),
    "fixture": Wire("magi_code.providers.fixture", None, None),
}
WIRE_APIS = tuple(WIRES)

# Compatible local servers need no key; a provider whose base_url is loopback may run keyless.
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


class ConfigurationInvalid(MagiError):
    """Settings that cannot describe a provider (the text is a fixed phrase)."""

    code: Literal["configuration_invalid"] = "configuration_invalid"


def wire_api(provider_id: str, conf: Mapping[str, object]) -> str:
    value = conf.get("wire_api", "fixture" if provider_id == "fixture" else None)
    if not isinstance(value, str) or value not in WIRE_APIS:
        raise ConfigurationInvalid(_unknown_wire(provider_id, value))
    return value


def _unknown_wire(provider_id: str, value: object) -> str:
    """What is wrong with a provider's wire_api, with the choices (names only, from the
    settings: `known_models.shown`)."""
    from magi_code.providers.known_models import one_of, shown

    key = f"providers.{shown(provider_id).strip('`')}.wire_api"
    said = "is not set" if value is None else f"= {shown(str(value))} is not a wire API"
    return f"{key} {said}{one_of(str(value or ''), WIRE_APIS)}"


def base_url(conf: Mapping[str, object], wire: str) -> str:
    value = conf.get("base_url", WIRES[wire].default_url or "")
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigurationInvalid("base_url must be an http(s) URL")
    if not _authority_ok(value) or any(c in value for c in " \t\r\n\x00"):
        raise ConfigurationInvalid("base_url is not a valid URL")
    return value


def _authority_ok(url: str) -> bool:
    """A host, and a port that is a number in range if there is one: what `urlsplit` would
    accept, read with string methods because `urllib.parse` is not loaded before `initialize`."""
    authority = url.split("://", 1)[1]
    for end in "/?#":
        authority = authority.split(end, 1)[0]
    host = authority.rpartition("@")[2]
    if host.startswith("["):
        name, bracket, port = host[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            return False
        port = port[1:]
    else:
        name, _, port = host.partition(":")
    if not name:
        return False
    return not port or (port.isascii() and port.isdigit() and int(port) <= 65535)


def api_key(
    provider_id: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
) -> str | None:
    name = conf.get("api_key_env")
    if name is not None and not isinstance(name, str):
        raise ConfigurationInvalid("api_key_env must be a string")
    if name and env.get(name):
        return env[name]
    return credentials.api_key(provider_id)


_CREDENTIAL_SOURCE = ("api_key_env", "token_url", "client_id")


def credential_allowed(
    provider_id: str, conf: Mapping[str, object], sent_to: Mapping[str, object] | None
) -> bool:
    """Whether `conf` sends its credential where `sent_to` (global settings or preset) says."""
    if sent_to is None:
        return False
    try:
        wire = wire_api(provider_id, sent_to)
        same_place = wire_api(provider_id, conf) == wire and base_url(conf, wire) == base_url(
            sent_to, wire
        )
    except ConfigurationInvalid:
        return False
    return same_place and all(conf.get(k) == sent_to.get(k) for k in _CREDENTIAL_SOURCE)


def scoped_credentials(
    provider_id: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    sent_to: Mapping[str, object] | None,
) -> tuple[CredentialStore, Mapping[str, str]]:
    if credential_allowed(provider_id, conf, sent_to):
        return credentials, env
    from magi_code.config.credentials import NoCredentials

    return NoCredentials(), {}


def _keyless_ok(url: str) -> bool:
    rest = url.split("://", 1)[1]
    return rest.startswith(LOOPBACK)


def tokens_ready(tokens: OAuthTokens | None, now: float) -> bool:
    """Codex readiness: an access token that is unexpired, or a refresh token to renew it."""
    if tokens is None or not tokens.access_token:
        return False
    return tokens.expires_at > now or bool(tokens.refresh_token)


def credential_at_hand(
    provider_id: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    *,
    sent_to: Mapping[str, object] | None,
) -> bool:
    """Whether a credential of the provider is at hand and may go where `conf` sends it: a
    key in its variable or the store, or a ChatGPT sign-in. (A keyless local server has none.)"""
    from magi_code.config.credentials import CredentialsError

    credentials, env = scoped_credentials(provider_id, conf, credentials, env, sent_to)
    try:
        needs = WIRES[wire_api(provider_id, conf)].credential
        if needs == "oauth":
            return credentials.oauth(provider_id) is not None
        return needs == "api_key" and bool(api_key(provider_id, conf, credentials, env))
    except (ConfigurationInvalid, CredentialsError):
        return False


def credential_needed(provider_id: str, conf: Mapping[str, object]) -> bool:
    """Whether readiness must look at credentials at all (its row's `credential`); raises
    ConfigurationInvalid for an unknown wire. A row that needs none is ready as it is."""
    return WIRES[wire_api(provider_id, conf)].credential is not None


def check_readiness(
    provider_id: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    now: float | None = None,
    *,
    sent_to: Mapping[str, object] | None,
) -> ReadinessCode | None:
    """None when the provider can be used; else "configuration_invalid" or
    "provider_unavailable". Local only: files and environment, never the network."""
    from magi_code.config.credentials import CredentialsError

    credentials, env = scoped_credentials(provider_id, conf, credentials, env, sent_to)
    try:
        wire = wire_api(provider_id, conf)
        needs = WIRES[wire].credential
        if needs is None:
            return None
        url = base_url(conf, wire)
        if needs == "oauth":
            tokens = credentials.oauth(provider_id)
            ready = tokens_ready(tokens, time.time() if now is None else now)
            return None if ready else "provider_unavailable"
        key = api_key(provider_id, conf, credentials, env)
    except ConfigurationInvalid:
        return "configuration_invalid"
    except CredentialsError:
        return "provider_unavailable"
    return None if key or _keyless_ok(url) else "provider_unavailable"


def build_provider(
    provider_id: str,
    conf: Mapping[str, object],
    credentials: CredentialStore,
    env: Mapping[str, str],
    policy: HttpPolicy | None = None,
    *,
    sent_to: Mapping[str, object] | None,
) -> Provider:
    """The provider `conf` describes, built by its wire's module (raises ConfigurationInvalid).
    `policy` None is each HTTP wire's default policy."""
    from importlib import import_module  # not at the top: readiness runs before `initialize`

    credentials, env = scoped_credentials(provider_id, conf, credentials, env, sent_to)
    module = import_module(WIRES[wire_api(provider_id, conf)].module)
    provider: Provider = module.build(provider_id, conf, credentials, env, policy)
    return provider


def keyed_build(
    make: Callable[[str, str, str | None, HttpPolicy], Provider], wire: str
) -> Callable[
    [str, Mapping[str, object], CredentialStore, Mapping[str, str], HttpPolicy | None], Provider
]:
    """The `build` of a wire whose provider is (id, base URL, API key, policy): the OpenAI
    Responses, OpenAI Chat and Anthropic rows."""

    def build(
        provider_id: str,
        conf: Mapping[str, object],
        credentials: CredentialStore,
        env: Mapping[str, str],
        policy: HttpPolicy | None,
    ) -> Provider:
        from magi_code.providers.policy import HttpPolicy

        key = api_key(provider_id, conf, credentials, env)
        return make(provider_id, base_url(conf, wire), key, policy or HttpPolicy())

    return build
