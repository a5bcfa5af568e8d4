"""Asks a session holds: each is a task `<id>@<message-id>` with one asker, answered by the
harness over the pipe. Only the asker (or the session itself) reads it; nothing infers
completion from anything but an answer. Bounded: when full, answered tasks go first."""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass

from melchior.limits import MAX_TASKS


@dataclass(slots=True)
class Task:
    asker: str
    state: str = "submitted"  # -> "completed" when the harness answers
    answer: str | None = None


class Tasks:
    def __init__(self, limit: int = MAX_TASKS) -> None:
        self._tasks: dict[str, Task] = {}
        self._lock = threading.Lock()
        self._limit = limit

    def open(self, asker: str) -> str | None:
        """A fresh message id, or None when the table is full of unanswered asks."""
        with self._lock:
            if len(self._tasks) >= self._limit:
                done = [m for m, t in self._tasks.items() if t.state == "completed"]
                if not done:
                    return None
                del self._tasks[done[0]]
            message_id = secrets.token_hex(4)
            while message_id in self._tasks:
                message_id = secrets.token_hex(4)
            self._tasks[message_id] = Task(asker)
            return message_id

    def answer(self, message_id: str, text: str) -> bool:
        with self._lock:
            task = self._tasks.get(message_id)
            if task is None or task.state == "completed":
                return False
            task.state, task.answer = "completed", text
            return True

    def view(self, message_id: str, reader: str, owner: str) -> dict[str, object] | None:
        with self._lock:
            task = self._tasks.get(message_id)
            if task is None or reader not in (task.asker, owner):
                return None
            return {"state": task.state, "answer": task.answer}
