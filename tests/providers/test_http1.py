"""The sans-I/O HTTP/1.1 client framing: the bytes of a request and what it refuses to send;
a response's head, its body by each framing, its end, and whether its connection may carry
another exchange; every framing error; the bounds at their edges, however the bytes are split;
and the same events for a response fed whole, split anywhere, or byte by byte."""

from collections.abc import Callable, Iterable

import pytest

from magi_code.providers.http1 import (
    END,
    NEED_DATA,
    Head,
    ProtocolError,
    ResponseReader,
    request_bytes,
)
from magi_code.providers.limits import CHUNK_LINE_BYTES, RESPONSE_HEAD_BYTES

OK = b"HTTP/1.1 200 OK\r\n"
CHUNKED = OK + b"Transfer-Encoding: chunked\r\n\r\n"

Event = tuple[int, list[tuple[str, str]]] | bytes | str
Feed = Callable[[bytes], list[bytes]]


def read(
    pieces: Iterable[bytes], method: str = "GET", events: list[Event] | None = None
) -> tuple[list[Event], ResponseReader]:
    """The events of a reader fed `pieces` in turn (`b""`: the peer closed): heads as (status,
    headers), body data joined, then "END" (absent if it never came), appended to `events`.
    Pieces after the end are fed but not read."""
    reader = ResponseReader(method)
    events = [] if events is None else events
    for piece in pieces:
        reader.receive(piece)
        while events[-1:] != ["END"] and (event := reader.next_event()) is not NEED_DATA:
            if event is END:
                events.append("END")
            elif isinstance(event, Head):
                events.append((event.status, event.headers))
            else:
                assert isinstance(event, bytes) and event, "body data is never empty"
                if events and isinstance(events[-1], bytes):
                    events[-1] += event
                else:
                    events.append(event)
    return events, reader


def whole(data: bytes, method: str = "GET") -> tuple[list[Event], ResponseReader]:
    return read([data], method)


def in_one_piece(data: bytes) -> list[bytes]:
    return [data]


