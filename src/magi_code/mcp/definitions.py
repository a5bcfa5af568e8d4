"""Server definitions from settings, their canonical digest, and the global approval check. Pure.

Rules:
- A definition under `[mcp.servers.<name>]` is either a stdio server `{command, args, env,
  cwd}` (`cwd` absolute; where it starts: config/own_commands.py) or a
  streamable-HTTP server `{url, headers, bearer_token_env}`, plus `enabled`; never both kinds.
  A bad shape is DefinitionError (startup reports `configuration_invalid`). Disabled servers
  are checked, then ignored.
- `url` is https, or http to a loopback host only (a token never crosses a network in clear).
  A `headers` value is literal text, or `env:NAME` for the value of environment variable NAME
  at startup; `bearer_token_env` names the variable whose value is sent as `Bearer <value>`.
  A project file may set neither (config/trust.py): credentials come from the user's files.
- The canonical definition is the JSON of `{name, command, program, args, env, cwd}` for stdio
  (`program`: the command as PATH resolves it now, so a new program under the same name
  needs a new approval), and of
  `{name, url, headers, bearer_token_env}` for HTTP, where `headers` keeps each header NAME
  and, for an `env:` value, the variable it names - never a literal value, so no secret is
  hashed and rotating one needs no new approval, while pointing a header at another variable
  does. Sorted keys, no whitespace; its SHA-256 hex digest is what the global `mcp.approved`
  list holds. `enabled` is not part of it: turning a server on is no new trust.
- Approval comes from the global settings only (`settings.load` drops `mcp.approved` from the
  project file), so a project cannot approve the servers it enables.
"""

import hashlib
import json
import os
from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import urlsplit

from magi_code.config.own_commands import resolved_program
from magi_code.mcp.errors import DefinitionError, McpUnavailable
from magi_code.records import field, record

STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
HTTP_KEYS = frozenset({"url", "headers", "bearer_token_env"})
_KEYS = STDIO_KEYS | HTTP_KEYS | {"enabled"}
ENV_PREFIX = "env:"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


@record
class ServerDef:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    bearer_token_env: str | None = None
    cwd: str | None = None  # where a stdio server starts, when its definition says

    @property
    def transport(self) -> str:
        return "http" if self.url is not None else "stdio"

    @property
    def digest(self) -> str:
        if self.url is not None:
            bearer = self.bearer_token_env
            return canonical_digest(
                self.name, {"url": self.url, "headers": self.headers, "bearer_token_env": bearer}
            )
        stdio = {"command": self.command, "args": self.args, "env": self.env, "cwd": self.cwd}
        return canonical_digest(self.name, stdio)


def canonical(name: str, definition: Mapping[str, Any]) -> dict[str, Any]:
    """What approval covers, as a JSON-able dict (`mcp approve` shows exactly this)."""
    if definition.get("url") is not None:
        headers = definition.get("headers") or {}
        return {
            "name": name,
            "url": definition.get("url"),
            "headers": {key: _header_source(value) for key, value in headers.items()},
            "bearer_token_env": definition.get("bearer_token_env"),
        }
    command = definition.get("command")
    program = (
        resolved_program(command, os.environ.get("PATH")) if isinstance(command, str) else None
    )
    return {
        "name": name,
        "command": command,
        "program": program,
        "args": list(definition.get("args") or ()),
        "env": dict(definition.get("env") or {}),
        "cwd": definition.get("cwd"),
    }


