"""`@path` mentions of workspace files: the files the `@` picker offers, and Tab's completion
of the mention under the cursor.

The picker's files are what the tools' walk finds (ignore files respected, `.git` skipped,
symlinked folders never entered), at most MENTION_WALK_ENTRIES entries of it, shallow ones
first. Tab's completion lists one directory: only names inside the workspace are offered,
hidden ones only when the typed part starts with a dot; a unique match completes fully (a
folder gets its `/`), several complete to their common prefix.
"""

import os
import re
from collections.abc import Mapping
from pathlib import Path

from magi_code.limits import MENTION_WALK_ENTRIES
from magi_code.tools.walk import GIT_ENV, Walk

MENTION = re.compile(r"(?:^|\s)@([^\s@]*)$")
LISTED = 500  # entries of one directory looked at


def workspace_files(workspace: Path, env: Mapping[str, str]) -> list[str]:
    """The workspace's files as POSIX paths relative to it; `env` holds where git's global
    excludes file is found (walk.GIT_ENV)."""
    walk = Walk(workspace, ignores={name: env[name] for name in GIT_ENV if name in env})
    found = []
    for relative, entry in walk.entries():
        if walk.visited > MENTION_WALK_ENTRIES:
            break
        if not entry.is_dir(follow_symlinks=False):
            found.append(relative)
    found.sort(key=lambda relative: (relative.count("/"), relative))
    return found


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
