"""One ACP prompt: run events as ordered `session/update` notifications, approvals as
`session/request_permission`.

Every update goes through one bounded queue and one sender task, so the client sees them in
run order. Deltas are best effort: when one does not fit, that message's later deltas are
dropped too and its reconcile sends what the client is missing. Critical events wait at most
CRITICAL_EVENT_WAIT_MS for room, and a client that cannot take them cancels the run
(`output_unavailable`), as for the local agent. A tool call's content comes from what its
tool noted (watched.py); a client terminal it runs in is shown as soon as it exists, and the
command waits (bounded) until that update went out, so the client has it before its release.
The plan `update_plan` sets goes out as a `plan` update, in its place among the rest.

An approval is queued behind the tool call it is for, then asked in its own task (owned by
the prompt, bounded by the approval's expiry); the broker stays the judge of expiry and of
who answered first. "Always allow" is the session grant (tools/grants.py: this exact tool,
command and paths, never a protected path or a run outside the sandbox), as in every face.
"""

from typing import Any

import anyio
from acp import update_agent_message_text
from acp.interfaces import Client
from acp.schema import AllowedOutcome
from anyio.abc import TaskGroup

from magi_code import limits
from magi_code.acp import forms, updates
from magi_code.acp.watched import Call, Calls
from magi_code.mcp.elicitation import Answer, Form
from magi_code.records import field, record
from magi_code.redact import redact
from magi_code.runner.events import (
    Activity,
    DetailEvent,
    Diagnostic,
    MessageDelta,
    MessageReconcile,
    RunEvent,
)
from magi_code.runner.turn import OutputUnavailable
from magi_code.tools.approvals import ApprovalBroker, Asked
from magi_code.tools.grants import SessionGrants
from magi_code.tools.plan import PlanUpdate
from magi_code.tools.progress import ToolProgress


@record(frozen=False)
class Ask:
    approval_id: str
    tool_call_id: str
    summary: str
    asked: Asked | None
    expires_in_ms: int


@record(frozen=False)
class Question:
    """An MCP server's question, asked once the updates before it went out."""

    form: Form
    tool_call_id: str | None
    answers: list[Answer] = field(default_factory=list)
    answered: anyio.Event = field(default_factory=anyio.Event)


@record(frozen=False)
class Awaited:
    """An update whose sender is waited for (`sent` is set once it went out, or was lost)."""

    update: Any
    sent: anyio.Event = field(default_factory=anyio.Event)


@record(frozen=False)
class Message:
    sent: str = ""  # what the client has of this message, in order
    reconciled: str = ""
    gap: bool = False  # a delta was dropped: send no more deltas for it


