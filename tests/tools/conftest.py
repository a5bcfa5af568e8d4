"""Shared fixtures for the tools tests: a workspace context on tmp_path, the asyncio backend."""

import os
from pathlib import Path

import pytest

from magi_code.tools.base import ToolContext


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def ctx(ws: Path, tmp_path: Path) -> ToolContext:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "LANG": "C.UTF-8",
    }
    return ToolContext(ws, env)
