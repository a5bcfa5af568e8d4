"""The turn loop: one prompt in, a stream of run events out, every step persisted as it
happens, and exactly one `RunFinished` returned.

    append the prompt (fsynced) -> input.persisted -> session_start, user_prompt_submit hooks
    -> loop:
        (compaction when due, after pre_compact hooks)
        stream the model into one assistant segment (deltas, chunks on disk)
        reconcile the segment (authoritative parts); no tool calls -> stop hooks, done
        for each tool call: activity, pre_tool_use hooks, permission (maybe an approval),
            run, post_tool_use hooks, record, activity
    -> run_finished record -> RunFinished(outcome, persistence, revision, error_code)

Bounds. Text and tool-call arguments (kept or dropped by the wire) count in the run's content
budget (RUN_CONTENT_BYTES); past it the run fails with `content_limit`. A call whose arguments
passed ARGUMENTS_BYTES is answered with an error telling the model to split it, and is kept in
the history and every later request as a stub (name, id, `{}`; its size on the record), never
whole. An answer asking for more tool calls than the run has activity identities left
(RUN_ACTIVITY_IDS) runs none of them. A turn makes at most `max_rounds` model requests
(`[turn] max_rounds`, else TURN_MODEL_ROUNDS): an answer that still calls tools then runs none
of them (`round_limit`). A run that fails on a bound says which in a diagnostic.

Stops. An answer the model refused, a content filter stopped, its output limit cut or the
provider ended incomplete fails the run (`execution_failed`) with a diagnostic whose code is
that class (`STOPPED`); the text kept, and each tool call of that answer (one maybe cut off)
named and not run. A face that takes detail events (`DetailEmitter`: exec --json, Mission
Control, ACP) is handed each tool call's output, redacted and bounded, the turn's usage, and
what a tool hands its context's `detail` sink (the plan `update_plan` sets). The turn's usage
is also stored, on its `run_finished` record (sessions/records.py), so a face that reopens the
session can say what it spent.

Hook runs and the calls a `code` program makes through its bridge are activities the model
did not call: they are `activity` records (runner/hook_runs.py, tools/code_mode.py).

Checkpoints. Before the turn's first call that may write, and once it is over, the workspace
is checkpointed (`TurnSetup.checkpoints`, runner/checkpointing.py), so a face can rewind it.

Cancellation arrives through `TurnControl.cancel` and is owned here: the loop runs inside
its own cancel scope, and finalization (partial reply kept, run_finished recorded) is
shielded. A required-input append failure is failed/not_started; any later append failure
is degraded, whatever was displayed. It runs in an anyio event loop and knows no face.
"""

import json
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing, suppress
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, runtime_checkable

import anyio

from magi_code import limits, untrusted_json
from magi_code.debug import absorbed
from magi_code.errors import MagiError
from magi_code.ids import uuid4
from magi_code.providers.base import (
    AssistantText,
    Completed,
    ImagePart,
    ModelRequest,
    Provider,
    ProviderError,
    ProviderEvent,
    ReasoningSummary,
    StopReason,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolResult,
    ToolSpec,
    Usage,
    UserText,
    failure_detail,
    failure_summary,
)
from magi_code.providers.tool_arguments import utf8_bytes
from magi_code.records import field, record, replace
from magi_code.redact import LiveRedactor, redact
from magi_code.runner import compaction
from magi_code.runner.checkpointing import may_change_files
from magi_code.runner.events import (
    Activity,
    ActivityState,
    DetailEvent,
    Diagnostic,
    InputPersisted,
    MessageDelta,
    MessageReconcile,
    Persistence,
    RunEvent,
    RunFinished,
    ToolOutput,
    TurnUsage,
)
from magi_code.runner.text import encodable, split_utf8
from magi_code.sessions.store import utc_now
from magi_code.tools.approvals import ApprovalBroker, Asked
from magi_code.tools.base import Access, Bridge, Tool, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.host_io import HostIO
from magi_code.tools.limits import ARGUMENTS_BYTES, EVENT_OUTPUT_BYTES, OUTPUT_BYTES
from magi_code.tools.policy import Policy
from magi_code.tools.summaries import clip_utf8, safe_summary, scrub_surrogates

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from magi_code.mcp.elicitation import Answer, Form
    from magi_code.runner.checkpointing import TurnCheckpoints
    from magi_code.runner.hook_runs import Fired, HookRunner
    from magi_code.tools.sandbox.modes import Sandbox

CHUNK_PERSIST_BYTES = limits.HISTORY_CHUNK_BYTES  # unpersisted text before a chunk record

