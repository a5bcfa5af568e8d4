"""The plan checklist in Mission Control, through Textual's Pilot (the real app, driver, runner,
session files and fixture provider, headless): live and redrawn in place at each update, with
a mark per status, whole at 60 columns, never asking, back after a resume, gone after /new, as
of the turn a rewind goes back to; and the window a long plan is shown through, at its exact
edge."""

from pathlib import Path
from typing import Any

import pytest
from textual.geometry import Region

from magi_code.limits import UI_PLAN_STEPS
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.plan_view import PlanView, window
from magi_code.mission_control.screens import ApprovalScreen
from magi_code.mission_control.widgets import PromptArea
from magi_code.tools.plan import PlanStep, PlanUpdate
from mission_control.helpers import make_driver, notices, records, until
from mission_control.terminal import Terminal, prompt
from mission_control.test_rewind import pick
from support.sessions import script

pytestmark = pytest.mark.anyio

NARROW = (60, 24)
LONG_STEP = "Change the greeting in app.py and every test that names it, then say so"


def plan_round(*steps: tuple[str, str], **more: Any) -> dict[str, Any]:
    plan = [{"step": step, "status": status} for step, status in steps]
    return {"tools": [{"name": "update_plan", "arguments": {"plan": plan}}], **more}


FIRST = plan_round(
    ("Read the code", "in_progress"),
    (LONG_STEP, "pending"),
    ("Run tests", "pending"),
)
SECOND = plan_round(
    ("Read the code", "completed"),
    (LONG_STEP, "in_progress"),
    ("Run tests", "pending"),
)


def shown(app: MissionControl) -> list[str]:
    """The checklist's lines as drawn on the screen."""
    view = app.query_one(PlanView)
    size = view.outer_size
    return [strip.text.rstrip() for strip in view.render_lines(Region(0, 0, *size))]


def statuses(app: MissionControl) -> list[str]:
    plan = app.query_one(PlanView).plan
    return [step.status for step in plan.plan] if plan is not None else []


async def send(pilot: Any, app: MissionControl, text: str) -> None:
    app.query_one(PromptArea).insert(text)
    await pilot.press("enter")


def finished(app: MissionControl, driver: Driver, turns: int) -> bool:
    done = [r for r in records(driver) if r["type"] == "run_finished"] if driver.attachment else []
    return app.control is None and len(done) == turns


async def test_the_checklist_is_live_in_place_and_whole_at_60_columns(driver: Driver) -> None:
    app = MissionControl(driver)
    slow = {"text": "working ", "repeat": 40, "delay_ms": 10}
    async with app.run_test(size=NARROW) as pilot:
        view = app.query_one(PlanView)
        assert not view.display  # no plan yet: no room taken
        await send(pilot, app, script(FIRST, {**SECOND, **slow}, {"text": "Done."}))
        # (the first plan may be replaced before a frame shows it: the next round follows at once)
        await until(pilot, lambda: statuses(app) == ["completed", "in_progress", "pending"])
        await until(pilot, lambda: finished(app, driver, 1))
        assert not isinstance(app.screen, ApprovalScreen)  # it never asked
        assert len(app.query(PlanView)) == 1 and view.display
        await pilot.pause(0.05)
        lines = shown(app)
        assert lines[1] == " plan · 1 of 3 done"
        assert lines[2] == " ✓ Read the code"
        assert lines[3].startswith(" ◐ Change the greeting")
        assert lines[-1] == " ○ Run tests"
        assert view.outer_size.width == NARROW[0]
        # the long step wraps under its own text, whole
        wrapped = " ".join(line[3:].strip() for line in lines[3:-1])
        assert wrapped == LONG_STEP and all(line.startswith("   ") for line in lines[4:-1])


async def test_a_resumed_session_shows_its_last_plan_and_new_clears_it(
    tmp_path: Path, workspace: Path
) -> None:
    first = make_driver(tmp_path, workspace)
    app = MissionControl(first)
    async with app.run_test(size=NARROW) as pilot:
        bad = plan_round(("a", "in_progress"), ("b", "in_progress"))  # refused: no plan
        await send(pilot, app, script(FIRST, SECOND, bad, {"text": "Done."}))
        await until(pilot, lambda: finished(app, first, 1))
    session_id = first.attachment.session_id if first.attachment else ""
    first.close()
    second = make_driver(tmp_path, workspace)
    app = MissionControl(second)
    try:
        async with app.run_test(size=NARROW) as pilot:
            assert statuses(app) == []
            await send(pilot, app, f"/resume {session_id}")
            await until(pilot, lambda: statuses(app) == ["completed", "in_progress", "pending"])
            await send(pilot, app, "/new")
            await until(pilot, lambda: not app.query_one(PlanView).display)
            assert statuses(app) == []
    finally:
        second.close()


