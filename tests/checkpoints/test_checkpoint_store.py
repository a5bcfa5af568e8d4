"""Workspace checkpoints on real files: what a checkpoint sees (the ignore files, `.git`),
its bounds at their edges, a rewind that puts back what a turn changed, and a change made
outside magi-code since, which a rewind names before it would overwrite it."""

import os
import stat
import time
from pathlib import Path

import pytest

from magi_code.checkpoints.limits import (
    CHECKPOINT_FILE_BYTES,
    CHECKPOINT_WHOLE_EVERY,
    STAT_GRAIN_NS,
)
from magi_code.checkpoints.manifest import Manifest, State, unchanged
from magi_code.checkpoints.plan import plan_rewind
from magi_code.checkpoints.store import CheckpointStore, _read
from magi_code.sessions.retention import prune
from magi_code.sessions.store import SessionStore

SESSION = "s-checkpoints"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def store_for(tmp_path: Path, workspace: Path, **bounds: int) -> CheckpointStore:
    directory = SessionStore(tmp_path / "home").checkpoints_of(SESSION)
    directory.parent.mkdir(parents=True, exist_ok=True)
    return CheckpointStore(directory, workspace, {"HOME": str(tmp_path)}, **bounds)


def rewind_to(store: CheckpointStore, target: Manifest) -> list[str]:
    """Plan against every checkpoint taken after `target`, then restore."""
    since = store.load([m for m in store.listed() if m.started_ns > target.started_ns])
    plan = plan_rewind(target, since, store.current())
    assert not plan.outside
    return store.restore("rewind", target, plan)


