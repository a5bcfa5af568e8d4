"""Mission Control test helpers (and, through conftest.py, fixtures): an admitted driver over
a real MC_HOME (with the settings given) and workspace with the fixture provider; a wait that
polls the app without sleeping a fixed time; what the app and its session file say (`kinds`,
`notices`, `idle`, `ended`); typing a prompt, and waiting for its approval question to arm."""

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from magi_code.limits import APPROVAL_ARM_MS
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver, startup
from magi_code.mission_control.screens import ApprovalScreen
from magi_code.mission_control.widgets import Notice, PromptArea


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def make_driver(
    tmp_path: Path, workspace: Path, settings: str | None = None, **options: Any
) -> Driver:
    """A driver admitted in `workspace` under MC_HOME `tmp_path/home`, whose settings.toml
    holds `settings` when given."""
    if settings is not None:
        (tmp_path / "home").mkdir()
        (tmp_path / "home" / "settings.toml").write_text(settings)
    env = {"MC_HOME": str(tmp_path / "home"), "PATH": os.environ.get("PATH", "")}
    admitted, _ = startup(str(workspace), env)
    return Driver(admitted, **options)


@pytest.fixture
def driver(tmp_path: Path, workspace: Path) -> Iterator[Driver]:
    made = make_driver(tmp_path, workspace)
    yield made
    made.close()


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


SIZE = (100, 30)
WRITE = {"name": "write_file", "arguments": {"path": "a.txt", "content": "new text\n"}}


def kinds(driver: Driver, kind: str) -> list[dict[str, object]]:
    return [r for r in records(driver) if r["type"] == kind]


def notices(app: MissionControl) -> str:
    return "\n".join(str(n.render()) for n in app.query(Notice))


def idle(app: MissionControl) -> bool:
    return app.control is None and app.state == "idle"


def ended(app: MissionControl, driver: Driver, turns: int = 1) -> bool:
    """The app is idle and `turns` runs are finished in the session file."""
    if not idle(app) or driver.attachment is None:
        return False
    return len(kinds(driver, "run_finished")) == turns


async def type_and_send(pilot: object, app: MissionControl, text: str) -> None:
    app.query_one(PromptArea).insert(text)
    await pilot.press("enter")  # type: ignore[attr-defined]


async def asked(pilot: Any, app: MissionControl, text: str) -> None:
    """Send `text` and wait until its approval question is open and past its arming window
    (a key pressed sooner is typed through, not an answer)."""
    await type_and_send(pilot, app, text)
    await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
    await pilot.pause(APPROVAL_ARM_MS / 1000 + 0.05)
