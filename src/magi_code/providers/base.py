"""The neutral contract between the runner and every provider wire API.

The runner builds a `ModelRequest` from history and consumes the `ProviderEvent`s a provider
streams. Providers raise `ProviderError` with a closed code; its text never carries a body,
a URL with credentials, or a token.
"""

from collections.abc import AsyncIterator, Sequence
from typing import Literal, Protocol

from magi_code.errors import MagiError
from magi_code.records import field, record

# ---- request -------------------------------------------------------------------------------


@record
class UserText:
    text: str


@record
class AssistantText:
    text: str


@record
class ToolCall:
    call_id: str
    name: str
    arguments: str  # the JSON text the model produced, assembled whole
    # > 0: the arguments were dropped as they streamed, past their bound (then `arguments`
    # is empty); their size in bytes (providers/tool_arguments.py)
    dropped_bytes: int = 0


@record
class ToolResult:
    call_id: str
    output: str
    is_error: bool = False


Item = UserText | AssistantText | ToolCall | ToolResult


@record
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, object]  # JSON schema of the arguments object


@record
class ModelRequest:
    model: str
    instructions: str
    items: Sequence[Item]  # immutable (a tuple, or a runner's shared prefix)
    tools: tuple[ToolSpec, ...] = ()
    thinking: str | None = None
    max_output_tokens: int | None = None
    purpose: Literal["turn", "compaction"] = "turn"  # a compaction asks for a summary


# ---- streamed events -----------------------------------------------------------------------


@record
class TextDelta:
    text: str


@record
class ReasoningSummary:
    """A summary the provider itself marked as a reasoning summary (provenance proven)."""

    item_id: str
    text: str


@record
class ToolCallDone:
    call: ToolCall


@record
class Usage:
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0


@record
class Completed:
    stop_reason: Literal["end_turn", "tool_use", "max_tokens", "other"] = "end_turn"


ProviderEvent = TextDelta | ReasoningSummary | ToolCallDone | Usage | Completed


def coalesced(events: list[ProviderEvent]) -> list[ProviderEvent]:
    """`events` with each run of consecutive text deltas joined into one: what one read of a
    response completed is handed on as one piece of text, so the turn, the redactor and the
    face pay once per read, not once per event. The text and its order are unchanged."""
    if len(events) < 2:
        return events
    out: list[ProviderEvent] = []
    run: list[str] = []
    for event in events:
        if isinstance(event, TextDelta):
            run.append(event.text)
            continue
        if run:
            out.append(TextDelta("".join(run)))
            run = []
        out.append(event)
    if run:
        out.append(TextDelta("".join(run)))
    return out


# ---- errors --------------------------------------------------------------------------------

ProviderErrorCode = Literal[
    "auth_failed",  # 401/403, missing or expired credentials that cannot refresh
    "rate_limited",  # 429 after bounded retries
    "server_error",  # 5xx after bounded retries
    "transport_failed",  # connection failure, inactivity timeout, after bounded retries
    "malformed_stream",  # bad UTF-8, bad JSON, oversize event, protocol violation
    "context_overflow",  # a complete bounded error body says the prompt is too long
    "refused",  # other 4xx
]


@record(frozen=False)
class ProviderError(MagiError):
    code: ProviderErrorCode
    status: int | None = None
    retryable: bool = False
    detail: str = field(default="", repr=False)  # a fixed, safe phrase; never a body
    # A fixed sentence for the user in place of the code's own summary, when the failure is
    # known more closely than its class (never a body, a URL or what the peer sent).
    summary: str = field(default="", repr=False)

    def __str__(self) -> str:
        return self.code if self.status is None else f"{self.code} (HTTP {self.status})"


_FAILURE_SUMMARIES: dict[ProviderErrorCode, str] = {
    "auth_failed": "The provider refused the credentials.",
    "rate_limited": "The provider is rate limiting requests; try again later.",
    "server_error": "The provider failed with a server error.",
    "transport_failed": "The provider could not be reached, or stopped answering.",
    "malformed_stream": "The provider sent a reply that could not be read.",
    "context_overflow": "The conversation is too long for the model's context window.",
    "refused": "The provider refused the request.",
}


def failure_summary(error: ProviderError) -> str:
    """A fixed phrase for a failure a user can act on: its class (or the error's own fixed
    sentence) and HTTP status, never the body, the URL or a credential."""
    summary = error.summary or _FAILURE_SUMMARIES[error.code]
    return summary if error.status is None else f"{summary} (HTTP {error.status})"


class Provider(Protocol):
    """One configured provider. `stream` is an async generator; closing it cancels the request."""

    id: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]: ...