@record(frozen=False)
class PromptRun:
    client: Client
    session_id: str
    grants: SessionGrants  # the session's "always allow" answers
    broker: ApprovalBroker | None = None
    asks: TaskGroup | None = None
    open_tool: str | None = None  # the started tool call the next approval is for
    broken: bool = False
    messages: dict[str, Message] = field(default_factory=dict)
    failure: Diagnostic | None = None  # the last diagnostic: why a failed run failed

    calls: Calls = field(default_factory=Calls)  # what the turn's tools noted (watched.py)
    shown: dict[str, Call] = field(default_factory=dict)  # running tool calls' notes

    def __post_init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[Any](limits.WORKER_EVENTS)

    # ---- the sender ----------------------------------------------------------------------

    async def pump(self) -> None:
        """Send what is queued, in order, until the queue is closed and drained."""
        async with self.receive:
            async for item in self.receive:
                if self.broken:
                    if isinstance(item, Awaited):
                        item.sent.set()
                    if isinstance(item, Question):  # nobody is there to answer it
                        item.answers.append(Answer("cancel"))
                        item.answered.set()
                    continue
                if isinstance(item, Ask):
                    assert self.asks is not None
                    self.asks.start_soon(self.ask, item)
                    continue
                if isinstance(item, Question):
                    assert self.asks is not None
                    self.asks.start_soon(self.ask_form, item)
                    continue
                update = item.update if isinstance(item, Awaited) else item
                try:
                    await self.client.session_update(session_id=self.session_id, update=update)
                except Exception:  # noqa: BLE001 - a client gone or refusing: output is lost
                    self.broken = True
                if isinstance(item, Awaited):
                    item.sent.set()

    async def put(self, item: Any) -> None:
        if self.broken:
            raise OutputUnavailable
        try:
            with anyio.fail_after(limits.CRITICAL_EVENT_WAIT_MS / 1000):
                await self.send.send(item)
        except TimeoutError as late:
            raise OutputUnavailable from late

    async def close(self) -> None:
        await self.send.aclose()

    # ---- the runner's Emitter ------------------------------------------------------------

    def delta(self, event: MessageDelta) -> None:
        message = self.messages.setdefault(event.message_id, Message())
        if message.gap or self.broken:
            return
        try:
            self.send.send_nowait(update_agent_message_text(event.text))
        except anyio.WouldBlock:
            message.gap = True
            return
        message.sent += event.text

    async def critical(self, event: RunEvent) -> None:
        if isinstance(event, MessageReconcile):
            await self.reconcile(event)
        elif isinstance(event, Activity):
            call = None
            if event.kind == "tool" and event.state == "started":
                self.open_tool = event.activity_id
                call, self.calls.last = self.calls.last, None
                if call is not None:
                    self.shown[event.activity_id] = call
            elif event.kind == "tool":
                self.open_tool = None
                call = self.shown.pop(event.activity_id, None)
            await self.put(updates.activity_update(event, call))
        elif isinstance(event, Diagnostic):
            self.failure = event
            await self.put(updates.diagnostic_update(event))
        # input.persisted: the client shows the prompt itself; run.finished: the response

    async def detail(self, event: DetailEvent) -> None:
        """Of the detail events, the plan `update_plan` set, as a `plan` update, and a running
        call's progress, as its content (a tool's output reaches its tool call through
        watched.py)."""
        if isinstance(event, PlanUpdate):
            await self.put(updates.plan_update(event))
        elif isinstance(event, ToolProgress):
            await self.put(updates.progress_update(event))

    async def reconcile(self, event: MessageReconcile) -> None:
        """Send what the deltas missed; what they already showed cannot be taken back."""
        message = self.messages.setdefault(event.message_id, Message())
        message.reconciled += event.text
        if message.reconciled.startswith(message.sent):
            missing = message.reconciled[len(message.sent) :]
            if missing:
                await self.put(update_agent_message_text(missing))
                message.sent = message.reconciled

    async def terminal(self, terminal_id: str) -> None:
        """The open tool call runs in this client terminal: show it there now, before the
        terminal is released (waiting at most CLEANUP_WAIT_MS for it to be sent)."""
        call = self.shown.get(self.open_tool) if self.open_tool is not None else None
        if call is None or self.open_tool is None:
            return
        call.terminal = terminal_id
        shown = Awaited(updates.terminal_update(self.open_tool, terminal_id))
        await self.put(shown)
        with anyio.move_on_after(limits.CLEANUP_WAIT_MS / 1000):
            await shown.sent.wait()

    # ---- approvals -----------------------------------------------------------------------

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        assert self.broker is not None
        asked = self.broker.asked(approval_id)
        tool_call_id = self.open_tool or approval_id
        await self.put(Ask(approval_id, tool_call_id, summary, asked, expires_in_ms))

    async def ask(self, ask: Ask) -> None:
        assert self.broker is not None
        call = updates.permission_call(ask.tool_call_id, redact(ask.summary), ask.asked)
        choice = None
        with anyio.move_on_after(ask.expires_in_ms / 1000):
            try:
                response = await self.client.request_permission(
                    session_id=self.session_id, tool_call=call, options=updates.OPTIONS
                )
            except Exception:  # noqa: BLE001 - no answer is a refusal
                response = None
            if response is not None and isinstance(response.outcome, AllowedOutcome):
                choice = response.outcome.option_id
        allow = choice in (updates.ALLOW_ONCE, updates.ALLOW_ALWAYS)
        won = self.broker.answer(ask.approval_id, allow)
        if won and choice == updates.ALLOW_ALWAYS:
            self.grants.grant(ask.asked)

    # ---- MCP servers' questions ------------------------------------------------------------

    async def elicit(self, form: Form) -> Answer:
        """An MCP server's question as `elicitation/create`, tied to the running tool call
        (forms.py); queued behind the updates before it, answered by the person."""
        question = Question(form, self.open_tool)
        await self.put(question)
        await question.answered.wait()
        return question.answers[0]

    async def ask_form(self, question: Question) -> None:
        mode = forms.form_mode(question.form, self.session_id, question.tool_call_id)
        try:
            response = await self.client.create_elicitation(question.form.message, mode)
            answer = forms.answer(response)
        except Exception:  # noqa: BLE001 - an editor that failed to ask: nobody answered
            answer = Answer("cancel")
        question.answers.append(answer)
        question.answered.set()
