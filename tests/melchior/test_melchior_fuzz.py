"""A fuzz target for melchior's decoders, and a few seconds of it under hypothesis.

`one_input(data)` takes any bytes through the socket, pipe and argv decoders: none raises,
every refusal carries a closed code, and every accepted message encodes back to UTF-8 (so a
server can always pass it on or answer it). A long-running fuzzer can call it directly."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from melchior import wire


def _judge(item: wire.Item) -> None:
    if isinstance(item, wire.Refusal):
        assert item.code in wire.CODES, item.code
    else:
        wire.encode_json(item)  # raises on anything no UTF-8 can carry


def one_input(data: bytes) -> None:
    socket = wire.SocketDecoder()
    for item in socket.feed(data):
        _judge(item)
    pipe = wire.PipeDecoder()
    for item in [*pipe.feed(data), *pipe.close()]:
        _judge(item)
    _judge(wire.decode_argv(data))


# Pieces of JSON text weighted towards what once slipped through: surrogate escapes.
PIECES = [
    b"\\ud800",
    b"\\uDBFF",
    b"\\udc00",
    b"\\uDFFF",
    b"\\ud83d\\ude00",
    b"\\u0041",
    b"\\\\",
    b'\\"',
    b"a",
    b"\xc3\xa9",
    b" ",
]


WHERE = [b'"args":["%s"]', b'"args":[{"%s":1}]', b'"args":[1,{"k":"%s"}]']


@st.composite
def calls(draw: st.DrawFn) -> bytes:
    text = b"".join(draw(st.lists(st.sampled_from(PIECES), max_size=8)))
    where = draw(st.sampled_from(WHERE))
    return b'{"call":"tell",' + (where % text) + b"}"


@settings(max_examples=300, deadline=None)
@given(calls(), st.binary(max_size=16))
def test_every_decoder_answers_any_input(body: bytes, noise: bytes) -> None:
    one_input(struct.pack(">I", len(body)) + body)
    one_input(body + b"\n" + noise)
    one_input(noise)