def byte_by_byte(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


FEEDS = [in_one_piece, byte_by_byte]


def refused(pieces: Iterable[bytes], method: str = "GET") -> str:
    with pytest.raises(ProtocolError) as err:
        read(pieces, method)
    return str(err.value)


# ---- a request's bytes --------------------------------------------------------------------------


def test_a_request_is_its_line_its_headers_a_blank_line_and_its_body() -> None:
    headers = [("host", "h:8080"), ("x-note", "café ☃"), ("content-length", "2")]
    assert request_bytes("POST", "/v1/x?a=b%20c", headers, b"{}") == (
        b"POST /v1/x?a=b%20c HTTP/1.1\r\nhost: h:8080\r\n"
        + "x-note: café ☃\r\n".encode()
        + b"content-length: 2\r\n\r\n{}"
    )
    assert request_bytes("GET", "/", [("host", "h")], b"") == b"GET / HTTP/1.1\r\nhost: h\r\n\r\n"


@pytest.mark.parametrize(
    "value", ["secret\r\nx-injected: 1", "secret\nx", "secret\rx", "secret\0", "\r\n"]
)
def test_a_header_value_with_cr_lf_or_nul_is_refused_unechoed(value: str) -> None:
    with pytest.raises(ProtocolError) as err:
        request_bytes("GET", "/", [("host", "h"), ("authorization", value)], b"")
    assert "secret" not in str(err.value) and "CR, LF or NUL" in str(err.value)


@pytest.mark.parametrize("name", ["", "x name", "x:y", "x\r\ny", "x\ty", "é", "x(y)", "x/y"])
def test_a_header_name_that_is_not_a_token_is_refused(name: str) -> None:
    with pytest.raises(ProtocolError, match="name is not a token"):
        request_bytes("GET", "/", [(name, "v")], b"")


def test_every_token_character_makes_a_header_name() -> None:
    name = "!#$%&'*+-.^_`|~09azAZ"
    assert request_bytes("GET", "/", [(name, "v")], b"").endswith(f"{name}: v\r\n\r\n".encode())


@pytest.mark.parametrize("target", ["", "/a b", "/a\r\nx: y", "/a\nb", "/a\tb", "/\x7f", "/é"])
def test_a_target_with_whitespace_or_controls_is_refused(target: str) -> None:
    with pytest.raises(ProtocolError, match="target"):
        request_bytes("GET", target, [("host", "h")], b"")


@pytest.mark.parametrize("method", ["", "GE T", "GET\r\n", "GET /"])
def test_a_method_that_is_not_a_token_is_refused(method: str) -> None:
    with pytest.raises(ProtocolError, match="method"):
        request_bytes(method, "/", [("host", "h")], b"")


# ---- a response's head -------------------------------------------------------------------------


def test_the_head_gives_the_status_and_headers_lower_cased_trimmed_and_in_order() -> None:
    events, _ = whole(
        b"HTTP/1.1 201 Created\r\nX-A:  one \r\nx-a:\ttwo\t\r\nX-Empty:\r\n"
        b"X-Latin: caf\xe9\r\nContent-Length: 0\r\n\r\n"
    )
    assert events == [
        (
            201,
            [
                ("x-a", "one"),
                ("x-a", "two"),
                ("x-empty", ""),
                ("x-latin", "café"),
                ("content-length", "0"),
            ],
        ),
        "END",
    ]


@pytest.mark.parametrize("line", [b"HTTP/1.1 200", b"HTTP/1.1 200 ", b"HTTP/1.0 599 Odd Reason"])
def test_a_status_line_may_have_no_reason(line: bytes) -> None:
    events, _ = whole(line + b"\r\nContent-Length: 0\r\n\r\n")
    assert events[0] == (int(line[9:12]), [("content-length", "0")])


def test_bare_lf_line_ends_are_accepted() -> None:
    events, reader = whole(b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok")
    assert events == [(200, [("content-length", "2")]), b"ok", "END"]
    assert reader.reusable


@pytest.mark.parametrize(
    "response",
    [
        b"HTTP/1.1 200 OK\nContent-Length: 3\n\n\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n\n\n\n",
    ],
)
def test_the_head_ends_at_its_first_blank_line_whatever_the_body_holds(response: bytes) -> None:
    events, _ = whole(response)
    assert events == [(200, [("content-length", "3")]), response[-3:], "END"]


def test_1xx_responses_are_skipped_for_the_real_one() -> None:
    events, reader = whole(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    )
    assert events == [(200, [("content-length", "2")]), b"ok", "END"]
    assert reader.reusable


# ---- body framings -----------------------------------------------------------------------------


def test_content_length_gives_exactly_that_many_bytes_as_they_come() -> None:
    reader = ResponseReader("GET")
    reader.receive(OK + b"Content-Length: 10\r\n\r\nabc")
    assert isinstance(reader.next_event(), Head)
    assert reader.next_event() == b"abc"
    assert reader.next_event() is NEED_DATA
    assert not reader.reusable
    reader.receive(b"defghij")
    assert reader.next_event() == b"defghij"
    assert reader.next_event() is END
    assert reader.next_event() is END, "asked again, the end is said again"
    assert reader.reusable


@pytest.mark.parametrize(
    "lengths", [b"Content-Length: 2, 2", b"Content-Length: 2\r\nContent-Length: 02"]
)
def test_repeated_content_lengths_of_one_value_frame_the_body(lengths: bytes) -> None:
    events, reader = whole(OK + lengths + b"\r\n\r\nokEXTRA")
    assert events[1:] == [b"ok", "END"]
    assert not reader.reusable, "bytes beyond the response arrived"


def test_content_length_zero_has_no_body() -> None:
    events, reader = whole(OK + b"Content-Length: 0\r\n\r\n")
    assert events == [(200, [("content-length", "0")]), "END"]
    assert reader.reusable


def test_chunked_gives_the_chunks_data_without_extensions_or_trailers() -> None:
    events, reader = whole(
        CHUNKED + b'5;name=value\r\nhello\r\n6 ; a ; b="c"\r\n world\r\nA\r\n0123456789\r\n'
        b"0;last\r\nX-Trailer: t\r\nX-Other: o\r\n\r\n"
    )
    assert events == [(200, [("transfer-encoding", "chunked")]), b"hello world0123456789", "END"]
    assert reader.reusable


def test_chunked_with_bare_lf_line_ends_and_no_trailers() -> None:
    events, reader = whole(b"HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nok\n0\n\n")
    assert events[1:] == [b"ok", "END"]
    assert reader.reusable


def test_chunked_gives_what_is_complete_as_soon_as_it_comes() -> None:
    reader = ResponseReader("GET")
    reader.receive(CHUNKED + b"2\r\nab\r\n3\r\ncd")
    assert isinstance(reader.next_event(), Head)
    assert reader.next_event() == b"abcd", "the data of every chunk received so far, at once"
    assert reader.next_event() is NEED_DATA
    reader.receive(b"e\r")
    assert reader.next_event() == b"e"
    assert reader.next_event() is NEED_DATA
    reader.receive(b"\n0\r\n\r")
    assert reader.next_event() is NEED_DATA
    reader.receive(b"\n")
    assert reader.next_event() is END
    assert reader.reusable


@pytest.mark.parametrize(
    "coding", [b"chunked", b"Chunked", b"gzip, chunked", b"gzip\r\nTransfer-Encoding: chunked"]
)
def test_transfer_encoding_ending_in_chunked_is_chunked(coding: bytes) -> None:
    events, reader = whole(OK + b"Transfer-Encoding: " + coding + b"\r\n\r\n2\r\nok\r\n0\r\n\r\n")
    assert events[1:] == [b"ok", "END"]
    assert reader.reusable


def test_transfer_encoding_wins_over_content_length_and_the_connection_is_not_kept() -> None:
    events, reader = whole(
        OK + b"Content-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
    )
    assert events[1:] == [b"ok", "END"]
    assert not reader.reusable


@pytest.mark.parametrize("coding", [b"gzip", b"chunked, gzip", b""])
def test_another_transfer_coding_is_read_until_close(coding: bytes) -> None:
    events, reader = read(
        [OK + b"Transfer-Encoding: " + coding + b"\r\nContent-Length: 2\r\n\r\n2\r\nok", b""]
    )
    assert events[1:] == [b"2\r\nok", "END"]
    assert not reader.reusable


def test_without_framing_the_body_is_read_until_close() -> None:
    reader = ResponseReader("GET")
    reader.receive(OK + b"\r\nab")
    assert isinstance(reader.next_event(), Head)
    assert reader.next_event() == b"ab"
    assert reader.next_event() is NEED_DATA
    reader.receive(b"cd")
    assert reader.next_event() == b"cd"
    reader.receive(b"")
    assert reader.next_event() is END
    assert not reader.reusable


@pytest.mark.parametrize(
    ("method", "status"), [("HEAD", b"200 OK"), ("GET", b"204 No Content"), ("GET", b"304 X")]
)
def test_head_204_and_304_have_no_body_whatever_the_headers_say(method: str, status: bytes) -> None:
    response = b"HTTP/1.1 " + status + b"\r\nContent-Length: 10\r\n\r\n"
    events, reader = whole(response, method)
    assert events == [(int(status[:3]), [("content-length", "10")]), "END"]
    assert reader.reusable
    _, reader = whole(response + b"0123456789", method)
    assert not reader.reusable, "what follows is not this response's"


# ---- whether the connection may carry another exchange -----------------------------------------


@pytest.mark.parametrize(
    ("head", "reusable"),
    [
        (OK + b"Content-Length: 2\r\n", True),
        (OK + b"Connection: keep-alive\r\nContent-Length: 2\r\n", True),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n", False),
        (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n", False),
        (OK + b"Connection: close\r\nContent-Length: 2\r\n", False),
        (OK + b"Connection: keep-alive, Close\r\nContent-Length: 2\r\n", False),
        (OK + b"Connection: x\r\nConnection: CLOSE \r\nContent-Length: 2\r\n", False),
        (OK + b"Connection: closed\r\nContent-Length: 2\r\n", True),
    ],
)
def test_only_an_http11_response_not_announcing_close_keeps_its_connection(
    head: bytes, reusable: bool
) -> None:
    events, reader = whole(head + b"\r\nok")
    assert events[1:] == [b"ok", "END"]
    assert reader.reusable is reusable


def test_a_connection_the_peer_closed_after_the_response_is_not_kept() -> None:
    _, reader = read([OK + b"Content-Length: 2\r\n\r\nok"])
    assert reader.reusable
    reader.receive(b"")
    assert not reader.reusable


def test_extra_bytes_after_a_chunked_body_are_not_taken_and_the_connection_is_not_kept() -> None:
    events, reader = whole(CHUNKED + b"2\r\nok\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n")
    assert events[1:] == [b"ok", "END"]
    assert not reader.reusable


# ---- framing errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        b"HTTP/2 200 OK",
        b"HTTP/1.2 200 OK",
        b"http/1.1 200 OK",
        b"ICY 200 OK",
        b"HTTP/1.1 20 OK",
        b"HTTP/1.1 2000 OK",
        b"HTTP/1.1 200OK",
        b"HTTP/1.1  200 OK",
        b"HTTP/1.1 2x0 OK",
        b"HTTP/1.1 +20 OK",
        b"HTTP/1.1 099 Low",
        b"HTTP/1.1\t200 OK",
        b"",
    ],
)
def test_a_status_line_that_is_not_http11s_is_refused(line: bytes) -> None:
    refused([line + b"\r\nContent-Length: 0\r\n\r\n"])


def test_101_switching_protocols_is_refused() -> None:
    message = refused([b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n"])
    assert "switched protocols" in message


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"X-A: a\r\n b", "folded"),
        (b"X-A: a\r\n\tb", "folded"),
        (b" X-A: a", "folded"),
        (b"X-A : a", "whitespace before"),
        (b"X-A\t: a", "whitespace before"),
        (b"X-A a", "no colon"),
        (b": a", "not a token"),
        (b"X(A): a", "not a token"),
        (b"X-\xe9: a", "not a token"),
        (b"X-A: a\0b", "NUL"),
        (b"X-A: a\rb", "bare CR"),
        (b"X-A: a\r\r", "bare CR"),
    ],
)
def test_a_malformed_header_line_is_refused_unechoed(line: bytes, problem: str) -> None:
    message = refused([OK + line + b"\r\nContent-Length: 0\r\n\r\n"])
    assert problem in message and "X-A" not in message


