"""A seeded, time-boxed mutation loop over a target's seeds: no coverage guidance, nothing to
install, the same inputs in the same order on every machine (only how many depends on speed).
"""

import random
import time
from collections.abc import Callable

# Bytes that matter to the decoders: structure, escapes, line ends, broken UTF-8.
TOKENS = [
    b"[",
    b"]",
    b"{",
    b"}",
    b'"',
    b"\\",
    b'\\"',
    b"\\ud800",
    b"\n",
    b"\r",
    b"\r\n",
    b":",
    b",",
    b"\xff",
    b"\xc3",
    b"\xef\xbb\xbf",
    b"\x00",
    b"0",
    b"-1",
    b"1e999",
    b"null",
    b"true",
    b"[" * 40,
    b"{" * 40,
    b"\\u0000",
    b"type",
    b"data: ",
    b"\n\n",
]


def mutate(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(out))
        choice = rng.randrange(6)
        if choice == 0 and out:
            out[rng.randrange(len(out))] = rng.randrange(256)
        elif choice == 1:
            out[at:at] = rng.choice(TOKENS)
        elif choice == 2 and out:
            del out[at : at + rng.randint(1, 8)]
        elif choice == 3 and out:
            start = rng.randrange(len(out))
            out[at:at] = out[start : start + rng.randint(1, 32)]
        elif choice == 4:
            other = rng.choice(seeds)
            out[at:] = other[rng.randint(0, len(other)) :]
        else:
            out[:at] = bytes([rng.randrange(256)]) + bytes(out[1:at])
    return bytes(out)


def run_for(
    target: Callable[[bytes], None], seeds: list[bytes], seconds: float, seed: int = 0
) -> int:
    """Run `target` on seeds and their mutations for `seconds`; returns how many inputs ran.
    A finding propagates with the input attached as a note."""
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    count = 0
    current = list(seeds)
    while True:
        data = (
            current[count % len(current)]
            if count < len(seeds)
            else mutate(rng, rng.choice(current), seeds)
        )
        try:
            target(data)
        except BaseException as finding:
            finding.add_note(f"fuzz input: {data!r}")
            finding.fuzz_input = data  # type: ignore[attr-defined]
            raise
        count += 1
        if len(current) < 256 and rng.random() < 0.05:
            current.append(data)  # keep some mutants to mutate further
        if time.monotonic() >= deadline:
            return count
