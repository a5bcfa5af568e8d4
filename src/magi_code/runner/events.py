"""Typed run events: what the runner tells a face. Faces render them in their own way.

Critical events (everything but `MessageDelta`) must reach the face; a face that cannot
take one within its bound cancels the run with `output_unavailable`. Deltas are best effort.
"""

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class InputPersisted:
    message_id: str
    revision: str
    durable: bool = True


@dataclass(frozen=True)
class MessageDelta:
    message_id: str
    part: int
    text: str


@dataclass(frozen=True)
class MessageReconcile:
    message_id: str
    part: int
    text: str
    last_part: bool
    partial: bool


ActivityState = Literal["started", "completed", "failed"]


@dataclass(frozen=True)
class Activity:
    activity_id: str
    kind: Literal["tool", "subagent", "compaction"]
    state: ActivityState
    name: str
    summary: str


@dataclass(frozen=True)
class ApprovalRequested:
    approval_id: str
    summary: str
    expires_in_ms: int


@dataclass(frozen=True)
class Diagnostic:
    code: str
    summary: str


Outcome = Literal["completed", "cancelled", "failed"]
Persistence = Literal["durable", "degraded", "not_started"]


@dataclass(frozen=True)
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

EVENT_NAMES: dict[type, str] = {
    InputPersisted: "input.persisted",
    MessageDelta: "message.delta",
    MessageReconcile: "message.reconcile",
    Activity: "activity",
    ApprovalRequested: "approval.requested",
    Diagnostic: "diagnostic",
    RunFinished: "run.finished",
}