OVERSIZE_STUB = "{}"  # what the history and later requests keep of an oversize call's arguments
OVERSIZE_SUMMARY = f"rejected: arguments over {ARGUMENTS_BYTES} bytes"
OVERSIZE_TOLD = f"arguments over {ARGUMENTS_BYTES} bytes: split the change into smaller calls"
CONTENT_LIMIT = Diagnostic(
    "content_limit",
    f"The model's output in this run passed its bound of {limits.RUN_CONTENT_BYTES} bytes "
    "(text and tool-call arguments together): the run stopped there.",
)
SEGMENT_LIMIT = Diagnostic(
    "content_limit",
    f"The model's reply in this run passed its bound of {limits.RUN_CONTENT_SEGMENTS} "
    "segments: the run stopped there.",
)
ACTIVITY_LIMIT_CODE = "activity_limit"
ACTIVITY_LIMIT = Diagnostic(
    ACTIVITY_LIMIT_CODE,
    f"This run reached its bound of {limits.RUN_ACTIVITY_IDS} activities (tool calls, hook "
    "runs, Code Mode calls): the run stopped there.",
)


# How a model's answer that stopped short ends the run (`stopped`): the diagnostic's code and
# what it says. The code is the stop's class; the run fails with `execution_failed`.
STOPPED: dict[StopReason, tuple[str, str]] = {
    "refused": ("refused", "The model refused to answer"),
    "content_filtered": ("content_filtered", "The provider's content filter stopped the answer"),
    "max_tokens": ("output_limit", "The model's answer reached its output limit and was cut off"),
    "incomplete": ("incomplete", "The provider ended the answer incomplete, saying no reason"),
}
ROUND_LIMIT_CODE = "round_limit"


class Journal(Protocol):
    """Where a run's records go: the attached session."""

    def append(self, record: dict[str, Any], *, fsync: bool) -> None: ...  # raises OSError
    def acknowledge(self, stored_message_id: str) -> tuple[str, str]: ...  # id, revision
    def revision(self) -> str | None: ...  # a fresh revision after the run, None if none
    def replay(self) -> compaction.SizedItems: ...
    def compaction_due(self) -> bool: ...  # the history nears its budget: compact once
    def history_warning(self) -> Diagnostic | None: ...  # after revision(): near a bound
    def starts_attachment(self) -> bool: ...  # True for the attachment's first run here


class Emitter(Protocol):
    def delta(self, event: MessageDelta) -> None: ...  # best effort, never blocks
    async def critical(self, event: RunEvent) -> None: ...  # raises OutputUnavailable


@runtime_checkable
class DetailEmitter(Protocol):
    """A face that shows detail events: each tool call's output and the turn's usage (exec
    --json), and the plan `update_plan` set (exec --json, Mission Control, ACP). Other faces
    (the local agent) are never handed them."""

    async def detail(self, event: DetailEvent) -> None: ...  # raises OutputUnavailable


class OutputUnavailable(Exception):
    """A critical event could not be delivered within its bound."""


RunFailedCode = Literal["content_limit", "execution_failed"]


class RunFailed(MagiError):
    """The run cannot go on; `code` is its run.finished error code, `diagnostic` (a fixed
    sentence) what the face is told before the end."""

    def __init__(self, code: RunFailedCode, diagnostic: Diagnostic | None = None) -> None:
        super().__init__(code)
        self.code: RunFailedCode = code
        self.diagnostic = diagnostic


class TurnControl:
    """The handle a face uses to stop a run. Use it from the run's event loop only; it may be
    cancelled before the run has entered its scope, which then cancels on entry."""

    def __init__(self) -> None:
        self.scope: anyio.CancelScope | None = None
        self.cancelled = False
        self.reason: str | None = None  # error code when the cancel was not a user's Stop

    def enter(self) -> anyio.CancelScope:
        self.scope = anyio.CancelScope()
        if self.cancelled:
            self.scope.cancel()
        return self.scope

    def cancel(self, reason: str | None = None) -> None:
        if not self.cancelled:
            self.cancelled, self.reason = True, reason
        if self.scope is not None:
            self.scope.cancel()


@record(frozen=False)
class TurnSetup:
    session_id: str
    run_id: str
    model: str
    instructions: str
    thinking: str | None
    provider: Provider
    tools: Mapping[str, Tool[Any]]
    policy: Policy
    workspace: Path
    env: Mapping[str, str]
    approvals: ApprovalBroker
    context_window: int = compaction.DEFAULT_CONTEXT_WINDOW
    hooks: "HookRunner | None" = None  # None: no hook is configured (nor are they imported)
    code_policy: Policy | None = None  # Code Mode on: the policy of the calls a program makes
    host_io: HostIO | None = None  # the client's files and terminals (ACP), else local I/O
    sandbox: "Sandbox | None" = None  # the session's OS sandbox (tools/sandbox)
    images: bool = False  # the model takes images (providers/images.py)
    web_search: bool = False  # `[web] search`: offer the provider's own web search
    max_rounds: int = limits.TURN_MODEL_ROUNDS  # model requests per turn (`[turn] max_rounds`)
    # The face's way to ask the person an MCP server's question (ToolContext.elicit).
    elicit: "Callable[[Form], Awaitable[Answer]] | None" = None
    checkpoints: "TurnCheckpoints | None" = None  # the workspace before and after its changes


