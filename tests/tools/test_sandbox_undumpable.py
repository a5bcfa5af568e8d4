"""magi-code keeps its secrets from the user's other processes: it marks itself not dumpable at
start, so a process of the same user without privileges cannot read its /proc environ."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from magi_code.client import environment
from support.exec import MAGI_CODE

# Both sides without capabilities: root with every capability could read any process.
CAPLESS = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"]

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc only"),
    pytest.mark.skipif(shutil.which("setpriv") is None, reason="util-linux setpriv is missing"),
]


def read_environ(pid: int) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*CAPLESS, "cat", f"/proc/{pid}/environ"], capture_output=True, timeout=10
    )


def refused_in_time(pid: int) -> subprocess.CompletedProcess[bytes]:
    """The last read of `pid`'s environ: the first refused one, or the one at the deadline (a
    process marks itself a moment after it starts)."""
    deadline = time.monotonic() + 10
    while True:
        seen = read_environ(pid)
        if b"Permission denied" in seen.stderr or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def test_another_process_of_the_user_cannot_read_its_environment(tmp_path: Path) -> None:
    secret = "MARKER_KEY=sk-not-for-your-eyes"
    env = environment(tmp_path / "mc-home", MARKER_KEY="sk-not-for-your-eyes")
    # A plain process of the same user is readable: the reader can read what it should.
    plain = subprocess.Popen([*CAPLESS, "sleep", "30"], env=env)
    # `exec -` waits for its prompt on stdin, long after it marked itself.
    agent = subprocess.Popen(
        [*CAPLESS, MAGI_CODE, "exec", "-"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while read_environ(plain.pid).returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.05)  # setpriv has not exec'd `sleep` yet
        assert secret.encode() in read_environ(plain.pid).stdout
        seen = refused_in_time(agent.pid)
        assert agent.poll() is None, "magi-code exited before the check"
        assert b"Permission denied" in seen.stderr
        assert secret.encode() not in seen.stdout
    finally:
        plain.kill()
        agent.kill()
        plain.wait()
        agent.wait()


def test_the_local_agent_marks_itself_once_initialized(tmp_path: Path) -> None:
    env = environment(tmp_path / "mc-home", MARKER_KEY="sk-not-for-your-eyes")
    agent = subprocess.Popen(
        [*CAPLESS, MAGI_CODE, "serve", "--stdio"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert agent.stdin is not None and agent.stdout is not None
        hello = b'{"protocol":"magi-code.local-agent","version":1,"id":"r1",'
        agent.stdin.write(hello + b'"method":"initialize","params":{"required_capabilities":[]}}\n')
        agent.stdin.flush()
        answer = agent.stdout.readline()
        assert b'"r1"' in answer and b'"result"' in answer
        seen = refused_in_time(agent.pid)
        assert b"Permission denied" in seen.stderr
        assert b"sk-not-for-your-eyes" not in seen.stdout
    finally:
        agent.kill()
        agent.wait()