@pytest.mark.parametrize(
    "lengths",
    [
        b"1, 2",
        b"2\r\nContent-Length: 3",
        b"-1",
        b"+1",
        b"1.0",
        b"0x10",
        b"",
        b"2,",
        b"\xb2",  # a superscript two: a digit to str.isdigit, not a decimal one
        b"1" * 19,
    ],
)
def test_a_content_length_that_is_not_one_decimal_number_is_refused(lengths: bytes) -> None:
    message = refused([OK + b"Content-Length: " + lengths + b"\r\n\r\n"])
    assert "Content-Length" in message


def test_the_largest_content_length_is_eighteen_digits() -> None:
    events, reader = whole(OK + b"Content-Length: " + b"9" * 18 + b"\r\n\r\nabc")
    assert events[1:] == [b"abc"]
    assert not reader.reusable


@pytest.mark.parametrize(
    "pieces",
    [
        [b""],
        [b"HTTP/1.1 200 OK\r\n", b""],
        [b"HTTP/1.1 100 Continue\r\n\r\n", b""],
    ],
)
def test_a_close_during_the_head_is_refused(pieces: list[bytes]) -> None:
    assert "before the response head" in refused(pieces)


@pytest.mark.parametrize(
    "response",
    [
        OK + b"Content-Length: 5\r\n\r\nab",
        CHUNKED,
        CHUNKED + b"5",
        CHUNKED + b"5\r\nab",
        CHUNKED + b"2\r\nab",
        CHUNKED + b"2\r\nab\r",
        CHUNKED + b"2\r\nab\r\n0\r\n",
        CHUNKED + b"2\r\nab\r\n0\r\nX-T: t\r\n",
    ],
)
def test_a_close_before_a_framed_bodys_end_is_refused_after_the_data_that_came(
    response: bytes,
) -> None:
    reader = ResponseReader("GET")
    reader.receive(response)
    reader.receive(b"")
    assert isinstance(reader.next_event(), Head)
    body = response.partition(b"\r\n\r\n")[2]
    if b"ab" in body:
        assert reader.next_event() == b"ab"
    with pytest.raises(ProtocolError, match="before the body's end"):
        reader.next_event()


