"""Fixtures for the session tests: a store under tmp_path and a real working directory."""

from pathlib import Path

import pytest

from magi_code.sessions import SessionStore


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "home")


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path
