"""Approval modes for a face that cannot ask anyone (`magi-code exec`). Sans-I/O.

The permission policy has already decided `ask` for what reaches here; a mode only answers
that question by rule, so it is never wider than the settings: `deny` rules never ask, and a
write to a protected path (MC_HOME, credential files, `.git`) is refused in every mode.

- `ask` (the default): refuse everything that would ask.
- `edits`: allow file writes whose every path lies inside the workspace.
- `full`: allow everything that would ask.
- `auto`: as `ask` here; what the OS sandbox contains never reached here (the runner allowed
  it unasked, tools/sandbox/modes.py `Sandbox.contains`).
"""

from pathlib import Path
from typing import Literal

from magi_code.tools.approvals import Asked
from magi_code.tools.paths import Protected, inside

Mode = Literal["ask", "edits", "full", "auto"]
MODES: tuple[Mode, ...] = ("ask", "edits", "full", "auto")


def refusal(mode: Mode, asked: Asked | None, workspace: Path, protected: Protected) -> str | None:
    """None when `mode` allows the approval for `asked`; otherwise why not, for a person."""
    if asked is None:
        return "what it is for is unknown"
    access = asked.access
    if any(protected.floor(access.kind, path) != "allow" for path in access.paths):
        return "it touches a protected path, which no mode allows"
    if mode == "full":
        return None
    edit = access.kind == "write" and bool(access.paths)
    if mode == "edits" and edit and all(inside(path, workspace) for path in access.paths):
        return None
    return (
        "--approval-mode edits or full may allow it"
        if mode in ("ask", "auto")
        else ("--approval-mode full may allow it")
    )
