"""Mission Control's behaviour through Textual's Pilot: the real app, driver, runner, session
files and fixture provider, headless."""

from pathlib import Path

import pytest
from textual import events

from magi_code.limits import APPROVAL_ARM_MS, FACE_PROMPT_BYTES
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.screens import ApprovalScreen, PickerScreen
from magi_code.mission_control.widgets import (
    AssistantMessage,
    PromptArea,
    ToolCard,
    UserMessage,
)
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
from support.sessions import script

pytestmark = pytest.mark.anyio


async def test_enter_sends_and_newline_keys_add_lines(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a", "shift+enter", "b", "alt+enter", "c", "ctrl+j", "d", "enter")
        await until(pilot, lambda: ended(app, driver))
        assert app.query(AssistantMessage)
    assert [r["text"] for r in kinds(driver, "user")] == ["a\nb\nc\nd"]


async def test_a_paste_is_one_message(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptArea)
        app.post_message(events.Paste("first line\nsecond line\nthird line"))
        await until(pilot, lambda: prompt.text.count("\n") == 2)
        await pilot.press("enter")
        await until(pilot, lambda: ended(app, driver))
    assert [r["text"] for r in kinds(driver, "user")] == ["first line\nsecond line\nthird line"]


async def test_a_paste_up_to_the_face_prompt_bound_is_kept_and_one_byte_more_refused(
    driver: Driver,
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptArea)
        app.post_message(events.Paste("x" * (FACE_PROMPT_BYTES - 1)))
        await until(pilot, lambda: prompt.text == "[Pasted text #1, 1 line]")
        app.post_message(events.Paste("é"))  # 2 bytes: one past the bound
        await until(pilot, lambda: "Paste refused" in notices(app))
        assert prompt.text == "[Pasted text #1, 1 line]"  # nothing of it inserted, nothing cut
        app.post_message(events.Paste("y"))  # exactly the bound
        await until(pilot, lambda: prompt.text.endswith("]y"))
        await pilot.press("enter")
        await until(pilot, lambda: ended(app, driver))
    assert kinds(driver, "user")[0]["text"] == "x" * (FACE_PROMPT_BYTES - 1) + "y"


async def test_esc_cancels_keeps_the_partial_reply_and_the_session_goes_on(
    driver: Driver,
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script({"text": "partial words ", "hang": True}))
        await until(pilot, lambda: any(m.shown for m in app.query(AssistantMessage)))
        await pilot.press("escape")
        await until(pilot, lambda: idle(app))
        assert "cancelled" in notices(app)
        assert "partial words " in [m.shown for m in app.query(AssistantMessage)]
        await type_and_send(pilot, app, "again")
        await until(pilot, lambda: idle(app) and len(kinds(driver, "run_finished")) == 2)
    outcomes = [r["outcome"] for r in kinds(driver, "run_finished")]
    assert outcomes == ["cancelled", "completed"]
    assert kinds(driver, "assistant_chunk")[0]["text"] == "partial words "


async def test_first_ctrl_c_stops_the_turn_second_at_an_empty_prompt_quits(
    driver: Driver,
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script({"text": "busy ", "hang": True}))
        await until(pilot, lambda: app.control is not None and driver.attachment)
        await until(pilot, lambda: kinds(driver, "user"))
        await pilot.press("ctrl+c")
        await until(pilot, lambda: idle(app))
        assert app.is_running
        await pilot.press("ctrl+c")
        assert app.is_running  # the first at idle only arms
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running)
    assert app.return_value == 0
    assert [r["outcome"] for r in kinds(driver, "run_finished")] == ["cancelled"]


