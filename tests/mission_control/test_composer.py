"""The Mission Control composer (issue 29, items 2 and 3) through Textual's Pilot: the `/`
command list, the `@` file picker, Ctrl+R, `\\`+Enter, collapsed pastes; the real app, driver,
runner, session files and fixture provider, headless. The real binary on a pty: a bracketed
paste collapses and the model (a local HTTP server) receives all of it."""

import json
import time
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Input, OptionList

from magi_code.limits import PASTE_INLINE_CHARS, PASTE_INLINE_LINES
from magi_code.mission_control import commands
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver
from magi_code.mission_control.screens import PickerScreen
from magi_code.mission_control.suggestions import Suggestions
from magi_code.mission_control.widgets import PromptArea, UserMessage
from mission_control.helpers import until
from mission_control.terminal import Terminal
from mission_control.test_app import SIZE, ended, idle, kinds, notices, type_and_send
from providers.local_server import LocalServer, Reply, sse

LINES = "\n".join(f"line {n} of the paste" for n in range(PASTE_INLINE_LINES + 1))


def options(menu: Suggestions) -> list[str]:
    return [str(menu.get_option_at_index(n).prompt) for n in range(menu.option_count)]


def sent(driver: Driver) -> list[object]:
    return [r["text"] for r in kinds(driver, "user")]


@pytest.mark.anyio
async def test_slash_lists_the_registered_commands_and_tab_or_enter_completes(
    driver: Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(commands.COMMANDS, "rewind", "go back to an earlier prompt")
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        prompt, menu = app.query_one(PromptArea), app.query_one(Suggestions)
        await pilot.press("slash")
        await until(pilot, lambda: menu.is_open)
        assert options(menu)[0] == "/help  " + commands.COMMANDS["help"]
        await pilot.press("r", "e", "w")
        await until(pilot, lambda: options(menu)[:1] == ["/rewind  go back to an earlier prompt"])
        await pilot.press("tab")
        assert prompt.text == "/rewind " and not menu.is_open
        prompt.clear()
        await pilot.press("slash", "s", "t")  # status, then others with an s and a t in order
        await until(pilot, lambda: menu.is_open and options(menu)[0].startswith("/status"))
        await pilot.press("down", "up", "enter")  # Enter on a word not typed whole completes it
        assert prompt.text == "/status " and "provider" not in notices(app)
        prompt.clear()
        await pilot.press("slash", "h", "e", "l", "p")
        await until(pilot, lambda: menu.is_open)
        await pilot.press("enter")  # typed whole: Enter sends it
        await until(pilot, lambda: "Commands:" in notices(app))
        assert prompt.text == ""
        await pilot.press("slash", "n")
        await until(pilot, lambda: menu.is_open)
        await pilot.press("escape")  # closes the list, nothing else
        assert not menu.is_open and prompt.text == "/n" and app.is_running


@pytest.mark.anyio
async def test_at_opens_a_fuzzy_picker_of_the_workspace_files_the_ignore_files_leave(
    driver: Driver, workspace: Path
) -> None:
    (workspace / ".git").mkdir()  # a repository: its .gitignore counts
    (workspace / ".gitignore").write_text("generated/\n")
    for name in ["src/alpha_module.py", "src/beta.py", "README.md", "generated/alpha_copy.py"]:
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("")
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        prompt, menu = app.query_one(PromptArea), app.query_one(Suggestions)
        prompt.insert("compare ")
        await pilot.press("at", "a", "l", "p")
        await until(pilot, lambda: menu.is_open and menu.trigger and menu.trigger.query == "alp")
        assert options(menu) == ["@src/alpha_module.py  "]  # the ignored copy is not offered
        await pilot.press("enter")  # takes the file; nothing is sent
        assert prompt.text == "compare @src/alpha_module.py " and not menu.is_open
        await pilot.press("w", "i", "t", "h", "space", "at", "b", "t")
        await until(pilot, lambda: menu.is_open and options(menu) == ["@src/beta.py  "])
        await pilot.press("tab")
        assert prompt.text.endswith("@src/beta.py ")
        await pilot.press("at", "z", "z", "z")
        await until(  # the walk answered "zzz" (a stale answer is dropped): nothing matches
            pilot,
            lambda: menu.trigger and menu.trigger.query == "zzz" and menu.files is not None,
        )
        assert not menu.is_open
        await pilot.press("space")
        prompt.insert("@README.md")
        await until(pilot, lambda: menu.is_open and menu.trigger.query == "README.md")  # type: ignore[union-attr]
        await pilot.press("enter")  # the highlighted file is typed whole: Enter sends
        await until(pilot, lambda: ended(app, driver))
    assert sent(driver) == ["compare @src/alpha_module.py with @src/beta.py @zzz @README.md"]


@pytest.mark.anyio
async def test_ctrl_r_searches_the_prompt_history_and_loads_the_choice(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        for n, text in enumerate(["the cat sat", "a dog ran", "the cat sat", "a bird flew"], 1):
            await type_and_send(pilot, app, text)
            await until(pilot, lambda n=n: ended(app, driver, n))  # type: ignore[misc]
        prompt = app.query_one(PromptArea)
        prompt.insert("half typed")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, PickerScreen))
        picker = app.screen
        listed = picker.query_one(OptionList)
        labels = [str(listed.get_option_at_index(n).prompt) for n in range(listed.option_count)]
        assert labels == ["a bird flew", "the cat sat", "a dog ran"]  # newest first, each once
        picker.query_one(Input).value = "dog"
        await pilot.pause()
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, PickerScreen))
        assert prompt.text == "a dog ran"
        await pilot.press("ctrl+r", "escape")  # nothing chosen: the editor keeps its text
        await until(pilot, lambda: not isinstance(app.screen, PickerScreen))
        assert prompt.text == "a dog ran"


