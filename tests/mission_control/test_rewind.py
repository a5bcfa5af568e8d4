"""Rewind in Mission Control (issue 29, item 9): a turn edits one file with `edit_file` and
changes another with `sed -i` through the shell; `/rewind` (or Esc Esc) puts both back and the
conversation goes on from the earlier turn, in this session and when it is reopened. A change
made outside magi-code since is named and asked about first. Pilot tests of the real app and
driver, and the real binary on a pty."""

import json
import time
from pathlib import Path
from typing import Any

import pytest

from magi_code.limits import REWIND_KEYS_MS
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.screens import PickerScreen
from magi_code.mission_control.widgets import UserMessage
from magi_code.providers.base import UserText
from magi_code.runner.journal import SessionJournal
from mission_control.helpers import records, until
from mission_control.terminal import Terminal, prompt
from mission_control.test_app import SIZE, ended, idle, notices, type_and_send
from support.sessions import script

EDIT = {"name": "edit_file", "arguments": {"path": "a.txt", "old": "alpha", "new": "ALPHA"}}
SED = {"name": "shell", "arguments": {"command": "sed -i 's/beta/BETA/' b.txt"}}
CHANGE: tuple[dict[str, object], ...] = (
    {"text": "Changing both.", "tools": [EDIT, SED]},
    {"text": "Both changed."},
)


def files(workspace: Path) -> tuple[str, str]:
    return (workspace / "a.txt").read_text(), (workspace / "b.txt").read_text()


def shown_prompts(app: MissionControl) -> list[str]:
    return [message.text for message in app.query(UserMessage)]


def picker(app: MissionControl) -> PickerScreen | None:
    return app.screen if isinstance(app.screen, PickerScreen) else None


async def pick(pilot: Any, app: MissionControl, key: str) -> None:
    """Choose the option `key` of the picker on screen."""
    await until(pilot, lambda: picker(app) is not None)
    screen = picker(app)
    assert screen is not None
    keys = [k for k, _ in screen.options]
    from textual.widgets import OptionList

    screen.query_one(OptionList).highlighted = keys.index(key)
    await pilot.press("enter")
    await pilot.pause()


@pytest.fixture
def prepared(workspace: Path, driver: Driver) -> Driver:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    driver.set_approval_mode("full")
    return driver


@pytest.mark.anyio
async def test_rewind_puts_back_an_edit_and_a_sed_and_the_conversation_goes_on(
    prepared: Driver, workspace: Path
) -> None:
    driver = prepared
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script({"text": "Nothing to change."}))
        await until(pilot, lambda: ended(app, driver, 1))
        assert driver.attachment is not None
        checkpoints = driver.store.checkpoints_of(driver.attachment.session_id)
        assert not checkpoints.exists()  # a turn that changes nothing takes no checkpoint
        await type_and_send(pilot, app, script(*CHANGE))
        await until(pilot, lambda: ended(app, driver, 2))
        assert files(workspace) == ("ALPHA\n", "BETA\n")
        rewinder = driver.rewinder()
        assert rewinder is not None
        assert [m.phase for m in rewinder.store.listed()] == ["before", "after"]
        await type_and_send(pilot, app, "/rewind")
        await pick(pilot, app, "2")
        await pick(pilot, app, "both")
        await until(pilot, lambda: "goes on from before turn 2" in notices(app))
        assert files(workspace) == ("alpha\n", "beta\n")
        assert shown_prompts(app) == [script({"text": "Nothing to change."})]
        await type_and_send(pilot, app, script({"text": "Going on."}))
        await until(pilot, lambda: ended(app, driver, 3))
    stored = records(driver)
    users = [r for r in stored if r["type"] == "user"]
    assert users[1]["text"] == script(*CHANGE)  # the dropped turn stays in the file
    [rewind] = [r for r in stored if r["type"] == "rewind"]
    assert rewind["drop_from"] == users[1]["message_id"]
    assert driver.attachment is not None
    told = [i.text for i in SessionJournal(driver.attachment).replay() if isinstance(i, UserText)]
    assert told == [script({"text": "Nothing to change."}), script({"text": "Going on."})]