async def test_ctrl_d_quits_only_at_an_empty_prompt(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a", "b", "left", "ctrl+d")
        assert app.is_running and app.query_one(PromptArea).text == "a"
        await pilot.press("backspace", "ctrl+d")
        await until(pilot, lambda: not app.is_running)
    assert app.return_value == 0


async def test_quitting_during_a_turn_ends_the_session_truthfully(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script({"text": "busy ", "hang": True}))
        await until(pilot, lambda: driver.attachment and kinds(driver, "user"))
        app.leave(0)
        await until(pilot, lambda: not app.is_running)
    assert [r["outcome"] for r in kinds(driver, "run_finished")] == ["cancelled"]


async def test_approval_shows_the_diff_and_keys_typed_ahead_never_answer_it(
    driver: Driver, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("old text\n")
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        slow = {"text": "writing slowly", "deltas": 10, "delay_ms": 40, "tools": [WRITE]}
        await type_and_send(pilot, app, script(slow))
        await until(pilot, lambda: any(m.shown for m in app.query(AssistantMessage)))
        assert not isinstance(app.screen, ApprovalScreen)
        await pilot.press("y", "a")  # typed ahead while the reply streams
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert screen.approval.preview is not None
        assert "-old text" in screen.approval.preview.body
        assert "+new text" in screen.approval.preview.body
        await pilot.pause(0.1)
        assert app.screen is screen and (workspace / "a.txt").read_text() == "old text\n"
        # what was typed before the modal went to the next prompt; a key arriving as the modal
        # opened went nowhere: neither answered it
        assert app.query_one(PromptArea).text in ("y", "ya")
        await pilot.pause(APPROVAL_ARM_MS / 1000 + 0.05)
        await pilot.press("y")
        await until(pilot, lambda: idle(app))
        card = app.query_one(ToolCard)
        assert card.state == "completed" and not card.collapsed  # the edit's diff is shown
    assert (workspace / "a.txt").read_text() == "new text\n"


async def test_a_key_queued_before_the_modal_opened_is_not_an_answer(
    driver: Driver, workspace: Path
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script({"tools": [WRITE]}))
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        await pilot.pause(APPROVAL_ARM_MS / 1000 + 0.05)
        early = events.Key("y", "y")  # queued before the modal opened
        early.time = screen.opened - 0.001
        screen.post_message(early)
        quick = events.Key("y", "y")  # inside the arming window: typed through
        quick.time = screen.opened + APPROVAL_ARM_MS / 1000 - 0.001
        screen.post_message(quick)
        await pilot.pause(0.1)
        assert app.screen is screen and not (workspace / "a.txt").exists()
        await pilot.press("n")
        await until(pilot, lambda: idle(app))
        assert app.query_one(ToolCard).state == "failed"
    assert not (workspace / "a.txt").exists()


async def test_an_expired_approval_closes_and_denies(tmp_path: Path, workspace: Path) -> None:
    # Long enough to see the modal on a loaded machine (it takes some 150 ms to show on an
    # idle one; at 400 ms it could come and go between two looks in the full suite).
    driver = make_driver(tmp_path, workspace, expiry_ms=1500)
    app = MissionControl(driver)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, app, script({"tools": [WRITE]}))
            await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            await until(pilot, lambda: idle(app))
            assert not isinstance(app.screen, ApprovalScreen)
            await until(pilot, lambda: "expired" in notices(app))
        assert [r["state"] for r in kinds(driver, "tool")] == ["started", "failed"]
    finally:
        driver.close()
    assert not (workspace / "a.txt").exists()


async def test_allow_for_this_session_answers_the_same_call_later(
    driver: Driver, workspace: Path
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await asked(pilot, app, script({"tools": [WRITE]}))
        await pilot.press("a")
        await until(pilot, lambda: idle(app))
        (workspace / "a.txt").unlink()
        await type_and_send(pilot, app, script({"tools": [WRITE]}))
        await until(pilot, lambda: idle(app) and len(kinds(driver, "run_finished")) == 2)
        other = {"name": "write_file", "arguments": {"path": "b.txt", "content": "x"}}
        await asked(pilot, app, script({"tools": [other]}))  # another path asks
        await pilot.press("n")
        await until(pilot, lambda: idle(app))
    assert (workspace / "a.txt").read_text() == "new text\n"
    assert not (workspace / "b.txt").exists()


async def test_resume_picker_hydrates_the_stored_history(tmp_path: Path, workspace: Path) -> None:
    first = make_driver(tmp_path, workspace)
    app = MissionControl(first)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script({"text": "stored **reply**"}))
        await until(pilot, lambda: idle(app) and first.attachment and kinds(first, "run_finished"))
    session_id = first.attachment.session_id if first.attachment else ""
    first.close()
    second = make_driver(tmp_path, workspace)
    app = MissionControl(second)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, app, "/resume")
            await until(pilot, lambda: isinstance(app.screen, PickerScreen))
            await pilot.press("enter")
            await until(pilot, lambda: app.query(AssistantMessage))
            assert second.attachment is not None
            assert second.attachment.session_id == session_id
            assert "stored **reply**" in [m.shown for m in app.query(AssistantMessage)]
            assert len(app.query(UserMessage)) == 1
            await type_and_send(pilot, app, "next")
            await until(pilot, lambda: idle(app) and len(kinds(second, "run_finished")) == 2)
    finally:
        second.close()


