"""Envelope validation as a pure function of one frame's bytes."""

import json

from hypothesis import given
from hypothesis import strategies as st

from magi_code.limits import ID_BYTES, JSON_DEPTH
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
