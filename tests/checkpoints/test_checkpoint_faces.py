"""Checkpoints are the runner's, so every face takes them: `magi-code exec` (the real console
script) leaves a turn's two checkpoints when the turn writes, the one taken after the turn
included (the process waits for it before it exits), and none when the turn only reads; a
turn that starts a subagent that may write takes them too, around what the subagent does."""

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.agents_support import agent_call, melchior_dirs
from magi_code.checkpoints.plan import plan_rewind
from magi_code.checkpoints.store import CheckpointStore
from support.exec import exec_run as run
from support.exec import run_magi_code
from support.sessions import call, records, script


def checkpoints(home: Path, session_id: str | None = None) -> list[str]:
    folders = list((home / "sessions").glob(f"{session_id or '*'}.checkpoints"))
    if not folders:
        return []
    [folder] = folders
    return [m.phase for m in CheckpointStore(folder, Path("/"), {}).listed()]


def test_exec_checkpoints_a_turn_that_writes_and_not_one_that_reads(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    read = {"tools": [{"name": "read_file", "arguments": {"path": "a.txt"}}]}
    done = run(["--approval-mode", "full", script(read, {"text": "read"})], workspace, home)
    assert done.returncode == 0, done.stderr
    assert checkpoints(home) == []
    shell = {"tools": [{"name": "shell", "arguments": {"command": "touch made"}}]}
    done = run(["--continue", "--approval-mode", "full", script(shell)], workspace, home)
    assert done.returncode == 0, done.stderr
    assert (workspace / "made").exists()
    assert checkpoints(home) == ["before", "after"]


@pytest.fixture
def xdg() -> Iterator[dict[str, str]]:
    """A private melchior runtime (a socket path must fit sun_path: a short folder)."""
    short = Path(tempfile.mkdtemp(prefix="mel", dir="/tmp"))
    yield melchior_dirs(short)
    shutil.rmtree(short, ignore_errors=True)


def parent_session(home: Path) -> str:
    """The session that no other started (a subagent's records name its delegation)."""
    [parent] = [
        path.stem
        for path in (home / "sessions").glob("*.jsonl")
        if not any("delegation" in r for r in records(home, path.stem))
    ]
    return parent


# The child asks its parent for a write, which `exec` cannot put to anyone: allowed by rule.
CHILD_WRITES = """[permissions]
rules = [{tool = "write_file", decision = "allow"}, {tool = "edit_file", decision = "allow"}]
"""


def test_what_a_subagent_changes_is_checkpointed_in_its_parents_turn(
    tmp_path: Path, xdg: dict[str, str]
) -> None:
    """The parent's turn only starts a subagent, which writes a file and edits another; the
    parent's turn takes its checkpoints around it, and rewinding that turn puts both back.
    A read-only (explore) subagent takes none."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    home.mkdir()
    (home / "settings.toml").write_text(CHILD_WRITES)
    (workspace / "a.txt").write_text("alpha\n")
    explore = agent_call(
        script(call("read_file", path="a.txt"), {"text": "read"}), profile="explore"
    )
    done = run(
        ["--approval-mode", "full", script({"tools": [explore]}, {"text": "ok"})],
        workspace,
        home,
        **xdg,
    )
    assert done.returncode == 0, done.stderr
    parent = parent_session(home)
    assert checkpoints(home, parent) == []
    edit = call("edit_file", path="a.txt", old="alpha", new="ALPHA")
    child = script(
        call("write_file", path="made.txt", content="by the child\n"), edit, {"text": "done"}
    )
    prompt = script({"tools": [agent_call(child)]}, {"text": "the child is done"})
    done = run(["--continue", "--approval-mode", "full", prompt], workspace, home, **xdg)
    assert done.returncode == 0, done.stderr
    assert (workspace / "made.txt").read_text() == "by the child\n"
    assert (workspace / "a.txt").read_text() == "ALPHA\n"
    assert checkpoints(home, parent) == ["before", "after"]
    store = CheckpointStore(home / "sessions" / f"{parent}.checkpoints", workspace, {})
    target, after = store.load(store.listed())
    plan = plan_rewind(target, [after], store.current())
    assert plan.outside == ()  # the child's changes are the parent turn's own
    assert store.restore("rewind", target, plan) == []
    assert (workspace / "a.txt").read_text() == "alpha\n"
    assert not (workspace / "made.txt").exists()


def test_two_exec_sessions_share_the_objects_and_pruning_one_collects_its_own(
    tmp_path: Path,
) -> None:
    """Two `magi-code exec` sessions in one workspace, each changing a file: the content is
    stored once for both, beside neither session; `magi-code sessions prune` deletes the
    older session and, with it, the objects only its checkpoints named."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    for i in range(10):
        (workspace / f"f{i}.txt").write_text(f"file {i}\n" * 100)
    first = script(call("shell", command="echo first > f0.txt"), {"text": "ok"})
    done = run(["--approval-mode", "full", first], workspace, home)
    assert done.returncode == 0, done.stderr
    [older] = [path.stem for path in (home / "sessions").glob("*.jsonl")]
    second = script(call("shell", command="echo second > f1.txt"), {"text": "ok"})
    done = run(["--approval-mode", "full", second], workspace, home)
    assert done.returncode == 0, done.stderr
    stores = sorted((home / "sessions").glob("*.checkpoints"))
    assert len(stores) == 2 and all(os.listdir(s) == ["manifests"] for s in stores)
    [shared] = (home / "checkpoints").iterdir()
    before = set(os.listdir(shared / "objects"))
    # the ten files, "first", "second": each once, though both sessions' checkpoints hold them
    assert len(before) == 12
    first_only = hashlib.sha256(b"file 0\n" * 100).hexdigest()  # f0.txt before the first
    assert first_only in before
    old = time.time_ns() - 10 * 86_400 * 10**9
    os.utime(home / "sessions" / f"{older}.jsonl", ns=(old, old))
    pruned = run_magi_code(["sessions", "prune", "--older-than", "1"], None, home, text=True)
    assert pruned.returncode == 0 and pruned.stdout == f"{older}\n1 sessions removed\n"
    assert not (home / "sessions" / f"{older}.checkpoints").exists()
    assert set(os.listdir(shared / "objects")) == before - {first_only}
