"""Typed run events: what the runner tells a face. Faces render them in their own way.

Critical events (everything but `MessageDelta`) must reach the face; a face that cannot
take one within its bound cancels the run with `output_unavailable`. Deltas are best effort.
Detail events (`ToolOutput`, `TurnUsage`) are no run events: the turn hands them only to a
face that takes them (runner/turn.py `DetailEmitter`).
"""

from typing import Literal

from magi_code.records import field, record


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

# ---- details: for a face that shows them (`exec --json`), never the local agent's wire ----


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
    none), and how many requests it made (`rounds`)."""

    rounds: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int


DetailEvent = ToolOutput | TurnUsage

DETAIL_NAMES: dict[type, str] = {ToolOutput: "tool.output", TurnUsage: "turn.usage"}

EVENT_NAMES: dict[type, str] = {
    InputPersisted: "input.persisted",
    MessageDelta: "message.delta",
    MessageReconcile: "message.reconcile",
    Activity: "activity",
    ApprovalRequested: "approval.requested",
    Diagnostic: "diagnostic",
    RunFinished: "run.finished",
}