@pytest.mark.anyio
async def test_enter_after_a_backslash_adds_a_line_instead_of_sending(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("a", "backslash", "enter", "b", "backslash", "x", "enter")
        await until(pilot, lambda: ended(app, driver))
    assert sent(driver) == ["a\nb\\x"]  # a backslash not before Enter stays


@pytest.mark.anyio
async def test_a_large_paste_is_a_token_in_the_editor_and_sent_whole(driver: Driver) -> None:
    app = MissionControl(driver)
    big = "y" * (PASTE_INLINE_CHARS + 1)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptArea)
        app.post_message(events.Paste(LINES.replace("\n", "\r\n")))  # as a terminal sends it
        first = f"[Pasted text #1, {PASTE_INLINE_LINES + 1} lines]"
        await until(pilot, lambda: prompt.text == first)
        await pilot.press("space", "a", "n", "d", "space")
        app.post_message(events.Paste(big))
        await until(pilot, lambda: prompt.text == first + " and [Pasted text #2, 1 line]")
        app.post_message(events.Paste("small\npaste"))  # within both bounds: inserted as is
        await until(pilot, lambda: prompt.text.endswith("]small\npaste"))
        await pilot.press("enter")
        await until(pilot, lambda: ended(app, driver))
        shown = app.query(UserMessage).last()
        assert shown.text == sent(driver)[0]
    assert sent(driver) == [LINES + " and " + big + "small\npaste"]


@pytest.mark.anyio
async def test_a_token_is_deleted_or_overtyped_whole(driver: Driver) -> None:
    token = f"[Pasted text #1, {PASTE_INLINE_LINES + 1} lines]"
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptArea)
        for column, key, left in [
            (1 + len(token), "backspace", "ab"),  # at its end
            (1 + len(token) // 2, "backspace", "ab"),  # inside it
            (1, "delete", "ab"),  # at its start
            (4, "z", "azb"),  # a character typed inside it takes its place
            (1, "backspace", token + "b"),  # before it: the character before goes, not it
        ]:
            prompt.clear()
            prompt.insert("a")
            app.post_message(events.Paste(LINES))
            await until(pilot, lambda: prompt.text == "a" + token)
            prompt.insert("b")
            prompt.move_cursor((0, column))
            await pilot.press(key)
            await until(pilot, lambda left=left: prompt.text == left)  # type: ignore[misc]
            assert bool(prompt.pastes.texts) == (token in left)
        await pilot.press("enter")
        await until(pilot, lambda: ended(app, driver))
    assert sent(driver) == [LINES + "b"]


@pytest.mark.anyio
async def test_a_recalled_large_prompt_comes_back_as_a_token(driver: Driver) -> None:
    app = MissionControl(driver)
    big = "z" * (PASTE_INLINE_CHARS + 1)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptArea)
        for n, text in enumerate([big, "x" * PASTE_INLINE_CHARS], 1):
            app.post_message(events.Paste(text))
            await until(pilot, lambda: prompt.text != "")
            await pilot.press("enter")
            await until(pilot, lambda n=n: ended(app, driver, n))  # type: ignore[misc]
        await pilot.press("up")
        assert prompt.text == "x" * PASTE_INLINE_CHARS  # at the bound: text to edit
        await pilot.press("up")
        assert prompt.text == "[Pasted text #1, 1 line]"
        await pilot.press("enter")
        await until(pilot, lambda: ended(app, driver, 3))
        assert idle(app)
    assert sent(driver)[2] == big


def test_a_bracketed_paste_on_a_real_terminal_reaches_the_model_whole(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    pasted = "\n".join(f"diff line {n}: \t'quoted' \"and\" ünïcode" for n in range(40))
    said = {"index": 0, "delta": {"content": "got it all"}, "finish_reason": "stop"}
    with LocalServer() as server:
        (home / "settings.toml").write_text(
            'provider = "local"\nmodel = "m"\n[providers.local]\nwire_api = "openai-chat"\n'
            f'base_url = "{server.url}/v1"\n'
        )
        body = sse((None, {"choices": [said]}), (None, "[DONE]"))
        server.script(
            "/v1/chat/completions",
            Reply(chunks=[body], headers={"content-type": "text/event-stream"}),
        )
        terminal = Terminal([], workspace, home, columns=120, rows=40)
        try:
            terminal.wait_for("idle")
            terminal.send("/he")
            terminal.wait_for(commands.COMMANDS["help"])  # the list, with descriptions
            terminal.send("\x7f\x7f\x7f")  # Backspace: the list closes with the word
            deadline = time.monotonic() + 10
            while commands.COMMANDS["help"] in terminal.text():
                assert time.monotonic() < deadline, terminal.text()
                terminal.pump(0.05)
            terminal.send("\x1b[200~" + pasted.replace("\n", "\r") + "\x1b[201~")
            terminal.wait_for("[Pasted text #1, 40 lines]")
            # new lines: Alt+Enter (ESC CR), Ctrl+J (LF), `\` then Enter, Shift+Enter as the
            # kitty protocol reports it; then Enter sends
            terminal.send(" a\x1b\rb\nc\\\rd\x1b[13;2ue\r")
            terminal.wait_for("got it all")
            deadline = time.monotonic() + 10
            while not server.requests and time.monotonic() < deadline:
                terminal.pump(0.05)
        finally:
            terminal.close()
    (request,) = server.requests
    last = json.loads(request.body)["messages"][-1]
    assert last == {"role": "user", "content": pasted + " a\nb\nc\nd\ne"}
