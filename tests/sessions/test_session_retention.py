"""Retention against real files: age edges, leases held by a real second process, what is
never deleted, what `scan` shows, and the `sessions.retention_days` setting."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sessions_support import header, user, write_session

from magi_code.config import settings
from magi_code.redact import REDACTED
from magi_code.sessions import SessionError, SessionStore
from magi_code.sessions.reader import decode_record
from magi_code.sessions.retention import (
    DAY_NS,
    DEFAULT_RETENTION_DAYS,
    PROMPT_CHARS,
    auto_prune,
    display_line,
    prune,
    retention_days,
    scan,
)
from support.sessions import hold_open

WRITER_ONLY = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("held", flush=True)
sys.stdin.read()
"""
SECRET = "sk-" + "A1b2C3d4" * 4


def stored(store: SessionStore, cwd: Path, sid: str, age_ns: int, now_ns: int) -> Path:
    path = write_session(store, [header(cwd), user("r1", f"hello from {sid}")], session_id=sid)
    os.utime(path, ns=(now_ns - age_ns, now_ns - age_ns))
    return path


def test_age_edge_at_the_nanosecond(store: SessionStore, cwd: Path) -> None:
    now = time.time_ns()
    days = DEFAULT_RETENTION_DAYS
    stored(store, cwd, "kept", days * DAY_NS - 1, now)
    stored(store, cwd, "edge", days * DAY_NS, now)
    assert prune(store.directory, days, now) == ["edge"]
    assert sorted(p.name for p in store.directory.glob("*.jsonl")) == ["kept.jsonl"]


def test_age_edge_in_real_time(store: SessionStore, cwd: Path) -> None:
    now = time.time_ns()
    hour, second = 3600 * 10**9, 10**9
    young = stored(store, cwd, "young", 30 * DAY_NS - hour, now)
    old = stored(store, cwd, "old", 30 * DAY_NS + second, now)
    assert prune(store.directory, 30, time.time_ns()) == ["old"]
    assert young.exists() and not old.exists()


def test_lock_files_go_with_the_session_and_stay_with_the_kept(
    store: SessionStore, cwd: Path
) -> None:
    now = time.time_ns()
    stored(store, cwd, "old", 31 * DAY_NS, now)
    stored(store, cwd, "new", 0, now)
    store.open("new", cwd)[0].close()  # leaves new's lock files behind, as any attachment does
    assert prune(store.directory, 30, now) == ["old"]
    assert sorted(p.name for p in store.directory.iterdir()) == [
        "new.active.lock",
        "new.jsonl",
        "new.writer.lock",
    ]


def test_attached_by_another_process_is_never_deleted(store: SessionStore, cwd: Path) -> None:
    now = time.time_ns()
    held = stored(store, cwd, "held", 90 * DAY_NS, now)
    free = stored(store, cwd, "free", 90 * DAY_NS, now)
    child = hold_open(store.directory.parent, "held", cwd)
    try:
        assert prune(store.directory, 0, time.time_ns(), dry_run=True) == ["free"]
        assert prune(store.directory, 0, time.time_ns()) == ["free"]
        assert held.exists() and not free.exists()
        assert [(s.session_id, s.attached) for s in scan(store.directory)] == [("held", True)]
    finally:
        child.communicate("", timeout=30)
    assert prune(store.directory, 0, time.time_ns()) == ["held"]  # released: now it goes


def test_an_open_halfway_through_its_leases_is_not_raced(store: SessionStore, cwd: Path) -> None:
    """An open takes the writer lease, then the active one: in between, the session does not
    look attached yet, and only the deletion's own lease taking keeps it from being deleted."""
    now = time.time_ns()
    path = stored(store, cwd, "opening", 90 * DAY_NS, now)
    writer = store.directory / "opening.writer.lock"
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER_ONLY, str(writer)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        assert prune(store.directory, 0, time.time_ns(), dry_run=True) == ["opening"]
        assert prune(store.directory, 0, time.time_ns()) == []
        assert path.exists() and writer.exists()
    finally:
        child.communicate("", timeout=30)


