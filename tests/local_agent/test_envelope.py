"""Envelope validation as a pure function of one frame's bytes."""

import json
import time

from hypothesis import given
from hypothesis import strategies as st

from magi_code.limits import FRAME_BYTES, ID_BYTES, JSON_DEPTH
from magi_code.local_agent.envelope import (
    Rejection,
    Request,
    nesting_exceeds,
    parse_request,
    valid_name,
)


def test_valid_request() -> None:
    data = (
        b'{"protocol":"magi-code.local-agent","version":1,"id":"r1","method":"status","params":{}}'
    )
    assert parse_request(data) == Request("r1", "status", {})


def test_name_grammar_edges() -> None:
    assert valid_name("a" * ID_BYTES)
    assert not valid_name("a" * (ID_BYTES + 1))
    assert not valid_name("")
    assert not valid_name("é")
    assert not valid_name("a b")
    assert valid_name("A-z_0.9")


def test_nesting_ignores_brackets_in_strings() -> None:
    assert not nesting_exceeds(json.dumps({"a": "[" * 100}).encode())
    assert nesting_exceeds(b"[" * (JSON_DEPTH + 1) + b"]" * (JSON_DEPTH + 1))
    assert not nesting_exceeds(b"[" * JSON_DEPTH + b"]" * JSON_DEPTH)
    assert not nesting_exceeds(json.dumps(["\\", '\\"[[[']).encode())
    assert not nesting_exceeds(b'"[[[' + b"[" * JSON_DEPTH)  # an unterminated string
    assert nesting_exceeds(b'["\\\\",' + b"[" * JSON_DEPTH)  # an escaped backslash ends
    assert not nesting_exceeds(b'["\\\\\\"' + b"[" * JSON_DEPTH)  # ... an escaped quote not


def filled(unit: bytes, head: bytes = b"") -> bytes:
    """`head`, then `unit` repeated up to a frame of exactly FRAME_BYTES."""
    body = head + unit * ((FRAME_BYTES - len(head)) // len(unit))
    return body + b"x" * (FRAME_BYTES - len(body))


ENVELOPE_HEAD = (
    b'{"protocol":"magi-code.local-agent","version":1,"id":"a","method":"m","params":{"p":'
)
WORST_FRAMES = [  # escaped quotes in an open string once made the pre-check quadratic
    filled(b'\\"', b'"'),
    filled(b'\\"', ENVELOPE_HEAD + b'"'),
    filled(b'"\\'),
    filled(b'["'),
    filled(b'"",'),
    filled(b"[]"),
]


def best_time(data: bytes) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        parse_request(data)
        best = min(best, time.perf_counter() - started)
    return best


def test_every_check_is_linear_in_the_frame() -> None:
    plain = ENVELOPE_HEAD + b'"' + b"a" * (FRAME_BYTES - len(ENVELOPE_HEAD) - 4) + b'"}}'
    assert len(plain) == FRAME_BYTES and isinstance(parse_request(plain), Request)
    budget = 10 * best_time(plain) + 0.05
    for worst in WORST_FRAMES:
        assert len(worst) == FRAME_BYTES
        assert best_time(worst) <= budget, worst[:16]


@given(st.binary(max_size=200))
def test_never_raises_and_never_echoes(data: bytes) -> None:
    result = parse_request(data)
    if isinstance(result, Rejection):
        assert result.id is None or valid_name(result.id)


def test_retained_only_when_well_formed() -> None:
    bad_params = (
        b'{"protocol":"magi-code.local-agent","version":1,"id":"a","method":"m","params":1}'
    )
    assert parse_request(bad_params) == Rejection("invalid_params", "a", retained=True)
    extra = (
        b'{"protocol":"magi-code.local-agent","version":1,"id":"a","method":"m","params":{},"z":0}'
    )
    assert parse_request(extra) == Rejection("invalid_request", "a", retained=False)


def test_session_codes_are_wire_codes() -> None:
    """The session layer's closed codes are exactly the protocol's session codes (kept apart
    so the protocol loop never imports the session layer at start-up)."""
    from magi_code.local_agent.errors import SESSION_ERRORS
    from magi_code.sessions import SESSION_CODES

    assert set(SESSION_CODES) <= SESSION_ERRORS
