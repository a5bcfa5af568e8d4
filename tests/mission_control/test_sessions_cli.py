"""`magi-code sessions list|prune` as plain commands (no terminal), the auto-prune at
interactive startup on a real pseudo-terminal, and the local agent, which sweeps nothing."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from magi_code.client import ErrorResponse, LocalAgentClient, environment
from magi_code.redact import REDACTED
from magi_code.sessions.chunking import dumps
from magi_code.sessions.retention import DAY_NS
from mission_control.terminal import prompt, run_in_pty
from support.sessions import hold_open

SECOND, HOUR = 10**9, 3600 * 10**9
SECRET = "ghp_" + "Zq9" * 10


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def store_session(home: Path, cwd: Path, sid: str, age_ns: int, text: str = "hi") -> Path:
    """A stored session written byte for byte, last appended `age_ns` ago."""
    directory = home / "sessions"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    records = [
        {"type": "session", "cwd": str(cwd), "created_at": "2026-01-01T00:00Z"},
        {"type": "user", "message_id": "u1", "run_id": "r1", "text": text},
    ]
    path = directory / f"{sid}.jsonl"
    path.write_bytes(b"".join((dumps({"session_id": sid, **r}) + "\n").encode() for r in records))
    path.chmod(0o600)
    stamp = time.time_ns() - age_ns
    os.utime(path, ns=(stamp, stamp))
    return path


def stored_ids(home: Path) -> list[str]:
    return sorted(p.name.removesuffix(".jsonl") for p in (home / "sessions").glob("*.jsonl"))


def sessions(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`magi-code sessions ...` with no terminal anywhere: stdin empty, output to pipes."""
    return subprocess.run(
        [sys.executable, "-m", "magi_code.cli", "sessions", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment(home),
        timeout=30,
        check=False,
    )


def settings_file(home: Path, text: str) -> None:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / "settings.toml").write_text(text)


def test_prune_default_is_thirty_days_at_the_edge(home: Path, cwd: Path) -> None:
    store_session(home, cwd, "young", 30 * DAY_NS - HOUR)
    store_session(home, cwd, "old", 30 * DAY_NS + SECOND)
    done = sessions(home, cwd, "prune")
    assert (done.returncode, done.stdout) == (0, "old\n1 sessions removed\n")
    assert stored_ids(home) == ["young"]


def test_prune_older_than_zero_spares_only_the_attached(home: Path, cwd: Path) -> None:
    for sid in ("a", "b", "held"):
        store_session(home, cwd, sid, 0)
    settings_file(home, "[sessions]\nretention_days = 0\n")
    assert sessions(home, cwd, "prune").stdout == "0 sessions removed\n"  # 0: no sweep
    assert stored_ids(home) == ["a", "b", "held"]
    child = hold_open(home, "held", cwd)
    try:
        done = sessions(home, cwd, "prune", "--older-than", "0")
        assert done.returncode == 0
        assert sorted(done.stdout.split("\n")[:-2]) == ["a", "b"]
        assert done.stdout.endswith("\n2 sessions removed\n")
        assert stored_ids(home) == ["held"]
    finally:
        child.communicate("", timeout=30)


def test_dry_run_deletes_nothing(home: Path, cwd: Path) -> None:
    store_session(home, cwd, "old", 40 * DAY_NS)
    store_session(home, cwd, "new", HOUR)
    before = sorted(p.name for p in (home / "sessions").iterdir())
    done = sessions(home, cwd, "prune", "--dry-run", "--older-than=1")
    assert (done.returncode, done.stdout) == (0, "old\n1 sessions would be removed\n")
    assert sorted(p.name for p in (home / "sessions").iterdir()) == before


