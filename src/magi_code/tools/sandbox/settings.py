"""The `[sandbox]` table and the approval mode a face may be given, checked. Light: it is on
the way to the `initialize` result (startup checks the settings), so it imports nothing but
the error base, and gives plain values (modes.py makes paths of them).

Keys (GLOBAL; a project file may only narrow them, config/trust.py): `mode` (`read-only`,
`workspace-write`, the default, or `full-access`), `network` (false), `writable_roots` and
`deny_read` (lists of paths). MAGI_SANDBOX_MODE in the environment (a face's `--sandbox`,
inherited by subagents) wins over `mode`. `approval_mode` (top level) is `ask` or `auto`.
"""

from __future__ import annotations

from magi_code.tools import ToolsError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Literal, TypeAlias

    Mode: TypeAlias = Literal["read-only", "workspace-write", "full-access"]

MODES: tuple[Mode, ...] = ("read-only", "workspace-write", "full-access")  # narrowest first
DEFAULT_MODE: Mode = "workspace-write"
MODE_ENV = "MAGI_SANDBOX_MODE"
APPROVAL_SETTINGS = ("ask", "auto")  # what `approval_mode` may say; faces take more
_KEYS = frozenset({"mode", "network", "writable_roots", "deny_read"})


class SandboxError(ToolsError):
    """The `[sandbox]` table (or MAGI_SANDBOX_MODE) has a bad shape."""

    code: Literal["configuration_invalid"] = "configuration_invalid"


def checked(table: object, mode: str | None = None) -> tuple[Mode, bool, list[str], list[str]]:
    """(mode, network, writable_roots, deny_read) of a valid table; `mode` overrides its
    mode. Raises SandboxError."""
    if table is None:
        table = {}
    if not isinstance(table, dict) or not set(table) <= _KEYS:
        raise SandboxError("sandbox")
    chosen = mode if mode is not None else table.get("mode", DEFAULT_MODE)
    network = table.get("network", False)
    if not isinstance(network, bool):
        raise SandboxError("sandbox")
    for known in MODES:  # the Literal itself, for the type
        if chosen == known:
            return known, network, _paths(table, "writable_roots"), _paths(table, "deny_read")
    raise SandboxError("sandbox")


def _paths(table: Mapping[str, object], key: str) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise SandboxError("sandbox")
    return value
