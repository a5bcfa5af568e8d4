"""The objects the sessions of one workspace share, on real files: each content stored once;
a second session's first checkpoint reads only what changed since the first session's last
(the clock-tick rule of manifest.py kept); a store from before still restores and moves its
objects over; a fork takes the checkpoints along; pruning a session collects the objects no
remaining checkpoint names, and never those of a checkpoint another process is taking."""

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from magi_code.checkpoints import shared as shared_module
from magi_code.checkpoints import store as store_module
from magi_code.checkpoints.limits import STAT_GRAIN_NS
from magi_code.checkpoints.manifest import Manifest
from magi_code.checkpoints.plan import plan_rewind
from magi_code.checkpoints.shared import Shared, collect, workspace_folder
from magi_code.checkpoints.store import CheckpointStore
from magi_code.sessions.retention import prune
from magi_code.sessions.store import SessionStore

DAY_NS = 86_400 * 10**9


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home" / "sessions").mkdir(parents=True)
    return tmp_path / "home"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def session(home: Path, workspace: Path, session_id: str) -> CheckpointStore:
    directory = SessionStore(home).checkpoints_of(session_id)
    return CheckpointStore(directory, workspace, {"HOME": str(home)})


def objects(home: Path, workspace: Path) -> set[str]:
    return set(os.listdir(workspace_folder(home, workspace) / "objects"))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the checkpoints read from now on (a spy on the store's one read)."""
    seen: list[str] = []
    real = store_module._read

    def spy(path: str, mode: int, size: int, limit: int) -> bytes | None:
        seen.append(os.path.basename(path))
        return real(path, mode, size, limit)

    monkeypatch.setattr(store_module, "_read", spy)
    return seen


def settled() -> None:
    """Past the clock tick: what was written before is clear of the next checkpoint's start."""
    time.sleep(STAT_GRAIN_NS / 1e9)


def aged(home: Path, session_id: str) -> None:
    """The session's file, ten days old: the next prune deletes it."""
    path = home / "sessions" / f"{session_id}.jsonl"
    path.write_bytes(b"")
    os.chmod(path, 0o600)
    old = time.time_ns() - 10 * DAY_NS
    os.utime(path, ns=(old, old))


def rewind_to(store: CheckpointStore, target: Manifest) -> list[str]:
    since = store.load([m for m in store.listed() if m.started_ns > target.started_ns])
    plan = plan_rewind(target, since, store.current())
    return store.restore("rewind", target, plan)


def test_two_sessions_store_each_content_once_and_the_second_reads_only_what_changed(
    home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(20):
        (workspace / f"f{i}.txt").write_text(f"file {i}\n" * (i + 1))
    (workspace / "same.txt").write_text("file 0\n")  # the content of f0.txt again
    settled()
    first = session(home, workspace, "s-one")
    first.take("r1", "before")
    assert objects(home, workspace) == {digest(workspace / f"f{i}.txt") for i in range(20)}
    (workspace / "f3.txt").write_text("changed since\n")
    settled()
    read = reads(monkeypatch)
    second = session(home, workspace, "s-two")
    manifest = second.take("r1", "before")
    assert read == ["f3.txt"]  # not the twenty others
    for path, state in manifest.states.items():
        if not state.is_dir:
            assert state.digest == digest(workspace / path)
    assert len(objects(home, workspace)) == 21  # the new f3.txt, once
    for store in (first, second):
        assert sorted(os.listdir(store.directory)) == ["manifests"]  # no objects of its own
    shared = workspace_folder(home, workspace)
    for path in [shared, *shared.rglob("*")]:
        assert stat.S_IMODE(path.lstat().st_mode) == (0o700 if path.is_dir() else 0o600), path


def test_a_file_changed_within_the_clock_tick_of_the_other_sessions_checkpoint_is_read_again(
    home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "old.txt").write_text("old\n")
    (workspace / "kept.txt").write_text("same size\n")
    settled()
    (workspace / "racy.txt").write_text("one\n")  # just before the walk: racily clean
    session(home, workspace, "s-one").take("r1", "before")
    before = (workspace / "kept.txt").stat()
    (workspace / "kept.txt").write_text("SAME SIZE\n")  # same size, and the same times again:
    os.utime(workspace / "kept.txt", ns=(before.st_atime_ns, before.st_mtime_ns))
    settled()  # only its change time tells
    read = reads(monkeypatch)
    manifest = session(home, workspace, "s-two").take("r1", "before")
    assert sorted(read) == ["kept.txt", "racy.txt"]
    assert manifest.states["kept.txt"].digest == digest(workspace / "kept.txt")
    assert manifest.states["racy.txt"].digest == digest(workspace / "racy.txt")


def test_a_store_from_before_restores_and_its_next_checkpoint_moves_its_objects(
    home: Path, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    old = session(home, workspace, "s-old")
    target = old.take("r1", "before")
    (workspace / "a.txt").write_text("ALPHA\n")
    old.take("r1", "after")
    # As the store was written before objects were shared: its own objects/ folder.
    shared = workspace_folder(home, workspace)
    os.rename(shared / "objects", old.directory / "objects")
    shutil.rmtree(shared)
    store_module._latest.clear()  # as a new process finds it
    reopened = session(home, workspace, "s-old")
    assert reopened.content(target.states["a.txt"].digest or "") == b"alpha\n"
    assert rewind_to(reopened, target) == []
    assert (workspace / "a.txt").read_text() == "alpha\n"
    assert not (reopened.directory / "objects").exists()
    assert len(objects(home, workspace)) == 2
    # Its checkpoints all restore from the shared folder now.
    listed = reopened.listed()
    for manifest in reopened.load(listed):
        for state in manifest.states.values():
            if state.digest is not None:
                assert reopened.content(state.digest)


def test_a_fork_can_rewind_to_the_turns_before_it_and_outlives_its_original(
    home: Path, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    original = session(home, workspace, "s-original")
    target = original.take("r1", "before")
    (workspace / "a.txt").write_text("ALPHA\n")
    (workspace / "new.txt").write_text("made by the turn\n")
    original.take("r1", "after")
    forked = session(home, workspace, "s-forked")
    original.fork(forked.directory)
    assert [m.name for m in forked.listed()] == [m.name for m in original.listed()]
    aged(home, "s-original")
    assert prune(home / "sessions", 1, time.time_ns()) == ["s-original"]
    [copied] = [m for m in forked.load(forked.listed()) if m.phase == "before"]
    assert copied == target
    assert rewind_to(forked, copied) == []
    assert (workspace / "a.txt").read_text() == "alpha\n"
    assert not (workspace / "new.txt").exists()


def test_pruning_a_session_removes_the_objects_only_it_named(home: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    gone = session(home, workspace, "s-gone")
    gone.take("r1", "before")
    (workspace / "a.txt").write_text("made in the pruned session\n")
    gone.take("r1", "after")
    pruned_only = digest(workspace / "a.txt")
    (workspace / "a.txt").write_text("alpha\n")
    staying = session(home, workspace, "s-staying")
    target = staying.take("r2", "before")
    (workspace / "b.txt").write_text("beta\n")
    staying.take("r2", "after")
    before = objects(home, workspace)
    assert pruned_only in before
    aged(home, "s-gone")
    assert prune(home / "sessions", 1, time.time_ns()) == ["s-gone"]
    assert objects(home, workspace) == before - {pruned_only}
    assert os.listdir(workspace_folder(home, workspace) / "sessions") == ["s-staying.checkpoints"]
    assert rewind_to(staying, target) == []
    assert not (workspace / "b.txt").exists()


HOLDER = """
import sys
from pathlib import Path
from magi_code.checkpoints.shared import Shared, write_private
shared = Shared(Path(sys.argv[1]))
with shared.using("s-taking.checkpoints"):
    write_private(shared.objects / ("0" * 64), b"written, its manifest not yet")
    print("holding", flush=True)
    sys.stdin.read()
"""


def test_a_collection_never_runs_while_another_process_is_taking_a_checkpoint(
    home: Path, workspace: Path
) -> None:
    """Between the objects a checkpoint writes and the manifest naming them, its process holds
    the workspace's lock shared; a collection (another process pruning) leaves them alone."""
    folder = workspace_folder(home, workspace)
    (home / "sessions" / "s-taking.checkpoints").mkdir()
    taking = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert taking.stdout is not None
        assert taking.stdout.readline() == "holding\n"
        (folder / "sessions" / "s-dead.checkpoints").touch()  # a deleted session: one is owed
        assert collect(home) == []
        assert objects(home, workspace) == {"0" * 64}
    finally:
        assert taking.stdin is not None
        taking.stdin.close()
        assert taking.wait(30) == 0
    assert collect(home) == [folder]  # the checkpoint was never written: nothing names it
    assert objects(home, workspace) == set()
    assert not Shared(folder).owes(home / "sessions")


def test_a_checkpoint_taken_while_a_collection_reads_is_read_again_under_the_lock(
    home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A collection reads the manifests first without the lock (a checkpoint waits only for
    the rest); one written in between, naming a new object, is read under the lock."""
    (workspace / "a.txt").write_text("alpha\n")
    busy = session(home, workspace, "s-busy")
    busy.take("r1", "before")
    session(home, workspace, "s-gone").take("r1", "before")
    shutil.rmtree(busy.directory.with_name("s-gone.checkpoints"))  # deleted: one is owed
    real = shared_module._Named.read
    between: list[Manifest] = []

    def read(named: shared_module._Named, stores: list[str]) -> bool:
        done = real(named, stores)
        if not between:  # the first reading: the lock is not held yet
            (workspace / "a.txt").write_text("changed in between\n")
            between.append(busy.take("r2", "before"))
        return done

    monkeypatch.setattr(shared_module._Named, "read", read)
    assert collect(home) == [workspace_folder(home, workspace)]
    assert between[0].states["a.txt"].digest in objects(home, workspace)
    assert busy.content(digest(workspace / "a.txt")) == b"changed in between\n"


TAKER = """
import os, sys
from pathlib import Path
from magi_code.checkpoints.store import CheckpointStore
home, workspace, turns = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
store = CheckpointStore(home / "sessions" / "s-busy.checkpoints", workspace, {})
for turn in range(turns):
    for i in range(0, 200, 4):
        (workspace / f"f{i:03d}.txt").write_bytes(os.urandom(2048))
    store.take(f"r{turn}", "before")
print("done", flush=True)
"""


def test_checkpoints_and_collections_in_two_processes_lose_no_object(
    home: Path, workspace: Path
) -> None:
    """One process checkpoints a workspace turn after turn, each turn writing new content,
    while this one keeps pruning another session of it; every object a checkpoint names is
    there at the end."""
    for i in range(200):
        (workspace / f"f{i:03d}.txt").write_bytes(os.urandom(2048))
    busy = subprocess.Popen(
        [sys.executable, "-c", TAKER, str(home), str(workspace), "40"],
        stdout=subprocess.PIPE,
        text=True,
    )
    collections = 0
    try:
        while busy.poll() is None:
            session(home, workspace, "s-brief").take("r", "before")
            aged(home, "s-brief")
            assert prune(home / "sessions", 1, time.time_ns()) == ["s-brief"]
            collections += not Shared(workspace_folder(home, workspace)).owes(home / "sessions")
    finally:
        assert busy.wait(120) == 0
    assert collections > 0  # some ran between its checkpoints
    store_module._latest.clear()
    taker = session(home, workspace, "s-busy")
    listed = taker.listed()
    assert len(listed) == 40
    stored = objects(home, workspace)
    for manifest in taker.load(listed):
        assert {s.digest for s in manifest.states.values() if s.digest} <= stored
