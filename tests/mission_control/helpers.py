"""Mission Control test helpers (and, through conftest.py, fixtures): an admitted driver over
a real MC_HOME and workspace with the fixture provider, and a wait that polls the app without
sleeping a fixed time."""

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from magi_code.mission_control.driver import Driver, startup


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def make_driver(tmp_path: Path, workspace: Path, **options: Any) -> Driver:
    env = {"MC_HOME": str(tmp_path / "home"), "PATH": os.environ.get("PATH", "")}
    admitted, _ = startup(str(workspace), env)
    return Driver(admitted, **options)


@pytest.fixture
def driver(tmp_path: Path, workspace: Path) -> Iterator[Driver]:
    made = make_driver(tmp_path, workspace)
    yield made
    made.close()


def script(*rounds: dict[str, object]) -> str:
    return "fixture:" + json.dumps(list(rounds))


def records(driver: Driver) -> list[dict[str, Any]]:
    assert driver.attachment is not None
    path = driver.store.path_of(driver.attachment.session_id)
    if not path.exists():
        return []  # a session has no file before its first record
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


async def until(pilot: Any, check: Callable[[], object], seconds: float = 5.0) -> None:
    """Let the app run until `check()` is true; fail after `seconds`."""
    for _ in range(int(seconds / 0.02)):
        if check():
            return
        await pilot.pause(0.02)
    raise AssertionError("the app never reached the expected state")
