"""The host's file and process I/O: what a face's client offers the tools instead of the local
disk and subprocesses (an editor over ACP: its buffers, its terminals).

Each capability is present only when the client offers it; a tool falls back to the local way
for the rest, and for files larger than the host carries. The permission policy has judged
the call before any of these is reached.
"""

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from magi_code.records import record


@record
class HostRun:
    """How a command run by the host ended, with its output (the host keeps the tail)."""

    output: str
    truncated: bool  # the host dropped the start of the output
    exit_code: int | None  # None: killed by a signal, or still running at the timeout
    signal: str | None = None
    timed_out: bool = False


@record
class HostIO:
    # The largest file (on disk, or to write) the host carries; a larger one stays local.
    file_bytes: int
    # The text of a canonical path, as the host sees it (unsaved edits included).
    read_text: Callable[[Path], Awaitable[str]] | None = None
    # Replace the whole text of a canonical path through the host.
    write_text: Callable[[Path, str], Awaitable[None]] | None = None
    # Run a `/bin/sh -c` command in a folder with exactly the given environment, for at most
    # `timeout_s` seconds, keeping at most `output_bytes` of output; the host's process is
    # killed and released on timeout and on cancellation.
    run: "HostRunner | None" = None


HostRunner = Callable[[str, Path, Mapping[str, str], float, int], Awaitable[HostRun]]