async def test_model_command_records_the_selection_as_session_open_restores_it(
    tmp_path: Path, workspace: Path
) -> None:
    settings = (
        '[providers.fixture]\nwire_api = "fixture"\nmodels = ["fixture-model", "other-model"]\n'
    )
    driver = make_driver(tmp_path, workspace, settings)
    app = MissionControl(driver)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, app, "hello")
            await until(pilot, lambda: idle(app) and driver.attachment and records(driver))
            await type_and_send(pilot, app, "/model")
            await until(pilot, lambda: isinstance(app.screen, PickerScreen))
            await pilot.press("down", "enter")
            await until(pilot, lambda: driver.model == "other-model")
            await type_and_send(pilot, app, "/model nonsense")
            await until(pilot, lambda: "model_unknown" in notices(app))
            said = notices(app)
            assert "The model was not changed: model_unknown" in said  # mid-session, not
            assert "startup failed" not in said  # a startup's wording
        session_id = driver.attachment.session_id if driver.attachment else ""
    finally:
        driver.close()
    reopened = make_driver(tmp_path, workspace)
    try:
        reopened.open_session(session_id)
        assert reopened.model == "other-model"
    finally:
        reopened.close()


async def test_compact_summarizes_through_the_runner(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "one")
        await until(pilot, lambda: ended(app, driver))
        await type_and_send(pilot, app, "two")
        await until(pilot, lambda: ended(app, driver, 2))
        await type_and_send(pilot, app, "/compact")
        await until(pilot, lambda: "Compacted" in notices(app))
        assert driver.attachment is not None  # what is left weighs something: not 0
        assert driver.tally.context == driver.history_tokens(driver.attachment) > 0
    compaction = kinds(driver, "compaction")
    assert len(compaction) == 1 and compaction[0]["text"].startswith("Summary of")  # type: ignore[union-attr]
    assert records(driver)[-1]["type"] == "run_finished"


async def test_prompt_mode_exits_with_the_runs_outcome(tmp_path: Path, workspace: Path) -> None:
    for text, code in ((script({"text": "ok"}), 0), (script({"error": "server_error"}), 1)):
        driver = make_driver(tmp_path, workspace)
        app = MissionControl(driver, prompt=text)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: not pilot.app.is_running)
        finally:
            driver.close()
        assert app.return_value == code
    driver = make_driver(tmp_path, workspace)
    app = MissionControl(driver, prompt=script({"text": "x ", "hang": True}))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.query(AssistantMessage))
            await pilot.press("escape")
            await until(pilot, lambda: not app.is_running)
    finally:
        driver.close()
    assert app.return_value == 130


async def test_narrow_and_resized_terminals_keep_working(driver: Driver, workspace: Path) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=(32, 10)) as pilot:
        await type_and_send(pilot, app, script({"text": "a reply " * 20, "tools": [WRITE]}))
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.resize_terminal(24, 8)
        await pilot.pause(0.05)
        await pilot.resize_terminal(160, 48)
        await pilot.pause(APPROVAL_ARM_MS / 1000)
        await pilot.press("y")
        await until(pilot, lambda: idle(app))
    assert (workspace / "a.txt").exists()


async def test_status_and_unknown_commands(driver: Driver, workspace: Path) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "hi")
        await until(pilot, lambda: ended(app, driver))
        await type_and_send(pilot, app, "/status")
        await until(pilot, lambda: "session " in notices(app))
        assert driver.attachment is not None and driver.attachment.session_id in notices(app)
        assert str(workspace) in notices(app)
        await type_and_send(pilot, app, "/bogus")
        await until(pilot, lambda: "Unknown command /bogus" in notices(app))
    assert len(kinds(driver, "user")) == 1  # neither command reached the model