def test_a_checkpoint_skips_what_git_ignores_and_the_git_folder(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.bin").write_bytes(b"\0" * 10)
    (workspace / "run.log").write_text("noise\n")
    (workspace / "app.py").write_text("print('hi')\n")
    manifest = store_for(tmp_path, workspace).take("r1", "before")
    assert sorted(manifest.states) == [".gitignore", "app.py"]


def test_a_rewind_never_touches_ignored_files(tmp_path: Path, workspace: Path) -> None:
    (workspace / ".git").mkdir()  # a repository: its .gitignore counts
    (workspace / ".gitignore").write_text("*.log\n")
    (workspace / "a.txt").write_text("one\n")
    store = store_for(tmp_path, workspace)
    target = store.take("r1", "before")
    (workspace / "a.txt").write_text("two\n")
    (workspace / "new.log").write_text("made by the turn, but ignored\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "made.txt").write_text("made by the turn\n")
    store.take("r1", "after")
    assert rewind_to(store, target) == []
    assert (workspace / "a.txt").read_text() == "one\n"
    assert not (workspace / "sub").exists()
    assert (workspace / "new.log").read_text() == "made by the turn, but ignored\n"


def test_a_rewind_puts_back_deleted_files_links_and_modes(tmp_path: Path, workspace: Path) -> None:
    (workspace / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(workspace / "run.sh", 0o755)
    (workspace / "docs").mkdir()
    (workspace / "docs" / "guide.md").write_text("# guide\n")
    os.symlink("docs/guide.md", workspace / "guide")
    (workspace / "kept").mkdir(mode=0o755)
    store = store_for(tmp_path, workspace)
    target = store.take("r1", "before")
    os.chmod(workspace / "run.sh", 0o644)
    os.chmod(workspace / "kept", 0o700)
    (workspace / "docs" / "guide.md").unlink()
    (workspace / "docs").rmdir()
    (workspace / "guide").unlink()
    store.take("r1", "after")
    assert rewind_to(store, target) == []
    assert stat.S_IMODE((workspace / "run.sh").stat().st_mode) == 0o755
    assert (workspace / "docs" / "guide.md").read_text() == "# guide\n"
    assert os.readlink(workspace / "guide") == "docs/guide.md"
    assert stat.S_IMODE((workspace / "kept").stat().st_mode) == 0o755


def test_the_store_is_private_and_pruned_with_its_session(tmp_path: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    store = store_for(tmp_path, workspace)
    store.take("r1", "before")
    for path in [store.directory, *store.directory.rglob("*")]:
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, path
    sessions = store.directory.parent
    session_file = sessions / f"{SESSION}.jsonl"
    session_file.write_bytes(b"")
    os.chmod(session_file, 0o600)
    old = time.time_ns() - 10 * 86_400 * 10**9
    os.utime(session_file, ns=(old, old))
    assert prune(sessions, 1, time.time_ns()) == [SESSION]
    assert not store.directory.exists()


def test_a_file_at_the_size_bound_is_stored_and_one_byte_more_is_not(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "edge.bin").write_bytes(b"e" * CHECKPOINT_FILE_BYTES)
    (workspace / "over.bin").write_bytes(b"o" * (CHECKPOINT_FILE_BYTES + 1))
    store = store_for(tmp_path, workspace)
    target = store.take("r1", "before")
    assert target.states["edge.bin"].digest is not None
    assert target.states["over.bin"].digest is None
    (workspace / "edge.bin").write_bytes(b"changed")
    (workspace / "over.bin").write_bytes(b"changed")
    plan = plan_rewind(target, [store.take("r1", "after")], store.current())
    assert plan.write == ("edge.bin",)
    assert plan.unrestorable == ("over.bin",)


def test_the_store_bound_stores_up_to_its_edge_and_names_the_rest(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "a.txt").write_bytes(b"a" * 60)
    (workspace / "b.txt").write_bytes(b"b" * 40)
    (workspace / "c.txt").write_bytes(b"c")
    store = store_for(tmp_path, workspace, store_bytes=100)
    manifest = store.take("r1", "before")
    assert manifest.stored_bytes == 100
    assert manifest.states["a.txt"].digest is not None
    assert manifest.states["b.txt"].digest is not None
    assert manifest.states["c.txt"].digest is None  # one byte past the bound


def test_a_change_made_outside_magi_code_since_is_named_before_a_rewind(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "mine.txt").write_text("before the turn\n")
    (workspace / "yours.txt").write_text("before the turn\n")
    store = store_for(tmp_path, workspace)
    target = store.take("r1", "before")
    (workspace / "mine.txt").write_text("the turn's change\n")
    (workspace / "yours.txt").write_text("the turn's change\n")
    after = store.take("r1", "after")
    (workspace / "yours.txt").write_text("your own edit, later\n")
    plan = plan_rewind(target, [after], store.current())
    assert plan.write == ("mine.txt", "yours.txt")
    assert plan.outside == ("yours.txt",)
    # between two turns counts too: the next turn's checkpoint sees it
    later = store.take("r2", "before")
    assert plan_rewind(target, [after, later], store.current()).outside == ("yours.txt",)


def test_a_file_that_was_there_unseen_is_not_deleted(tmp_path: Path, workspace: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".gitignore").write_text("cache/\n")
    (workspace / "cache").mkdir()
    (workspace / "cache" / "old.txt").write_text("kept from before\n")
    time.sleep(STAT_GRAIN_NS / 1e9)  # the file is older than the checkpoint by a clock tick
    store = store_for(tmp_path, workspace)
    target = store.take("r1", "before")
    (workspace / ".gitignore").write_text("")  # the turn un-ignores it
    after = store.take("r1", "after")
    plan = plan_rewind(target, [after], store.current())
    assert plan.write == (".gitignore",) and plan.delete == ()


def test_a_digest_is_reused_only_clear_of_the_clock_tick_before_a_checkpoint() -> None:
    found = (0o100644, 5, 1_000, 1_000, 7)
    known = State(*found, "d")
    edge = Manifest("r", "before", 1_000 + STAT_GRAIN_NS, {"a": known}, 0)
    assert unchanged(edge, "a", found) == known
    inside = Manifest("r", "before", 1_000 + STAT_GRAIN_NS - 1, {"a": known}, 0)
    assert unchanged(inside, "a", found) is None
    assert unchanged(edge, "a", (0o100644, 6, 1_000, 1_000, 7)) is None


def test_a_manifest_is_whole_every_so_many_and_reads_back_through_the_changes(
    tmp_path: Path, workspace: Path
) -> None:
    store = store_for(tmp_path, workspace)
    taken = []
    for number in range(CHECKPOINT_WHOLE_EVERY + 1):
        (workspace / f"f{number % 3}.txt").write_text(f"turn {number}\n")
        if number % 5 == 4:
            (workspace / f"f{number % 3}.txt").unlink()
        taken.append(store.take(f"r{number}", "before"))
    listed = store.listed()
    assert [m.whole for m in listed] == [True] + [False] * (CHECKPOINT_WHOLE_EVERY - 1) + [True]
    assert store.load(listed) == taken  # read from the files alone
    assert store.load(listed[-2:]) == taken[-2:]


def test_nothing_is_deleted_when_a_walk_stopped_at_its_bound() -> None:
    made = State(0o100644, 1, 10**12, 10**12, 9, "d")
    target = Manifest("r", "before", 1, {}, 0)
    current = Manifest("", "after", 2, {"made.txt": made}, 0)
    assert plan_rewind(target, [], current).delete == ("made.txt",)
    truncated = Manifest("", "after", 2, {"made.txt": made}, 0, truncated=True)
    assert plan_rewind(target, [], truncated).delete == ()


def test_a_file_that_grew_since_its_stat_is_read_whole_up_to_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "grew.txt"
    path.write_bytes(b"x" * 10)
    mode = path.lstat().st_mode
    assert _read(str(path), mode, 4, 10) == b"x" * 10  # lstat said 4 bytes
    assert _read(str(path), mode, 4, 9) is None  # past the bound now
