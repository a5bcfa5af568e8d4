"""A working day in Mission Control (issue 29): the queue and type-ahead, commands that keep
their word, approvals that wait for the person and hear why not, a resume that opens at the end.
Pilot tests of the real app and driver, and the real binary on a pty for the queue."""

import re
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Label, OptionList, Static

from magi_code.limits import APPROVAL_ARM_MS
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.screens import ApprovalScreen, PickerScreen
from magi_code.mission_control.widgets import PromptArea, QueuedMessage, UserMessage
from magi_code.providers.base import ModelRequest, UserText
from magi_code.providers.fixture import FixtureProvider
from mission_control.helpers import (
    SIZE,
    WRITE,
    asked,
    ended,
    idle,
    kinds,
    make_driver,
    notices,
    records,
    type_and_send,
    until,
)
from mission_control.terminal import Terminal, prompt
from support.sessions import script

HANG = {"text": "working ", "hang": True}  # a turn that runs until Esc stops it


def picker_title(app: MissionControl) -> str:
    screen = app.screen
    return str(screen.query_one(Label).render()) if isinstance(screen, PickerScreen) else ""


@pytest.mark.anyio
async def test_enter_during_a_turn_queues_each_message_and_read_only_commands_run_at_once(
    driver: Driver,
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        first = script(HANG)
        await type_and_send(pilot, app, first)
        await until(pilot, lambda: app.control is not None)
        await type_and_send(pilot, app, "/status")
        assert "provider      fixture" in notices(app)  # at once, the turn still running
        await type_and_send(pilot, app, "second")
        await type_and_send(pilot, app, "/model")  # not read-only: waits its turn
        await type_and_send(pilot, app, "third")
        assert [q.text for q in app.query(QueuedMessage)] == ["second", "/model", "third"]
        assert "3 queued" in str(app.query_one("#status").render())
        assert app.query_one(PromptArea).text == ""  # nothing left behind to merge with
        assert app.control is not None
        await pilot.press("up")  # the last queued message comes back to be edited
        prompt_area = app.query_one(PromptArea)
        assert prompt_area.text == "third"
        prompt_area.insert(" edited")
        await pilot.press("enter")
        await pilot.press("up")
        assert prompt_area.text == "third edited"
        await pilot.press("up")  # the editor is not empty: prompt history, not the queue
        prompt_area.clear()
        await pilot.press("up")  # "/model": taken back and removed
        assert prompt_area.text == "/model"
        prompt_area.clear()  # removed
        prompt_area.insert("third edited")
        await pilot.press("enter")
        assert [q.text for q in app.query(QueuedMessage)] == ["second", "third edited"]
        await pilot.press("escape")  # the turn ends (stopped): the queue goes on in order
        await until(pilot, lambda: ended(app, driver, 3), seconds=15)
        assert not app.query(QueuedMessage)
    assert [r["text"] for r in kinds(driver, "user")] == [first, "second", "third edited"]


@pytest.mark.anyio
async def test_keys_typed_right_after_enter_start_the_next_message(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script(HANG))
        await pilot.press("n", "e", "x", "t", "enter", "a", "f", "t")
        assert [q.text for q in app.query(QueuedMessage)] == ["next"]
        assert app.query_one(PromptArea).text == "aft"
        await pilot.press("escape")
        await until(pilot, lambda: ended(app, driver, 2), seconds=15)
        assert app.query_one(PromptArea).text == "aft"


@pytest.mark.anyio
async def test_exit_quits_as_quit_does(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/exit")
        await pilot.pause(0.1)
    assert app.return_value == 0


@pytest.mark.anyio
async def test_compact_text_is_the_summarys_instructions(
    driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[ModelRequest] = []
    stream = FixtureProvider.stream

    def watched(self: FixtureProvider, request: ModelRequest) -> Any:
        asked.append(request)
        return stream(self, request)

    monkeypatch.setattr(FixtureProvider, "stream", watched)
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "one")
        await until(pilot, lambda: ended(app, driver))
        await type_and_send(pilot, app, "two")
        await until(pilot, lambda: ended(app, driver, 2))
        await type_and_send(pilot, app, "/compact keep the file names")
        await until(pilot, lambda: "Compacted" in notices(app))
    [summary] = [r for r in asked if r.purpose == "compaction"]
    last = summary.items[-1]
    assert isinstance(last, UserText) and last.text.endswith("\nkeep the file names")
    assert kinds(driver, "compaction")


@pytest.mark.anyio
async def test_hydrated_history_opens_at_its_end(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=(60, 15)) as pilot:
        for turns in range(1, 7):
            await type_and_send(pilot, app, script({"text": f"reply {turns}\n\n" * 4}))
            await until(pilot, lambda: ended(app, driver, turns))  # noqa: B023 - awaited here
    assert driver.attachment is not None
    session_id = driver.attachment.session_id
    driver.close_session()
    driver.open_session(session_id)
    again = MissionControl(driver)
    async with again.run_test(size=(60, 15)) as pilot:
        await until(pilot, lambda: len(again.query(UserMessage)) == 6)
        log = again.log_view
        await until(pilot, lambda: log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y)
        assert idle(again)
    assert records(driver)


def test_the_queue_on_a_real_terminal(tmp_path: Path) -> None:
    """Type while a turn runs: shown queued, sent when it ends, nothing merged or lost;
    `/status` answers at once."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    terminal = Terminal([], workspace, home, columns=120, rows=40)
    try:
        terminal.wait_for("idle")
        slow = {"text": "streaming ", "repeat": 200, "delay_ms": 20}  # four seconds
        terminal.send(prompt(slow) + "\r")
        terminal.wait_for("streaming")
        terminal.send("/status\r")
        terminal.wait_for("this session")
        terminal.send("queued one\rqueued two\r")  # two messages in one write
        screen = terminal.wait_for("running · 2 queued")
        assert "queued › queued one" in screen and "queued › queued two" in screen, screen
        started = time.monotonic()
        deadline = started + 20
        while time.monotonic() < deadline:
            terminal.pump(0.05)
            sent = [r["text"] for r in stored_users(home)]
            if len(sent) == 3 and finished(home) == 3:
                break
        assert sent[1:] == ["queued one", "queued two"], terminal.text()
        terminal.settle(APPROVAL_ARM_MS / 1000)
        assert "queued ›" not in terminal.text()
        terminal.send("at idle\rtyped ahead")  # keys right after Enter start the next prompt
        wait_finished(terminal, home, 4)
        terminal.settle(0.5)
        assert [r["text"] for r in stored_users(home)][3:] == ["at idle"]
        assert "typed ahead" in terminal.text().split("tokens this turn")[-1]
    finally:
        terminal.close()


def wait_finished(terminal: Terminal, home: Path, count: int) -> None:
    deadline = time.monotonic() + 15
    while finished(home) < count:
        assert time.monotonic() < deadline, terminal.text()
        terminal.pump(0.05)


def stored_users(home: Path) -> list[dict[str, Any]]:
    return [r for r in stored(home) if r["type"] == "user"]


def finished(home: Path) -> int:
    return len([r for r in stored(home) if r["type"] == "run_finished"])


def stored(home: Path) -> list[dict[str, Any]]:
    import json

    files = list((home / "sessions").glob("*.jsonl")) if (home / "sessions").exists() else []
    if not files:
        return []
    return [json.loads(line) for line in files[0].read_bytes().split(b"\n") if line]


@pytest.mark.anyio
async def test_an_approval_waits_for_the_person_and_rings(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        rang: list[str] = []
        app.bell = lambda: rang.append("bell")  # type: ignore[method-assign]
        assert app._driver is not None
        written = app._driver.write

        def write(data: str) -> None:
            rang.append(data)
            written(data)

        app._driver.write = write  # type: ignore[method-assign]
        await type_and_send(pilot, app, script({"tools": [WRITE]}))
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen) and screen.approval.expires_in_ms is None
        countdown = screen.query_one("#approval-countdown", Static)
        await until(pilot, lambda: "waiting for you" in str(countdown.render()))
        assert rang[0] == "bell"
        assert any("\x1b]9;magi-code asks: write a.txt\x07" in str(said) for said in rang)
        assert any("\x1b]777;notify;magi-code;" in str(said) for said in rang)
        await pilot.press("escape")


@pytest.mark.anyio
async def test_deny_and_say_why_reaches_the_model_as_the_tools_result(
    driver: Driver, workspace: Path
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await asked(pilot, app, script({"tools": [WRITE]}))
        await pilot.press("d")
        await until(pilot, lambda: bool(app.screen.query("#approval-note")))
        await pilot.press(*"name it b.txt", "enter")  # "n" and "a" type, not answer
        await until(pilot, lambda: ended(app, driver))
    [done] = [r for r in kinds(driver, "tool") if r["state"] != "started"]
    assert done["state"] == "failed"
    assert done["result"] == "The user did not allow this action. They said: name it b.txt"
    assert not (workspace / "a.txt").exists()


@pytest.mark.anyio
async def test_the_approval_keys_stay_on_a_60x15_screen(driver: Driver) -> None:
    long = {"name": "write_file", "arguments": {"path": "a.txt", "content": "line\n" * 80}}
    app = MissionControl(driver)
    async with app.run_test(size=(60, 15)) as pilot:
        await type_and_send(pilot, app, script({"tools": [long]}))
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.pause(0.2)
        keys = app.screen.query_one("#approval-keys", Static)
        region = keys.region
        assert region.height >= 1 and region.y >= 0 and region.bottom <= 15
        assert "deny and say why" in str(keys.render())
        await pilot.press("escape")


@pytest.mark.anyio
async def test_model_opens_on_the_current_model(tmp_path: Path, workspace: Path) -> None:
    settings = (
        '[providers.fixture]\nwire_api = "fixture"\nmodels = ["fixture-model", "other-model"]\n'
    )
    driver = make_driver(tmp_path, workspace, settings)
    driver.select("fixture", "other-model")
    app = MissionControl(driver)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, app, "/model")
            await until(pilot, lambda: isinstance(app.screen, PickerScreen))
            listed = app.screen.query_one(OptionList)
            assert listed.highlighted is not None
            highlighted = listed.get_option_at_index(listed.highlighted)
            assert highlighted.id == "fixture\tother-model"
            await pilot.press("escape")
    finally:
        driver.close()


@pytest.mark.anyio
async def test_the_resume_picker_searches_first_prompts_and_shows_sizes_and_ages(
    driver: Driver,
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        ids = []
        for said in ("alpha work", "beta work"):
            await type_and_send(pilot, app, "/new")
            await type_and_send(pilot, app, said)
            await until(pilot, lambda: ended(app, driver))
            assert driver.attachment is not None
            ids.append(driver.attachment.session_id)
        await type_and_send(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, PickerScreen))
        listed = app.screen.query_one(OptionList)
        labels = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        assert all(re.match(r"just now +\d{3} B  fixture-model ", label) for label in labels)
        await pilot.press(*"ALPHA")
        await until(pilot, lambda: listed.option_count == 1)
        await pilot.press("enter")
        await until(pilot, lambda: driver.attachment and driver.attachment.session_id == ids[0])
        await until(pilot, lambda: "alpha work" in [m.text for m in app.query(UserMessage)])


@pytest.mark.anyio
async def test_a_resume_restores_the_context_figure_and_exit_names_the_session(
    driver: Driver,
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script({"text": "x" * 100, "repeat": 400}))
        await until(pilot, lambda: ended(app, driver), seconds=15)
        assert driver.attachment is not None
        session_id = driver.attachment.session_id
        await type_and_send(pilot, app, "/new")
        await type_and_send(pilot, app, f"/resume {session_id}")
        await until(pilot, lambda: "Resumed session" in notices(app))
        assert driver.tally.context >= 10_000  # 40,000 bytes of reply, about 10,000 tokens
        assert "context 8% of 128,000" in str(app.query_one("#status").render())
        await type_and_send(pilot, app, "/quit")
    said = f"session {session_id} · continue it: magi-code resume {session_id}"
    assert str(app.transcript[-1]) == said


@pytest.mark.anyio
async def test_fork_copies_the_conversation_into_a_new_session(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/fork")
        await until(pilot, lambda: "Nothing to fork yet" in notices(app))
        await type_and_send(pilot, app, "before the fork")
        await until(pilot, lambda: ended(app, driver))
        assert driver.attachment is not None
        original = driver.attachment.session_id
        await type_and_send(pilot, app, "/fork")
        await until(pilot, lambda: "Forked into session" in notices(app))
        assert driver.attachment.session_id != original
        await type_and_send(pilot, app, "after the fork")
        await until(pilot, lambda: ended(app, driver, 2))
    assert [r["text"] for r in kinds(driver, "user")] == ["before the fork", "after the fork"]
    driver.open_session(original)
    assert [r["text"] for r in kinds(driver, "user")] == ["before the fork"]


@pytest.mark.anyio
async def test_model_offers_the_reasoning_effort_where_the_wire_has_one(
    tmp_path: Path, workspace: Path
) -> None:
    settings = (
        '[providers.fixture]\nwire_api = "fixture"\nmodels = ["fixture-model"]\n'
        '[providers.local]\nwire_api = "openai-chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'models = ["m1"]\n'
    )
    driver = make_driver(tmp_path, workspace, settings)
    app = MissionControl(driver)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, app, "/model")
            await until(pilot, lambda: isinstance(app.screen, PickerScreen))
            listed = app.screen.query_one(OptionList)
            keys = [listed.get_option_at_index(i).id for i in range(listed.option_count)]
            listed.highlighted = keys.index("local\tm1")
            await pilot.press("enter")
            await until(pilot, lambda: picker_title(app) == "Reasoning effort")
            await pilot.press("down", "down", "down", "enter")
            await until(pilot, lambda: driver.thinking == "high")
            assert driver.model == "m1"
    finally:
        driver.close()


@pytest.mark.anyio
async def test_a_long_turn_rings_at_its_end_only_when_the_terminal_is_unfocused(
    driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from magi_code.mission_control import app as app_module

    monkeypatch.setattr(app_module, "NOTIFY_AFTER_S", 0)  # every turn counts as long
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        rang: list[str] = []
        app.bell = lambda: rang.append("bell")  # type: ignore[method-assign]
        await type_and_send(pilot, app, "focused")
        await until(pilot, lambda: ended(app, driver))
        assert rang == []
        await type_and_send(pilot, app, script({"text": "a", "repeat": 20, "delay_ms": 20}))
        app.app_focus = False  # the person went to another window (a key would refocus)
        await until(pilot, lambda: ended(app, driver, 2))
        assert rang == ["bell"]
