"""Typed run events: what the runner tells a face. Faces render them in their own way.

Critical events (everything but `MessageDelta`) must reach the face; a face that cannot
take one within its bound cancels the run with `output_unavailable`. Deltas are best effort.
Detail events (`ToolOutput`, `TurnUsage`, and the `PlanUpdate` of tools/plan.py, which
`update_plan` hands its face, and the `ToolOutputDelta` of tools/live_output.py, what a running
command prints) are no run events: the turn hands them only to a face that takes them
(runner/turn.py `DetailEmitter`).
"""

from typing import Literal

from magi_code.records import field, record
from magi_code.tools.live_output import ToolOutputDelta
from magi_code.tools.plan import PlanUpdate
from magi_code.tools.progress import ToolProgress


@record
class InputPersisted:
    message_id: str
    revision: str
    durable: bool = True


@record
class MessageDelta:
    message_id: str
    part: int
    text: str


@record
class MessageReconcile:
    message_id: str
    part: int
    text: str
    last_part: bool
    partial: bool


ActivityState = Literal["started", "completed", "failed"]


@record
class Activity:
    activity_id: str
    kind: Literal["tool", "subagent", "compaction"]
    state: ActivityState
    name: str
    summary: str


@record
class ApprovalRequested:
    approval_id: str
    summary: str
    expires_in_ms: int


@record
class Diagnostic:
    code: str
    summary: str
    # For a person's face only (Mission Control, exec's stderr, ACP's message), never a
    # protocol wire (event_data leaves it out): a provider failure as the provider told it,
    # and what to do (providers/base.py `failure_detail`).
    detail: str = field(default="", repr=False)
    # The model's stop that ended the run (runner/turn.py STOPPED), for a face that names
    # stops (ACP): the codes alone cannot tell a refusal from a refused request. Never a wire.
    stop: str | None = field(default=None, repr=False)


Outcome = Literal["completed", "cancelled", "failed"]
Persistence = Literal["durable", "degraded", "not_started"]


@record
class RunFinished:
    outcome: Outcome
    persistence: Persistence
    revision: str | None
    error_code: str | None


RunEvent = (
    InputPersisted
    | MessageDelta
    | MessageReconcile
    | Activity
    | ApprovalRequested
    | Diagnostic
    | RunFinished
)

# ---- details: for a face that shows them (exec --json; Mission Control and ACP take the plan),
# never the local agent's wire ----


@record
class ToolOutput:
    """What a tool call gave the model, redacted and cut at EVENT_OUTPUT_BYTES
    (tools/limits.py); `output_bytes` is its whole size, `truncated` whether it was cut. The
    local agent's activities carry no results, so it never sees this."""

    activity_id: str
    name: str
    ok: bool
    output: str
    output_bytes: int
    truncated: bool


@record
class TurnUsage:
    """The tokens of the turn's model requests together (none when the provider reported
    none; a compaction's request counted too), and how many requests it made for its answer
    (`rounds`, which `[turn] max_rounds` bounds)."""

    rounds: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int


DetailEvent = ToolOutput | TurnUsage | PlanUpdate | ToolProgress | ToolOutputDelta

DETAIL_NAMES: dict[type, str] = {
    ToolOutput: "tool.output",
    TurnUsage: "turn.usage",
    PlanUpdate: "plan.updated",
    ToolProgress: "tool.progress",
    ToolOutputDelta: "tool.output.delta",
}

EVENT_NAMES: dict[type, str] = {
    InputPersisted: "input.persisted",
    MessageDelta: "message.delta",
    MessageReconcile: "message.reconcile",
    Activity: "activity",
    ApprovalRequested: "approval.requested",
    Diagnostic: "diagnostic",
    RunFinished: "run.finished",
}