async def test_bang_is_the_persons_own_command_unasked_and_goes_with_the_next_prompt(
    driver: Driver, workspace: Path
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "!echo made > made.txt; echo printed; exit 3")
        await until(pilot, lambda: idle(app) and app.query(ToolCard))
        assert not isinstance(app.screen, ApprovalScreen)  # never asked
        card = app.query_one(ToolCard)
        assert card.state == "failed" and card.summary == "exit status 3"
        assert driver.attachment is None or not driver.attachment.durable  # nothing sent yet
        await type_and_send(pilot, app, "what did it say?")
        await until(pilot, lambda: ended(app, driver))
    assert (workspace / "made.txt").read_text() == "made\n"
    [sent] = [str(r["text"]) for r in kinds(driver, "user")]
    assert "echo made > made.txt; echo printed; exit 3` myself; exit status 3" in sent
    assert "printed\n" in sent and sent.endswith("\n\nwhat did it say?")


async def test_approval_modes_widen_asks_but_never_a_settings_deny(
    tmp_path: Path, workspace: Path
) -> None:
    settings = '[permissions]\nrules = [{tool = "shell", command = "rm *", decision = "deny"}]\n'
    driver = make_driver(tmp_path, workspace, settings)
    app = MissionControl(driver)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, app, "/permissions edits")
            await until(pilot, lambda: driver.grants.mode == "edits")
            await type_and_send(pilot, app, script({"tools": [WRITE]}))
            await until(pilot, lambda: ended(app, driver))  # no approval asked
            assert (workspace / "a.txt").exists()
            shell = {"name": "shell", "arguments": {"command": "touch s.txt"}}
            await asked(pilot, app, script({"tools": [shell]}))  # edits only
            await pilot.press("n")
            await until(pilot, lambda: ended(app, driver, 2))
            await type_and_send(pilot, app, "/permissions")
            await until(pilot, lambda: isinstance(app.screen, PickerScreen))
            await pilot.press("down", "down", "enter")
            await until(pilot, lambda: driver.grants.mode == "full")
            await type_and_send(pilot, app, script({"tools": [shell]}))
            await until(pilot, lambda: ended(app, driver, 3))
            assert (workspace / "s.txt").exists()
            remove = {"name": "shell", "arguments": {"command": "rm a.txt"}}
            await type_and_send(pilot, app, script({"tools": [remove]}))
            await until(pilot, lambda: ended(app, driver, 4))
    finally:
        driver.close()
    assert (workspace / "a.txt").exists()  # the settings' deny stands in full mode


async def test_up_and_down_recall_prompts_of_this_workspace_across_sessions(
    tmp_path: Path, workspace: Path
) -> None:
    first = make_driver(tmp_path, workspace)
    app = MissionControl(first)
    async with app.run_test(size=SIZE) as pilot:
        for text in ("first prompt", "second\nprompt"):
            await type_and_send(pilot, app, text)
            await until(pilot, lambda: idle(app) and first.attachment is not None)
            await until(pilot, lambda: idle(app) and bool(records(first)))
        await until(pilot, lambda: ended(app, first, 2))
    first.close()
    second = make_driver(tmp_path, workspace)
    app = MissionControl(second)
    try:
        async with app.run_test(size=SIZE) as pilot:
            prompt = app.query_one(PromptArea)
            await pilot.press("up")
            assert prompt.text == "second\nprompt"
            await pilot.press("up")  # the cursor is on the last line: up moves within
            await pilot.press("up")
            assert prompt.text == "first prompt"
            await pilot.press("down")
            assert prompt.text == "second\nprompt"
    finally:
        second.close()


async def test_tab_completes_an_at_path_mention_the_file_picker_does_not_offer(
    driver: Driver, workspace: Path
) -> None:
    (workspace / ".git").mkdir()  # a repository: its .gitignore counts
    (workspace / ".gitignore").write_text("build/\n")  # the picker leaves it out
    (workspace / "build").mkdir()
    (workspace / "build" / "out_one.txt").write_text("")
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptArea)
        prompt.insert("look at @bui")
        await pilot.press("tab")
        assert prompt.text == "look at @build/"
        await pilot.press("o", "tab")
        assert prompt.text == "look at @build/out_one.txt"


