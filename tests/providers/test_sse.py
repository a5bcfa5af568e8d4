"""The SSE decoder over every partition of its input, its bounds, and openai-python as oracle."""

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from magi_code.providers.limits import SSE_EVENT_BYTES
from magi_code.providers.sse import SSEDecoder, SSEError, SSEEvent
from providers.sse_streams import ALL, BOM_FIRST, CHAT, TAIL


def decode(chunks: list[bytes], max_event_bytes: int | None = None) -> list[SSEEvent]:
    d = SSEDecoder() if max_event_bytes is None else SSEDecoder(max_event_bytes)
    out: list[SSEEvent] = []
    for c in chunks:
        out += d.feed(c)
    return out + d.end()


def openai_decode(chunks: list[bytes]) -> list[SSEEvent]:
    from openai._streaming import SSEDecoder as OpenAIDecoder

    return [
        SSEEvent(e.event, e.data, e.id, e.retry) for e in OpenAIDecoder().iter_bytes(iter(chunks))
    ]


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_two_way_split_gives_the_same_events(name: str) -> None:
    stream = ALL[name]
    whole = decode([stream])
    assert whole, "fixture yields events"
    for i in range(len(stream) + 1):
        assert decode([stream[:i], stream[i:]]) == whole, i


@pytest.mark.parametrize("name", ["anthropic_cr", "multiline"])
def test_every_three_way_split_gives_the_same_events(name: str) -> None:
    stream = ALL[name]
    whole = decode([stream])
    for i in range(len(stream) + 1):
        for j in range(i, len(stream) + 1):
            assert decode([stream[:i], stream[i:j], stream[j:]]) == whole


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(ALL)), st.lists(st.integers(0, 400), max_size=30))
def test_any_partition_gives_the_same_events(name: str, cuts: list[int]) -> None:
    stream = ALL[name]
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert decode(chunks) == decode([stream])


def test_line_ends_and_unicode_survive() -> None:
    events = decode([ALL["responses_crlf"]])
    assert [e.event for e in events] == [
        "response.created",
        "response.output_text.delta",
        "response.completed",
    ]
    assert events[1].data == '{"delta":"€😀"}'
    assert decode([b"data: a\r", b"\ndata: b\r\n\r", b"\n"]) == [SSEEvent(None, "a\nb", None, None)]


def test_tool_arguments_split_inside_a_code_point() -> None:
    stream = CHAT
    cut = stream.index("ü".encode()) + 1
    events = decode([stream[:cut], stream[cut:]])
    assert 'ath\\": \\"ü\\"}' in events[2].data


def test_leading_bom_is_accepted_even_split() -> None:
    want = [SSEEvent(None, "first", None, None), SSEEvent(None, "second", None, None)]
    assert decode([BOM_FIRST]) == want
    assert decode([BOM_FIRST[:1], BOM_FIRST[1:2], BOM_FIRST[2:]]) == want
    # only at the start of the stream: a later BOM is part of a field name
    assert decode([b"data: a\n\n\xef\xbb\xbfdata: b\n\n"]) == [SSEEvent(None, "a", None, None)]


def test_eof_tail_matches_the_provider_client() -> None:
    d = SSEDecoder()
    assert d.feed(TAIL) == [SSEEvent(None, "done", None, None)]
    # a framed end: the last line is whole without its line end (the SDKs' line decoder)
    assert d.end() == [SSEEvent(None, "unterminated", None, None)]
    assert d.end() == [], "delivered once"
    d = SSEDecoder()
    d.feed(TAIL)
    assert d.end(framed=False) == []  # only a closed connection: that last line was cut
    assert openai_decode([TAIL]) == [SSEEvent(None, "done", None, None)]
    assert openai_decode([TAIL, b"\n\n"])[-1] == SSEEvent(None, "unterminated", None, None)


@pytest.mark.parametrize("line_end", [b"\n", b"\r", b"\r\n"])
def test_eof_delivers_a_final_event_whose_lines_all_arrived(line_end: bytes) -> None:
    stream = b"data: a\n\nevent: response.completed\nid: 7\ndata: {}".replace(b"\n", line_end)
    want = [SSEEvent(None, "a", None, None), SSEEvent("response.completed", "{}", "7", None)]
    for i in range(len(stream) + 1):
        d = SSEDecoder()
        got = d.feed(stream[:i]) + d.feed(stream[i:]) + d.feed(line_end)
        assert got[:1] == want[:1]
        assert got + d.end() == want, i
        assert d.end() == [], "delivered once"


def test_eof_tail_delivery_is_bounded_and_checked() -> None:
    limit = 64
    block = b"data: " + b"x" * (limit - 6)
    assert len(block) == limit  # the line end is not part of the event's size
    d = SSEDecoder(limit)
    assert d.feed(block + b"\n") == []
    assert d.end() == [SSEEvent(None, "x" * (limit - 6), None, None)]
    with pytest.raises(SSEError) as err:
        SSEDecoder(limit).feed(block + b"x\n")
    assert err.value.reason == "event_too_large"
    d = SSEDecoder()
    d.feed(b"data: \xe2\x82\n")
    with pytest.raises(SSEError) as err:
        d.end()
    assert err.value.reason == "malformed_utf8"


