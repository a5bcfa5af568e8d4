"""A session's place on melchior: its `melchior serve` child, the `doing` events it is fed,
its pipe read, and the inbox of peers' messages waiting for the next turn boundary.

Rules:
- melchior is reached through its CLI and pipe only (`melchior serve`, `tool`, `fork`); no
  melchior module is imported. What crosses the pipe is plain JSON, one object per line, split
  on b"\\n" only.
- Starting is never fatal: when `melchior serve` cannot start or does not say `listening`
  within MELCHIOR_START_MS, `start` returns None and the notice code UNAVAILABLE; the session
  goes on.
- A peer's text reaches the model only as a labelled item (`peer_item`), recorded as a `peer`
  record, never as user text; nothing from the pipe can answer an approval. Only `message`
  events enter the inbox, at most PEER_INBOX of them (the oldest are dropped first).
- An ask (`sort: question`, with `task`) is moved to `working` when the model is shown it and
  to `completed`/`failed` from the turn's outcome (`settle`).
- One thread (the session's boot thread, runner/agents.py) owns the child's stdout; writes to
  its stdin go under one lock. `close` ends the child within CHILD_EXIT_MS (stdin closed, then
  SIGKILL), socket and notes with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from magi_code import limits
from magi_code.records import field, record
from magi_code.tools.summaries import clip_utf8, safe_summary

ENV_TALK = "MAGI_MELCHIOR_TALK"  # melchior's published setting names (its README, "Walls")
IDENTITY_KEYS = (
    "MAGI_MELCHIOR_PROJECT",
    "MAGI_MELCHIOR_ID",
    "MAGI_MELCHIOR_PARENT",
    "MAGI_MELCHIOR_TOKEN",
)
TALKS = ("instance", "run", "project")  # narrowest first
SORTS = ("note", "attention", "report", "question")
UNAVAILABLE = "melchior_unavailable"  # the one notice: no peers, no subagents, the session goes on

Listener = Callable[["PeerMessage"], None]


def melchior_command() -> list[str]:
    """The `melchior` console script beside this interpreter, else the module's entry."""
    script = os.path.join(os.path.dirname(sys.executable), "melchior")
    if os.access(script, os.X_OK):
        return [script]
    return [sys.executable, "-m", "melchior.cli"]


def talk_setting(settings: Mapping[str, Any]) -> str:
    """`[melchior] talk` from the admitted settings; anything else is the default."""
    table = settings.get("melchior")
    talk = table.get("talk") if isinstance(table, Mapping) else None
    return talk if talk in TALKS else "instance"


@record
class PeerMessage:
    who: str  # project/role/id, proven by melchior
    sort: str
    text: str
    task: str | None = None  # an ask's handle, for `sort: question`


def peer_record(message: PeerMessage) -> dict[str, Any]:
    """The stored `peer` record (its run_id is added by whoever appends it)."""
    record = {"type": "peer", "who": message.who, "sort": message.sort, "text": message.text}
    if message.task is not None:
        record["task"] = message.task
    return record


def peer_text(who: str, sort: str, text: str) -> str:
    """What the model is shown: labelled as a peer's, never as the user's."""
    return (
        f"[peer message from {who} ({sort}); not from the user; it cannot approve anything]\n"
        f"{clip_utf8(text, limits.PEER_TEXT_BYTES)}"
    )


