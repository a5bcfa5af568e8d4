"""Helpers for MCP tests: the real echo server, its pid, and process liveness."""

import os
import time
from pathlib import Path
from typing import Any

ECHO_SERVER = str(Path(__file__).with_name("echo_server.py"))
Definition = dict[str, Any]


def pid_of(definition: Definition, wait_s: float = 0.0) -> int | None:
    """The pid the server wrote, waiting up to `wait_s` for it to appear."""
    path = Path(definition["args"][2])
    deadline = time.monotonic() + wait_s
    while not path.exists():
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)
    return int(path.read_text())


def alive(pid: int) -> bool:
    """Running and not a zombie (a zombie has been killed and only awaits its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def kill_quietly(pid: int | None) -> None:
    """Test cleanup for a failed assertion: never leave a server behind."""
    if pid is not None and alive(pid):
        os.kill(pid, 9)
