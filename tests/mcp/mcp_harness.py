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


HTTP_SERVER = str(Path(__file__).with_name("http_server.py"))


class HttpServer:
    """The real streamable-HTTP test server (http_server.py) in a process of its own."""

    def __init__(self, folder: Path, oauth: bool = False) -> None:
        import subprocess
        import sys

        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        mode = ["oauth"] if oauth else []
        self.process = subprocess.Popen(
            [sys.executable, HTTP_SERVER, str(folder), *mode],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while not (folder / "port").exists():
            assert self.process.poll() is None, "the test server exited"
            assert time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.02)
        self.base = f"http://127.0.0.1:{(folder / 'port').read_text()}"
        self.url = f"{self.base}/mcp"

    def requests(self) -> list[str]:
        path = self.folder / "requests"
        return path.read_text().splitlines() if path.exists() else []

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
