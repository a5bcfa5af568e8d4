"""The neutral contract between the runner and every provider wire API.

The runner builds a `ModelRequest` from history and consumes the `ProviderEvent`s a provider
streams. Providers raise `ProviderError` with a closed code; its text and summary never carry
a body, a URL with credentials, or a token. What the provider itself said (`said`: the message
of its error body, bounded and redacted) and what to do (`advice`) go to a person's face only,
through `failure_detail`, never onto a protocol wire (providers/error_body.py and
providers/failures.py make them).
"""

from collections.abc import AsyncIterator, Sequence
from typing import Literal, Protocol

from magi_code.errors import MagiError
from magi_code.records import field, record

# ---- request -------------------------------------------------------------------------------


@record
class ImagePart:
    """An image for the model: its bytes in base64 (as every wire sends them and the session
    stores them), its media type (image/png, image/jpeg, image/gif or image/webp), and the
    short description (type, dimensions, size) a model that takes no images is sent instead.
    Made only by tools/images.py, within its bounds."""

    media_type: str
    data: str = field(repr=False)
    description: str


@record
class UserText:
    text: str
    images: tuple[ImagePart, ...] = ()  # what the user attached to the prompt


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
    images: tuple[ImagePart, ...] = ()  # a result may carry images beside its text


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
    # The model takes images (providers/images.py `takes_images`); else each image goes as
    # its description (`described`).
    images: bool = False
    web_search: bool = False  # offer the provider's own web search tool, where it has one


def described(image: ImagePart) -> str:
    """What a model that takes no images is told of one."""
    return f"[image not shown: this model does not take images; {image.description}]"


def data_url(image: ImagePart) -> str:
    """The image as a data URL (OpenAI's wires)."""
    return f"data:{image.media_type};base64,{image.data}"


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


# Why the model's answer ended, as every wire says it: it is done, or it waits for its tool
# calls; it reached its output limit (`max_tokens`, a tool call it was making then is cut);
# the model refused (`refused`); the provider's content filter stopped it
# (`content_filtered`); the provider ended it incomplete for a reason it did not name
# (`incomplete`); or a reason no wire maps (`other`, read as done).
StopReason = Literal[
    "end_turn", "tool_use", "max_tokens", "refused", "content_filtered", "incomplete", "other"
]


@record
class Completed:
    stop_reason: StopReason = "end_turn"


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
    # For a person's face only (failure_detail), never a wire: the message of the error body
    # (error_body.provider_message: bounded, redacted, no control characters), what to do about
    # it for this provider (failures.Advice), and the wait a failed answer asked for.
    said: str = field(default="", repr=False)
    advice: str = field(default="", repr=False)
    retry_after_s: float | None = None

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


def failure_detail(error: ProviderError) -> str:
    """The failure for a person's face (Mission Control, exec's stderr, ACP's message; never
    a protocol wire): its summary, what the provider said, and what to do; "" when there is
    nothing to add to the summary."""
    if not error.said and not error.advice:
        return ""
    said = f' The provider said: "{error.said}".' if error.said else ""
    advice = f" {error.advice}" if error.advice else ""
    return f"{failure_summary(error)}{said}{advice}"


class Provider(Protocol):
    """One configured provider. `stream` is an async generator; closing it cancels the request."""

    id: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]: ...
