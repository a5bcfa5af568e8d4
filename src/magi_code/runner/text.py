"""Text the runner hands on: model output made encodable, and UTF-8-safe splitting."""

from magi_code.providers.base import (
    ProviderEvent,
    ReasoningSummary,
    TextDelta,
    ToolCall,
    ToolCallDone,
)
from magi_code.tools.summaries import scrub_surrogates


def encodable(event: ProviderEvent) -> ProviderEvent:
    """`event` with each lone surrogate in its strings replaced by U+FFFD. Model output is
    untrusted: valid JSON can carry `\\ud800`, and every string of a provider event may reach
    an output frame, a session record or the next request, which all need UTF-8."""
    if isinstance(event, TextDelta):
        return TextDelta(scrub_surrogates(event.text))
    if isinstance(event, ReasoningSummary):
        return ReasoningSummary(
            item_id=scrub_surrogates(event.item_id), text=scrub_surrogates(event.text)
        )
    if isinstance(event, ToolCallDone):
        call = event.call
        return ToolCallDone(
            ToolCall(
                scrub_surrogates(call.call_id),
                scrub_surrogates(call.name),
                scrub_surrogates(call.arguments),
                call.dropped_bytes,
            )
        )
    return event


def split_utf8(text: str, max_bytes: int) -> list[str]:
    """Pieces whose UTF-8 encodings are each at most `max_bytes`; never splits a character."""
    data = text.encode("utf-8", "surrogatepass")
    pieces: list[str] = []
    start = 0
    while start < len(data):
        end = min(start + max_bytes, len(data))
        while end < len(data) and (data[end] & 0xC0) == 0x80:  # a continuation byte
            end -= 1
        pieces.append(data[start:end].decode("utf-8", "surrogatepass"))
        start = end
    return pieces
