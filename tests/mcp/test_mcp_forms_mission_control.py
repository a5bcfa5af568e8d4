"""Mission Control and the reference server `@modelcontextprotocol/server-everything`: a
server's question is a modal form (checked before it is sent, nothing typed lost, keys typed
ahead never answer it) and a running call shows its progress on its card. Pilot tests of the
real app and driver, and the real binary on a pty."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_mcp_mission_control import everything_def, mc_driver, write_settings
from textual._time import get_time
from textual.widgets import Input, Static

from magi_code.limits import APPROVAL_ARM_MS
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.form import FormScreen
from mission_control.helpers import anyio_backend, records, until
from mission_control.terminal import Terminal
from support.sessions import script

__all__ = ["anyio_backend"]

SIZE = (100, 40)
ASK: dict[str, object] = {
    "tools": [{"name": "mcp__ev__trigger-elicitation-request", "arguments": {}}]
}
LONG: dict[str, object] = {
    "name": "mcp__ev__trigger-long-running-operation",
    "arguments": {"duration": 1, "steps": 2},
}


@pytest.fixture
def driver(everything: Path, tmp_path: Path) -> Iterator[Driver]:
    made = mc_driver(tmp_path, {"ev": everything_def(everything)})
    made.set_approval_mode("full")  # the calls run unasked: the form is the only question
    yield made
    made.close()


def results(driver: Driver) -> list[str]:
    return [str(r["result"]) for r in records(driver) if r["type"] == "tool" and "result" in r]


def finished(driver: Driver) -> bool:
    return driver.attachment is not None and any(
        r["type"] == "run_finished" for r in records(driver)
    )


async def open_form(pilot: Any, app: MissionControl, text: str) -> FormScreen:
    app.query_one("#prompt").insert(text)  # type: ignore[attr-defined]
    await pilot.press("enter")
    await until(
        pilot, lambda: isinstance(app.focused, Input) and app.focused.screen is app.screen, 20
    )
    assert isinstance(app.screen, FormScreen)
    return app.screen


async def next_form(pilot: Any, app: MissionControl) -> None:
    """Wait for the next form to be shown and armed."""
    await until(pilot, lambda: isinstance(app.screen, FormScreen) and app.screen.is_mounted, 20)
    await pilot.pause(APPROVAL_ARM_MS / 1000)


@pytest.mark.anyio
async def test_the_form_is_checked_before_it_is_sent_and_each_answer_reaches_the_model(
    driver: Driver,
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        form = await open_form(pilot, app, script(ASK, ASK, ASK, {"text": "thanks"}))
        form.opened = get_time()  # as if it had just opened: a key now is typed ahead
        await pilot.press("escape")
        assert app.screen is form and not form.is_dismissed
        title = str(form.query_one("#form-title", Static).render())
        assert title == "ev asks:"
        await pilot.pause(APPROVAL_ARM_MS / 1000)
        await pilot.press("A", "d", "a")  # the first field (the name) has the focus
        integer = form.inputs["integer"]
        assert isinstance(integer, Input) and integer.value == "42"  # its default
        integer.value = "101"
        await pilot.press("ctrl+s")
        problems = str(form.query_one("#form-problems", Static).render())
        assert problems == "Integer: at most 100"
        assert app.screen is form
        name = form.inputs["name"]
        assert isinstance(name, Input) and name.value == "Ada"  # nothing typed is lost
        integer.value = "7"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: len(results(driver)) == 1, 20)
        await next_form(pilot, app)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: len(results(driver)) == 2, 20)
        await next_form(pilot, app)
        await pilot.press("escape")
        await until(pilot, lambda: finished(driver), 20)
    accepted, declined, cancelled = results(driver)
    assert "User provided the requested information" in accepted
    assert "- Name: Ada" in accepted and "- Favorite Integer: 7" in accepted
    assert declined.startswith("[the person chose decline when the MCP server ev asked")
    assert "User declined" in declined
    assert cancelled.startswith("[the person chose cancel when the MCP server ev asked")
    assert "User cancelled" in cancelled


@pytest.mark.anyio
async def test_a_call_shows_its_progress_and_a_stopped_run_closes_its_form(
    driver: Driver,
) -> None:
    app = MissionControl(driver)
    seen: list[str] = []

    def progressed() -> bool:
        seen.extend(str(card.title) for card in app.cards.values())
        return any(" · 1/2 " in title for title in seen)

    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#prompt").insert(script({"tools": [LONG]}, ASK))  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, progressed, 20)
        await next_form(pilot, app)
        form = app.screen
        long_card = next(iter(app.cards.values()))
        title = str(long_card.title)
        assert "(progress 2 of 2)" in title and "· 2/2" not in title  # it ended: no live part
        await pilot.press("ctrl+c")  # stop the run: the question closes unanswered
        await until(pilot, lambda: finished(driver), 20)
        assert isinstance(form, FormScreen) and form.is_dismissed
        assert not isinstance(app.screen, FormScreen)
    ends = [r["outcome"] for r in records(driver) if r["type"] == "run_finished"]
    assert ends == ["cancelled"]


def test_the_form_on_the_real_binary_in_a_terminal(everything: Path, tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    write_settings(home, {"ev": everything_def(everything)}, 'approval_mode = "auto"\n')
    prompt = script(ASK, {"text": "thanks"})
    terminal = Terminal(["--approval-mode", "full", "--prompt", prompt], workspace, home)
    try:
        terminal.wait_for("ev asks:", 30)
        # The form may arrive over several reads: wait for each part, not for the first frame.
        terminal.wait_for("Please provide inputs for the following fields:")
        screen = terminal.wait_for("Ctrl+N decline")
        assert "Ctrl+S send" in screen
        terminal.settle(APPROVAL_ARM_MS / 1000)
        terminal.send("Grace")
        terminal.send("\x13")  # Ctrl+S
        assert terminal.wait_exit(30) == 0
    finally:
        terminal.close()
    (session,) = (home / "sessions").glob("*.jsonl")
    stored = [json.loads(line) for line in session.read_text().splitlines()]
    (result,) = [r["result"] for r in stored if r["type"] == "tool" and "result" in r]
    assert "- Name: Grace" in result