def test_eof_delivers_no_event_that_was_cut_or_has_no_data() -> None:
    a = SSEEvent(None, "a", "1", None)
    assert decode([b"id: 1\ndata: a\n\n"]) == [a]
    assert decode([b"id: 1\ndata: a\n\n: keep-alive\n"]) == [a]
    assert decode([b"id: 1\ndata: a\n\nevent: message_start\n"]) == [a]  # its data was cut
    cut = SSEDecoder()  # a line cut midway, where only a closed connection ended the body
    assert cut.feed(b'id: 1\ndata: a\n\nevent: x\ndata: {"cut') + cut.end(framed=False) == [a]
    assert decode([b"data\n"]) == [SSEEvent(None, "", None, None)]  # an empty data line is data


def test_malformed_utf8_raises() -> None:
    with pytest.raises(SSEError) as err:
        decode([b"data: ok\n\ndata: \xff\xfe\n\n"])
    assert err.value.reason == "malformed_utf8"
    with pytest.raises(SSEError):  # a truncated sequence at the end of an event
        decode([b"data: \xe2\x82", b"\n\n"])


def test_event_size_bound_at_its_edge() -> None:
    limit = 64
    block = b"data: " + b"x" * (limit - 6)
    assert len(block) == limit
    assert decode([block + b"\n\n"], limit) == [SSEEvent(None, "x" * (limit - 6), None, None)]
    assert decode([block, b"\n", b"\n"], limit)[0].data == "x" * (limit - 6)
    with pytest.raises(SSEError) as err:
        decode([block + b"x\n\n"], limit)
    assert err.value.reason == "event_too_large"
    with pytest.raises(SSEError):  # detected before the event completes
        decode([block, b"x"], limit)


def test_default_event_bound_at_its_edge() -> None:
    block = b"data: " + b"x" * (SSE_EVENT_BYTES - 6)
    assert len(decode([block + b"\n\n"])[0].data) == SSE_EVENT_BYTES - 6
    with pytest.raises(SSEError):
        decode([block + b"y\n\n"])


# ---- differential: openai-python's decoder as the oracle ------------------------------------

_LINE_END = st.sampled_from([b"\n", b"\r", b"\r\n"])
_VALUE = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=8
)
_FIELD = st.sampled_from(["data", "event", "id", "retry", "", "x", "data ", ":"])


@st.composite
def _streams(draw: st.DrawFn) -> list[bytes]:
    parts: list[bytes] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            parts.append(draw(_LINE_END))  # a blank line
        else:
            sep = draw(st.sampled_from([":", ": ", ":  ", ""]))
            line = draw(_FIELD) + sep + draw(_VALUE)
            parts.append(line.encode() + draw(_LINE_END))
    stream = b"".join(parts) + draw(st.sampled_from([b"", b"data: tail"]))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(stream)), max_size=6))))
    return [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]


@settings(max_examples=200, deadline=None)
@given(_streams())
def test_agrees_with_openai_python(chunks: list[bytes]) -> None:
    assume(not b"".join(chunks).startswith(b"\xef\xbb\xbf"))  # openai drops a BOM-led event
    assert decode(chunks) == openai_decode(eof_as_blank_line(chunks))


def eof_as_blank_line(chunks: list[bytes]) -> list[bytes]:
    """What openai-python must see to dispatch as we do at a framed EOF: the last line's
    end if it has none, then a blank line after a pending event that has a data line."""
    stream = b"".join(chunks)
    lines = stream.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if lines and not lines.endswith(b"\n"):  # a framed end: the last line is whole
        chunks, lines = [*chunks, b"\n"], lines + b"\n"
    if not lines.endswith(b"\n"):
        return chunks
    pending = lines.split(b"\n\n")[-1].split(b"\n")
    has_data = any(line.partition(b":")[0] == b"data" for line in pending)
    return [*chunks, b"\r\n"] if has_data else chunks


@pytest.mark.parametrize("name", sorted(set(ALL) - {"bom"}))
def test_agrees_with_openai_python_on_fixtures(name: str) -> None:
    stream = ALL[name]
    for i in range(len(stream) + 1):
        chunks = [stream[:i], stream[i:]]
        assert decode(chunks) == openai_decode(eof_as_blank_line(chunks))


@pytest.mark.parametrize(
    "chunks",
    [
        [b"id: abc\n\n\n\n", b"\n"],
        [b"event: 00\xf0\x90\x80\x80\n\nid: \xc2\x80\xc2\x80\xc2\x80\n\n\n\n", b"\n"],
        [b"id: a\n\n", b"\n", b"\n", b"data: x\n", b"\n"],
    ],
)
def test_blank_lines_alone_in_a_chunk_dispatch(chunks: list[bytes]) -> None:
    assert decode(chunks) == openai_decode(chunks)
