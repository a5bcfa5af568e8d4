"""What rewinding the code to a checkpoint would do, decided from manifests alone. Pure.

The target is the checkpoint taken before a turn's first change. Going back to it writes
every file and link whose content differs now, deletes what it did not have, makes the folders
it had and removes those it did not (a removal happens only if the folder is empty then: an
ignored file inside keeps it). A file the target named but could not store is `unrestorable`.
A file the target did not have is deleted only when it changed after the target began (its
change time, less a clock tick, STAT_GRAIN_NS): one older than that was there unseen (ignored
then, say), and stays. Nothing is deleted when either walk stopped at its bound (`truncated`):
a path past it is unknown, not absent.

Changes made outside magi-code since the target: magi-code's own changes are those between a
turn's two checkpoints (before its first change, after it ended); anything that differs between
one turn's `after` and the next checkpoint, or between the last checkpoint and now, was made by
someone else. Those of them the rewind would overwrite are `outside`, for the face to ask about
first. A change made outside during a turn is taken for the turn's own.
"""

from collections.abc import Sequence
from itertools import pairwise

from magi_code.checkpoints.limits import STAT_GRAIN_NS
from magi_code.checkpoints.manifest import Manifest, same_content
from magi_code.records import record


@record
class RewindPlan:
    write: tuple[str, ...]  # files and links put back as the target had them
    delete: tuple[str, ...]  # files and links the target did not have
    make_dirs: tuple[str, ...]  # shallowest first
    remove_dirs: tuple[str, ...]  # deepest first; only while empty
    unrestorable: tuple[str, ...]  # differ now, but the target could not store them
    outside: tuple[str, ...]  # of the paths above, those changed outside magi-code since


def plan_rewind(target: Manifest, since: Sequence[Manifest], current: Manifest) -> RewindPlan:
    """Back to `target`, given every checkpoint taken after it (`since`, in order) and the
    workspace as it is now (`current`: a manifest of a fresh walk, with no run's id)."""
    then, now = target.states, current.states
    differing = _differing(target, current)
    write: list[str] = []
    delete: list[str] = []
    make_dirs: list[str] = []
    remove_dirs: list[str] = []
    unrestorable: list[str] = []
    for path in differing:
        old, new = then.get(path), now.get(path)
        if old is None:
            assert new is not None
            if target.truncated or current.truncated:
                continue
            if new.is_dir:
                remove_dirs.append(path)
            elif new.ctime_ns + STAT_GRAIN_NS > target.started_ns:
                delete.append(path)
        elif old.is_dir:
            make_dirs.append(path)  # missing, or its mode changed
            if new is not None and not new.is_dir:
                delete.append(path)  # a file or link where the folder was
        elif old.digest is None:
            unrestorable.append(path)
        else:
            write.append(path)
            if new is not None and new.is_dir:
                remove_dirs.append(path)  # a folder where the file was
    touched = {*write, *delete, *make_dirs, *remove_dirs}
    outside = _changed_outside([target, *since, current]) & touched
    return RewindPlan(
        tuple(sorted(write)),
        tuple(sorted(delete)),
        tuple(sorted(make_dirs, key=_depth)),
        tuple(sorted(remove_dirs, key=_depth, reverse=True)),
        tuple(sorted(unrestorable)),
        tuple(sorted(outside)),
    )


def _changed_outside(chain: Sequence[Manifest]) -> set[str]:
    """Paths that differ across a step of `chain` that was no turn's own (module doc)."""
    changed: set[str] = set()
    for earlier, later in pairwise(chain):
        step = (earlier.phase, later.phase)
        if step != ("before", "after") or earlier.run_id != later.run_id:
            changed |= _differing(earlier, later)
    return changed


def _differing(earlier: Manifest, later: Manifest) -> set[str]:
    old, new = earlier.states, later.states
    candidates = {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}  # fast
    return {p for p in candidates if not same_content(old.get(p), new.get(p))}


def _depth(path: str) -> int:
    return path.count("/")
