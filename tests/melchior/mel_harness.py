"""Helpers for melchior tests: a private runtime directory, real `melchior serve` children on
real pipes, `melchior fork` and `melchior tool` as real execs (or in-process where a test
makes hundreds of calls), and a raw socket client."""

from __future__ import annotations

import io
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from melchior import identity, registry, tool, wire
from melchior.identity import ENV_PROJECT_TALK, ENV_TALK, Identity, from_env

MELCHIOR = [sys.executable, "-m", "melchior.cli"]
DEADLINE = 10.0


def clean_env(tmp: Path, run: Path) -> dict[str, str]:
    """An environment with no melchior identity, a private runtime dir, and reports kept under
    the private HOME (`~/.local/state/melchior`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAGI_MELCHIOR_")}
    env.pop("XDG_STATE_HOME", None)
    env.update(XDG_RUNTIME_DIR=str(run), HOME=str(tmp / "home"), TMPDIR=str(tmp))
    return env


def exec_json(args: list[str], env: dict[str, str], stdin: bytes = b"") -> tuple[Any, int]:
    done = subprocess.run(MELCHIOR + args, env=env, input=stdin, capture_output=True, timeout=30)
    return json.loads(done.stdout), done.returncode


class Session:
    """A `melchior serve` child: its pipe is ours, its events are queued as they arrive."""

    def __init__(
        self,
        spec: dict[str, Any],
        env: dict[str, str],
        command: list[str] | None = None,
        stderr: IO[bytes] | None = None,
    ) -> None:
        self.spec, self.id, self.project = spec, spec["id"], spec["project"]
        self.env = {**env, **spec["environment"]}
        self.proc = subprocess.Popen(
            command or [*MELCHIOR, "serve"],
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        first = self.next_event()
        assert first["event"] == "listening", first
        self.at, self.label = first["at"], first["who"]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.put(json.loads(line))
        self.events.put(None)

    def next_event(self, timeout: float = DEADLINE) -> dict[str, Any]:
        event = self.events.get(timeout=timeout)
        assert event is not None, "the session closed its pipe"
        return event

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(wire.encode_pipe(message))
        self.proc.stdin.flush()

    @property
    def identity(self) -> Identity:
        me = from_env(self.env)
        assert me is not None
        return me

    def tool(self, *args: str, stdin: bytes = b"", talk: str | None = None) -> tuple[Any, int]:
        """`melchior tool` in-process (same code as the exec, without its start-up)."""
        env = dict(self.env)
        if talk is not None:
            env[ENV_TALK] = talk
        return tool.run(list(args), env, io.BytesIO(stdin))

    def exec_tool(self, *args: str, stdin: bytes = b"") -> tuple[Any, int]:
        return exec_json(["tool", *args], self.env, stdin)

    def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.proc.wait(timeout=DEADLINE)


class Melchior:
    def __init__(self, tmp: Path) -> None:
        # pytest's tmp_path is too deep for sun_path; a runtime dir is short in real life.
        self.run = Path(tempfile.mkdtemp(prefix="mel-", dir="/tmp"))
        self.env = clean_env(tmp, self.run)
        self.sessions: list[Session] = []

    def fork(
        self, parent: Session | None = None, role: str = "main", project: str = "demo"
    ) -> dict[str, Any]:
        """`melchior fork`, in-process (its exec is tested on its own). An id is unique within
        its project only: one this harness's sessions hold in another project is minted
        again, so that a test of the project wall never meets the same name on both sides
        (which would be reachable, rightly, as the caller's own project's session)."""
        env = parent.env if parent else self.env
        elsewhere = {s.id for s in self.sessions if s.project != project}
        while True:
            spec = identity.fork(env, role, None if parent else project)
            if parent or spec["id"] not in elsewhere:
                return spec

    def start(
        self,
        parent: Session | None = None,
        role: str = "main",
        project: str = "demo",
        talk: str | None = None,
        project_talk: str | None = None,
        command: list[str] | None = None,
        stderr: IO[bytes] | None = None,
    ) -> Session:
        spec = self.fork(parent, role, project)
        env = dict(self.env)
        if talk:
            env[ENV_TALK] = talk
        if project_talk:
            env[ENV_PROJECT_TALK] = project_talk
        session = Session(spec, env, command, stderr)
        self.sessions.append(session)
        return session

    def directory(self, project: str = "demo") -> str:
        return registry.project_dir(project, self.env)

    def state(self, project: str = "demo") -> str:
        """Where the project's reports are kept."""
        return registry.state_dir(self.directory(project), self.env)

    def close(self) -> None:
        for session in self.sessions:
            if session.proc.poll() is None:
                session.close()
        shutil.rmtree(self.run, ignore_errors=True)


class Raw:
    """A bare socket speaking frames, for input no honest client would send."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(DEADLINE)
        self.sock.connect(path)
        self.decoder = wire.SocketDecoder()
        self.ready: list[wire.Item] = []

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def call(self, name: str, args: list[Any] | None = None) -> dict[str, Any]:
        self.send(wire.encode_socket(wire.call(name, args)))
        return self.read()

    def read(self) -> dict[str, Any]:
        while not self.ready:
            data = self.sock.recv(1 << 16)
            assert data, "the session closed the connection"
            self.ready += self.decoder.feed(data)
        item = self.ready.pop(0)
        assert not isinstance(item, wire.Refusal)
        return item

    def hello(self, me: Identity, talk: str | None = None) -> dict[str, Any]:
        return self.call("hello", [{"id": me.id, "token": me.token, "talk": talk or me.talk}])

    def close(self) -> None:
        self.sock.close()


def wait_until(check: Any, timeout: float = DEADLINE) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "condition not met before the deadline"
        time.sleep(0.01)
