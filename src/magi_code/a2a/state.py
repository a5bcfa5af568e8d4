"""The A2A server's durable state under MC_HOME/a2a/: which session each context is, and the
tasks (task_store.py), one JSON file each, so a restarted server continues where it stopped.

Rules:
- A file is named by a digest of what it is for (the caller's identity and the context or
  task id, both the caller's text), never by that text: no id can name a path.
- A file is written whole under a temporary name, then renamed into place
  (0600, in 0700 directories): a crash leaves the old file or the new one.
- A context belongs to the caller that made it: another caller's same context id is another
  context (tasks are scoped the same way by the SDK's owner resolver).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

STATE_DIR = "a2a"


def state_dir(home: str | Path, kind: str) -> Path:
    path = Path(home) / STATE_DIR / kind
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def file_for(directory: Path, owner: str, name: str) -> Path:
    digest = hashlib.sha256(f"{owner}\0{name}".encode("utf-8", "surrogatepass")).hexdigest()
    return directory / f"{digest}.json"


def write_whole(path: Path, value: dict[str, Any], *, sync: bool = True) -> None:
    """Replace `path` with `value` as JSON (`sync`: flushed to disk first); raises OSError."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(json.dumps(value).encode())
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)


def read_whole(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when there is none or it is not one."""
    try:
        with open(path, "rb") as stored:
            value = json.load(stored)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


class Contexts:
    """contextId -> session id, per caller, on disk."""

    def __init__(self, home: str | Path) -> None:
        self.directory = state_dir(home, "contexts")

    def session_of(self, owner: str, context_id: str) -> str | None:
        stored = read_whole(file_for(self.directory, owner, context_id))
        session_id = stored.get("session_id") if stored else None
        return session_id if isinstance(session_id, str) else None

    def remember(self, owner: str, context_id: str, session_id: str) -> None:
        write_whole(file_for(self.directory, owner, context_id), {"session_id": session_id})
