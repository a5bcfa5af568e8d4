"""Asks a session holds: each is a task `<id>@<message-id>` with one asker, moved through its
states by the asked session's harness over the pipe, or canceled by its asker.

    submitted       the ask was taken; the harness has said nothing yet
    working         the harness is on it (may repeat, as progress)
    input-required  the harness needs something from the asker (`text` says what)
    completed       answered (`text` is the answer)             \\
    failed          the harness could not do it                  | terminal: final, a later
    canceled        the asker withdrew it                        | move is refused
    rejected        the harness (or the server, when full) would not take it

Only the asker (or the session itself) reads a task; nothing infers completion from anything but
the harness. Bounded: when full, terminal tasks go first. Pure bookkeeping under a lock: no I/O.
"""

from __future__ import annotations

import os
import threading

from melchior.limits import MAX_TASKS

FINAL = frozenset({"completed", "failed", "canceled", "rejected"})
# What the harness may move a task to; `canceled` is the asker's alone.
BY_HARNESS = frozenset({"working", "input-required", "completed", "failed", "rejected"})


class Task:
    __slots__ = ("asker", "state", "text")

    def __init__(self, asker: str) -> None:
        self.asker = asker
        self.state = "submitted"
        self.text: str | None = None  # what the latest state said: answer, reason, question


def refusal(state: str, to: str) -> str | None:
    """Why a task in `state` may not move to `to`, or None if it may. A terminal state is final
    (`task_final`); nothing returns to `submitted`, and only an untouched ask is rejected
    (`bad_transition`). Every other move between live states is allowed."""
    if state in FINAL:
        return "task_final"
    if to == "submitted" or (to == "rejected" and state != "submitted"):
        return "bad_transition"
    return None


class Tasks:
    def __init__(self, limit: int = MAX_TASKS) -> None:
        self._tasks: dict[str, Task] = {}
        self._lock = threading.Lock()
        self._limit = limit

    def open(self, asker: str) -> str | None:
        """A fresh message id, or None when the table is full of live asks."""
        with self._lock:
            if len(self._tasks) >= self._limit:
                done = [m for m, t in self._tasks.items() if t.state in FINAL]
                if not done:
                    return None
                del self._tasks[done[0]]
            message_id = os.urandom(4).hex()
            while message_id in self._tasks:
                message_id = os.urandom(4).hex()
            self._tasks[message_id] = Task(asker)
            return message_id

    def move(self, message_id: str, state: str, text: str | None, by: str | None = None) -> str:
        """Move a task; "" when done, else a refusal code. `by`, when given, must be its asker
        (a cancel); the harness moves any task."""
        with self._lock:
            task = self._tasks.get(message_id)
            if task is None or (by is not None and by != task.asker):
                return "unknown_task"
            code = refusal(task.state, state)
            if code is not None:
                return code
            task.state, task.text = state, text
            return ""

    def view(self, message_id: str, reader: str, owner: str) -> dict[str, object] | None:
        with self._lock:
            task = self._tasks.get(message_id)
            if task is None or reader not in (task.asker, owner):
                return None
            answer = task.text if task.state == "completed" else None
            return {"state": task.state, "answer": answer, "text": task.text}
