"""The A2A task store is bounded at STORED_TASKS: past it the oldest finished tasks go, from
memory and from disk, never a running one or one waiting for input; a restart reads back only
the newest STORED_TASKS files. Over the real store on a real folder."""

import asyncio
import os
from pathlib import Path

from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import Task, TaskState, TaskStatus

from magi_code.a2a.limits import STORED_TASKS
from magi_code.a2a.task_store import DurableTaskStore, Owner

CALLER = ServerCallContext(user=Owner("caller"))


def task(number: int, state: TaskState = TaskState.TASK_STATE_COMPLETED) -> Task:
    return Task(id=f"t{number}", context_id="c", status=TaskStatus(state=state))


def files(home: Path) -> int:
    return len(list((home / "a2a" / "tasks").glob("*.json")))


def test_the_store_keeps_stored_tasks_and_drops_the_oldest_finished(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = DurableTaskStore(tmp_path)
        await store.save(task(0, TaskState.TASK_STATE_INPUT_REQUIRED), CALLER)  # the oldest
        for number in range(1, STORED_TASKS):
            await store.save(task(number), CALLER)
        assert files(tmp_path) == STORED_TASKS  # at the bound: all kept
        assert await store.get("t1", CALLER) is not None
        await store.save(task(STORED_TASKS), CALLER)  # one past it
        assert files(tmp_path) == STORED_TASKS
        assert await store.get("t1", CALLER) is None  # the oldest finished one went
        assert await store.get("t0", CALLER) is not None  # waiting for input: kept
        assert await store.get(f"t{STORED_TASKS}", CALLER) is not None

    asyncio.run(scenario())


def test_a_restart_reads_back_only_the_newest_stored_tasks(tmp_path: Path) -> None:
    async def fill() -> None:
        store = DurableTaskStore(tmp_path)
        for number in range(STORED_TASKS):
            await store.save(task(number), CALLER)

    asyncio.run(fill())
    folder = tmp_path / "a2a" / "tasks"
    extra = folder / "0extra.json"  # one more file, older than all: as an older server left it
    extra.write_text('{"owner": "caller", "task": {"id": "old", "contextId": "c"}}')
    os.utime(extra, ns=(1, 1))

    async def restart() -> None:
        store = DurableTaskStore(tmp_path)
        await store.load()
        assert not extra.exists() and files(tmp_path) == STORED_TASKS
        assert await store.get("old", CALLER) is None
        assert await store.get("t0", CALLER) is not None

    asyncio.run(restart())
