"""The conversation as Mission Control draws it (issue 29's leftovers): a sent prompt's marker
beside its text; a resumed session drawn as it was shown live, the line saying a turn was
cancelled or failed included, and its status line's token totals and context share as they
stood. Through Textual's Pilot (the real app, driver, runner, session files and fixture
provider, headless), and the real binary on a pty for `--continue`."""

from pathlib import Path
from typing import Any

import pytest
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Static

from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.widgets import AssistantMessage, Notice, UserMessage
from mission_control.helpers import SIZE, ended, idle, make_driver, type_and_send, until
from mission_control.terminal import Terminal, prompt
from support.sessions import script

pytestmark = pytest.mark.anyio


def drawn(widget: Widget) -> list[str]:
    """The widget's lines as drawn on the screen, trailing spaces dropped."""
    size = widget.outer_size
    return [strip.text.rstrip() for strip in widget.render_lines(Region(0, 0, *size))]


async def send(pilot: Any, app: MissionControl, driver: Driver, text: str, turns: int) -> None:
    await type_and_send(pilot, app, text)
    await until(pilot, lambda: ended(app, driver, turns))


async def test_a_prompts_marker_stays_beside_its_first_line_and_later_lines_indent(
    driver: Driver,
) -> None:
    word = "path/" + "m" * 150  # one word, wider than the screen
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, app, driver, word, 1)
        await send(pilot, app, driver, "first line\nsecond line", 2)
        long, lines = (drawn(message) for message in app.query(UserMessage))
    assert long[0].strip().startswith("› path/mmm"), long
    assert len(long) == 2  # folded: the later line indented under the text, nothing lost
    marker = long[0].index("›")
    for line in long[1:]:
        assert line[: marker + 2].strip() == "" and line[marker + 2] == "m", long
    assert "".join(line[marker + 2 :] for line in long) == word
    assert [line[marker:] for line in lines] == ["› first line", "  second line"]


def conversation(app: MissionControl) -> list[tuple[str, str]]:
    """The prompts, replies and the lines saying how a turn ended, in the order shown."""
    shown: list[tuple[str, str]] = []
    for widget in app.log_view.children:
        if isinstance(widget, UserMessage):
            shown.append(("user", widget.text))
        elif isinstance(widget, AssistantMessage):
            shown.append(("assistant", widget.shown))
        elif isinstance(widget, Notice) and str(widget.text).startswith(("cancelled", "failed")):
            shown.append(("ended", str(widget.text)))
    return shown


async def test_a_resumed_session_shows_how_its_cancelled_and_failed_turns_ended(
    tmp_path: Path, workspace: Path
) -> None:
    live = make_driver(tmp_path, workspace)
    app = MissionControl(live)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, app, script({"text": "partial words ", "hang": True}))
            await until(pilot, lambda: any(m.shown for m in app.query(AssistantMessage)))
            await pilot.press("escape")
            await until(pilot, lambda: idle(app) and ended(app, live, 1))
            await send(pilot, app, live, script({"error": "server_error"}), 2)
            await send(pilot, app, live, "and then", 3)
            shown_live = conversation(app)
        session_id = live.attachment.session_id if live.attachment else ""
    finally:
        live.close()
    assert [kind for kind, _ in shown_live] == [
        "user",
        "assistant",
        "ended",
        "user",
        "ended",
        "user",
        "assistant",
    ]
    assert shown_live[2][1].startswith("cancelled") and shown_live[4][1].startswith("failed")
    again = make_driver(tmp_path, workspace)
    app = MissionControl(again)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, app, f"/resume {session_id}")
            await until(pilot, lambda: len(app.query(UserMessage)) == 3)
            await pilot.pause(0.05)
            assert conversation(app) == shown_live
    finally:
        again.close()


SMALL_WINDOW = '[providers.fixture]\nwire_api = "fixture"\ncontext_window = 400\n'


WIDE = (160, 30)  # the status bar whole, its token totals included


def status(app: MissionControl) -> str:
    """The status line, from its context share to its token totals."""
    line = str(app.query_one("#status", Static).render())
    return line[line.index("context") : line.index(" out · approvals")]


async def test_a_resumed_session_shows_its_token_totals_and_context_as_they_stood(
    tmp_path: Path, workspace: Path
) -> None:
    live = make_driver(tmp_path, workspace, SMALL_WINDOW)
    app = MissionControl(live)
    try:
        async with app.run_test(size=WIDE) as pilot:
            await send(pilot, app, live, "a first question, long enough to weigh something", 1)
            await send(pilot, app, live, script({"text": "a second answer of some length"}), 2)
            await type_and_send(pilot, app, script({"text": "cut short ", "hang": True}))
            await until(pilot, lambda: any("cut" in m.shown for m in app.query(AssistantMessage)))
            await pilot.press("escape")  # a turn cancelled before the model said its usage
            await until(pilot, lambda: ended(app, live, 3))
            shown_live, tally = status(app), live.tally
        session_id = live.attachment.session_id if live.attachment else ""
    finally:
        live.close()
    assert tally.session_input > 0 and tally.session_output > 0 and tally.context > 0
    assert "context 0%" not in shown_live  # the share the test compares says something
    again = make_driver(tmp_path, workspace)
    app = MissionControl(again)
    try:
        async with app.run_test(size=WIDE) as pilot:
            await type_and_send(pilot, app, f"/resume {session_id}")
            await until(pilot, lambda: len(app.query(UserMessage)) == 3)
            assert status(app) == shown_live
            resumed = again.tally
            assert (resumed.session_input, resumed.session_output, resumed.context) == (
                tally.session_input,
                tally.session_output,
                tally.context,
            )
            assert (resumed.turn_input, resumed.turn_output) == (0, 0)  # no turn yet here
    finally:
        again.close()


def test_the_real_binary_continues_a_session_with_its_token_totals(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    home.mkdir()
    (home / "settings.toml").write_text(SMALL_WINDOW)
    first = Terminal(["--prompt", prompt({"text": "an answer to keep"})], workspace, home)
    try:
        spent = first.wait_for_match(r"tokens this turn: ([\d,]+) in, ([\d,]+) out")
        assert first.wait_exit() == 0
    finally:
        first.close()
    assert spent.groups() != ("0", "0")
    again = Terminal(["--continue"], workspace, home, columns=160)  # the whole status bar
    try:
        again.wait_for("an answer to keep")
        screen = again.wait_for(f"tokens {spent[1]} in {spent[2]} out")
        assert "context 0%" not in screen  # on the same line, before the tokens
    finally:
        again.close()


@pytest.mark.anyio
async def test_a_snapshot_gone_stale_before_the_history_is_drawn_is_taken_again(
    tmp_path: Path, workspace: Path
) -> None:
    """--continue once showed `The history cannot be shown: stale_revision` instead of the
    conversation: the snapshot taken at open had gone stale before the screen read it."""
    live = make_driver(tmp_path, workspace)
    app = MissionControl(live)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, app, live, "a question", 1)
        session_id = live.attachment.session_id if live.attachment else ""
    finally:
        live.close()
    again = make_driver(tmp_path, workspace)
    try:
        again.open_session(session_id)
        assert again.attachment is not None
        again.attachment.history.invalidate()  # as a snapshot taken again elsewhere leaves it
        assert [(e.kind, e.text) for e in again.history()] == [
            ("user", "a question"),
            ("assistant", "Hello from the fixture model."),
        ]
    finally:
        again.close()
