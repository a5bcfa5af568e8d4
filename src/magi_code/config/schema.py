"""The type of every known setting: one table, checked in one walk (sans-I/O).

Rules:
- `SETTINGS` names each key the code reads and the type its value must have: a leaf kind (a
  string, a name, true or false, a whole number, a list of strings), a table of known keys
  (`dict`), a table of named entries of one shape (`Each`: providers, MCP servers, hook
  events, an environment), or a list of tables (`ListOf`: rules, hooks).
- `fault` finds the first value of the wrong type, depth first: its path (names, and list
  positions as ints) and what it must be. A value that is None is absent (only the defaults
  hold one; TOML has none); a key not named here is left alone (a trusted project may set
  any key, and the modules that take no unknown key refuse it themselves).
- settings.py refuses a value of the wrong type (the global file's whatever a project says,
  then the merged settings'); trust.py drops an untrusted project's as not valid.
- Types only: what a value means (a sandbox mode, a rule's decision, a URL, an event name) is
  checked at startup by the module that uses it. So no module past startup meets a value of
  the wrong type, whichever file set it.
- `shown` renders a path for a diagnostic: the names at fault are the user's (or a project's)
  text, so characters that are not printable never reach a terminal.
"""

from __future__ import annotations

from magi_code.records import record

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TypeAlias

    Shape: TypeAlias = "str | dict[str, Shape] | Each | ListOf"
    Path: TypeAlias = tuple[str | int, ...]

STRING = "a string"
NAME = "a non-empty string"
SWITCH = "true or false"
WHOLE = "a whole number"
COUNT = "a whole number, 0 or more"
POSITIVE = "a whole number above 0"
STRINGS = "a list of strings"
COMMAND = "a string or a list of strings"


@record
class Each:
    """A table of named entries, each of `shape`."""

    shape: Shape


@record
class ListOf:
    """A list of tables, each of `shape`."""

    shape: dict[str, Shape]


RULE: dict[str, Shape] = {
    "tool": STRING,
    "decision": STRING,
    "command": STRING,
    "path": STRING,
    "domain": STRING,
}
DECISIONS: dict[str, Shape] = {
    "default_read": STRING,
    "default_write": STRING,
    "default_shell": STRING,
    "rules": ListOf(RULE),
    "project_rules": ListOf(RULE),
}
PROVIDER: dict[str, Shape] = {
    "wire_api": STRING,
    "base_url": STRING,
    "api_key_env": STRING,
    "models": STRINGS,
    "discover": SWITCH,
    "context_window": POSITIVE,
    "token_url": STRING,
    "client_id": STRING,
    "images": SWITCH,  # the models take images (providers/images.py `takes_images`)
}
MCP_SERVER: dict[str, Shape] = {
    "command": STRING,
    "args": STRINGS,
    "env": Each(STRING),
    "cwd": STRING,
    "enabled": SWITCH,
    "url": STRING,
    "headers": Each(STRING),
    "bearer_token_env": STRING,
}
A2A_AGENT: dict[str, Shape] = {"url": STRING, "token": STRING}  # token: "env:VARIABLE"
HOOK: dict[str, Shape] = {"command": COMMAND, "matcher": STRING, "timeout_ms": WHOLE, "cwd": STRING}
SETTINGS: dict[str, Shape] = {
    "provider": NAME,
    "model": NAME,
    "thinking": STRING,
    "agent": NAME,
    "instructions": STRINGS,
    "approval_mode": STRING,
    "code_mode": SWITCH,
    "providers": Each(PROVIDER),
    "mcp": {"approved": STRINGS, "servers": Each(MCP_SERVER)},
    "permissions": {**DECISIONS, "trusted_projects": STRINGS, "code_mode": DECISIONS},
    "hooks": Each(ListOf(HOOK)),
    "skills": {"disabled": STRINGS},
    "agents": {"disabled": STRINGS},
    "sessions": {"retention_days": COUNT},
    "sandbox": {"mode": STRING, "network": SWITCH, "writable_roots": STRINGS, "deny_read": STRINGS},
    "melchior": {"talk": STRING},
    "shell": {"env_keep": STRINGS},
    "subagents": {"max_concurrent": COUNT, "max_depth": COUNT},
    "turn": {"max_rounds": POSITIVE},  # model requests one turn makes (runner/turn.py)
    "ui": {"notify": SWITCH},  # Mission Control's bell and terminal notifications
    "web": {"search": SWITCH, "allow_private": SWITCH},
    "network": {"proxy": STRING, "ca_bundle": STRING, "client_cert": STRING, "client_key": STRING},
    # `magi-code a2a serve` (a2a/serving.py): its callers' tokens, its TLS pair, its bound;
    # and the remote agents this session may delegate to (a2a/agents.py)
    "a2a": {
        "tokens": STRINGS,
        "tls_cert": STRING,
        "tls_key": STRING,
        "tasks_per_token": POSITIVE,
        "agents": Each(A2A_AGENT),
    },
}


def fault(settings: Mapping[str, Any]) -> tuple[Path, str] | None:
    """The path of the first value of the wrong type and what it must be; None if none is."""
    return _fault(settings, SETTINGS, ())


def _fault(value: object, shape: Shape, path: Path) -> tuple[Path, str] | None:
    if isinstance(shape, str):
        return None if _is(shape, value) else (path, shape)
    if isinstance(shape, ListOf):
        if not isinstance(value, list):
            return path, "a list of tables"
        for index, item in enumerate(value):
            found = _fault(item, shape.shape, (*path, index))
            if found:
                return found
        return None
    if not isinstance(value, dict):
        return path, "a table"
    for key, item in value.items():
        inner = shape.shape if isinstance(shape, Each) else shape.get(key)
        found = None if inner is None or item is None else _fault(item, inner, (*path, key))
        if found:
            return found
    return None


def _is(kind: str, value: object) -> bool:
    if kind in (STRING, NAME):
        return isinstance(value, str) and (kind == STRING or bool(value))
    if kind == SWITCH:
        return isinstance(value, bool)
    if kind in (WHOLE, COUNT, POSITIVE):
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        return kind == WHOLE or value >= (1 if kind == POSITIVE else 0)
    strings = isinstance(value, list) and all(isinstance(item, str) for item in value)
    return strings or (kind == COMMAND and isinstance(value, str))


def shown(path: Path) -> str:
    """`a.b[2].c`, each name's unprintable characters as `?`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            printable = "".join(c if c.isprintable() else "?" for c in part)
            out += f".{printable}" if out else printable
    return out
