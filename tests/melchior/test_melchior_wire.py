"""The wire codecs against the shared golden vectors, and over every split of their input."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from melchior import strict_json, wire
from melchior.limits import FAMILY, FRAME_HEADER, MAX_FRAME, MAX_LINE

VECTORS = json.loads((Path(__file__).parent / "wire_vectors.json").read_text(encoding="utf-8"))


def as_items(items: list[wire.Item]) -> list[dict[str, Any]]:
    return [
        {"refused": it.code} if isinstance(it, wire.Refusal) else {"message": it} for it in items
    ]


def decode(vector: dict[str, Any], chunks: list[bytes]) -> list[dict[str, Any]]:
    bound = vector.get("max_frame")
    if vector["transport"] == "argv":
        return as_items([wire.decode_argv(b"".join(chunks))])
    if vector["transport"] == "socket":
        sock = wire.SocketDecoder(bound or MAX_FRAME)
        return as_items([it for c in chunks for it in sock.feed(c)])
    pipe = wire.PipeDecoder(bound or MAX_LINE)
    return as_items([it for c in chunks for it in pipe.feed(c)] + pipe.close())


def test_vectors_cover_every_transport_and_refusal_code_used() -> None:
    transports = {v["transport"] for v in VECTORS["vectors"]}
    assert transports == {"argv", "pipe", "socket"}
    assert VECTORS["family"] == FAMILY and VECTORS["tag"] == wire.TAG
    codes = {i["refused"] for v in VECTORS["vectors"] for i in v["items"] if "refused" in i}
    assert codes <= wire.CODES
    assert {"bad_json", "bad_shape", "bad_tag", "frame_too_large", "unknown_family"} <= codes


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_vector_decodes_whole_and_byte_by_byte(vector: dict[str, Any]) -> None:
    data = bytes.fromhex(vector["hex"])
    assert decode(vector, [data]) == vector["items"]
    if vector["transport"] != "argv":
        assert decode(vector, [data[i : i + 1] for i in range(len(data))]) == vector["items"]


@pytest.mark.parametrize(
    "vector", [v for v in VECTORS["vectors"] if v.get("canonical")], ids=lambda v: v["name"]
)
def test_canonical_vector_encodes_to_its_bytes(vector: dict[str, Any]) -> None:
    encode = {"socket": wire.encode_socket, "pipe": wire.encode_pipe, "argv": wire.encode_argv}
    out = b"".join(encode[vector["transport"]](i["message"]) for i in vector["items"])
    assert out.hex() == vector["hex"]


def test_frame_bound_exact_edge() -> None:
    def body(size: int) -> bytes:
        return b'{"event":"e","pad":"' + b"x" * (size - 22) + b'"}'

    at, over = body(MAX_FRAME), body(MAX_FRAME + 1)
    assert len(at) == MAX_FRAME and len(over) == MAX_FRAME + 1
    sock = wire.SocketDecoder()
    frames = [len(b).to_bytes(FRAME_HEADER, "big") + b for b in (at, over, at)]
    got = [it for f in frames for it in sock.feed(f)]
    assert [isinstance(it, wire.Refusal) for it in got] == [False, True, False]
    pipe = wire.PipeDecoder()
    got = pipe.feed(at + b"\n" + over + b"\n" + at + b"\n")
    assert [isinstance(it, wire.Refusal) for it in got] == [False, True, False]


def test_older_family_tolerated_newer_refused() -> None:
    two = b'{"ok":true,"family":2,"n":0,"result":[],"new":1}'
    assert wire.parse(two) == wire.Refusal("unknown_family")
    # A reader of a later family still reads family 1, and the later family it knows.
    assert wire.parse(wire.encode_json(wire.reply([1])), reader_family=2) == wire.reply([1])
    assert wire.parse(two, reader_family=2) == json.loads(two)


def test_deep_nesting_is_refused_not_raised() -> None:
    deep = b'{"event":"x","v":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert wire.parse(deep) == wire.Refusal("bad_json")


# Run where the json package was never imported, as in `melchior serve` and `melchior tool`:
# there `_json` cannot raise its own error class (see strict_json's docstring).
WITHOUT_JSON = r"""
import sys
from melchior import strict_json, wire
assert "json.decoder" not in sys.modules, "this check needs an interpreter without json"
texts = ["{not json", "{{{{", "[1 2]", '"open', '"\\q"', '"\x01"', '{"a":1,}', "[1,",
         "[" * 100_000, "{" * 100_000, "1" * 5000, "1e999", "[NaN]", '{"a":1,"a":2}', ""]
for text in texts:
    try:
        strict_json.loads(text)
    except (ValueError, RecursionError):
        pass
    else:
        raise AssertionError(text[:20])
    assert wire.parse(text.encode()) == wire.Refusal("bad_json"), text[:20]
assert wire.parse(b"\xff") == wire.Refusal("bad_json")
assert wire.parse(b"[1]") == wire.Refusal("bad_shape")
assert "json.decoder" not in sys.modules
"""


def test_decode_errors_are_refusals_without_the_json_package() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_JSON], capture_output=True, timeout=60, check=False
    )
    assert (done.returncode, done.stderr) == (0, b"")


# ------------------------------------------------------------- every split (hypothesis)

texts = st.text(max_size=40)
leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | texts
values = st.recursive(
    leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(texts, c, max_size=3)
)
names = st.text(min_size=1, max_size=10)
events = st.builds(lambda n, v: {"event": n, "v": v}, names, values)
calls = st.builds(
    lambda n, a: {"call": n, "args": a},
    st.text(min_size=1, max_size=10),
    st.lists(values, max_size=3),
)
replies = st.lists(values, max_size=3).map(wire.reply)
messages = st.lists(events | calls | replies, min_size=1, max_size=6)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


@settings(max_examples=100, deadline=None)
@given(messages, st.lists(st.integers(min_value=0), max_size=12))
def test_socket_and_pipe_decode_the_same_messages_for_every_split(
    msgs: list[wire.Message], cuts: list[int]
) -> None:
    sock_bytes = b"".join(wire.encode_socket(m) for m in msgs)
    pipe_bytes = b"".join(wire.encode_pipe(m) for m in msgs)
    sock, pipe = wire.SocketDecoder(), wire.PipeDecoder()
    from_sock = [it for c in split(sock_bytes, cuts) for it in sock.feed(c)]
    from_pipe = [it for c in split(pipe_bytes, cuts) for it in pipe.feed(c)] + pipe.close()
    assert from_sock == from_pipe == msgs
    assert not sock.pending


# ------------------------------------------------------------- strict_json against the json package

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(), c, max_size=4),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.sampled_from(["", " ", "\n", "\t\r\n "]))
def test_jsonc_agrees_with_the_json_package(value: Any, pad: str) -> None:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert strict_json.dumps(value) == canonical
    assert strict_json.loads(pad + canonical + pad) == json.loads(canonical)
    loose = json.dumps(value, indent=2)
    assert strict_json.loads(loose) == json.loads(loose)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"a":2}',
        "[NaN]",
        "Infinity",
        "\ufeff{}",
        "{} {}",
        "",
        "  ",
        "[1,]",
        "{'a':1}",
        "\x0c1",
        "1e999",
        "[-1e400]",
        "{not json",
        "{{{{",
        '"open',
    ],
)
def test_jsonc_refuses_what_the_wire_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        strict_json.loads(text)


def test_jsonc_refuses_to_encode_nan() -> None:
    with pytest.raises(ValueError):
        strict_json.dumps({"x": float("nan")})
