"""Approval modes for a face that cannot ask anyone (`magi-code exec`). Sans-I/O.

The permission policy has already decided `ask` for what reaches here; a mode only answers
that question by rule, so it is never wider than the settings: `deny` rules never ask, and a
write to a protected path (MC_HOME, credential files, `.git`) is refused in every mode.

- `ask` (the default): refuse everything that would ask.
- `edits`: allow file writes whose every path lies inside the workspace.
- `full`: allow everything that would ask.
"""

from pathlib import Path
from typing import Literal

from magi_code.tools.approvals import Asked
from magi_code.tools.paths import Protected, inside

Mode = Literal["ask", "edits", "full"]
MODES: tuple[Mode, ...] = ("ask", "edits", "full")


def allows(mode: Mode, asked: Asked | None, workspace: Path, protected: Protected) -> bool:
    """Whether `mode` answers the approval for `asked` with allow."""
    if mode == "ask" or asked is None:
        return False
    access = asked.access
    if any(protected.floor(access.kind, path) != "allow" for path in access.paths):
        return False
    if mode == "full":
        return True
    return (
        access.kind == "write"
        and bool(access.paths)
        and all(inside(path, workspace) for path in access.paths)
    )