def test_attached_by_this_process_is_never_deleted(store: SessionStore, cwd: Path) -> None:
    now = time.time_ns()
    path = stored(store, cwd, "mine", 90 * DAY_NS, now)
    attachment, _ = store.open("mine", cwd)
    try:
        assert prune(store.directory, 0, now) == []
        assert path.exists()
    finally:
        attachment.close()


def test_dry_run_deletes_nothing(store: SessionStore, cwd: Path) -> None:
    now = time.time_ns()
    for sid in ("a", "b"):
        stored(store, cwd, sid, 40 * DAY_NS, now)
    before = sorted(p.name for p in store.directory.iterdir())
    assert prune(store.directory, 30, now, dry_run=True) == ["a", "b"]
    assert sorted(p.name for p in store.directory.iterdir()) == before  # not even lock files


def test_odd_files_are_never_deleted(store: SessionStore, cwd: Path, tmp_path: Path) -> None:
    now = time.time_ns()
    target = stored(store, cwd, "target", 90 * DAY_NS, now)
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b"")
    odd = store.directory
    (odd / "link.jsonl").symlink_to(target)
    (odd / "outlink.jsonl").symlink_to(outside)
    os.mkfifo(odd / "fifo.jsonl")
    (odd / "dir.jsonl").mkdir()
    (odd / "bad name.jsonl").write_bytes(b"")
    (odd / f"{'x' * 65}.jsonl").write_bytes(b"")
    (odd / "notes.txt").write_bytes(b"")
    for name in ("link.jsonl", "outlink.jsonl", "fifo.jsonl", "dir.jsonl"):
        os.utime(odd / name, ns=(0, 0), follow_symlinks=False)
    assert prune(store.directory, 0, time.time_ns()) == ["target"]
    left = {p.name for p in odd.iterdir()}
    assert left == {
        "link.jsonl",
        "outlink.jsonl",
        "fifo.jsonl",
        "dir.jsonl",
        "bad name.jsonl",
        f"{'x' * 65}.jsonl",
        "notes.txt",
    }
    assert outside.exists()
    assert [s.session_id for s in scan(store.directory)] == []


def test_a_missing_directory_is_left_missing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert prune(home / "sessions", 0, time.time_ns()) == []
    assert scan(home / "sessions") == []
    assert auto_prune(str(home), {}, time.time_ns()) == []
    assert not home.exists()


def test_auto_prune_follows_the_setting(store: SessionStore, cwd: Path) -> None:
    now = time.time_ns()
    stored(store, cwd, "old", 31 * DAY_NS, now)
    home = str(store.directory.parent)
    assert auto_prune(home, {"sessions": {"retention_days": 0}}, now) == []
    assert auto_prune(home, {"sessions": {"retention_days": 32}}, now) == []
    assert auto_prune(home, {}, now) == ["old"]  # the default, 30


def test_scan_shows_what_a_person_needs(store: SessionStore, cwd: Path) -> None:
    now = time.time_ns()
    prompt = f"deploy with {SECRET} please\nsecond line"
    write_session(store, [header(cwd), user("r1", prompt), user("r2", "later")], session_id="s1")
    os.utime(store.path_of("s1"), ns=(now - 10, now - 10))
    empty = store.path_of("s2")
    empty.write_bytes(b"")
    os.utime(empty, ns=(now, now))
    torn = write_session(store, [header(cwd)], session_id="s3", tail=b'{"session_id":"s3"')
    os.utime(torn, ns=(now - 20, now - 20))
    found = scan(store.directory)
    assert [(s.session_id, s.durable, s.attached) for s in found] == [
        ("s2", False, False),
        ("s1", True, False),
        ("s3", True, False),
    ]
    assert found[1].first_prompt == f"deploy with {REDACTED} please"
    assert found[0].first_prompt is None and found[2].first_prompt is None
    assert found[1].size == store.path_of("s1").stat().st_size
    assert found[1].mtime_ns == now - 10


