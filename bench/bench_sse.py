"""SSE decoder throughput on a 10+ MB recorded-shape stream in random chunk sizes, as a ratio
against openai-python's SSEDecoder measured in the same run."""

import json
import random
import time
from collections.abc import Callable

STREAM_BYTES = 12 * 1024 * 1024
SEED = 20261129
ROUNDS = 3


def _stream(rng: random.Random) -> bytes:
    words = ["the", "parser", "naïve", "über", "日本語", "🎉", "x = 1;", "def f():", "\\n"]
    parts: list[bytes] = []
    size = 0
    while size < STREAM_BYTES:
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.5:
            body = {"type": "response.output_text.delta", "item_id": "msg_1", "delta": text}
            part = b"event: response.output_text.delta\ndata: " + json.dumps(body).encode()
        else:
            body = {"id": "c1", "choices": [{"index": 0, "delta": {"content": text}}]}
            part = b"data: " + json.dumps(body, ensure_ascii=False).encode()
        part += b"\n\n"
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def _chunks(stream: bytes, rng: random.Random) -> list[bytes]:
    out: list[bytes] = []
    i = 0
    while i < len(stream):
        n = rng.randint(1, 8192)
        out.append(stream[i : i + n])
        i += n
    return out


def _ours(chunks: list[bytes]) -> int:
    from magi_code.providers.sse import SSEDecoder

    d = SSEDecoder()
    n = 0
    for c in chunks:
        n += len(d.feed(c))
    return n + len(d.end())


def _openai(chunks: list[bytes]) -> int:
    from openai._streaming import SSEDecoder

    return sum(1 for _ in SSEDecoder().iter_bytes(iter(chunks)))


def _best(fn: Callable[[list[bytes]], int], chunks: list[bytes]) -> tuple[float, int]:
    best, events = float("inf"), 0
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        events = fn(chunks)
        best = min(best, time.perf_counter() - t0)
    return best, events


def main() -> None:
    rng = random.Random(SEED)
    stream = _stream(rng)
    chunks = _chunks(stream, rng)
    mb = len(stream) / 1e6
    ours_s, ours_n = _best(_ours, chunks)
    base_s, base_n = _best(_openai, chunks)
    assert ours_n == base_n, (ours_n, base_n)
    print(f"stream: {mb:.1f} MB, {len(chunks)} chunks (1..8192 B, seed {SEED}), {ours_n} events")
    print(f"magi_code sse: {mb / ours_s:8.1f} MB/s ({ours_s * 1000:.0f} ms, best of {ROUNDS})")
    print(f"openai-python: {mb / base_s:8.1f} MB/s ({base_s * 1000:.0f} ms, best of {ROUNDS})")
    print(f"ratio: {base_s / ours_s:.2f}x (target >= 3x)")


if __name__ == "__main__":
    main()
