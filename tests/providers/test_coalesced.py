"""What one read of a response completed is handed on with its text in one delta: runs of
text deltas are joined, nothing else moves."""

from magi_code.providers.base import (
    Completed,
    ProviderEvent,
    TextDelta,
    ToolCall,
    ToolCallDone,
    Usage,
    coalesced,
)

CALL = ToolCallDone(ToolCall("c1", "read_file", "{}"))


def test_runs_of_text_are_joined_and_other_events_keep_their_place() -> None:
    events: list[ProviderEvent] = [
        TextDelta("a"),
        TextDelta("b"),
        CALL,
        TextDelta("c"),
        Usage(1, 2),
        TextDelta("d"),
        TextDelta("é🎉"),
        Completed("end_turn"),
    ]
    assert coalesced(events) == [
        TextDelta("ab"),
        CALL,
        TextDelta("c"),
        Usage(1, 2),
        TextDelta("dé🎉"),
        Completed("end_turn"),
    ]


def test_short_or_textless_batches_are_unchanged() -> None:
    assert coalesced([]) == []
    assert coalesced([TextDelta("x")]) == [TextDelta("x")]
    assert coalesced([CALL, Completed("tool_use")]) == [CALL, Completed("tool_use")]
    assert coalesced([TextDelta("x"), TextDelta("y")]) == [TextDelta("xy")]
