"""The served agent: each A2A context is one durable magi-code session, each task one turn.

Rules:
- A context is found in state.py's map (per caller), else a new session is made and mapped:
  after a restart a message to a known context continues its session. The session stays
  attached (its lease and melchior held) between turns; past ATTACHED_CONTEXTS the least
  recently used idle contexts are closed, and their next message reopens them from disk.
- A turn runs through the runner's one entry, `start_turn`, in the workspace the server
  admitted at start, under its sandbox, permission rules and `--approval-mode` (updates.py
  answers approvals; nobody else can). Its end is the task's state: completed (its last
  message as the status message), input-required (an approval was refused: what was asked),
  canceled, or failed (what went wrong).
- `tasks/cancel` cancels the turn through its TurnControl and waits (at most CANCEL_WAIT_MS)
  until the turn has recorded its cancel and the task says canceled.
- The gate (gate.py) is taken over at the start of a turn and released at its end.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from a2a.helpers.proto_helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.owner_resolver import resolve_user_scope
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Part, TaskState

from magi_code import limits as common_limits
from magi_code.a2a import limits
from magi_code.a2a.gate import Gate, Refused
from magi_code.a2a.state import Contexts
from magi_code.a2a.updates import TaskUpdates
from magi_code.records import field, record
from magi_code.runner.agents import SessionAgents
from magi_code.runner.entry import start_turn
from magi_code.runner.events import RunFinished
from magi_code.runner.setup import parts
from magi_code.runner.startup import Admitted
from magi_code.runner.turn import TurnControl, new_id
from magi_code.sessions import Attachment, Selection, SessionError, SessionStore
from magi_code.tools.approval_modes import Mode
from magi_code.tools.approvals import ApprovalBroker

if TYPE_CHECKING:
    from a2a.types.a2a_pb2 import Message

INPUT_REQUIRED = (
    "This turn needed approvals that this server's policy refused (--approval-mode {mode}); "
    "a caller cannot grant them. Refused: {refused}. Send a new message to go on without them."
)


@record(frozen=False)
class Context:
    attachment: Attachment
    agents: SessionAgents  # the session's melchior and children, as in every face

    def close(self, *, wait: bool = True) -> None:
        """Blocking (a worker thread): melchior and children, then the session's lease."""
        self.agents.close(wait=wait)
        self.attachment.close()


@record(frozen=False)
class Running:
    control: TurnControl
    context: tuple[str, str]  # the caller and context it runs in
    ended: anyio.Event = field(default_factory=anyio.Event)


def idle_beyond(
    order: list[tuple[str, str]], busy: set[tuple[str, str]], bound: int
) -> list[tuple[str, str]]:
    """The least recently used contexts past `bound` that run no turn, oldest first."""
    excess = len(order) - bound
    return [key for key in order if key not in busy][: max(excess, 0)]


