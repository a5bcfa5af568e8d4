"""The settings decoder maps every input to a table or `SettingsError`, never another exception
(issue 19: deep nesting let RecursionError escape), and settings loading likewise."""

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magi_code.config import settings as config

PIECES = st.sampled_from(["[", "]", "{", "}", "a", "=", ".", ",", '"', "\n", " ", "1", "x = "])


def decode(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    with contextlib.suppress(config.SettingsError):
        assert isinstance(config.read_toml(str(path)), dict)


@settings(max_examples=200, deadline=None)
@given(st.lists(PIECES, max_size=400).map("".join), st.integers(1, 1200))
def test_any_text_decodes_or_is_refused(
    tmp_path_factory: pytest.TempPathFactory, text: str, depth: int
) -> None:
    path = Path(tmp_path_factory.mktemp("s")) / "s.toml"
    decode(path, text.encode())
    decode(path, ("x = " + "[" * depth + text + "]" * depth).encode())
    decode(path, (".".join("k" for _ in range(depth)) + " = 1").encode())


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_decode_or_are_refused(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    decode(Path(tmp_path_factory.mktemp("b")) / "s.toml", data)