def test_list_redacts_the_first_prompt(home: Path, cwd: Path) -> None:
    store_session(home, cwd, "secret", HOUR, f"use token {SECRET} now\nthen {SECRET}")
    store_session(home, cwd, "plain", 2 * HOUR, "x" * 200)
    (home / "sessions" / "empty.jsonl").write_bytes(b"")
    child = hold_open(home, "plain", cwd)
    try:
        text = sessions(home, cwd, "list")
        listed = sessions(home, cwd, "list", "--json")
    finally:
        child.communicate("", timeout=30)
    assert text.returncode == listed.returncode == 0
    for out in (text.stdout, listed.stdout):
        assert SECRET not in out and SECRET[:12] not in out and REDACTED in out
    rows = json.loads(listed.stdout)["sessions"]
    assert [(r["session_id"], r["state"], r["attached"]) for r in rows] == [
        ("empty", "empty", False),
        ("secret", "durable", False),
        ("plain", "durable", True),
    ]
    assert rows[1]["first_prompt"] == f"use token {REDACTED} now"
    assert rows[2]["first_prompt"] == "x" * 79 + "…"
    assert rows[0]["first_prompt"] is None
    assert [r["cwd"] for r in rows] == [None, str(cwd), str(cwd)]  # the workspace of each
    assert rows[1]["size"] == (home / "sessions" / "secret.jsonl").stat().st_size
    lines = text.stdout.split("\n")
    assert lines[-2:] == ["3 sessions", ""]
    assert lines[2].startswith("plain  ") and " attached " in lines[2]
    assert f"  {cwd}  x" in lines[2]
    assert lines[0].split()[:5] == ["empty", rows[0]["last_activity"], "0", "B", "empty"]


def test_commands_leave_a_missing_home_missing(home: Path, cwd: Path) -> None:
    assert sessions(home, cwd, "list").stdout == "0 sessions\n"
    assert json.loads(sessions(home, cwd, "list", "--json").stdout) == {"sessions": []}
    assert sessions(home, cwd, "prune", "--older-than", "0").returncode == 0
    assert not home.exists()


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["lst"],
        ["list", "--yaml"],
        ["list", "--json", "--json"],
        ["prune", "--older-than"],
        ["prune", "--older-than", "-1"],
        ["prune", "--older-than", "1.5"],
        ["prune", "--older-than", "３"],
        ["prune", "--older-than", "1" * 10],
        ["prune", "--older-than=", "--dry-run"],
        ["prune", "--older-than", "1", "--older-than", "2"],
        ["prune", "--dry-run", "--dry-run"],
        ["prune", "now"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(home: Path, cwd: Path, args: list[str]) -> None:
    store_session(home, cwd, "old", 90 * DAY_NS)
    done = sessions(home, cwd, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("magi-code sessions") and done.stderr.count("\n") == 1
    assert "usage:" not in done.stderr and "--help`)" in done.stderr
    assert stored_ids(home) == ["old"]


def test_prune_refuses_bad_settings(home: Path, cwd: Path) -> None:
    store_session(home, cwd, "old", 90 * DAY_NS)
    settings_file(home, "[sessions]\nretention_days = -1\n")
    done = sessions(home, cwd, "prune")
    assert (done.returncode, done.stderr) == (2, "magi-code: the settings are not valid\n")
    assert stored_ids(home) == ["old"]


def test_prompt_startup_prunes_expired_sessions(home: Path, cwd: Path) -> None:
    store_session(home, cwd, "young", 30 * DAY_NS - HOUR)
    store_session(home, cwd, "old", 30 * DAY_NS + SECOND)
    code, out = run_in_pty(["--prompt", prompt({"text": "done"})], cwd, home, {})
    assert code == 0, out
    assert b"removed 1 expired sessions" in out
    left = stored_ids(home)
    assert "old" not in left and "young" in left and len(left) == 2  # plus the new session


def test_prompt_startup_with_retention_zero_prunes_nothing(home: Path, cwd: Path) -> None:
    store_session(home, cwd, "ancient", 400 * DAY_NS)
    settings_file(home, "[sessions]\nretention_days = 0\n")
    code, out = run_in_pty(["--prompt", prompt({"text": "done"})], cwd, home, {})
    assert code == 0, out
    assert "ancient" in stored_ids(home) and len(stored_ids(home)) == 2


def test_serve_stdio_prunes_nothing(home: Path, cwd: Path) -> None:
    store_session(home, cwd, "ancient", 400 * DAY_NS)
    store_session(home, cwd, "old", 30 * DAY_NS + SECOND)
    with LocalAgentClient.spawn(cwd=cwd, env=environment(home)) as child:
        child.request("initialize", {"required_capabilities": ["session.create"]})
        child.request("session.create")
        child.request("shutdown")
        assert child.finish() == 0
    assert stored_ids(home) == ["ancient", "old"]


@pytest.mark.parametrize("value", ["-1", '"30"', "true", "1.5"])
def test_bad_retention_setting_fails_initialize(home: Path, cwd: Path, value: str) -> None:
    settings_file(home, f"[sessions]\nretention_days = {value}\n")
    with LocalAgentClient.spawn(cwd=cwd, env=environment(home)) as child:
        with pytest.raises(ErrorResponse) as caught:
            child.request("initialize", {"required_capabilities": ["status"]})
        assert caught.value.code == "configuration_invalid"