class Turns(AgentExecutor):
    def __init__(self, admitted: Admitted, mode: Mode, gate: Gate) -> None:
        self.admitted, self.mode, self.gate = admitted, mode, gate
        self.store = SessionStore(Path(admitted.paths.home))
        self.contexts = Contexts(admitted.paths.home)
        self.attached: OrderedDict[tuple[str, str], Context] = OrderedDict()  # oldest first
        self.running: dict[str, Running] = {}  # by task id
        self.attaching = anyio.Lock()
        built = parts(admitted)
        built.sandbox.auto = mode == "auto"
        self.rules = (Path(admitted.cwd), built.policy.protected)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        owner = resolve_user_scope(context.call_context)
        task_id, context_id = str(context.task_id), str(context.context_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        message = context.message
        if context.current_task is None:  # a new task: the SDK needs it before any update
            history = [message] if message is not None else []
            await event_queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
            )
        try:
            claim = self.gate.take(owner, message.message_id if message else "", context_id)
        except Refused as refused:
            await updater.reject(_said(updater, refused.why))
            return
        running = self.running[task_id] = Running(TurnControl(), (owner, context_id))
        try:
            await self._run(owner, context, updater, running.control)
        finally:
            self.gate.release(claim)
            del self.running[task_id]
            running.ended.set()

    async def _run(
        self, owner: str, context: RequestContext, updater: TaskUpdater, control: TurnControl
    ) -> None:
        await updater.start_work()
        try:
            held = await self._context(owner, str(context.context_id))
        except (SessionError, OSError) as failed:
            code = failed.code if isinstance(failed, SessionError) else "session_unwritable"
            await updater.failed(_said(updater, f"the context's session cannot be used: {code}"))
            return
        run_id = new_id()
        updates = TaskUpdates(updater, held.attachment.session_id, run_id, self.mode, self.rules)
        broker = updates.broker = ApprovalBroker(updates.announce)
        admitted = self.admitted
        async with anyio.create_task_group() as sending:
            sending.start_soon(updates.pump)
            finished = await start_turn(
                admitted,
                held.attachment,
                (admitted.provider, admitted.model, admitted.thinking),
                context.get_user_input(),
                run_id=run_id,
                emitter=updates,
                control=control,
                approvals=broker,
                agents=held.agents,
            )
            await updates.close()
        await _finish(updater, updates, finished, self.mode)

    async def _context(self, owner: str, context_id: str) -> Context:
        """The context's session, attached (a new one made and mapped if it has none)."""
        key = (owner, context_id)
        async with self.attaching:
            held = self.attached.get(key)
            if held is None:
                attachment = await anyio.to_thread.run_sync(self._attach, owner, context_id)
                opening = partial(SessionAgents.open, self.admitted, attachment)
                agents = await anyio.to_thread.run_sync(opening)
                held = self.attached[key] = Context(attachment, agents)
                busy = {running.context for running in self.running.values()}
                for idle in idle_beyond(list(self.attached), busy, limits.ATTACHED_CONTEXTS):
                    await anyio.to_thread.run_sync(self.attached.pop(idle).close)
            self.attached.move_to_end(key)
            return held

    def _attach(self, owner: str, context_id: str) -> Attachment:
        admitted = self.admitted
        session_id = self.contexts.session_of(owner, context_id)
        if session_id is not None:
            try:
                return self.store.open(session_id, admitted.cwd)[0]
            except SessionError as failed:
                if failed.code != "session_missing":  # never written, or pruned: a new one
                    raise
        selection = Selection(admitted.provider, admitted.model, admitted.thinking)
        attachment = self.store.create(admitted.cwd, selection)
        try:
            self.contexts.remember(owner, context_id, attachment.session_id)
        except OSError:
            attachment.close()
            raise
        return attachment

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        running = self.running.get(str(context.task_id))
        if running is None:  # waiting for input: the SDK closes it as canceled
            return
        running.control.cancel(None)
        with anyio.move_on_after(limits.CANCEL_WAIT_MS / 1000):
            await running.ended.wait()

    async def stop(self) -> None:
        """The server stops: cancel every turn, wait (bounded) for each to record it, then
        close the sessions, their melchiors and children."""
        running = list(self.running.values())
        for turn in running:
            turn.control.cancel(None)
        with anyio.move_on_after(common_limits.CLEANUP_WAIT_MS / 1000):
            for turn in running:
                await turn.ended.wait()
        for held in self.attached.values():
            held.close(wait=False)  # this process exits next; melchior ends alone
        self.attached.clear()


async def _finish(
    updater: TaskUpdater, updates: TaskUpdates, finished: RunFinished, mode: Mode
) -> None:
    if finished.outcome == "cancelled":
        await updater.cancel(_said(updater, "the turn was cancelled"))
    elif finished.outcome != "completed":
        failure = updates.failure
        said = f"{failure.code}: {failure.summary}" if failure else finished.error_code
        await updater.failed(_said(updater, f"the turn failed: {said or 'execution_failed'}"))
    elif updates.refused:
        refused = "; ".join(updates.refused)
        await updater.requires_input(
            _said(updater, INPUT_REQUIRED.format(mode=mode, refused=refused))
        )
    else:
        await updater.complete(_said(updater, updates.final_text()))


def _said(updater: TaskUpdater, text: str) -> Message:
    return updater.new_agent_message([Part(text=text)])
