"""The A2A tasks, kept in memory for the SDK and written through to MC_HOME/a2a/tasks/, so
`tasks/get` answers after a restart and a task waiting for input can be continued.

Each task is one file (state.py: named by a digest of its owner and id), `{"owner", "task"}`
with the task in the protocol's JSON. At start every file is read back under its owner; a
task a restart interrupted (submitted or working: no turn runs it any more) is closed as
failed, saying so, and written back.

Bounded: at most STORED_TASKS tasks are kept. Past it, the oldest finished tasks (neither
running nor waiting for input) are dropped, from memory and from disk; at start only the
newest STORED_TASKS files are read, the older ones deleted.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import resolve_user_scope
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import Part, Task, TaskState
from google.protobuf.json_format import MessageToDict, ParseDict

from magi_code.a2a.limits import STORED_TASKS
from magi_code.a2a.state import file_for, read_whole, state_dir, write_whole

INTERRUPTED_BY_RESTART = "the server restarted while this turn ran: send the message again"
LIVE_STATES = (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
KEPT_STATES = (*LIVE_STATES, TaskState.TASK_STATE_INPUT_REQUIRED)  # never dropped to bound


class Owner(User):
    """The owner a stored task is read back under (the caller's identity)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self.name


class DurableTaskStore(InMemoryTaskStore):
    def __init__(self, home: str | Path) -> None:
        super().__init__()
        self.directory = state_dir(home, "tasks")
        self.kept: dict[tuple[str, str], Task] = {}  # (owner, task id), oldest first

    async def load(self) -> None:
        """Read the newest stored tasks back; close the ones a restart interrupted."""
        paths = sorted(self.directory.glob("*.json"), key=lambda path: path.stat().st_mtime_ns)
        for old in paths[:-STORED_TASKS]:
            old.unlink(missing_ok=True)
        for path in paths[-STORED_TASKS:]:
            stored = read_whole(path)
            if stored is None or not isinstance(stored.get("owner"), str):
                continue
            task = ParseDict(stored.get("task") or {}, Task(), ignore_unknown_fields=True)
            context = ServerCallContext(user=Owner(stored["owner"]))
            if task.status.state in LIVE_STATES:
                task.status.state = TaskState.TASK_STATE_FAILED
                task.status.message.parts.append(Part(text=INTERRUPTED_BY_RESTART))
                task.status.timestamp.FromDatetime(datetime.now(UTC))
                await self.save(task, context)
            else:
                await super().save(task, context)
                self.kept[(stored["owner"], task.id)] = task

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        owner = resolve_user_scope(context)
        value = {"owner": owner, "task": MessageToDict(task)}
        # No fsync: a task changes with every streamed chunk, and what a restarted server
        # needs survives a process's end without one (the session file is the record).
        write_whole(file_for(self.directory, owner, task.id), value, sync=False)
        self.kept[(owner, task.id)] = task
        await self.bound()

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await super().delete(task_id, context)
        owner = resolve_user_scope(context)
        self.kept.pop((owner, task_id), None)
        file_for(self.directory, owner, task_id).unlink(missing_ok=True)

    async def bound(self) -> None:
        """Drop the oldest finished tasks while more than STORED_TASKS are kept."""
        over = len(self.kept) - STORED_TASKS
        if over <= 0:
            return
        finished = [key for key, task in self.kept.items() if task.status.state not in KEPT_STATES]
        for owner, task_id in finished[:over]:
            await self.delete(task_id, ServerCallContext(user=Owner(owner)))
