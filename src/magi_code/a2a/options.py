"""What `magi-code a2a serve` was asked for on its command line, and its one voice on stderr
(a line that starts with its name), shared by the command (serve.py) and the server (app.py)."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

from magi_code.records import record

if TYPE_CHECKING:
    from magi_code.tools.approval_modes import Mode

PROG = "magi-code a2a serve"


@record(frozen=False)
class Options:
    workspace: str
    host: str
    port: int
    agent: str | None
    mode: Mode | None  # None: the `approval_mode` setting's
    public_url: str | None


def say(message: str) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.write(f"{PROG}: {message}\n")
        sys.stderr.flush()
