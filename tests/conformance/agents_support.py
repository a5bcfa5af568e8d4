"""Helpers for the subagent and peer tests: a private melchior runtime, scripted parents and
children, the sockets in the registry, and the records of a session file."""

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from magi_code.limits import MELCHIOR_START_MS
from support.sessions import records, script


def melchior_dirs(short: Path) -> dict[str, str]:
    """A private runtime and state directory under `short` (a socket path must fit sun_path,
    which pytest's long tmp_path does not), so that tests never meet each other's sessions."""
    run = short / "run"
    run.mkdir(mode=0o700)
    state = short / "state"
    state.mkdir(mode=0o700)
    return {"XDG_RUNTIME_DIR": str(run), "XDG_STATE_HOME": str(state)}


def sockets(env: dict[str, str]) -> set[str]:
    """The ids of the live sessions' sockets, in every project of the private runtime."""
    base = Path(env["XDG_RUNTIME_DIR"]) / "melchior"
    if not base.is_dir():
        return set()
    return {
        p.name
        for project in base.iterdir()
        for p in project.iterdir()
        if stat.S_ISSOCK(p.lstat().st_mode)
    }


def wait_for(check: Callable[[], Any], timeout: float) -> Any:
    """Poll a condition on the file system (sockets appear and go; nothing to await)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def own_socket(xdg: dict[str, str]) -> str:
    """The session's own melchior socket: melchior boots beside the session, so it may come
    just after session.create."""
    (own,) = wait_for(lambda: sockets(xdg), MELCHIOR_START_MS / 1000)
    return str(own)


def agent_call(prompt: str, **more: Any) -> dict[str, Any]:
    return {"name": "agent", "arguments": {"prompt": prompt, **more}}


def parent_script(*rounds: dict[str, Any]) -> str:
    return script(*rounds)


def tool_results(home: Path, session_id: str, name: str) -> list[dict[str, Any]]:
    return [
        r
        for r in records(home, session_id)
        if r["type"] == "tool" and r["name"] == name and r["state"] != "started"
    ]


def melchior(*args: str, env: dict[str, str], stdin: bytes = b"") -> dict[str, Any]:
    script_path = os.path.join(os.path.dirname(sys.executable), "melchior")
    done = subprocess.run(
        [script_path, *args], input=stdin, capture_output=True, env=env, check=False
    )
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply


class Peer:
    """Another main session in the project: a `melchior serve` root the test holds."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        script_path = os.path.join(os.path.dirname(sys.executable), "melchior")
        self.process = subprocess.Popen(
            [script_path, "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        assert self.process.stdout is not None
        listening = json.loads(self.process.stdout.readline())
        self.id: str = listening["id"]
        self.env = {**env, **listening["environment"]}

    def tool(self, *args: str) -> dict[str, Any]:
        return melchior("tool", *args, env=self.env)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(5)
        assert self.process.stdout is not None
        self.process.stdout.close()
