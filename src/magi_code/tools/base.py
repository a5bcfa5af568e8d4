"""The tool contract: what the runner may ask of a tool, and what a tool hands back.

The runner calls, in order: `parse` (model JSON -> typed args, or ToolInputError with a code),
`access` (what the call would touch, for the permission policy), `describe` (a safe line for
activity and approval events), and, once allowed, `run`. A tool never decides its own
permission, never prints, and never lets anyio cancellation turn into a result.

`ToolOutcome` enforces its own invariants: whatever a tool puts in `summary` leaves redacted
and bounded, and `output` is bounded for the model. A result may carry images beside its
text (`images`, made by tools/images.py within its bounds): each wire sends them as its own
image parts, or their descriptions to a model that takes none.
"""

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from magi_code.providers.base import ImagePart
from magi_code.records import KW_ONLY, record
from magi_code.tools import ToolsError
from magi_code.tools.host_io import HostIO
from magi_code.tools.limits import OUTPUT_BYTES
from magi_code.tools.summaries import clip_utf8, safe_summary, scrub_surrogates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from magi_code.mcp.elicitation import Answer, Form
    from magi_code.tools.paths import Protected
    from magi_code.tools.sandbox.modes import Sandbox

InputErrorCode = Literal["invalid_json", "invalid_arguments", "arguments_too_large"]
AccessKind = Literal["read", "write", "shell", "network"]

ArgsT = TypeVar("ArgsT")


class ToolInputError(ToolsError, ValueError):
    """The model's arguments are not JSON, not the tool's shape, or too large. Carries a code,
    and may carry `fix`: a fixed sentence telling the model what is wrong and what to send
    instead (never an echo of the input)."""

    def __init__(self, code: InputErrorCode, fix: str = "") -> None:
        super().__init__(code)
        self.code: InputErrorCode = code
        self.fix = fix


@record
class ToolContext:
    workspace: Path  # canonical cwd of the run
    env: Mapping[str, str]  # environment for subprocesses
    _: KW_ONLY  # what only some tools use is always named
    # For tools that run agents (runner/subagents.py): the run's critical-event sink (a run
    # event, e.g. a `subagent` activity) and its approval broker's `request`. None elsewhere.
    emit: Callable[[Any], Awaitable[None]] | None = None
    approve: Callable[[str], Awaitable[bool]] | None = None
    # The face's detail sink (runner/turn.py DetailEmitter), for what a tool shows a person
    # beside its result: the plan `update_plan` set (tools/plan.py). None: the face shows none.
    detail: Callable[[Any], Awaitable[None]] | None = None
    activity_id: str = ""  # the activity this call is, for what its tool shows live
    # The face's way to put an MCP server's question (mcp/elicitation.py Form) to the person
    # and hand back their Answer. None: nobody can be asked (exec, the local agent).
    elicit: "Callable[[Form], Awaitable[Answer]] | None" = None
    bridge: "Bridge | None" = None  # the `code` tool's way back to the session's tools
    host: HostIO | None = None  # the client's files and terminals, when the face offers them
    # The session's OS sandbox (tools/sandbox): shell commands run in it unless its mode is
    # full-access or `unconfined` (a run outside it that the user allowed); Code Mode always.
    sandbox: "Sandbox | None" = None
    unconfined: bool = False
    # What no tool reads or writes, by path and by file (a hard link is no door): the
    # policy's protected paths (tools/paths.py). None: nothing beyond the policy's decision.
    protected: "Protected | None" = None
    # Whether the turn's policy allows this call's tool an access without asking (web_fetch
    # follows a redirect to another host only then). None: nothing is allowed that way.
    permits: "Callable[[Access], bool] | None" = None


@record
class Bridge:
    """The session's tools as a Code Mode program may call them: by name with JSON arguments,
    each call decided and run by the turn (the Code Mode policy, approvals, hooks)."""

    names: tuple[str, ...]
    call: "Callable[[str, str], Awaitable[ToolOutcome]]"


@record
class ToolOutcome:
    ok: bool
    output: str  # text for the model, at most OUTPUT_BYTES UTF-8 bytes
    summary: str  # safe: redacted, one line, at most SUMMARY_BYTES; no raw params or results
    sandbox_denied: bool = False  # it failed as the OS sandbox refused something it did
    images: tuple[ImagePart, ...] = ()  # shown to the model after `output`

    def __post_init__(self) -> None:
        output = clip_utf8(scrub_surrogates(self.output), OUTPUT_BYTES)
        object.__setattr__(self, "output", output)
        object.__setattr__(self, "summary", safe_summary(self.summary))


@record
class Access:
    kind: AccessKind
    paths: tuple[Path, ...] = ()  # resolved, canonical
    command: str | None = None  # the shell command, verbatim
    host: str | None = None  # "network": the host name reached (lower case, IDNA)
    # Another agent the call starts (a subagent) may change files, asking for its own
    # actions: the call is decided as its kind, but checkpointed as a write would be
    # (runner/checkpointing.py), so that what the agent changes is the turn's to rewind.
    delegated_writes: bool = False


class Tool(Protocol[ArgsT]):
    name: str
    description: str
    parameters: dict[str, object]  # JSON schema of the arguments object

    def parse(self, arguments: str) -> ArgsT:
        """Decode the model's JSON text; raise ToolInputError on bad JSON or shape."""
        ...

    def access(self, args: ArgsT, ctx: ToolContext) -> Access:
        """What the call would touch, resolved against the workspace."""
        ...

    def describe(self, args: ArgsT, ctx: ToolContext) -> str:
        """A safe one-line summary for activity and approval events."""
        ...

    async def run(self, args: ArgsT, ctx: ToolContext) -> ToolOutcome:
        """Do the work. Cancellation propagates; every other failure is an outcome."""
        ...