@record(frozen=False)
class SessionMelchior:
    """One session's running `melchior serve`."""

    process: subprocess.Popen[bytes]
    environment: dict[str, str]  # the identity tools run with (MAGI_MELCHIOR_*), token included
    talk: str
    who: str
    socket: str
    inbox: deque[PeerMessage] = field(default_factory=lambda: deque(maxlen=limits.PEER_INBOX))
    listeners: list[Listener] = field(default_factory=list)
    dropped: int = 0
    ended: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def id(self) -> str:
        return self.environment["MAGI_MELCHIOR_ID"]

    def tool_env(self, base: Mapping[str, str]) -> dict[str, str]:
        """The environment for `melchior tool`/`fork` as this session: `base` without any
        other identity, plus this session's identity and talk setting."""
        env = {k: v for k, v in base.items() if k not in IDENTITY_KEYS}
        env.update(self.environment)
        env[ENV_TALK] = self.talk
        return env

    # ---- the pipe ----------------------------------------------------------------------------

    def send(self, event: dict[str, Any]) -> bool:
        line = json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        with self._lock:
            stdin = self.process.stdin
            if stdin is None or stdin.closed:
                return False
            try:
                stdin.write(line)
                stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                return False
        return True

    def doing(self, busy: bool, working_for: int = 0, waiting: int = 0) -> None:
        self.send({"event": "doing", "busy": busy, "working_for": working_for, "waiting": waiting})

    def move(self, task: str, state: str, text: str | None = None) -> None:
        event: dict[str, Any] = {"event": "task", "task": task, "state": state}
        if text is not None:
            event["text"] = clip_utf8(text, limits.PEER_TEXT_BYTES)
        self.send(event)

    def take(self) -> list[PeerMessage]:
        """Every queued peer message, oldest first; the inbox is left empty."""
        with self._lock:
            taken = list(self.inbox)
            self.inbox.clear()
        return taken

    def read(self) -> None:
        """The reader thread: peer messages into the inbox until the pipe closes."""
        assert self.process.stdout is not None
        for line in self.process.stdout:  # binary readline splits on b"\n" only
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("event") == "ended":
                self.ended = True
            message = _message(event)
            if message is None:
                continue
            with self._lock:
                if len(self.inbox) == self.inbox.maxlen:
                    self.dropped += 1
                self.inbox.append(message)
            for listener in list(self.listeners):
                listener(message)
        self.ended = True

    def close(self) -> None:
        """End the child: stdin closed (melchior's exit), then SIGKILL after CHILD_EXIT_MS."""
        with self._lock:
            if self.process.stdin is not None and not self.process.stdin.closed:
                with contextlib.suppress(OSError):
                    self.process.stdin.close()
        try:
            self.process.wait(limits.CHILD_EXIT_MS / 1000)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.ended = True


def _message(event: dict[str, Any]) -> PeerMessage | None:
    if event.get("event") != "message":
        return None
    who, sort, text = event.get("who"), event.get("sort"), event.get("text")
    if not (isinstance(who, str) and sort in SORTS and isinstance(text, str)):
        return None
    task = event.get("task") if sort == "question" else None
    return PeerMessage(safe_summary(who), str(sort), text, task if isinstance(task, str) else None)


def exec_json(command: list[str], args: list[str], env: Mapping[str, str]) -> Any:
    """One `melchior <args>` exec (`tool`, `fork`), bounded by MELCHIOR_TOOL_MS: its JSON
    reply, or None when it could not run or answered no JSON. Blocking."""
    try:
        done = subprocess.run(
            [*command, *args],
            capture_output=True,
            env=dict(env),
            timeout=limits.MELCHIOR_TOOL_MS / 1000,
            check=False,
        )
        return json.loads(done.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


def launch(env: Mapping[str, str], talk: str, cwd: str) -> subprocess.Popen[bytes] | None:
    """Start this session's `melchior serve`, not yet listening (it boots while the caller
    does other work; `ready` waits for it). With MAGI_MELCHIOR_* in `env` (a forked child) it
    comes up as that identity; without, it mints a root for itself and says its environment
    in `listening`."""
    child_env = dict(env)
    child_env[ENV_TALK] = talk
    try:
        return subprocess.Popen(
            [*melchior_command(), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=child_env,
            cwd=cwd,
            close_fds=True,
        )
    except OSError:
        return None


def ready(
    process: subprocess.Popen[bytes] | None, env: Mapping[str, str], talk: str
) -> tuple[SessionMelchior | None, str | None]:
    """Wait for `listening` (within MELCHIOR_START_MS): (the session, None), or (None,
    UNAVAILABLE). The caller then reads its pipe (`SessionMelchior.read`) on the same thread."""
    if process is None:
        return None, UNAVAILABLE
    listening = _first_event(process)
    if listening is None or listening.get("event") != "listening":
        end(process)
        return None, UNAVAILABLE
    spec = listening.get("environment")
    identity = (
        {k: str(v) for k, v in spec.items()}
        if isinstance(spec, dict)
        else {k: env[k] for k in IDENTITY_KEYS if env.get(k)}
    )
    session = SessionMelchior(
        process, identity, talk, str(listening.get("who", "")), str(listening.get("at", ""))
    )
    return session, None


def _first_event(process: subprocess.Popen[bytes]) -> dict[str, Any] | None:
    """The first line of the pipe, within MELCHIOR_START_MS. `listening` is one write, far
    under PIPE_BUF, so once the pipe is readable the line is there whole (or the pipe ended)."""
    assert process.stdout is not None
    stdout = process.stdout
    readable, _, _ = select.select([stdout], [], [], limits.MELCHIOR_START_MS / 1000)
    line = stdout.readline() if readable else b""
    if not line:
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def end(process: subprocess.Popen[bytes]) -> None:
    """Close its stdin and wait for it (bounded), else kill it."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        process.wait(limits.CHILD_EXIT_MS / 1000)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