def new_id() -> str:
    return uuid4().replace("-", "")


@record(frozen=False)
class Segment:
    message_id: str
    parts: list[str] = field(default_factory=list)
    persisted: int = 0  # how many of `parts` are on disk as chunks
    unpersisted: int = 0  # characters in the parts after those
    chunk_index: int = 0
    delta_part: int = 0
    reconciled: bool = False
    live: LiveRedactor = field(default_factory=LiveRedactor)  # what the deltas may show yet

    @property
    def text(self) -> str:
        return "".join(self.parts)


class Turn:
    def __init__(self, setup: TurnSetup, journal: Journal, emit: Emitter, control: TurnControl):
        self.setup, self.journal, self.emit, self.control = setup, journal, emit, control
        self.degraded = False
        self.content_bytes = 0
        self.segments = 0
        self.activities = 0
        self.segment: Segment | None = None
        self.open_activity: tuple[str, str, str, str] | None = None  # id, call, name, summary
        self.usage: Usage | None = None  # the last figure since the last compaction
        self.figure: Usage | None = None  # the last figure of any of the turn's requests
        self.spent = TurnUsage(0, 0, 0, 0)  # the usage of the turn's model requests together
        self.stop: StopReason = "end_turn"  # why the model's last answer ended
        self.details = emit if isinstance(emit, DetailEmitter) else None
        self.counted = 0  # items in the request the last usage figure reports on
        self.prompt_id = ""  # stored message id of this turn's prompt
        self.failure: Diagnostic | None = None  # why the run failed, told before the end

    # ---- persistence -----------------------------------------------------------------------

    def record(self, kind: str, fsync: bool = False, **fields: Any) -> None:
        try:
            self.journal.append({"type": kind, "run_id": self.setup.run_id, **fields}, fsync=fsync)
        except (OSError, ValueError):  # the run goes on; its history is degraded
            self.degraded = True

    # ---- the run ---------------------------------------------------------------------------

    async def run(self, prompt: str, images: tuple[ImagePart, ...] = ()) -> RunFinished:
        message_id = self.prompt_id = new_id()
        try:
            self.journal.append(
                {
                    "type": "user",
                    "run_id": self.setup.run_id,
                    "message_id": message_id,
                    "text": prompt,
                    "at": utc_now(),
                    **stored_images(images),
                },
                fsync=True,
            )
        except (OSError, ValueError):  # ValueError: a record the session schema refuses
            return RunFinished("failed", "not_started", None, "persistence_failed")
        outcome = "completed"
        error: str | None = None
        with self.control.enter() as scope:
            try:
                projected, revision = self.journal.acknowledge(message_id)
                await self.emit.critical(InputPersisted(projected, revision))
                notice = self.setup.sandbox and self.setup.sandbox.unavailable_notice()
                if notice:
                    await self.warn("sandbox_unavailable", notice)
                if await self.prompt_hooks(prompt):
                    await self.loop(self.journal.replay())
            except RunFailed as failed:
                outcome, error = "failed", failed.code
                self.failure = failed.diagnostic
            except ProviderError as failure:
                outcome, error = "failed", "execution_failed"
                summary, detail = failure_summary(failure), failure_detail(failure)
                self.failure = Diagnostic(failure.code, summary, detail)
            except OutputUnavailable:
                outcome, error = "cancelled", "output_unavailable"
        if scope.cancelled_caught:
            outcome, error = "cancelled", self.control.reason
        with anyio.CancelScope(shield=True):
            if self.setup.checkpoints is not None:
                self.setup.checkpoints.after_turn()
            finished = await self.finish(outcome, error)
        return finished

    async def loop(self, items: compaction.SizedItems) -> None:
        specs = tuple(
            ToolSpec(t.name, t.description, t.parameters) for t in self.setup.tools.values()
        )
        while True:
            history_full = self.journal.compaction_due()  # true at the first round at most
            window = self.setup.context_window
            if history_full or compaction.due(items, self.usage, self.counted, window):
                items = await self.compact(items)
            calls = await self.stream(items, specs)
            await self.close_segment(partial=False)
            told = stopped(self.stop, calls)
            if told is not None:
                raise RunFailed("execution_failed", told)
            if not calls:
                await self.hook("stop")
                return
            if self.spent.rounds >= self.setup.max_rounds:
                raise RunFailed("execution_failed", round_limit(self.setup.max_rounds, calls))
            self.admit_activities(len(calls))
            for call in calls:
                oversize = oversize_bytes(call)
                if oversize:
                    call = ToolCall(call.call_id, call.name, OVERSIZE_STUB)
                    items.append(call)
                    items.append(await self.refuse_oversize(call, oversize))
                else:
                    items.append(call)
                    items.append(await self.call_tool(call))

    async def stream(
        self, items: compaction.SizedItems, specs: tuple[ToolSpec, ...]
    ) -> list[ToolCall]:
        self.segment = Segment(new_id())
        request = ModelRequest(
            self.setup.model,
            self.setup.instructions,
            items.frozen(),
            specs,
            self.setup.thinking,
            images=self.setup.images,
            web_search=self.setup.web_search,
        )
        self.counted = len(items)
        self.stop = "end_turn"
        self.spent = replace(self.spent, rounds=self.spent.rounds + 1)
        calls: list[ToolCall] = []
        events = cast(AsyncGenerator[ProviderEvent, None], self.setup.provider.stream(request))
        async with aclosing(events):  # cancellation closes the active request
            async for untrusted in events:
                event = encodable(untrusted)
                if isinstance(event, TextDelta):
                    await self.text(event.text)
                elif isinstance(event, ToolCallDone):
                    self.spend(event.call.dropped_bytes or utf8_bytes(event.call.arguments))
                    calls.append(event.call)
                elif isinstance(event, ReasoningSummary):
                    self.record(
                        "reasoning_summary",
                        item_id=event.item_id,
                        text=event.text,
                        provider_summary=True,
                    )
                elif isinstance(event, Usage):
                    self.usage = event
                    self.spend_usage(event)
                elif isinstance(event, Completed):
                    self.stop = event.stop_reason
                    break
        if self.segment.text:
            items.append(AssistantText(self.segment.text))
        return calls

    async def text(self, text: str) -> None:
        assert self.segment is not None
        if not self.segment.parts:  # the segment's first text makes it one of the run's
            self.segments += 1
            if self.segments > limits.RUN_CONTENT_SEGMENTS:
                raise RunFailed("content_limit", SEGMENT_LIMIT)
        self.spend(utf8_bytes(text))
        segment = self.segment
        segment.parts.append(text)
        segment.unpersisted += len(text)
        self.show(segment, segment.live.feed(text))
        if segment.unpersisted >= CHUNK_PERSIST_BYTES:
            self.persist_chunk()

    def spend_usage(self, usage: Usage) -> None:
        """Count one request's figure in the turn's usage (a compaction's too; `rounds`
        counts the requests `stream` makes)."""
        self.figure = usage
        spent = self.spent
        self.spent = TurnUsage(
            spent.rounds,
            spent.input_tokens + usage.input_tokens,
            spent.output_tokens + usage.output_tokens,
            spent.cached_input_tokens + usage.cached_input_tokens,
        )

    def spend(self, size: int) -> None:
        """Count `size` bytes of the model's output in the run's content budget."""
        if self.content_bytes + size > limits.RUN_CONTENT_BYTES:
            raise RunFailed("content_limit", CONTENT_LIMIT)
        self.content_bytes += size

    def show(self, segment: Segment, redacted: str) -> None:
        for piece in split_utf8(redacted, limits.LIVE_CHUNK_BYTES):
            self.emit.delta(MessageDelta(segment.message_id, segment.delta_part, piece))
            segment.delta_part += 1

    def persist_chunk(self) -> None:
        segment = self.segment
        assert segment is not None
        text = "".join(segment.parts[segment.persisted :])
        if text:
            self.record(
                "assistant_chunk",
                message_id=segment.message_id,
                index=segment.chunk_index,
                text=text,
            )
            segment.chunk_index += 1
            segment.persisted, segment.unpersisted = len(segment.parts), 0

    async def close_segment(self, *, partial: bool) -> None:
        """Persist and reconcile the current segment: whole when complete, chunks when not."""
        segment = self.segment
        if segment is None or segment.reconciled:
            return
        segment.reconciled = True
        if not segment.text:
            return
        if partial:
            self.persist_chunk()
        else:
            self.record("assistant", message_id=segment.message_id, text=segment.text)
        self.show(segment, segment.live.end())  # the held-back tail, before the reconcile
        pieces = split_utf8(redact(segment.text), limits.LIVE_CHUNK_BYTES) or [""]
        for part, piece in enumerate(pieces):
            await self.emit.critical(
                MessageReconcile(segment.message_id, part, piece, part == len(pieces) - 1, partial)
            )

    # ---- compaction ------------------------------------------------------------------------

    async def compact(self, items: compaction.SizedItems, focus: str = "") -> compaction.SizedItems:
        """Replace what came before this turn's prompt with a summary the model writes (`focus`:
        the person's instructions for it). A failed summary leaves the items as they were."""
        keep = max(i for i, item in enumerate(items) if isinstance(item, UserText))
        if keep == 0:
            return items  # nothing before the prompt to summarize
        await self.hook("pre_compact")
        activity_id, name = self.next_activity(), "compaction"
        await self.emit.critical(
            Activity(
                activity_id, "compaction", "started", name, "Summarizing the earlier conversation"
            )
        )
        request = ModelRequest(
            self.setup.model,
            compaction.SUMMARY_INSTRUCTIONS,
            (*items[:keep], UserText(compaction.summary_request(focus))),
            thinking=self.setup.thinking,
            purpose="compaction",
            images=self.setup.images,
        )
        parts: list[str] = []
        try:
            events = cast(AsyncGenerator[ProviderEvent, None], self.setup.provider.stream(request))
            async with aclosing(events):
                async for untrusted in events:
                    event = encodable(untrusted)
                    if isinstance(event, TextDelta):
                        parts.append(event.text)
                    elif isinstance(event, Usage):
                        self.spend_usage(event)
        except ProviderError:
            parts = []
        summary = "".join(parts).strip()
        if not summary:
            await self.emit.critical(
                Activity(activity_id, "compaction", "failed", name, "The summary failed")
            )
            return items
        self.record("compaction", text=summary, keep_from=self.prompt_id)
        self.usage = None
        await self.emit.critical(
            Activity(activity_id, "compaction", "completed", name, f"Summarized {keep} items")
        )
        return compaction.SizedItems.measured([compaction.summary_item(summary), *items[keep:]])

    # ---- tools -----------------------------------------------------------------------------

    async def call_tool(self, call: ToolCall) -> ToolResult:
        """A model's tool call: a `tool` activity, recorded as the call it replays as."""
        activity_id = self.next_activity()
        name = safe_summary(call.name)[:64] or "tool"

        async def opened(summary: str) -> None:
            await self.start_activity(activity_id, call, name, summary)

        outcome = await self.called(call, activity_id, opened, code_mode=False)
        return await self.end_activity(outcome, call)

    async def bridged(self, name: str, arguments: str) -> ToolOutcome:
        """One call a `code` program makes: an activity of its own (not a model tool call),
        decided by the Code Mode policy."""
        activity_id = self.next_activity()
        label = "code:" + (safe_summary(name)[:59] or "tool")
        said = ""

        async def opened(summary: str) -> None:
            nonlocal said
            said = summary
            await self.side_activity(activity_id, label, "started", summary)

        try:
            call = ToolCall(activity_id, name, arguments)
            outcome = await self.called(call, activity_id, opened, code_mode=True)
        except BaseException:  # a cancel: the activity ends, the cancellation goes on
            if said:
                with anyio.CancelScope(shield=True):
                    await self.side_activity(activity_id, label, "failed", f"interrupted: {said}")
            raise
        state = "completed" if outcome.ok else "failed"
        await self.side_activity(activity_id, label, state, outcome.summary)
        return outcome

    async def called(
        self,
        call: ToolCall,
        activity_id: str,
        opened: "Callable[[str], Awaitable[None]]",
        *,
        code_mode: bool,
    ) -> ToolOutcome:
        """The one path of a call, the model's or a program's: parse, access and describe
        (bad input is refused, the model told why), open its activity with that summary, then
        hooks, the permission and the run. A program cannot call `code` itself."""
        tool = None if code_mode and call.name == "code" else self.setup.tools.get(call.name)
        ctx = self.tool_context(activity_id)
        try:
            if tool is None:
                raise ToolInputError("invalid_arguments")
            args = tool.parse(call.arguments)
            access = tool.access(args, ctx)
            summary = safe_summary(tool.describe(args, ctx))
        except ToolInputError as bad:
            refusal = rejected(bad)
            await opened(refusal.summary)
            return refusal
        await opened(summary)
        return await self.guarded(tool, call, args, access, summary, ctx, code_mode=code_mode)

    async def refuse_oversize(self, stub: ToolCall, size: int) -> ToolResult:
        """A call whose arguments passed ARGUMENTS_BYTES: the model is told to split it; the
        history keeps the stub and the size, never the arguments."""
        activity_id = self.next_activity()
        name = safe_summary(stub.name)[:64] or "tool"
        await self.start_activity(activity_id, stub, name, OVERSIZE_SUMMARY)
        told = json.dumps({"error": OVERSIZE_TOLD})
        outcome = ToolOutcome(False, told, OVERSIZE_SUMMARY)
        return await self.end_activity(outcome, stub, arguments_bytes=size)

    async def guarded(
        self,
        tool: Tool[Any],
        call: ToolCall,
        args: Any,
        access: Access,
        summary: str,
        ctx: ToolContext,
        *,
        code_mode: bool,
    ) -> ToolOutcome:
        """Hooks, the permission (the Code Mode policy for a program's calls) and the run."""
        via = "code_mode" if code_mode else "direct"
        arguments = _arguments_value(call.arguments) if self.setup.hooks else None
        fired = await self.hook("pre_tool_use", call.name, arguments=arguments, via=via)
        if fired is not None and fired.blocked is not None:
            why = f"A hook blocked this call: {fired.blocked}"
            return ToolOutcome(False, why, f"blocked by a hook: {summary}")
        policy = self.setup.code_policy if code_mode else self.setup.policy
        assert policy is not None
        decision = policy.decide(call.name, access, self.setup.workspace)
        sandbox = None if ctx.host is not None and ctx.host.run is not None else ctx.sandbox
        if decision == "ask" and sandbox and sandbox.contains(call.name, access, policy.protected):
            decision = "allow"  # approval mode `auto`: the sandbox contains it
        question = f"Code Mode: {summary}" if code_mode else summary
        note = ""
        if decision == "ask":
            answered = await self.setup.approvals.decide(
                question, Asked(call.name, access, call.arguments)
            )
            decision, note = "allow" if answered.allow else "deny", answered.note
        if decision != "allow":
            refusal = "The user did not allow this action."
            refusal += f" They said: {note}" if note else ""
            return ToolOutcome(False, refusal, f"denied: {summary}")
        ctx = replace(ctx, permits=partial(allowed_unasked, policy, call.name, ctx.workspace))
        if self.setup.checkpoints is not None and may_change_files(access):
            await self.setup.checkpoints.before_change()
        outcome = await self.run_tool(tool, args, ctx)
        if outcome.sandbox_denied:
            outcome = await self.outside_sandbox(tool, call, args, access, summary, ctx, outcome)
        said = {"ok": outcome.ok, "summary": outcome.summary}
        fired = await self.hook(
            "post_tool_use", call.name, arguments=arguments, outcome=said, via=via
        )
        if fired is not None and fired.contexts:
            outcome = with_context(outcome, fired.contexts)
        return outcome

    async def outside_sandbox(
        self,
        tool: Tool[Any],
        call: ToolCall,
        args: Any,
        access: Access,
        summary: str,
        ctx: ToolContext,
        refused: ToolOutcome,
    ) -> ToolOutcome:
        """A command the sandbox refused something: ask to run it again outside (a face that
        cannot ask refuses by its approval mode); the model learns which way it went."""
        question = f"Run outside the sandbox? The sandbox refused part of: {summary}"
        outside = Access("shell", (), access.command)
        asked = Asked(call.name, outside, call.arguments, outside_sandbox=True)
        if not await self.setup.approvals.request(question, asked):
            note = "\n[the sandbox refused this; running it outside the sandbox was not allowed]"
            return ToolOutcome(False, refused.output + note, refused.summary)
        again = await self.run_tool(tool, args, replace(ctx, unconfined=True))
        note = "[ran again outside the sandbox, as the user allowed]\n"
        return ToolOutcome(again.ok, note + again.output, again.summary, images=again.images)

    def tool_context(self, activity_id: str = "") -> ToolContext:
        bridge = None
        if self.setup.code_policy is not None:
            names = tuple(name for name in self.setup.tools if name != "code")
            bridge = Bridge(names, self.bridged)
        return ToolContext(
            self.setup.workspace,
            self.setup.env,
            emit=self.emit.critical,
            approve=self.setup.approvals.request,
            detail=self.details.detail if self.details is not None else None,
            activity_id=activity_id,
            elicit=self.setup.elicit,
            bridge=bridge,
            host=self.setup.host_io,
            sandbox=self.setup.sandbox,
            protected=self.setup.policy.protected,
        )

    async def run_tool(self, tool: Tool[Any], args: Any, ctx: ToolContext) -> ToolOutcome:
        try:
            return await tool.run(args, ctx)
        except Exception:  # noqa: BLE001 - a broken tool fails its call, not the run
            absorbed(f"the tool {tool.name}")
            return ToolOutcome(False, "The tool failed unexpectedly.", "tool failed")

    async def end_activity(self, outcome: ToolOutcome, call: ToolCall, **extra: Any) -> ToolResult:
        assert self.open_activity is not None
        activity_id, call_id, name, _ = self.open_activity
        self.open_activity = None
        state: Literal["completed", "failed"] = "completed" if outcome.ok else "failed"
        self.record(
            "tool",
            activity_id=activity_id,
            call_id=call_id,
            name=name,
            state=state,
            summary=outcome.summary,
            arguments=call.arguments,
            result=outcome.output,
            **stored_images(outcome.images),
            **extra,
        )
        await self.emit.critical(Activity(activity_id, "tool", state, name, outcome.summary))
        if self.details is not None:
            await self.details.detail(tool_output(activity_id, name, outcome))
        return ToolResult(call_id, outcome.output, not outcome.ok, outcome.images)

    async def start_activity(
        self, activity_id: str, call: ToolCall, name: str, summary: str
    ) -> None:
        self.open_activity = (activity_id, call.call_id, name, summary)
        self.record(
            "tool",
            activity_id=activity_id,
            call_id=call.call_id,
            name=name,
            state="started",
            summary=summary,
        )
        await self.emit.critical(Activity(activity_id, "tool", "started", name, summary))

    # ---- hooks and other activities -------------------------------------------------------

    async def prompt_hooks(self, prompt: str) -> bool:
        """session_start (the attachment's first run in this process), then
        user_prompt_submit; False when a hook blocked the prompt, which the model never sees."""
        if self.setup.hooks is None:
            return True
        if self.journal.starts_attachment():
            await self.hook("session_start")
        drop = {"drops_prompt": self.prompt_id}
        fired = await self.hook("user_prompt_submit", on_block=drop, prompt=prompt)
        if fired is None or fired.blocked is None:
            return True
        await self.warn("hook_blocked", f"A hook blocked this prompt: {fired.blocked}")
        return False

    async def hook(
        self,
        event: str,
        tool: str | None = None,
        *,
        on_block: dict[str, str] | None = None,
        **fields: object,
    ) -> "Fired | None":
        hooks = self.setup.hooks
        if hooks is None or not hooks.wants(event):
            return None
        return await hooks.fire(self, event, tool, on_block=on_block, **fields)

    def next_activity(self) -> str:
        self.activities += 1
        if self.activities > limits.RUN_ACTIVITY_IDS:
            raise RunFailed("execution_failed", ACTIVITY_LIMIT)
        return new_id()

    def admit_activities(self, calls: int) -> None:
        """An answer's tool calls run only if each can have an activity identity: past the
        bound, none of them runs and the run fails."""
        left = limits.RUN_ACTIVITY_IDS - self.activities
        if calls > left:
            said = (
                f"The model asked for {calls} tool calls at once, past this run's bound of "
                f"{limits.RUN_ACTIVITY_IDS} activities ({left} left): none of them ran, and "
                "the run stopped there."
            )
            raise RunFailed("execution_failed", Diagnostic(ACTIVITY_LIMIT_CODE, said))

    async def side_activity(
        self, activity_id: str, name: str, state: str, summary: str, **extra: Any
    ) -> None:
        """An activity the model did not call: recorded as `activity`, never replayed as a
        tool call."""
        summary = safe_summary(summary)
        fields: dict[str, Any] = {"activity_id": activity_id, "name": name, "state": state}
        fields["summary"] = summary
        self.record("activity", **fields, **extra)
        event = Activity(activity_id, "tool", cast(ActivityState, state), name, summary)
        await self.emit.critical(event)

    async def warn(self, code: str, summary: str) -> None:
        await self.emit.critical(Diagnostic(code, safe_summary(summary)))

    # ---- the end ---------------------------------------------------------------------------

    async def finish(self, outcome: str, error: str | None) -> RunFinished:
        """Shielded: keep the partial reply, close an interrupted activity, record the end."""
        delivered = True
        try:
            await self.close_segment(partial=outcome != "completed")
            if self.open_activity is not None:
                activity_id, call_id, name, summary = self.open_activity
                self.open_activity = None
                self.record(
                    "tool",
                    activity_id=activity_id,
                    call_id=call_id,
                    name=name,
                    state="failed",
                    summary=f"interrupted: {summary}",
                )
                await self.emit.critical(
                    Activity(
                        activity_id, "tool", "failed", name, safe_summary(f"interrupted: {summary}")
                    )
                )
        except OutputUnavailable:
            delivered = False
            outcome, error = "cancelled", "output_unavailable"
        self.record("run_finished", outcome=outcome, error_code=error, **self.stored_usage())
        if self.details is not None and self.spent.rounds and delivered:
            with suppress(OutputUnavailable):
                await self.details.detail(self.spent)
        if self.failure is not None and outcome == "failed" and delivered:
            with suppress(OutputUnavailable):
                await self.emit.critical(self.failure)
        if self.degraded and delivered:
            with suppress(OutputUnavailable):
                await self.emit.critical(
                    Diagnostic("persistence_failed", "Part of this run could not be saved.")
                )
        persistence: Persistence = "degraded" if self.degraded else "durable"
        revision = None if self.degraded else self.journal.revision()
        warning = self.journal.history_warning()
        if warning is not None and delivered:
            with suppress(OutputUnavailable):
                await self.emit.critical(warning)
        return RunFinished(outcome, persistence, revision, error)  # type: ignore[arg-type]

    def stored_usage(self) -> dict[str, Any]:
        """The `usage` field of the run's `run_finished` record (sessions/records.py): its
        tokens and what its last request weighed; none when no request reported a figure."""
        figure, spent = self.figure, self.spent
        if figure is None:
            return {}
        return {
            "usage": {
                "rounds": spent.rounds,
                "input_tokens": spent.input_tokens,
                "output_tokens": spent.output_tokens,
                "cached_input_tokens": spent.cached_input_tokens,
                "context_tokens": figure.input_tokens + figure.output_tokens,
            }
        }


