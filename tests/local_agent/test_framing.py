"""The frame decoder yields the same frames for every split of the same input bytes."""

from hypothesis import given
from hypothesis import strategies as st

from magi_code.local_agent.framing import (
    Frame,
    FrameDecoder,
    FrameEvent,
    FrameTooLarge,
    IncompleteFrame,
)


def decode(chunks: list[bytes], limit: int) -> list[FrameEvent]:
    decoder = FrameDecoder(limit)
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.end()


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=12), st.integers(1, 40))
def test_every_split_gives_the_same_events(data: bytes, cuts: list[int], limit: int) -> None:
    assert decode(split(data, cuts), limit) == decode([data], limit)


@given(st.lists(st.binary(max_size=20).filter(lambda b: b"\n" not in b), max_size=8))
def test_frames_round_trip(lines: list[bytes]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    assert decode([bytes([b]) for b in data], 20) == [Frame(line) for line in lines]


def test_limit_edge_counts_cr_and_not_lf() -> None:
    assert decode([b"a" * 9 + b"\r\n"], 10) == [Frame(b"a" * 9 + b"\r")]
    assert decode([b"a" * 10 + b"\r\n"], 10) == [FrameTooLarge()]
    assert decode([b"a" * 10], 10) == [IncompleteFrame()]
    assert decode([b"a" * 11], 10) == [FrameTooLarge()]


def test_nothing_after_too_large() -> None:
    decoder = FrameDecoder(4)
    assert decoder.feed(b"abcde\nok\n") == [FrameTooLarge()]
    assert decoder.feed(b"ok\n") == []
    assert decoder.end() == []