@pytest.mark.anyio
async def test_esc_esc_opens_the_rewind_and_an_outside_change_is_asked_about(
    prepared: Driver, workspace: Path
) -> None:
    driver = prepared
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script(*CHANGE))
        await until(pilot, lambda: ended(app, driver, 1))
        (workspace / "b.txt").write_text("my own edit\n")  # outside magi-code
        await pilot.press("escape")
        await pilot.pause(REWIND_KEYS_MS / 1000 + 0.05)  # too slow: no rewind
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert picker(app) is None
        await pilot.press("escape")  # the second within REWIND_KEYS_MS
        await pick(pilot, app, "1")
        await pick(pilot, app, "code")
        await until(pilot, lambda: "overwrite" in str(getattr(picker(app), "options", "")))
        screen = picker(app)
        assert screen is not None and "b.txt" in screen.heading and "a.txt" not in screen.heading
        await pick(pilot, app, "cancel")
        await until(pilot, lambda: "nothing changed" in notices(app))
        assert files(workspace) == ("ALPHA\n", "my own edit\n")
        await type_and_send(pilot, app, "/rewind")
        await pick(pilot, app, "1")
        await pick(pilot, app, "code")
        await pick(pilot, app, "overwrite")
        await until(pilot, lambda: "Code back to before turn 1" in notices(app))
        assert files(workspace) == ("alpha\n", "beta\n")
        assert idle(app) and len(shown_prompts(app)) == 1  # the conversation stays
    assert not [r for r in records(driver) if r["type"] == "rewind"]


@pytest.mark.anyio
async def test_a_forked_session_rewinds_to_a_turn_from_before_the_fork(
    prepared: Driver, workspace: Path
) -> None:
    """`/fork` takes the checkpoints along: the new session's code goes back past the fork,
    through a turn of its own after it."""
    driver = prepared
    app = MissionControl(driver)
    again = {"name": "write_file", "arguments": {"path": "a.txt", "content": "forked\n"}}
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script(*CHANGE))
        await until(pilot, lambda: ended(app, driver, 1))
        assert driver.attachment is not None
        original = driver.attachment.session_id
        await type_and_send(pilot, app, "/fork")
        await until(pilot, lambda: "Forked into session" in notices(app))
        assert driver.attachment.session_id != original
        await type_and_send(pilot, app, script({"tools": [again]}, {"text": "Again."}))
        await until(pilot, lambda: ended(app, driver, 2))
        assert files(workspace) == ("forked\n", "BETA\n")
        await type_and_send(pilot, app, "/rewind")
        await pick(pilot, app, "1")
        await pick(pilot, app, "code")
        await until(pilot, lambda: "Code back to before turn 1" in notices(app))
        assert files(workspace) == ("alpha\n", "beta\n")
    rewinder = driver.rewinder()
    assert rewinder is not None
    phases = [m.phase for m in rewinder.store.listed()]
    assert phases == ["before", "after", "before", "after", "before", "after"]  # the rewind's
    original_phases = [m.phase for m in driver.checkpoints(original).listed()]
    assert original_phases == ["before", "after"]  # the original stays as it was


def test_rewind_on_a_real_terminal_and_the_session_reopens_from_there(tmp_path: Path) -> None:
    """The real binary: two turns, the second edits a.txt and runs `sed -i` on b.txt;
    `/rewind` puts both back, the next turn follows the first, and `--continue` reopens it
    that way while the file keeps the dropped turn."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    args = ["--approval-mode", "full"]
    terminal = Terminal(args, workspace, home, columns=150, rows=40)
    try:
        terminal.wait_for("idle")
        terminal.send(prompt({"text": "First turn done."}) + "\r")
        terminal.wait_for("First turn done.")
        terminal.send(prompt(*CHANGE) + "\r")
        terminal.wait_for("Both changed.")
        wait_until(terminal, lambda: files(workspace) == ("ALPHA\n", "BETA\n"))
        terminal.wait_for("idle")
        terminal.send("/rewind\r")
        terminal.wait_for("Rewind to before which turn?")
        terminal.send("\r")  # it opens on the last turn
        terminal.wait_for("what goes back?")
        terminal.send("\r")  # code and conversation
        terminal.wait_for("goes on from before turn 2")
        assert files(workspace) == ("alpha\n", "beta\n")
        assert "Both changed." not in terminal.text()
        terminal.send(prompt({"text": "Third turn here."}) + "\r")
        terminal.wait_for("Third turn here.")
        terminal.wait_for("idle")
        terminal.send("/quit\r")
        assert terminal.wait_exit(30) == 0
    finally:
        terminal.close()
    stored = session_records(home)
    assert [r["text"] for r in stored if r["type"] == "assistant"] == [
        "First turn done.",
        "Changing both.",
        "Both changed.",
        "Third turn here.",
    ]
    reopened = Terminal(["--continue"], workspace, home, columns=150, rows=40)
    try:
        screen = reopened.wait_for("Third turn here.")
        assert "First turn done." in screen and "Both changed." not in screen
        reopened.send("/quit\r")
        assert reopened.wait_exit(30) == 0
    finally:
        reopened.close()


def wait_until(terminal: Terminal, check: Any, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, terminal.text()
        terminal.pump(0.05)


def session_records(home: Path) -> list[dict[str, Any]]:
    [path] = (home / "sessions").glob("*.jsonl")
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]
