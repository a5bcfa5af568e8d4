"""The `mel` fixture: a private runtime directory and the sessions started in it, all closed
at the end of the test."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from mel_harness import Melchior


@pytest.fixture
def mel(tmp_path: Path) -> Iterator[Melchior]:
    m = Melchior(tmp_path)
    yield m
    m.close()
