"""`@path` completion: the file mention under the cursor, completed against the workspace.

Pure but for one directory listing. Only names inside the workspace are offered, hidden
ones only when the typed part starts with a dot; a unique match completes fully (a folder
gets its `/`), several complete to their common prefix.
"""

import os
import re
from pathlib import Path

MENTION = re.compile(r"(?:^|\s)@([^\s@]*)$")
LISTED = 500  # entries of one directory looked at


def complete(before_cursor: str, workspace: Path) -> str | None:
    """The text to insert at the cursor, or None when there is nothing to complete."""
    found = MENTION.search(before_cursor)
    if found is None:
        return None
    typed = found.group(1)
    folder, _, stem = typed.rpartition("/")
    base = (workspace / folder).resolve()
    if not base.is_relative_to(workspace.resolve()) or not base.is_dir():
        return None
    try:
        with os.scandir(base) as entries:
            names = []
            for n, entry in enumerate(entries):
                if n >= LISTED:
                    break
                if entry.name.startswith(stem) and (stem.startswith(".") or entry.name[0] != "."):
                    names.append(entry.name + ("/" if entry.is_dir() else ""))
    except OSError:
        return None
    if not names:
        return None
    common = os.path.commonprefix(names) if len(names) > 1 else names[0]  # noqa: RUF071 - names, not paths
    return common[len(stem) :] or None
