"""Bounded tree walks for glob (in an anyio worker thread) and grep's Python search (in a child
process), skipping what the ignore files name (tools/ignore.py says how), as `rg` does.

The walk never follows symlinked directories, skips `.git` (a folder, or a worktree's file),
visits at most WALK_ENTRIES entries, and calls its `check` every few entries: in a worker
thread that is `anyio.from_thread.check_cancelled`, so a cancelled walk stops, even one whose
thread the host has already abandoned. Entries come depth first, each folder's in name order
(a folder's contents before its next sibling), the order of `rg --sort path`.

With `ignores` (the environment git's configuration is found in: GIT_ENV), the walk reads the
ignore files of each folder it enters and of the root's parent folders, the exclude file of a
repository's git folder, and the global excludes file git's configuration names
(`core.excludesFile` in $GIT_CONFIG_GLOBAL, ~/.gitconfig, $XDG_CONFIG_HOME/git/config or
$GIT_CONFIG_SYSTEM, else $XDG_CONFIG_HOME/git/ignore), as ripgrep finds it. Each is read only
as a regular file, at most IGNORE_FILE_BYTES of it, and an unreadable one counts as absent.
"""

import os
import pwd
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from magi_code.records import record
from magi_code.tools.ignore import (
    EXCLUDE_FILE,
    OWN_FILES,
    REPOSITORY_MARKS,
    Chain,
    Level,
    Rules,
    excludes_file,
)
from magi_code.tools.limits import IGNORE_FILE_BYTES, WALK_ENTRIES
from magi_code.tools.paths import open_regular

SKIPPED = ".git"
GIT_ENV = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM")
_CHECK_EVERY = 64


def _no_check() -> None:
    pass


@record(frozen=False)
class Walk:
    root: Path
    check: Callable[[], None] = _no_check  # raises to stop the walk
    ignores: Mapping[str, str] | None = None  # GIT_ENV's values; None: only .git is skipped
    visited: int = 0
    truncated: bool = False  # an entry was left unvisited because of WALK_ENTRIES

    def entries(self) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """(path relative to root in POSIX form, entry), depth first, names sorted."""
        chain = _root_chain(self.root, self.ignores) if self.ignores is not None else None
        stack = [_folder("", self.root, chain)]
        while stack:
            prefix, children, chain = stack[-1]
            entry = next(children, None)
            if entry is None:
                stack.pop()
                continue
            if self.visited >= WALK_ENTRIES:
                self.truncated = True
                return
            self.visited += 1
            if self.visited % _CHECK_EVERY == 0:
                self.check()
            if entry.name == SKIPPED:
                continue
            rel = prefix + entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if chain is not None and chain.ignored(rel, is_dir):
                continue
            yield rel, entry
            if is_dir:
                stack.append(_folder(rel + "/", Path(entry.path), chain))


_Folder = tuple[str, Iterator[os.DirEntry[str]], Chain | None]


def _folder(prefix: str, folder: Path, chain: Chain | None) -> _Folder:
    """A folder's sorted entries, and the chain its ignore files extend."""
    try:
        with os.scandir(folder) as it:
            children = sorted(it, key=lambda e: e.name)
    except OSError:
        children = []
    if chain is not None:
        names = {entry.name for entry in children}
        chain = chain.below(_level(folder, names, prefix=prefix))
    return prefix, iter(children), chain


def _level(folder: Path, names: set[str] | None, prefix: str = "", above: str = "") -> Level:
    """A folder's ignore files (`names`: what it holds, when listed; None: try each)."""
    own = [_rules(folder / name) if names is None or name in names else None for name in OWN_FILES]
    marks = REPOSITORY_MARKS if names is None else [m for m in REPOSITORY_MARKS if m in names]
    repository = any(os.path.exists(folder / mark) for mark in marks)
    exclude = None
    if repository and (git_folder := _git_folder(folder)) is not None:
        exclude = _rules(git_folder / EXCLUDE_FILE)
    return Level((*own, exclude), repository, prefix, above)


def _root_chain(root: Path, env: Mapping[str, str]) -> Chain:
    """The chain of the root's parent folders, from `/` down, with the global excludes."""
    chain = Chain(excludes=_global_excludes(env))
    for parent in reversed(root.parents):
        above = root.relative_to(parent).as_posix() + "/"
        chain = chain.below(_level(parent, None, above=above))
    return chain


def _git_folder(folder: Path) -> Path | None:
    """Where a repository's shared git files are: `.git`, or for a worktree the folder its
    `.git` file names (through `commondir`), as ripgrep resolves it."""
    dot_git = folder / ".git"
    if dot_git.is_dir():
        return dot_git
    first = _first_line(dot_git)
    if first is None or not first.startswith("gitdir: "):
        return None
    git_dir = folder / first.removeprefix("gitdir: ")
    common = _first_line(git_dir / "commondir")
    if common is None:
        return None
    return git_dir / common if common.startswith(".") else Path(common)


def _global_excludes(env: Mapping[str, str]) -> Rules | None:
    home = env.get("HOME") or _account_home()
    config = env.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else None)
    candidates = [
        env.get("GIT_CONFIG_GLOBAL") or None,
        os.path.join(home, ".gitconfig") if home else None,
        os.path.join(config, "git", "config") if config else None,
        env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig",
    ]
    for candidate in candidates:
        data = _read(Path(candidate)) if candidate else None
        named = excludes_file(data, home) if data is not None else None
        if named is not None:
            return _rules(Path(named))
    return _rules(Path(config, "git", "ignore")) if config else None


def _account_home() -> str | None:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def _rules(path: Path) -> Rules | None:
    data = _read(path)
    return Rules(data.decode("utf-8", "surrogateescape")) if data is not None else None


def _first_line(path: Path) -> str | None:
    data = _read(path)
    if data is None:
        return None
    return data.split(b"\n", 1)[0].decode("utf-8", "surrogateescape").rstrip("\r")


def _read(path: Path) -> bytes | None:
    try:
        with open_regular(path) as handle:
            return handle.read(IGNORE_FILE_BYTES)
    except OSError:
        return None
