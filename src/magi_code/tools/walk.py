"""Bounded tree walks for glob (in an anyio worker thread) and grep (in a child process).

The walk never follows symlinked directories, skips `.git`, visits at most WALK_ENTRIES
entries, and calls its `check` every few entries: in a worker thread that is
`anyio.from_thread.check_cancelled`, so a cancelled walk stops, even one whose thread the host
has already abandoned.
"""

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from magi_code.records import record
from magi_code.tools.limits import WALK_ENTRIES

SKIPPED_DIRS = frozenset({".git"})
_CHECK_EVERY = 64


def _no_check() -> None:
    pass


@record(frozen=False)
class Walk:
    root: Path
    check: Callable[[], None] = _no_check  # raises to stop the walk
    visited: int = 0
    truncated: bool = False  # an entry was left unvisited because of WALK_ENTRIES

    def entries(self) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """(path relative to root in POSIX form, entry), depth first, names sorted."""
        stack: list[tuple[str, Path]] = [("", self.root)]
        while stack:
            prefix, folder = stack.pop()
            try:
                with os.scandir(folder) as it:
                    children = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            below: list[tuple[str, Path]] = []
            for entry in children:
                if self.visited >= WALK_ENTRIES:
                    self.truncated = True
                    return
                self.visited += 1
                if self.visited % _CHECK_EVERY == 0:
                    self.check()
                rel = prefix + entry.name
                yield rel, entry
                if entry.is_dir(follow_symlinks=False) and entry.name not in SKIPPED_DIRS:
                    below.append((rel + "/", Path(entry.path)))
            stack.extend(reversed(below))
