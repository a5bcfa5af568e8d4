"""Launch validation: anything but pipes on both ends, or any other argv, exits 2 before
any side effect (no MC_HOME created)."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from magi_code.client import environment

SERVE = [sys.executable, "-m", "magi_code.cli", "serve", "--stdio"]


def launch(args: list[str], home: Path, stdin: object, stdout: object) -> int:
    result = subprocess.run(
        args, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, env=environment(home), timeout=30
    )
    assert result.stderr.startswith(b"magi-code: ")
    return result.returncode


@pytest.mark.parametrize(
    "argv",
    [
        ["serve"],
        ["serve", "--stdio", "--prompt", "x"],
        ["serve", "--stdio", "--stdio"],
        ["serve", "--app"],
        ["--app"],
        ["daemon"],
        ["serve", "--verbose", "--stdio"],
        ["bogus"],
    ],
)
def test_other_argv_exits_2_without_side_effects(argv: list[str], home: Path) -> None:
    code = launch(
        [sys.executable, "-m", "magi_code.cli", *argv], home, subprocess.PIPE, subprocess.PIPE
    )
    assert code == 2
    assert not home.exists()


def test_regular_files_refused(tmp_path: Path, home: Path) -> None:
    (tmp_path / "in").write_bytes(b"")
    with (tmp_path / "in").open("rb") as src, (tmp_path / "out").open("wb") as dst:
        assert launch(SERVE, home, src, subprocess.PIPE) == 2
        assert launch(SERVE, home, subprocess.PIPE, dst) == 2
    assert (tmp_path / "out").read_bytes() == b""
    assert not home.exists()


def test_dev_null_refused(home: Path) -> None:
    assert launch(SERVE, home, subprocess.DEVNULL, subprocess.PIPE) == 2
    assert launch(SERVE, home, subprocess.PIPE, subprocess.DEVNULL) == 2
    assert not home.exists()


def test_pty_refused(home: Path) -> None:
    leader, follower = os.openpty()
    try:
        assert launch(SERVE, home, follower, subprocess.PIPE) == 2
        assert launch(SERVE, home, subprocess.PIPE, follower) == 2
    finally:
        os.close(leader)
        os.close(follower)
    assert not home.exists()


def test_socket_refused(home: Path) -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert launch(SERVE, home, theirs.fileno(), subprocess.PIPE) == 2
        assert launch(SERVE, home, subprocess.PIPE, theirs.fileno()) == 2
    assert not home.exists()


def test_mission_control_needs_a_terminal(home: Path) -> None:
    for argv in ([], ["--prompt", "hello"], ["--prompt"]):
        code = launch(
            [sys.executable, "-m", "magi_code.cli", *argv], home, subprocess.PIPE, subprocess.PIPE
        )
        assert code == 2
    assert not home.exists()


def test_stray_prints_and_child_processes_never_reach_the_wire(tmp_path: Path, home: Path) -> None:
    """A library print from any thread, and a child process inheriting fds, after start-up:
    both land on /dev/null, never between protocol frames."""
    from magi_code.client import LocalAgentClient

    noisy = (
        "import os, subprocess, sys, threading\n"
        "import magi_code.local_agent.main as main\n"
        "def noise():\n"
        "    print('NOISE-PRINT', flush=True)\n"
        "    os.write(1, b'NOISE-FD1\\n')\n"
        "    subprocess.run(['echo', 'NOISE-CHILD'])\n"
        "threading.Timer(0.2, noise).start()\n"
        "main.run()\n"
    )
    command = [sys.executable, "-c", noisy]
    with LocalAgentClient.spawn(cwd=tmp_path, env=environment(home), command=command) as child:
        child.request("initialize", {"required_capabilities": ["status"]})
        for _ in range(10):
            child.request("status")
        time.sleep(0.5)  # the timer has fired by now; nothing to await from the child
        assert child.request("shutdown") == {"state": "stopping"}
        assert child.finish() == 0
        assert all(frame["protocol"] == "magi-code.local-agent" for frame in child.frames)