@pytest.mark.parametrize(
    "body",
    [
        b"zz\r\n",
        b"\r\n",
        b" 5\r\nhello\r\n",
        b"-5\r\n",
        b"0x5\r\nhello\r\n",
        b";ext\r\n",
        b"5\rx\r\nhello\r\n",
    ],
)
def test_a_chunk_size_that_is_not_hexadecimal_is_refused(body: bytes) -> None:
    refused([CHUNKED + body + b"0\r\n\r\n"])


@pytest.mark.parametrize("after", [b"X\r\n0\r\n\r\n", b"\rX0\r\n\r\n", b"\r\r\n0\r\n\r\n"])
def test_chunk_data_not_followed_by_its_line_end_is_refused(after: bytes) -> None:
    assert "line end" in refused([CHUNKED + b"2\r\nok" + after])


@pytest.mark.parametrize("trailer", [b"X-T: t\r\n folded", b"no colon", b"X-T : t"])
def test_a_malformed_trailer_is_refused(trailer: bytes) -> None:
    refused([CHUNKED + b"2\r\nok\r\n0\r\n" + trailer + b"\r\n\r\n"])


# ---- bounds, at their edges --------------------------------------------------------------------


def sized(prefix: bytes, size: int, suffix: bytes) -> bytes:
    """`prefix`, an `x-filler` header line, and `suffix`: `size` bytes in all."""
    filler = b"x-filler: " + b"f" * (size - len(prefix) - len(suffix) - 12) + b"\r\n"
    data = prefix + filler + suffix
    assert len(data) == size
    return data


