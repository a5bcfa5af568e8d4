"""One turn's run events as A2A task updates, in run order (the runner's Emitter for a task).

- The reply's text streams as chunks of one artifact per turn (`reply`), appended in order;
  a message's deltas are followed by what its reconcile adds (a delta cannot be taken back).
  A new message in the same turn starts after a blank line.
- Tool and subagent activity and diagnostics are `working` status updates: a line of text for
  a person, and a data part with the local agent's event name and data (runner/event_data.py).
- An approval is never put to the caller. `--approval-mode` answers it at once, as in exec
  (tools/approval_modes.py); a refusal is said in a status update and kept, and a turn that
  had any ends `input-required` listing them (turns.py), so the caller knows what the
  server's owner would have to allow. The caller may only send more input.
- Everything goes through one queue, drained by `pump` with a wakeup (deltas merge while it
  waits); `delta` is synchronous and never blocks the turn.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import anyio
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Part, TaskState
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Value

from magi_code.records import field, record
from magi_code.redact import redact
from magi_code.runner.event_data import event_data
from magi_code.runner.events import (
    Activity,
    DetailEvent,
    Diagnostic,
    MessageDelta,
    MessageReconcile,
    RunEvent,
)
from magi_code.tools.approval_modes import Mode, refusal
from magi_code.tools.approvals import ApprovalBroker
from magi_code.tools.paths import Protected

REPLY = "reply"  # the artifact name of a turn's text


@record(frozen=False)
class Chunk:
    text: str


@record(frozen=False)
class Status:
    text: str
    data: dict[str, Any]


@record(frozen=False)
class Reply:
    sent: str = ""  # what the artifact has of this message
    reconciled: str = ""


@record(frozen=False)
class TaskUpdates:
    updater: TaskUpdater
    session_id: str
    run_id: str
    mode: Mode
    rules: tuple[Path, Protected]  # the workspace and protected paths the mode answers for
    broker: ApprovalBroker | None = None
    replies: dict[str, Reply] = field(default_factory=dict)
    last_message: str | None = None
    refused: list[str] = field(default_factory=list)  # approvals the mode refused, said
    failure: Diagnostic | None = None
    chunks_sent: int = 0

    def __post_init__(self) -> None:
        self.queue: deque[Chunk | Status | None] = deque()
        self.wake = anyio.Event()

    # ---- the runner's Emitter ------------------------------------------------------------

    def delta(self, event: MessageDelta) -> None:
        reply = self._reply(event.message_id)
        reply.sent += event.text
        self._text(event.text)

    async def critical(self, event: RunEvent) -> None:
        if isinstance(event, MessageReconcile):
            reply = self._reply(event.message_id)
            reply.reconciled += event.text
            if reply.reconciled.startswith(reply.sent) and len(reply.reconciled) > len(reply.sent):
                self._text(reply.reconciled[len(reply.sent) :])
                reply.sent = reply.reconciled
        elif isinstance(event, Activity):
            said = f"{event.kind} {event.name} {event.state}: {event.summary}"
            self._put(Status(said, self._data(event)))
        elif isinstance(event, Diagnostic):
            self.failure = event
            self._put(Status(f"{event.code}: {event.summary}", self._data(event)))

    async def detail(self, event: DetailEvent) -> None:
        """Tool output, usage and plans stay in the session (and its other faces)."""

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        """The server's mode answers; the caller is only told."""
        assert self.broker is not None
        why = refusal(self.mode, self.broker.asked(approval_id), *self.rules)
        asked = redact(summary)
        if why is None:
            said = f"allowed by this server's --approval-mode {self.mode}: {asked}"
        else:
            said = f"refused by this server's --approval-mode {self.mode}: {asked}; {why}"
            self.refused.append(f"{asked} ({why})")
        data = {"event": "approval", "approval_id": approval_id, "allowed": why is None}
        self._put(Status(said, {**data, "summary": asked}))
        self.broker.answer(approval_id, why is None)

    # ---- the queue -----------------------------------------------------------------------

    def final_text(self) -> str:
        reply = self.replies.get(self.last_message or "")
        return reply.reconciled or reply.sent if reply is not None else ""

    def _reply(self, message_id: str) -> Reply:
        if message_id not in self.replies:
            if self.replies:  # the turn's next message: after a blank line
                self._text("\n\n")
            self.last_message = message_id
        return self.replies.setdefault(message_id, Reply())

    def _text(self, text: str) -> None:
        last = self.queue[-1] if self.queue else None
        if isinstance(last, Chunk):
            last.text += text
        else:
            self.queue.append(Chunk(text))
        self.wake.set()

    def _put(self, item: Status | None) -> None:
        self.queue.append(item)
        self.wake.set()

    def _data(self, event: RunEvent) -> dict[str, Any]:
        name, data = event_data(event, self.session_id, self.run_id)
        return {"event": name, **data}

    async def close(self) -> None:
        """Everything queued goes out, then `pump` ends."""
        self._put(None)

    async def pump(self) -> None:
        while True:
            await self.wake.wait()
            self.wake = anyio.Event()
            while self.queue:
                item = self.queue.popleft()
                if item is None:
                    return
                await self._send(item)

    async def _send(self, item: Chunk | Status) -> None:
        if isinstance(item, Chunk):
            first = self.chunks_sent == 0
            self.chunks_sent += 1
            await self.updater.add_artifact(
                [Part(text=item.text)], artifact_id=self.run_id, name=REPLY, append=not first
            )
        else:
            data = ParseDict(item.data, Value())
            message = self.updater.new_agent_message([Part(text=item.text), Part(data=data)])
            await self.updater.update_status(TaskState.TASK_STATE_WORKING, message=message)
