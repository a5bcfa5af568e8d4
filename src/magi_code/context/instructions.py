"""Instruction sources, found and read in this documented order:

1. the selected agent profile's body (built-in text or its .md file after the front matter),
2. MC_HOME/AGENTS.md (the user's global instructions),
3. every AGENTS.md from the repository root (the nearest ancestor of the cwd holding `.git`,
   else the cwd itself) down to the cwd, outermost first,
4. each path of the `instructions` setting, in order, relative to the directory of the settings
   file that names it (`~` expands).
Each file is read only when it is a regular file whose canonical path stays inside its root
(confined.py): the repository root for the AGENTS.md chain and for the paths a project's
settings name; MC_HOME for MC_HOME/AGENTS.md; for a path the GLOBAL settings name, that path
itself, which the user chose (it may be a link to anywhere; it must still be a regular file).
A link out of its root, a FIFO, a device or a /proc file is left out with a notice naming it.
A file seen twice (by its canonical path) is told once, at its first place. A missing,
unreadable or non-UTF-8 file is a notice, never a failure. Each file is bounded by
INSTRUCTION_FILE_BYTES and all of them together by INSTRUCTIONS_TOTAL_BYTES: a cut is always a
notice naming the file, never silent.
"""

from __future__ import annotations

import codecs
import os

from magi_code.context.confined import Refused, check, open_confined
from magi_code.limits import INSTRUCTION_FILE_BYTES, INSTRUCTIONS_TOTAL_BYTES
from magi_code.records import record


@record
class Source:
    """One piece of what the model is told: where it came from and its (bounded) text."""

    kind: str  # profile, global, workspace, setting, skills
    origin: str  # a file path, or "built-in"
    text: str

    def __repr__(self) -> str:
        return f"Source({self.kind!r}, {self.origin!r}, {len(self.text)} chars)"


def repository_root(cwd: str) -> str:
    """The nearest ancestor of `cwd` (itself included) holding `.git`, else `cwd`."""
    here = cwd
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return cwd
        here = parent


def agents_files(home: str, cwd: str) -> list[tuple[str, str, str]]:
    """(kind, path, root it must stay in) of every AGENTS.md candidate, in order: global, then
    the repository root down to cwd."""
    root = repository_root(cwd)
    chain = [cwd]
    while chain[-1] != root:
        chain.append(os.path.dirname(chain[-1]))
    found = [("global", os.path.join(home, "AGENTS.md"), home)]
    found += [("workspace", os.path.join(d, "AGENTS.md"), root) for d in reversed(chain)]
    return found


def read_bounded(path: str, limit: int, root: str | None) -> tuple[str, bool]:
    """(text of at most `limit` UTF-8 bytes, cut at a character boundary; whether it was cut)
    of the regular file `path` inside `root` (confined.open_confined). OSError (Refused
    among them) and UnicodeDecodeError pass to the caller."""
    with open_confined(path, root) as handle:
        data = handle.read(limit + 1)
    if len(data) <= limit:
        return data.decode("utf-8"), False
    # strict inside; a character cut at the bound is the cut's doing, not the file's
    return codecs.getincrementaldecoder("utf-8")().decode(data[:limit], final=False), True


class Collector:
    """Adds sources under the total bound; every cut, skip and miss becomes a notice."""

    def __init__(self, notices: list[str]) -> None:
        self.sources: list[Source] = []
        self.notices = notices
        self.used = 0
        self.seen: set[str] = set()

    def add_text(self, kind: str, origin: str, text: str) -> None:
        text = text.strip()
        if not text:
            return
        room = INSTRUCTIONS_TOTAL_BYTES - self.used
        encoded = text.encode()
        if len(encoded) > room:
            self.notices.append(
                f"{origin}: instructions exceed {INSTRUCTIONS_TOTAL_BYTES} bytes in total; "
                + ("this file is left out" if room <= 0 else f"cut to its first {room} bytes")
            )
            if room <= 0:
                return
            text = encoded[:room].decode("utf-8", errors="ignore")
        self.used += len(text.encode())
        self.sources.append(Source(kind, origin, text))

    def add_file(self, kind: str, path: str, *, root: str | None, missing_is_notice: bool) -> None:
        """Tell the file at `path` if it is a regular file inside `root` (None: the user named
        this path); anything else is a notice naming it."""
        try:
            canonical = check(path, root)  # refused before `seen`: a later root may admit it
        except Refused as refused:
            self.notices.append(f"{path}: instructions left out: {refused.problem}")
            return
        if canonical in self.seen:
            return
        self.seen.add(canonical)
        try:
            text, cut = read_bounded(path, INSTRUCTION_FILE_BYTES, root)
        except Refused as refused:
            self.notices.append(f"{path}: instructions left out: {refused.problem}")
            return
        except FileNotFoundError:
            if missing_is_notice:
                self.notices.append(f"{path}: instructions file not found")
            return
        except IsADirectoryError:
            self.notices.append(f"{path}: instructions path is a directory")
            return
        except UnicodeDecodeError:
            self.notices.append(f"{path}: instructions file is not UTF-8; left out")
            return
        except OSError:
            self.notices.append(f"{path}: instructions file unreadable; left out")
            return
        if cut:
            self.notices.append(
                f"{path}: larger than {INSTRUCTION_FILE_BYTES} bytes; cut to its first "
                f"{INSTRUCTION_FILE_BYTES}"
            )
        self.add_text(kind, path, text)


def collect(
    profile: Source,
    home: str,
    cwd: str,
    extra: list[tuple[str, str, str | None]],
    notices: list[str],
) -> Collector:
    """Every instruction file in order, after the selected profile's body; the caller may add
    more under the same total bound. `extra` holds (base directory, path, root it must stay
    in or None when the global settings name it) from the `instructions` setting."""
    collector = Collector(notices)
    collector.add_text(profile.kind, profile.origin, profile.text)
    for kind, path, root in agents_files(home, cwd):
        collector.add_file(kind, path, root=root, missing_is_notice=False)
    for base, path, named_root in extra:
        collector.add_file(
            "setting",
            os.path.join(base, os.path.expanduser(path)),
            root=named_root,
            missing_is_notice=True,
        )
    return collector


def told(sources: list[Source]) -> str:
    """The instructions text the model receives."""
    return "\n\n".join(source.text for source in sources)