async def test_diff_shows_the_workspace_git_diff(driver: Driver, workspace: Path) -> None:
    import subprocess

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(workspace)]
    (workspace / "f.txt").write_text("before\n")
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    (workspace / "f.txt").write_text("after\n")
    (workspace / "new.txt").write_text("")
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/diff")
        await until(pilot, lambda: "+after" in notices(app))
        assert "-before" in notices(app) and "untracked: new.txt" in notices(app)


async def test_reasoning_is_shown_and_usage_reaches_the_status(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=(160, 30)) as pilot:  # the bar whole
        await type_and_send(
            pilot, app, script({"reasoning": "thinking it over", "text": "okay, that is done"})
        )
        await until(pilot, lambda: ended(app, driver))
        assert "thinking it over" in str(app.query_one(".reasoning-text").render())
        assert driver.tally.session_input > 0 and driver.tally.session_output > 0
        status = str(app.query_one("#status").render())
        assert f"tokens {driver.tally.session_input:,} in" in status
        tally = driver.tally
        assert f"tokens this turn: {tally.turn_input:,} in, {tally.turn_output:,} out" in notices(
            app
        )


async def test_init_asks_the_model_for_an_agents_file(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/init")
        await until(pilot, lambda: ended(app, driver))
    (sent,) = kinds(driver, "user")
    assert str(sent["text"]).startswith("Write a starter AGENTS.md")


async def test_ctrl_c_at_an_approval_stops_the_turn_and_denies(
    driver: Driver, workspace: Path
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, script({"tools": [WRITE]}))
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("ctrl+c")
        await until(pilot, lambda: ended(app, driver))
        assert not isinstance(app.screen, ApprovalScreen) and app.is_running
    assert [r["outcome"] for r in kinds(driver, "run_finished")] == ["cancelled"]
    assert not (workspace / "a.txt").exists()


async def test_resume_without_an_id_opens_the_picker_at_launch(
    tmp_path: Path, workspace: Path
) -> None:
    first = make_driver(tmp_path, workspace)
    app = MissionControl(first)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "remember me")
        await until(pilot, lambda: ended(app, first))
    first.close()
    second = make_driver(tmp_path, workspace)
    app = MissionControl(second, pick_session=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(app.screen, PickerScreen))
            await pilot.press("enter")
            await until(pilot, lambda: any(u.text == "remember me" for u in app.query(UserMessage)))
    finally:
        second.close()


async def test_full_mode_still_asks_for_a_protected_path(driver: Driver, workspace: Path) -> None:
    hook = {"name": "write_file", "arguments": {"path": ".git/hooks/pre-commit", "content": "x"}}
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/permissions full")
        await until(pilot, lambda: driver.grants.mode == "full")
        await asked(pilot, app, script({"tools": [hook]}))  # not widened
        await pilot.press("n")
        await until(pilot, lambda: ended(app, driver))
    assert not (workspace / ".git").exists()


async def test_new_and_clear_start_another_session_and_the_old_one_stays(
    driver: Driver,
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "first")
        await until(pilot, lambda: ended(app, driver))
        first = driver.attachment.session_id if driver.attachment else ""
        await type_and_send(pilot, app, "/clear")
        await until(pilot, lambda: not app.query(UserMessage) and "New session" in notices(app))
        assert driver.attachment is not None and driver.attachment.session_id != first
        await type_and_send(pilot, app, "second")
        await until(pilot, lambda: ended(app, driver))
        second = driver.attachment.session_id
        await type_and_send(pilot, app, "/new")
        await until(pilot, lambda: driver.attachment and driver.attachment.session_id != second)
    assert [r["text"] for r in kinds(driver, "user")] == []
    assert len(list(driver.store.directory.glob("*.jsonl"))) == 2  # the last one has no file yet
    assert first in [row.session_id for row in driver.sessions()]


async def test_diff_outside_a_git_work_tree_says_so(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/diff")
        await until(pilot, lambda: "not a git work tree" in notices(app))
