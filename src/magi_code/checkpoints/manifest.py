"""What one checkpoint records of the workspace, and its file format. Pure: no files.

A manifest maps each path under the workspace (relative, POSIX form) that the walk saw to its
`State`: the file type and permission bits, size, times and inode as `lstat` gave them, and
the SHA-256 of its content (a symbolic link's: its target) when that content is stored. A
folder has no digest. Neither has a file too large to store: it is named, not restorable.

Two states hold the same content when their types and permission bits agree and, for files
and links, their digests do (two digests of None compare their sizes and modification times,
the most that is known of them). The walk reuses a digest from the previous manifest when the
`lstat` fields are all unchanged and the file's change time lies clear of that manifest's
start (STAT_GRAIN_NS): a change within one clock tick of the last look is read again.

A manifest is written whole every CHECKPOINT_WHOLE_EVERY checkpoints; the ones between hold
only what changed since the one just before them, so writing one costs what changed.
"""

import json
import stat
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from magi_code.checkpoints.limits import STAT_GRAIN_NS
from magi_code.records import record

FORMAT = 1
PHASES = ("before", "after")  # before a turn's first change; once the turn ended


class State(NamedTuple):
    mode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    digest: str | None  # of the stored content; None for a folder, or a file not stored

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)


@record
class Manifest:
    run_id: str
    phase: str  # one of PHASES
    started_ns: int  # wall clock when the walk began
    states: Mapping[str, State]
    stored_bytes: int  # what the session's checkpoints added to the objects, this one's too
    truncated: bool = False  # the walk stopped at its bound: paths past it are not in it


def same_content(old: State | None, new: State | None) -> bool:
    """Whether two states hold the same thing (module doc); None is an absent path."""
    if old is None or new is None:
        return old is new
    if old.mode != new.mode:
        return False
    if old.is_dir:
        return True
    if old.digest is not None and new.digest is not None:
        return old.digest == new.digest
    return (old.digest, old.size, old.mtime_ns) == (new.digest, new.size, new.mtime_ns)


Found = tuple[int, int, int, int, int]  # a State's fields but the digest, as `lstat` gave them


def unchanged(previous: Manifest | None, path: str, found: Found) -> State | None:
    """The state `previous` knew for `path`, digest included, when `found` shows the file
    unchanged since (module doc); None when it must be read again."""
    if previous is None:
        return None
    known = previous.states.get(path)
    if known is None or known.digest is None or known[:5] != found:
        return None
    if found[3] + STAT_GRAIN_NS > previous.started_ns:  # its change time
        return None
    return known


def encode(manifest: Manifest, base: Manifest | None) -> bytes:
    """The manifest's file: whole, or (with the `base` taken just before it) what changed."""
    rows: Iterable[tuple[str, State]] = manifest.states.items()
    removed: list[str] = []
    if base is not None:
        known = base.states
        rows = [(p, state) for p, state in manifest.states.items() if known.get(p) != state]
        removed = [path for path in known if path not in manifest.states]
    return json.dumps(
        {
            "format": FORMAT,
            "run_id": manifest.run_id,
            "phase": manifest.phase,
            "started_ns": manifest.started_ns,
            "stored_bytes": manifest.stored_bytes,
            "truncated": manifest.truncated,
            "whole": base is None,
            "states": [[path, *state] for path, state in rows],
            "removed": removed,
        },
        separators=(",", ":"),
    ).encode("utf-8")


def decode(data: bytes, base: Manifest | None) -> Manifest:
    """A stored manifest (one of what changed needs the `base` it was written against);
    ValueError when it is not one of this format."""
    try:
        raw = json.loads(data)
        if raw["format"] != FORMAT or raw["phase"] not in PHASES:
            raise ValueError("not a checkpoint manifest of this format")
        if raw["whole"]:
            states: dict[str, State] = {}
        elif base is not None:
            states = dict(base.states)
            for path in raw["removed"]:
                del states[path]
        else:
            raise ValueError("a manifest of changes without the one before it")
        states.update((str(row[0]), State(*row[1:])) for row in raw["states"])
        return Manifest(
            str(raw["run_id"]),
            raw["phase"],
            int(raw["started_ns"]),
            states,
            int(raw["stored_bytes"]),
            bool(raw["truncated"]),
        )
    except (KeyError, TypeError, IndexError) as bad:
        raise ValueError("not a checkpoint manifest of this format") from bad


def named_digests(data: bytes) -> set[str]:
    """The digests a stored manifest's rows name, without the one it builds on: every digest
    of a checkpoint is named by its file or by one it builds on (what collecting unnamed
    objects needs). ValueError when it is not a manifest of this format."""
    try:
        raw = json.loads(data)
        if raw["format"] != FORMAT:
            raise ValueError("not a checkpoint manifest of this format")
        return {str(row[6]) for row in raw["states"] if row[6] is not None}
    except (KeyError, TypeError, IndexError) as bad:
        raise ValueError("not a checkpoint manifest of this format") from bad
