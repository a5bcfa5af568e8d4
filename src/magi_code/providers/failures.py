"""What to do about a provider failure, told to a person beside what the provider said
(providers/error_body.py).

`Advice` is what to do about a failure of one provider, from its settings: a 401 or 403 names
`magi-code login NAME` and the key's variable (or a new ChatGPT sign-in for Codex); a 404 that
speaks of a model names `magi-code models --refresh`; a 429 says when to send the prompt again;
a local server (a loopback base URL) that could not be reached before anything arrived is named
to start (`ollama serve` for Ollama). `Advised` wraps a provider so that its failures carry it.

All of it is for a person's face (Mission Control, exec's stderr, ACP's message) through
`base.failure_detail`; the local agent's wire carries a failure's code and fixed summary only.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from typing import cast

from magi_code.providers.base import ModelRequest, Provider, ProviderError, ProviderEvent

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
OLLAMA_PORT = 11434


class Advice:
    """What to do about a failure of one provider (its name, how it gets its credential, and
    the local server it runs on, if any)."""

    __slots__ = ("credential", "local_server", "name", "variable")

    def __init__(
        self,
        name: str,
        *,
        credential: str | None,
        variable: str | None = None,
        local_server: str | None = None,
    ) -> None:
        self.name, self.credential, self.variable = name, credential, variable
        self.local_server = local_server  # what to start, as a person says it

    @classmethod
    def of(cls, provider_id: str, conf: Mapping[str, object]) -> Advice:
        from magi_code.providers.known_models import preset
        from magi_code.providers.registry import WIRES, ConfigurationInvalid, base_url, wire_api

        name = _plain(provider_id) or "NAME"
        variable = conf.get("api_key_env")
        shown = _plain(variable) if isinstance(variable, str) else None
        try:
            row = WIRES[wire_api(provider_id, conf)]
            url = base_url(conf, wire_api(provider_id, conf)) if row.default_url else None
        except ConfigurationInvalid:
            return cls(name, credential=None)
        server = _local_server(url, ollama=preset(provider_id, conf) is not None)
        return cls(name, credential=row.credential, variable=shown, local_server=server)

    def __call__(self, error: ProviderError, delivered: bool) -> str:
        """What to do about `error`; `delivered`: part of the answer had arrived."""
        if error.code == "auth_failed" and self.credential == "oauth":
            return f"Run `magi-code login {self.name}` to sign in again."
        if error.code == "auth_failed" and self.credential == "api_key":
            either = f", or set {self.variable}" if self.variable else ""
            return f"Run `magi-code login {self.name}`{either}."
        if error.code == "refused" and error.status == 404:
            if "model" in error.said.lower():
                return f"`magi-code models --refresh` lists the models {self.name} offers now."
            return f"Check the base_url of {self.name} in the settings."
        if error.code == "rate_limited" and not error.summary:  # (a long wait says so itself)
            wait = error.retry_after_s
            if wait is not None:
                return f"The provider asks to wait {_duration(wait)}: send the prompt again then."
            return "magi-code retried it with growing waits: send the prompt again in a minute."
        # Nothing arrived from a local server: most likely it is not running. (A proxy's or a
        # certificate's failure has its own sentence, and fix.)
        unreached = error.code == "transport_failed" and not delivered and not error.summary
        return f"Is {self.local_server} running?" if unreached and self.local_server else ""


def _plain(name: str) -> str | None:
    """A name from the settings fit for a command line in a sentence: short, printable, no
    backquote or space, and not secret-looking; else None."""
    from magi_code.limits import SETTINGS_SHOWN_CHARS
    from magi_code.redact import looks_secret

    fits = 0 < len(name) <= SETTINGS_SHOWN_CHARS and name.isprintable()
    return name if fits and not any(c in name for c in "` ") and not looks_secret(name) else None


def _local_server(url: str | None, *, ollama: bool) -> str | None:
    """How a person names the server behind a loopback `url` (None for another host)."""
    from urllib.parse import urlsplit

    if url is None:
        return None
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return None
    if host not in LOOPBACK_HOSTS:
        return None
    if ollama or port == OLLAMA_PORT:
        return "`ollama serve`"
    where = f"[{host}]" if ":" in host else host
    return f"the server at {parts.scheme}://{where}{f':{port}' if port else ''}"


def _duration(seconds: float) -> str:
    import math

    whole = math.ceil(seconds)
    return f"{whole} s" if whole < 120 else f"{math.ceil(whole / 60)} min"


class Advised:
    """A provider whose failures carry the advice for it (`ProviderError.advice`)."""

    def __init__(self, inner: Provider, advice: Advice) -> None:
        self.inner, self.advice, self.id = inner, advice, inner.id

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        events = cast(AsyncGenerator[ProviderEvent, None], self.inner.stream(request))
        delivered = False
        async with aclosing(events):
            try:
                async for event in events:
                    delivered = True
                    yield event
            except ProviderError as error:
                if not error.advice:
                    error.advice = self.advice(error, delivered)
                raise


def advised(provider_id: str, conf: Mapping[str, object], provider: Provider) -> Provider:
    """`provider`, its failures carrying what to do for this provider."""
    return Advised(provider, Advice.of(provider_id, conf))
