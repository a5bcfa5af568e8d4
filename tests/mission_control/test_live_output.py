"""Live tool output in Mission Control: a running shell card shows the command's output tail
and its elapsed time before the command ends (a time that does not count the wait for an
approval), Enter or a click expands and collapses a card and hands the keys back to the
composer; the same on the real binary on a pty. The commands wait for a file the test makes,
so nothing here sleeps a fixed time but the person's pause before an approval."""

import re
from pathlib import Path

import pytest
from textual.widgets._collapsible import CollapsibleTitle

from magi_code.limits import UI_LIVE_OUTPUT_LINES
from magi_code.mission_control import commands
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.widgets import PromptArea, ToolCard
from mission_control.helpers import WRITE, asked, until
from mission_control.terminal import Terminal, prompt
from support.sessions import script

pytestmark = pytest.mark.anyio

SIZE = (100, 40)
WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.02; done"


def lines_then_wait(count: int) -> str:
    return f"for i in $(seq 1 {count}); do echo L$i.; done; {WAIT_FOR_GO}; echo finished"


def body(card: ToolCard) -> str:
    return str(card.body.render())


def seconds(card: ToolCard) -> int:
    return running_seconds(card.heading())


async def test_a_running_shell_card_shows_its_output_tail_and_time_before_it_ends(
    driver: Driver, workspace: Path
) -> None:
    driver.set_approval_mode("full")
    app = MissionControl(driver)
    shell = {"name": "shell", "arguments": {"command": lines_then_wait(UI_LIVE_OUTPUT_LINES + 1)}}
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(PromptArea).insert(script({"tools": [shell]}))
        await pilot.press("enter")
        await until(pilot, lambda: app.query(ToolCard) and "L13." in body(app.query_one(ToolCard)))
        card = app.query_one(ToolCard)
        assert card.state == "started" and not card.collapsed  # opened by its output
        shown = body(card).splitlines()
        assert shown == [f"L{n}." for n in range(2, UI_LIVE_OUTPUT_LINES + 2)]  # the tail
        first = seconds(card)
        await until(pilot, lambda: seconds(card) > first)  # the timer ticks while it runs
        (workspace / "go").touch()
        await until(pilot, lambda: card.state == "completed")
        assert card.collapsed  # closed again, its final output inside
        assert "finished" in body(card) and "L1." in body(card)
        assert re.search(r"completed · \d+\.\ds$", card.heading())  # to a tenth, once done


async def test_a_cards_time_counts_the_call_running_not_its_wait_for_approval(
    driver: Driver, workspace: Path
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await asked(pilot, app, script({"tools": [WRITE]}))
        card = app.query_one(ToolCard)
        await pilot.pause(1.2)  # the person takes their time
        assert card.heading().endswith("· awaiting approval"), card.heading()  # no timer
        await pilot.press("y")
        await until(pilot, lambda: card.state == "completed")
    assert (workspace / "a.txt").read_text() == "new text\n"
    assert card.seconds is not None and card.seconds < 1.0, card.heading()  # the write alone


async def test_enter_or_a_click_toggles_a_card_and_the_composer_gets_the_keys_back(
    driver: Driver, workspace: Path
) -> None:
    driver.set_approval_mode("full")
    (workspace / "go").touch()
    app = MissionControl(driver)
    shell = {"name": "shell", "arguments": {"command": lines_then_wait(2)}}
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(PromptArea).insert(script({"tools": [shell]}))
        await pilot.press("enter")
        await until(pilot, lambda: app.query(ToolCard) and app.control is None)
        card, composer = app.query_one(ToolCard), app.query_one(PromptArea)
        await pilot.press("d", "r", "a", "f", "t")
        await pilot.press("shift+tab")
        assert isinstance(app.focused, CollapsibleTitle) and app.focused.parent is card
        expanded = card.collapsed
        await pilot.press("enter")
        await until(pilot, lambda: app.focused is composer)
        assert card.collapsed is not expanded
        await pilot.click(CollapsibleTitle)
        await until(pilot, lambda: card.collapsed is expanded and app.focused is composer)
        await pilot.press("!")
        assert composer.text == "draft!"  # nothing typed was lost, none went to the card
    assert "Shift+Tab" in commands.help_text() and "expand or collapse" in commands.help_text()


async def test_a_persons_own_command_streams_to_its_card_too(
    driver: Driver, workspace: Path
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(PromptArea).insert(f"!echo early; {WAIT_FOR_GO}; echo late")
        await pilot.press("enter")
        await until(pilot, lambda: app.query(ToolCard) and "early" in body(app.query_one(ToolCard)))
        card = app.query_one(ToolCard)
        assert card.state == "started" and "late" not in body(card)
        (workspace / "go").touch()
        await until(pilot, lambda: card.state == "completed" and "late" in body(card))


def test_the_real_binary_shows_a_slow_commands_output_before_it_ends(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    # A script: the words it prints are nowhere on screen but in its output, and the card's
    # title (`run: sh slow.sh`) is short enough to show its timer.
    (workspace / "slow.sh").write_text(f"echo tick-one\n{WAIT_FOR_GO}\necho tick-two\n")
    shell = {"name": "shell", "arguments": {"command": "sh slow.sh"}}
    terminal = Terminal(
        ["--approval-mode", "full", "--prompt", prompt({"tools": [shell]})],
        workspace,
        home,
        columns=110,
        rows=30,
    )
    try:
        screen = terminal.wait_for("tick-one")
        assert "tick-two" not in screen
        first = running_seconds(screen)
        terminal.wait_for(f"running · {first + 1}s")  # the timer ticks on the screen
        (workspace / "go").touch()
        assert terminal.wait_exit() == 0
        assert "completed" in terminal.text()
    finally:
        terminal.close()


def running_seconds(screen: str) -> int:
    found = re.search(r"running · (\d+)s", screen)
    assert found, screen
    return int(found.group(1))