def test_display_line_edges() -> None:
    exact = "a" * PROMPT_CHARS
    assert display_line(exact) == exact
    longer = display_line(exact + "b")
    assert len(longer) == PROMPT_CHARS and longer.endswith("…")
    assert longer[:-1] == exact[:-1]
    # a secret straddling the cut is redacted before it is cut
    straddling = display_line("x" * (PROMPT_CHARS - 10) + " " + SECRET)
    assert "sk-" not in straddling and "A1b2" not in straddling
    assert display_line("one\x1b[31mred\rtwo\nthree") == "one [31mred two"


def test_retention_days_default() -> None:
    assert retention_days({}) == DEFAULT_RETENTION_DAYS == 30
    assert retention_days({"sessions": {"retention_days": 0}}) == 0


@pytest.mark.parametrize("value", [0, 1, 30, 36500])
def test_good_retention_values(value: int) -> None:
    settings.validate(settings.merge(settings.DEFAULTS, {"sessions": {"retention_days": value}}))


@pytest.mark.parametrize("sessions", [{"retention_days": v} for v in (-1, "30", True, 1.5)] + [5])
def test_bad_retention_values(sessions: Any) -> None:
    with pytest.raises(settings.SettingsError):
        settings.validate(settings.merge(settings.DEFAULTS, {"sessions": sessions}))


def test_a_project_cannot_set_retention(tmp_path: Path) -> None:
    global_file, project_file = tmp_path / "global.toml", tmp_path / "project.toml"
    global_file.write_text("[sessions]\nretention_days = 7\n")
    project_file.write_text("[sessions]\nretention_days = 1\n")
    assert settings.load(str(global_file), str(project_file))["sessions"]["retention_days"] == 7
    project_file.write_text("[sessions]\nretention_days = -5\n")  # dropped, not an error
    assert settings.load(str(global_file), str(project_file))["sessions"]["retention_days"] == 7


ODD_TYPES: list[Any] = [["user"], {"user": 1}, [], {}, 7, 1.5, True, None, [[["x"]]]]


@pytest.mark.parametrize("kind", ODD_TYPES, ids=repr)
def test_a_record_of_any_type_shape_is_session_invalid(kind: Any) -> None:
    raw = json.dumps({"session_id": "s1", "type": kind, "text": "x"}).encode()
    with pytest.raises(SessionError) as refused:
        decode_record(raw, "s1")
    assert refused.value.code == "session_invalid"


def test_sessions_list_shows_an_invalid_session_on_a_clear_line(
    store: SessionStore, cwd: Path
) -> None:
    """`magi-code sessions list` as a real process: records whose type is a list or an object
    make a listed `invalid` session, never a traceback."""
    write_session(store, [header(cwd), user("r1", "fine")], session_id="good")
    for number, kind in enumerate(ODD_TYPES):
        write_session(store, [{"type": kind, "text": "x"}], session_id=f"odd{number}")
    env = {**os.environ, "MC_HOME": str(store.directory.parent)}
    command = [sys.executable, "-m", "magi_code.cli", "sessions", "list"]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[-1] == f"{len(ODD_TYPES) + 1} sessions"
    states = {line.split()[0]: line.split()[4] for line in lines[:-1]}
    assert states == {"good": "durable", **{f"odd{n}": "invalid" for n in range(len(ODD_TYPES))}}
    listed = subprocess.run([*command, "--json"], cwd=cwd, env=env, capture_output=True, timeout=30)
    rows = json.loads(listed.stdout)["sessions"]
    assert sorted(row["state"] for row in rows) == ["durable"] + ["invalid"] * len(ODD_TYPES)