HEAD_AT_BOUND = sized(OK, RESPONSE_HEAD_BYTES, b"content-length: 2\r\n\r\n")
HEAD_PAST_BOUND = sized(OK, RESPONSE_HEAD_BYTES + 1, b"content-length: 2\r\n\r\n")


@pytest.mark.parametrize("feed", FEEDS)
def test_a_head_of_response_head_bytes_is_accepted_and_one_more_refused(feed: Feed) -> None:
    events, reader = read(feed(HEAD_AT_BOUND + b"ok"))
    assert events[1:] == [b"ok", "END"] and reader.reusable
    with pytest.raises(ProtocolError, match="too long"):
        read(feed(HEAD_PAST_BOUND + b"ok"))


def test_an_incomplete_head_is_refused_as_soon_as_it_outgrows_the_bound() -> None:
    reader = ResponseReader("GET")
    reader.receive(HEAD_PAST_BOUND[:RESPONSE_HEAD_BYTES])
    assert reader.next_event() is NEED_DATA, "the head may yet end within the bound"
    reader.receive(b"f")  # not its end: the head is over the bound whatever follows
    with pytest.raises(ProtocolError, match="too long"):
        reader.next_event()


def test_each_1xx_head_is_bounded_alike() -> None:
    interim = sized(b"HTTP/1.1 103 Early Hints\r\n", RESPONSE_HEAD_BYTES, b"\r\n")
    events, _ = whole(interim + HEAD_AT_BOUND + b"ok")
    assert events[1:] == [b"ok", "END"]
    too_long = sized(b"HTTP/1.1 103 Early Hints\r\n", RESPONSE_HEAD_BYTES + 1, b"\r\n")
    with pytest.raises(ProtocolError, match="too long"):
        whole(too_long + HEAD_AT_BOUND + b"ok")


def chunk_line(size: int) -> bytes:
    """A chunk-size line for two bytes of data, `size` bytes long with its CRLF."""
    return b"2;" + b"e" * (size - 4) + b"\r\n"


@pytest.mark.parametrize("feed", FEEDS)
def test_a_chunk_size_line_of_chunk_line_bytes_is_accepted_and_one_more_refused(
    feed: Feed,
) -> None:
    events, _ = read(feed(CHUNKED + chunk_line(CHUNK_LINE_BYTES) + b"ok\r\n0\r\n\r\n"))
    assert events[1:] == [b"ok", "END"]
    with pytest.raises(ProtocolError, match="chunk-size line is too long"):
        read(feed(CHUNKED + chunk_line(CHUNK_LINE_BYTES + 1) + b"ok\r\n0\r\n\r\n"))


