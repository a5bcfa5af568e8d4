"""The face's view into one turn, without changing the runner: thin wrappers around what a
`TurnSetup` holds.

- `ObservedProvider` passes every provider event through unchanged, noting usage figures and
  reasoning summaries, and gives the event loop a turn at least every UI_YIELD_MS (a stream
  that never awaits, like a fast local model or the fixture, would otherwise freeze the
  screen and make Esc wait for the end of the reply).
- `ObservedTool` notes the call the runner is about to decide on (its arguments, for an
  approval's preview) and the output it produced (for the card's expanded view).
- `FacePolicy` is the settings policy plus what this person granted while the process lives:
  the session grants (tools/grants.py, the one rule every face uses) and the approval mode.
  It only ever turns an `ask` into an `allow`, and only where the person's own rules asked:
  a `deny`, an untrusted project's or agent profile's narrowing and a protected path still
  decide.

The runner is sequential within a turn (one tool call at a time), so one `Observer` slot per
turn is enough.
"""

import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any, Literal, cast

import anyio.lowlevel

from magi_code.limits import UI_YIELD_MS
from magi_code.providers.base import (
    ModelRequest,
    Provider,
    ProviderEvent,
    ReasoningSummary,
    Usage,
)
from magi_code.records import field, record
from magi_code.redact import redact
from magi_code.tools.base import Access, Tool, ToolContext, ToolOutcome
from magi_code.tools.grants import GrantedPolicy, SessionGrants
from magi_code.tools.paths import inside

ApprovalMode = Literal["ask", "edits", "full", "auto"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = ("ask", "edits", "full", "auto")


@record
class PendingCall:
    tool: str
    args: Any
    access: Access
    ctx: ToolContext


@record(frozen=False)
class Observer:
    """What one turn showed the face beyond its run events."""

    on_usage: Callable[[Usage, str], None] = lambda usage, purpose: None
    on_reasoning: Callable[[str], None] = lambda text: None
    previewer: Callable[[PendingCall], Any] = lambda call: None
    call: PendingCall | None = None
    preview: Any = None  # what the previewer made of `call`, before it ran
    output: str | None = None  # the last tool's output for the model


class ObservedProvider:
    def __init__(
        self,
        inner: Provider,
        observer: Observer,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner, self.observer, self.clock = inner, observer, clock
        self.id = inner.id

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        events = cast(AsyncGenerator[ProviderEvent, None], self.inner.stream(request))
        turn_given = self.clock()
        async with aclosing(events):
            async for event in events:
                if isinstance(event, Usage):
                    self.observer.on_usage(event, request.purpose)
                elif isinstance(event, ReasoningSummary):
                    self.observer.on_reasoning(redact(event.text))
                now = self.clock()
                if now - turn_given >= UI_YIELD_MS / 1000:
                    await anyio.lowlevel.checkpoint()
                    turn_given = self.clock()
                yield event


class ObservedTool:
    """A tool as the runner sees it, reporting its call and its output to the observer."""

    def __init__(self, inner: Tool[Any], observer: Observer) -> None:
        self.inner, self.observer = inner, observer
        self.name = inner.name
        self.description = inner.description
        self.parameters = inner.parameters

    def parse(self, arguments: str) -> Any:
        return self.inner.parse(arguments)

    def access(self, args: Any, ctx: ToolContext) -> Access:
        access = self.inner.access(args, ctx)
        call = self.observer.call = PendingCall(self.name, args, access, ctx)
        self.observer.preview = self.observer.previewer(call)
        self.observer.output = None
        return access

    def describe(self, args: Any, ctx: ToolContext) -> str:
        return self.inner.describe(args, ctx)

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        outcome = await self.inner.run(args, ctx)
        self.observer.output = outcome.output
        return outcome


class Grants(SessionGrants):
    """What this person allowed while the process lives (tools/grants.py), and the approval
    mode; never written anywhere."""

    def __init__(self, mode: ApprovalMode = "ask") -> None:
        super().__init__()
        self.mode = mode


@record
class FacePolicy(GrantedPolicy):
    """The session's grants, widened by the approval mode (edits, full)."""

    grants: Grants = field(default_factory=Grants)

    def _granted(self, tool: str, access: Access, path: Path | None, ws: Path) -> bool:
        if super()._granted(tool, access, path, ws) or self.grants.mode == "full":
            return True
        in_workspace = path is not None and inside(path, ws)
        return self.grants.mode == "edits" and access.kind == "write" and in_workspace