async def test_a_rewind_shows_the_plan_as_of_the_turn_it_goes_back_to(
    tmp_path: Path, workspace: Path
) -> None:
    driver = make_driver(tmp_path, workspace)
    app = MissionControl(driver)
    try:
        async with app.run_test(size=NARROW) as pilot:
            await send(pilot, app, script(FIRST, {"text": "Planned."}))
            await until(pilot, lambda: finished(app, driver, 1))
            await send(pilot, app, script(SECOND, {"text": "Going on."}))
            await until(pilot, lambda: finished(app, driver, 2))
            assert statuses(app) == ["completed", "in_progress", "pending"]
            await rewind_to(pilot, app, "2")  # the second turn, and its plan, go
            await until(pilot, lambda: statuses(app) == ["in_progress", "pending", "pending"])
        session_id = driver.attachment.session_id if driver.attachment else ""
    finally:
        driver.close()
    again = make_driver(tmp_path, workspace)
    app = MissionControl(again)
    try:
        async with app.run_test(size=NARROW) as pilot:
            await send(pilot, app, f"/resume {session_id}")
            await until(pilot, lambda: statuses(app) == ["in_progress", "pending", "pending"])
            await rewind_to(pilot, app, "1")  # back to before any plan: none
            await until(pilot, lambda: "goes on from before turn 1" in notices(app))
            assert statuses(app) == [] and not app.query_one(PlanView).display
    finally:
        again.close()


async def rewind_to(pilot: Any, app: MissionControl, turn: str) -> None:
    """`/rewind` to before `turn`, the conversation only."""
    await send(pilot, app, "/rewind")
    await pick(pilot, app, turn)
    await pick(pilot, app, "conversation")


def steps(*marks: str) -> tuple[PlanStep, ...]:
    names = {"c": "completed", "i": "in_progress", "p": "pending"}
    return tuple(PlanStep(f"step {n}", names[m]) for n, m in enumerate(marks))  # type: ignore[arg-type]


def test_a_long_plan_shows_a_window_around_its_first_open_step() -> None:
    rows = UI_PLAN_STEPS
    assert window(steps(*"p" * rows), rows) == (0, rows)  # at the edge: all of it
    over = rows + 1
    assert window(steps(*"p" * over), rows) == (0, rows)
    assert window(steps(*"c" * 4, *"i", *"p" * (over - 5)), rows) == (1, rows + 1)
    assert window(steps(*"c" * over), rows) == (1, over)  # all done: the last ones


async def test_a_long_plan_counts_what_it_leaves_out(driver: Driver) -> None:
    app = MissionControl(driver)
    plan = steps(*"c" * 4, "i", *"p" * (UI_PLAN_STEPS + 2))
    async with app.run_test(size=NARROW) as pilot:
        app.plan(PlanUpdate("why it changed", plan))
        await pilot.pause(0.05)
        lines = shown(app)
        assert lines[1] == f" plan · 4 of {len(plan)} done · why it changed"
        assert lines[2] == "   … 3 earlier"
        assert lines[3:5] == [" ✓ step 3", " ◐ step 4"]
        assert lines[-1] == f"   … {len(plan) - 3 - UI_PLAN_STEPS} more"
        assert len(lines) == UI_PLAN_STEPS + 4


def test_the_real_binary_shows_the_checklist_at_60_columns(tmp_path: Path) -> None:
    """`magi-code` on a pty of 60 columns: the checklist, updated in place, whole, and back
    after `--continue` in a new process."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    terminal = Terminal([], workspace, home, columns=NARROW[0], rows=NARROW[1])
    try:
        terminal.wait_for("idle")
        terminal.send(prompt(FIRST, SECOND, {"text": "Done."}) + "\r")
        terminal.wait_for("plan · 1 of 3 done")
        terminal.wait_for("tokens this turn")
        screen = terminal.wait_for("○ Run tests")
        # The lines in order (their layout at 60 columns is the Pilot test's to check).
        shown = [screen.find(line) for line in ("✓ Read the code", "◐ Change the", "○ Run tests")]
        assert -1 not in shown and shown == sorted(shown), screen
        assert "plan · 0 of 3 done" not in screen  # redrawn in place, not added below
        terminal.send("\x04")  # Ctrl+D at an empty prompt quits
        assert terminal.wait_exit() == 0
    finally:
        terminal.close()
    again = Terminal(["--continue"], workspace, home, columns=NARROW[0], rows=NARROW[1])
    try:
        again.wait_for("plan · 1 of 3 done")
        again.wait_for(" ✓ Read the code")  # a frame can reach the pty in more than one read
    finally:
        again.close()