def stopped(stop: StopReason, calls: list[ToolCall]) -> Diagnostic | None:
    """What the face is told when the model's answer stopped short (a refusal, a filter, its
    output limit); its tool calls (one of them maybe cut) do not run, and say so."""
    if stop not in STOPPED:
        return None
    code, said = STOPPED[stop]
    if calls:
        names = ", ".join(safe_summary(call.name)[:64] or "tool" for call in calls)
        said += f", in the middle of {len(calls)} tool call(s) ({names}) that did not run"
    return Diagnostic(code, safe_summary(f"{said}: the run stopped there."), stop=stop)


def round_limit(bound: int, calls: list[ToolCall]) -> Diagnostic:
    said = (
        f"The model kept calling tools past this turn's bound of {bound} model requests "
        f"([turn] max_rounds): its last {len(calls)} tool call(s) did not run, and the run "
        "stopped there."
    )
    return Diagnostic(ROUND_LIMIT_CODE, said)


def rejected(bad: ToolInputError) -> ToolOutcome:
    """A call whose arguments its tool refused: the model is told the code and, when the tool
    said one, what to fix; the activity's summary names the code."""
    why = f"rejected: {bad.code}"
    told = {"error": why, "fix": bad.fix} if bad.fix else {"error": why}
    return ToolOutcome(False, json.dumps(told), why)