def test_an_incomplete_chunk_size_line_is_refused_as_soon_as_it_outgrows_the_bound() -> None:
    reader = ResponseReader("GET")
    reader.receive(CHUNKED + chunk_line(CHUNK_LINE_BYTES + 1)[:CHUNK_LINE_BYTES])
    assert isinstance(reader.next_event(), Head)
    assert reader.next_event() is NEED_DATA
    reader.receive(b"e")
    with pytest.raises(ProtocolError, match="chunk-size line is too long"):
        reader.next_event()


@pytest.mark.parametrize("feed", FEEDS)
def test_trailers_of_response_head_bytes_are_accepted_and_one_more_refused(feed: Feed) -> None:
    start = CHUNKED + b"2\r\nok\r\n0\r\n"
    events, reader = read(feed(start + sized(b"", RESPONSE_HEAD_BYTES, b"\r\n")))
    assert events[1:] == [b"ok", "END"] and reader.reusable
    with pytest.raises(ProtocolError, match="too long"):
        read(feed(start + sized(b"", RESPONSE_HEAD_BYTES + 1, b"\r\n")))


# ---- however the bytes are split ---------------------------------------------------------------

RESPONSES = {
    "content-length": ([OK + b"X-A: a\r\nContent-Length: 11\r\n\r\nhello world"], "GET"),
    "chunked": (
        [CHUNKED + b"5;x=y\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-T: t\r\n\r\n"],
        "GET",
    ),
    "1xx, then chunked with bare LFs": (
        [b"HTTP/1.1 100 Continue\n\nHTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n"],
        "GET",
    ),
    "until close": ([b"HTTP/1.0 200 OK\r\nX-A: a\r\n\r\nhello", b""], "GET"),
    "blank lines in the body": ([OK + b"Content-Length: 4\r\n\n\n\r\n\n"], "GET"),
    "HEAD": ([OK + b"Content-Length: 11\r\n\r\n"], "HEAD"),
    "extra bytes": ([OK + b"Content-Length: 2\r\n\r\nokHTTP/1.1"], "GET"),
}


@pytest.mark.parametrize("name", sorted(RESPONSES))
def test_a_response_split_anywhere_gives_the_same_events(name: str) -> None:
    pieces, method = RESPONSES[name]
    data, closed = pieces[0], pieces[1:]
    expected, reader = read(pieces, method)
    assert expected[-1] == "END" and len(expected) >= 2
    reusable = reader.reusable
    for at in range(1, len(data)):
        events, reader = read([data[:at], data[at:], *closed], method)
        assert (events, reader.reusable) == (expected, reusable), at
    events, reader = read([*byte_by_byte(data), *closed], method)
    assert (events, reader.reusable) == (expected, reusable)


CORRUPT = {
    "a bad chunk size after chunks": [CHUNKED + b"2\r\nok\r\n1\r\n!\r\nzz\r\n"],
    "no line end after a chunk's data": [CHUNKED + b"2\r\nok\r\n3\r\nabcX\r\n0\r\n\r\n"],
    "a malformed trailer": [CHUNKED + b"2\r\nok\r\n0\r\nno colon\r\n\r\n"],
    "a close within a chunk": [CHUNKED + b"5\r\nok", b""],
    "a close within a length": [OK + b"Content-Length: 5\r\n\r\nok", b""],
}


def refusal(pieces: list[bytes]) -> tuple[list[Event], str]:
    """The events a reader gives for `pieces` before it refuses them, and its refusal."""
    events: list[Event] = []
    with pytest.raises(ProtocolError) as err:
        read(pieces, events=events)
    return events, str(err.value)


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_the_data_before_a_framing_error_is_handed_on_however_it_is_split(name: str) -> None:
    pieces = CORRUPT[name]
    data, closed = pieces[0], pieces[1:]
    expected = refusal(pieces)
    assert expected[0][1:2] in ([b"ok"], [b"ok!"], [b"okabc"]), expected
    for at in range(1, len(data)):
        assert refusal([data[:at], data[at:], *closed]) == expected, at
    assert refusal([*byte_by_byte(data), *closed]) == expected