def canonical_digest(name: str, definition: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON (see the module rules)."""
    text = json.dumps(
        canonical(name, definition), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _header_source(value: object) -> str | None:
    """An `env:NAME` value as itself; a literal value as None (never hashed, never shown)."""
    return value if isinstance(value, str) and value.startswith(ENV_PREFIX) else None


def enabled_servers(conf: Mapping[str, Any]) -> dict[str, ServerDef]:
    """The enabled servers of merged settings, checked for shape."""
    return parse_servers(server_tables(conf))


def server_tables(conf: Mapping[str, Any]) -> Mapping[str, Any]:
    """The raw `[mcp.servers]` table of merged settings, enabled or not."""
    table = conf.get("mcp", {})
    if not isinstance(table, Mapping):
        raise DefinitionError
    servers = table.get("servers", {})
    if not isinstance(servers, Mapping):
        raise DefinitionError
    return servers


def approved_digests(conf: Mapping[str, Any]) -> frozenset[str]:
    approved = conf.get("mcp", {}).get("approved", [])
    if not isinstance(approved, list) or not all(isinstance(d, str) for d in approved):
        raise DefinitionError
    return frozenset(approved)


def parse_servers(servers: Mapping[str, Any]) -> dict[str, ServerDef]:
    """Every enabled definition in `servers`, in order; disabled ones are checked and dropped."""
    out: dict[str, ServerDef] = {}
    for name, raw in servers.items():
        server = parse_server(name, raw)
        if raw.get("enabled", False):
            out[name] = server
    return out


def require_approved(servers: Mapping[str, ServerDef], approved: Collection[str]) -> None:
    for server in servers.values():
        if server.digest not in approved:
            name = server.name
            raise McpUnavailable(name, f"it is not approved: run `magi-code mcp approve {name}`")


def parse_server(name: object, raw: object) -> ServerDef:
    if not isinstance(name, str) or not name or "\x00" in name:
        raise DefinitionError
    if not isinstance(raw, Mapping) or not set(raw) <= _KEYS:
        raise DefinitionError
    if not isinstance(raw.get("enabled", False), bool):
        raise DefinitionError
    if "url" in raw:
        if set(raw) & STDIO_KEYS:
            raise DefinitionError
        return _parse_http(name, raw)
    if set(raw) & HTTP_KEYS:
        raise DefinitionError
    command, args, env = raw.get("command"), raw.get("args", []), raw.get("env", {})
    if not isinstance(command, str) or not command or "\x00" in command:
        raise DefinitionError
    cwd = raw.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not os.path.isabs(cwd) or "\x00" in cwd):
        raise DefinitionError
    if not isinstance(args, list) or not all(isinstance(a, str) and "\x00" not in a for a in args):
        raise DefinitionError
    if not isinstance(env, Mapping) or not all(map(_env_pair, env.items())):
        raise DefinitionError
    return ServerDef(name, command, tuple(args), dict(env), cwd=cwd)


def _parse_http(name: str, raw: Mapping[str, Any]) -> ServerDef:
    url, headers, bearer = raw.get("url"), raw.get("headers", {}), raw.get("bearer_token_env")
    if not isinstance(url, str) or not valid_url(url):
        raise DefinitionError
    if not isinstance(headers, Mapping) or not all(map(_header_pair, headers.items())):
        raise DefinitionError
    if bearer is not None and not _env_name(bearer):
        raise DefinitionError
    return ServerDef(name, url=url, headers=dict(headers), bearer_token_env=bearer)


def valid_url(url: str) -> bool:
    """https anywhere, or http to a loopback host; no credentials in the URL itself."""
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    if host is None or parts.username is not None or parts.password is not None:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and host in LOOPBACK_HOSTS)


def _env_name(value: object) -> bool:
    return isinstance(value, str) and bool(value) and "=" not in value and "\x00" not in value


def _env_pair(pair: tuple[object, object]) -> bool:
    key, value = pair
    return _env_name(key) and isinstance(value, str) and "\x00" not in value


def _header_pair(pair: tuple[object, object]) -> bool:
    key, value = pair
    if not isinstance(key, str) or not key or not all(33 <= ord(c) < 127 for c in key):
        return False
    if ":" in key or not isinstance(value, str) or any(c in value for c in "\r\n\x00"):
        return False
    return not value.startswith(ENV_PREFIX) or _env_name(value[len(ENV_PREFIX) :])
