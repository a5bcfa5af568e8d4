"""The remote A2A agents the settings name, `[a2a.agents.NAME] url = "...", token = "env:VAR"`:
checked and read here (sans-I/O; no a2a-sdk import). Each becomes the model's `a2a_NAME` tool
(a2a/remote.py).

Rules:
- NAME is 1 to A2A_AGENT_NAME_CHARS letters, digits, `_` and `-` (it makes a tool name);
  `url` is an http:// or https:// URL with a host and no user info; `token`, when set, is
  `env:VARIABLE`: the bearer token is read from that variable of the process's environment at
  each call, never kept in a file.
- Which file may set what is config/trust.py's: a trusted project may name an agent (its url)
  but never a token, nor the url of an agent the global settings define.
- The token is sent only to the origin (scheme, host, port) of the url it was defined with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from magi_code.limits import A2A_AGENT_NAME_CHARS
from magi_code.records import record

TOOL_PREFIX = "a2a_"
ENV_PREFIX = "env:"
_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{A2A_AGENT_NAME_CHARS}}}")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TOKEN_FORM = (
    '"env:VARIABLE", naming the environment variable that holds the token (a token is never '
    "written in a settings file)"
)


class AgentDefinitionError(ValueError):
    """A `[a2a.agents.NAME]` table that cannot be used: the sentence says what to change."""


@record
class RemoteAgentDef:
    name: str
    url: str
    token_env: str | None  # the variable holding the bearer token; None: no token is sent

    @property
    def tool_name(self) -> str:
        return TOOL_PREFIX + self.name

    @property
    def origin(self) -> tuple[str, str, int]:
        return origin_of(self.url)

    @property
    def host(self) -> str:
        return self.origin[1]


def origin_of(url: str) -> tuple[str, str, int]:
    """(scheme, host in lower case, port with the scheme's default)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    return scheme, (parts.hostname or "").lower(), port


def remote_agents(settings: Mapping[str, Any]) -> list[RemoteAgentDef]:
    """The agents of `[a2a.agents]`, in name order. Raises AgentDefinitionError."""
    table = settings.get("a2a")
    agents = table.get("agents") if isinstance(table, Mapping) else None
    if not isinstance(agents, Mapping):
        return []
    return [_definition(name, agents[name]) for name in sorted(agents)]


def _definition(name: str, conf: object) -> RemoteAgentDef:
    where = f"[a2a.agents.{name}]" if _NAME.fullmatch(name) else "an [a2a.agents] entry"
    if not _NAME.fullmatch(name):
        raise AgentDefinitionError(
            f"{where} has a name that is not 1 to {A2A_AGENT_NAME_CHARS} letters, digits, _ "
            "or -: rename it"
        )
    if not isinstance(conf, Mapping):
        raise AgentDefinitionError(f"{where} must be a table with a url")
    unknown = sorted(set(conf) - {"url", "token"})
    if unknown:
        raise AgentDefinitionError(f"{where} takes only url and token: remove {unknown[0]}")
    url = conf.get("url")
    if not isinstance(url, str) or not _usable_url(url):
        raise AgentDefinitionError(
            f"{where} url must be an http:// or https:// URL with a host and no user name "
            "or password, such as https://build-box.example:8042"
        )
    token = conf.get("token")
    if token is None:
        return RemoteAgentDef(name, url, None)
    variable = token_variable(token)
    if variable is None:
        raise AgentDefinitionError(f"{where} token must be {TOKEN_FORM}")
    return RemoteAgentDef(name, url, variable)


def token_variable(entry: object) -> str | None:
    """The variable an `env:VARIABLE` token reference names, or None when `entry` is not one
    (the one reading of a token in settings, for the agents called and for `a2a serve`)."""
    if not isinstance(entry, str) or not entry.startswith(ENV_PREFIX):
        return None
    variable = entry[len(ENV_PREFIX) :]
    return variable if _VARIABLE.fullmatch(variable) else None


def _usable_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError:
        return False
    no_user = parts.username is None and parts.password is None
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname) and no_user
