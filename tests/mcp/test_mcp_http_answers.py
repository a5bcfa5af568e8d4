"""The bound on a server-sent event counts what httpx2's parser counts (its field lines, line
breaks and whole comment lines left out, an unfinished line in), however the stream is cut:
so http_answers refuses an event exactly when the parser would, and says why first."""

import random

import httpx2
from httpx2._sse import _SSEParser

from magi_code.mcp.http_answers import EventMeter

STREAMS = [
    b"event: message\r\ndata: 0123456789\r\n\r\n",
    b"data: a\ndata: bb\n: a comment line here\ndata: ccc\n\ndata: dddd\n\n",
    b": keep-alive\r: another\r\rdata: xyz\r\n\r\nid: 7\nretry: 10\ndata: {}\n\n",
    b"data: no end " + b"z" * 40,
    b"\r\n\r\n\n\ndata: after blanks\r\rdata: " + b"q" * 30 + b"\r\n",
]


def cuts(stream: bytes, rng: random.Random) -> list[bytes]:
    points = sorted(rng.sample(range(1, len(stream)), rng.randint(0, min(8, len(stream) - 1))))
    return [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]


def parser_refuses(chunks: list[bytes], bound: int) -> bool:
    parser = _SSEParser(bound)
    try:
        for chunk in chunks:
            list(parser.decode(chunk.decode()))
        list(parser.flush())
    except httpx2.SSEError:
        return True
    return False


def test_the_meter_refuses_an_event_exactly_when_httpx2s_parser_does() -> None:
    rng = random.Random(35)
    for stream in STREAMS:
        for _ in range(200):
            chunks = cuts(stream, rng)
            meter = EventMeter()
            largest = max(meter.feed(chunk) for chunk in chunks)
            for bound in range(largest - 2, largest + 3):
                assert parser_refuses(chunks, bound) == (largest > bound), (chunks, bound)
