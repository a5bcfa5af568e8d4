"""Server definitions from settings, their canonical digest, and the global approval check. Pure.

Rules:
- A definition is `{command, args, env, enabled}` under `[mcp.servers.<name>]`; a bad shape is
  DefinitionError (startup reports `configuration_invalid`). Disabled servers are ignored.
- The canonical definition is the JSON of `{name, command, args, env}` with sorted keys and no
  whitespace (missing `args`/`env` count as empty); its SHA-256 hex digest is what the global
  `mcp.approved` list holds. `enabled` is not part of it: turning a server on is no new trust.
- Approval comes from the global settings only (`settings.load` drops `mcp.approved` from the
  project file), so a project cannot approve the servers it enables.
"""

import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from magi_code.mcp.errors import DefinitionError, McpUnavailable

_KEYS = frozenset({"command", "args", "env", "enabled"})


@dataclass(frozen=True)
class ServerDef:
    name: str
    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]

    @property
    def digest(self) -> str:
        return canonical_digest(
            self.name, {"command": self.command, "args": self.args, "env": self.env}
        )


def canonical_digest(name: str, definition: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of {name, command, args, env}."""
    canonical = {
        "name": name,
        "command": definition.get("command"),
        "args": list(definition.get("args") or ()),
        "env": dict(definition.get("env") or {}),
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def enabled_servers(conf: Mapping[str, Any]) -> dict[str, ServerDef]:
    """The enabled servers of merged settings, checked for shape."""
    table = conf.get("mcp", {})
    if not isinstance(table, Mapping):
        raise DefinitionError
    servers = table.get("servers", {})
    if not isinstance(servers, Mapping):
        raise DefinitionError
    return parse_servers(servers)


def approved_digests(conf: Mapping[str, Any]) -> frozenset[str]:
    approved = conf.get("mcp", {}).get("approved", [])
    if not isinstance(approved, list) or not all(isinstance(d, str) for d in approved):
        raise DefinitionError
    return frozenset(approved)


def parse_servers(servers: Mapping[str, Any]) -> dict[str, ServerDef]:
    """Every enabled definition in `servers`, in order; disabled ones are checked and dropped."""
    out: dict[str, ServerDef] = {}
    for name, raw in servers.items():
        server = _parse(name, raw)
        if raw.get("enabled", False):
            out[name] = server
    return out


def require_approved(servers: Mapping[str, ServerDef], approved: Collection[str]) -> None:
    if any(server.digest not in approved for server in servers.values()):
        raise McpUnavailable


def _parse(name: object, raw: object) -> ServerDef:
    if not isinstance(name, str) or not name or "\x00" in name:
        raise DefinitionError
    if not isinstance(raw, Mapping) or not set(raw) <= _KEYS:
        raise DefinitionError
    command, args, env = raw.get("command"), raw.get("args", []), raw.get("env", {})
    if not isinstance(command, str) or not command or "\x00" in command:
        raise DefinitionError
    if not isinstance(args, list) or not all(isinstance(a, str) and "\x00" not in a for a in args):
        raise DefinitionError
    if not isinstance(env, Mapping) or not all(map(_env_pair, env.items())):
        raise DefinitionError
    if not isinstance(raw.get("enabled", False), bool):
        raise DefinitionError
    return ServerDef(name, command, tuple(args), dict(env))


def _env_pair(pair: tuple[object, object]) -> bool:
    key, value = pair
    return (
        isinstance(key, str)
        and bool(key)
        and "=" not in key
        and "\x00" not in key
        and isinstance(value, str)
        and "\x00" not in value
    )