def tool_output(activity_id: str, name: str, outcome: ToolOutcome) -> ToolOutput:
    """A tool call's output as a detail event: redacted, then cut at EVENT_OUTPUT_BYTES."""
    shown = scrub_surrogates(redact(outcome.output))
    size, kept = utf8_bytes(shown), clip_utf8(shown, EVENT_OUTPUT_BYTES)
    return ToolOutput(activity_id, name, outcome.ok, kept, size, size > EVENT_OUTPUT_BYTES)


def with_context(outcome: ToolOutcome, contexts: list[str]) -> ToolOutcome:
    """The tool's output, cut if need be so that post_tool_use context always fits after it."""
    added = "\n\n" + "\n\n".join(contexts)
    room = OUTPUT_BYTES - len(added.encode("utf-8"))
    output = clip_utf8(outcome.output, room) + added
    return ToolOutcome(outcome.ok, output, outcome.summary, images=outcome.images)


def allowed_unasked(policy: Policy, tool: str, workspace: Path, access: Access) -> bool:
    """Whether `policy` allows `tool` this access without asking (a tool's `ctx.permits`)."""
    return policy.decide(tool, access, workspace) == "allow"


def stored_images(images: tuple[ImagePart, ...]) -> dict[str, Any]:
    """A record's `images` field (sessions/records.py): each image whole, its bytes in
    base64, as bounded as it was made (tools/images.py); none when there are none."""
    if not images:
        return {}
    kept = [
        {"media_type": i.media_type, "data": i.data, "description": i.description} for i in images
    ]
    return {"images": kept}


def oversize_bytes(call: ToolCall) -> int:
    """The size of a call's arguments when they passed ARGUMENTS_BYTES (dropped by the wire,
    or whole from a provider that does not bound them), else 0."""
    size = call.dropped_bytes or utf8_bytes(call.arguments)
    return size if call.dropped_bytes or size > ARGUMENTS_BYTES else 0


def _arguments_value(arguments: str) -> object:
    """The call's arguments as a hook reads them: the JSON value (the text if it is none)."""
    try:
        return untrusted_json.loads(arguments)
    except ValueError:
        return arguments


async def run_turn(
    setup: TurnSetup,
    journal: Journal,
    emit: Emitter,
    control: TurnControl,
    prompt: str,
    images: tuple[ImagePart, ...] = (),
) -> RunFinished:
    return await Turn(setup, journal, emit, control).run(prompt, images)
