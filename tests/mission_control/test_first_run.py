"""The first-run screen (issue 28, item 2): each choice through Textual's Pilot, the key
stored as `magi-code login` stores it, the settings written with the one TOML writer and read
back, Esc keeping the fixture; and the whole path on a real pty, from a fresh MC_HOME to the
first answer of a local OpenAI-compatible server chosen as "an OpenAI-compatible URL"."""

import json
import stat
import subprocess
from pathlib import Path

import pytest
from textual.pilot import Pilot

from magi_code.client import environment
from magi_code.config import settings_file
from magi_code.config.credentials import CredentialStore
from magi_code.config.settings import load
from magi_code.mission_control.driver import Launch
from magi_code.mission_control.first_run import FirstRun, needed
from mission_control.terminal import Terminal
from providers.local_server import LocalServer, Reply, sse
from support.exec import MAGI_CODE

pytestmark = pytest.mark.anyio
SIZE = (100, 30)
KEY = "sk-test-FIRSTRUN0123456789abcdef"
CHAT_ANSWER = sse(
    (None, {"choices": [{"index": 0, "delta": {"content": "Hi from the local server."}}]}),
    (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    (None, "[DONE]"),
)
CHOICE = {"openai": 0, "anthropic": 1, "codex": 2, "ollama": 3, "url": 4, "skip": 5}


async def choose(pilot: Pilot[str | None], app: FirstRun, row: int) -> None:
    for _ in range(row):
        await pilot.press("down")
    await pilot.press("enter")
    await pilot.pause()


async def type_in(pilot: Pilot[str | None], text: str) -> None:
    if text:
        await pilot.press(*text)
    await pilot.press("enter")
    await pilot.pause()


def saved(home: Path) -> dict[str, object]:
    return settings_file.read(str(home / "settings.toml"))


def logged_in(tmp_path: Path, provider: str) -> object:
    """The credential file `magi-code login PROVIDER` writes for KEY, parsed."""
    home = tmp_path / "login-home"
    done = subprocess.run(
        [MAGI_CODE, "login", provider, "--api-key-stdin"],
        input=KEY + "\n",
        capture_output=True,
        text=True,
        env=environment(home),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads((home / "credentials.json").read_text())


@pytest.mark.parametrize(
    ("provider", "down", "model"), [("openai", 0, "gpt-5"), ("anthropic", 1, "claude-haiku-4-5")]
)
async def test_a_pasted_key_is_stored_as_login_stores_it_and_the_model_saved(
    tmp_path: Path, provider: str, down: int, model: str
) -> None:
    home = tmp_path / "home"
    app = FirstRun(str(home), {})
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, app, CHOICE[provider])
        await type_in(pilot, KEY)
        await choose(pilot, app, down)  # the catalog's default is first
    assert app.return_value == provider
    credentials = home / "credentials.json"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert json.loads(credentials.read_text()) == logged_in(tmp_path, provider)
    assert saved(home) == {"provider": provider, "model": model}
    assert stat.S_IMODE((home / "settings.toml").stat().st_mode) == 0o600
    loaded = load(str(home / "settings.toml"), str(tmp_path / "nowhere.toml"))
    assert (loaded["provider"], loaded["model"]) == (provider, model)


async def test_no_key_is_refused_unless_the_environment_has_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    app = FirstRun(str(home), {})
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, app, CHOICE["openai"])
        await type_in(pilot, "")
        assert app.step == "key" and app.return_value is None
    app = FirstRun(str(home), {"OPENAI_API_KEY": KEY})
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, app, CHOICE["openai"])
        await type_in(pilot, "")
        await choose(pilot, app, 0)
    assert app.return_value == "openai" and not (home / "credentials.json").exists()
    assert saved(home) == {"provider": "openai", "model": "gpt-5"}


async def test_chatgpt_sign_in_saves_codex_and_leaves_the_sign_in_to_login(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    app = FirstRun(str(home), {})
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, app, CHOICE["codex"])
        await choose(pilot, app, 0)
    assert app.return_value == "codex"
    assert saved(home) == {"provider": "codex", "model": "gpt-5-codex"}
    assert not (home / "credentials.json").exists()


async def test_ollama_without_a_server_offers_the_catalog(tmp_path: Path) -> None:
    home = tmp_path / "home"
    app = FirstRun(str(home), {})
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, app, CHOICE["ollama"])
        await pilot.pause(0.5)
        await choose(pilot, app, 0)
    assert app.return_value == "ollama"
    assert saved(home) == {"provider": "ollama", "model": "gpt-oss:20b"}


async def test_a_url_lists_its_models_and_becomes_a_provider(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home).mkdir()
    (home / "settings.toml").write_text('# mine\napproval_mode = "ask"\n')
    with LocalServer() as server:
        server.script("/v1/models", Reply.json({"data": [{"id": "alpha"}, {"id": "beta"}]}))
        app = FirstRun(str(home), {})
        async with app.run_test(size=SIZE) as pilot:
            await choose(pilot, app, CHOICE["url"])
            await type_in(pilot, server.url + "/v1")
            await pilot.pause(0.5)
            await choose(pilot, app, 1)
    assert app.return_value == "local"
    assert [r.path for r in server.requests] == ["/v1/models"]
    assert saved(home) == {
        "provider": "local",
        "model": "beta",
        "approval_mode": "ask",
        "providers": {"local": {"wire_api": "openai-chat", "base_url": server.url + "/v1"}},
    }
    assert "# mine" in (home / "settings.toml").read_text()  # the rest of the file is kept


async def test_escape_keeps_the_fixture_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for steps in ([], [CHOICE["openai"]]):
        app = FirstRun(str(home), {})
        async with app.run_test(size=SIZE) as pilot:
            for row in steps:
                await choose(pilot, app, row)
            await pilot.press("escape")
            await pilot.pause()
        assert app.return_value == "skip"
    assert not home.exists()


def test_it_is_needed_only_with_no_provider_configured(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", str(tmp_path)
    env = {"MC_HOME": str(home)}
    assert needed(Launch(), env, cwd)
    assert not needed(Launch(prompt="hi"), env, cwd)
    assert not needed(Launch(provider="fixture"), env, cwd)
    assert not needed(Launch(), {**env, "MC_NO_FIRST_RUN": "1"}, cwd)
    CredentialStore(home).set_api_key("openai", KEY)
    assert not needed(Launch(), env, cwd)
    (home / "credentials.json").unlink()
    assert needed(Launch(), env, cwd)
    (home / "settings.toml").write_text('provider = "fixture"\n')
    assert not needed(Launch(), env, cwd)


def test_a_fresh_home_reaches_a_local_server_through_the_first_run_screen(
    tmp_path: Path,
) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    with LocalServer() as server:
        server.script("/v1/models", Reply.json({"data": [{"id": "local-model"}]}))
        server.script(
            "/v1/chat/completions",
            Reply(200, [CHAT_ANSWER], {"content-type": "text/event-stream"}, content_length=True),
        )
        terminal = Terminal([], workspace, home, first_run=True)
        try:
            terminal.wait_for("No provider is configured yet")
            terminal.send("\x1b[B" * CHOICE["url"] + "\r")
            terminal.wait_for("The server's URL")
            terminal.send(server.url + "/v1\r")
            terminal.wait_for("Choose a model of local")
            terminal.send("\r")
            terminal.wait_for("idle", 30)
            assert "local/local-model" in terminal.text()
            terminal.send("hello\r")
            terminal.wait_for("Hi from the local server.", 30)
        finally:
            terminal.close()
    sent = json.loads(server.requests[-1].body)
    assert server.requests[-1].path == "/v1/chat/completions" and sent["model"] == "local-model"
    assert saved(home)["provider"] == "local"


def test_escape_on_a_pty_opens_mission_control_on_the_fixture_saying_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    terminal = Terminal([], tmp_path, home, first_run=True)
    try:
        terminal.wait_for("No provider is configured yet")
        terminal.send("\x1b")
        terminal.wait_for("idle")
        flat = " ".join(terminal.text().split())
        assert "built-in test model `fixture`" in flat and "fixture/fixture-model" in flat
    finally:
        terminal.close()
    assert not (home / "settings.toml").exists()


def test_ctrl_c_at_the_first_run_screen_quits_without_a_traceback(tmp_path: Path) -> None:
    home = tmp_path / "home"
    terminal = Terminal([], tmp_path, home, first_run=True, controlling=True)
    try:
        terminal.wait_for("No provider is configured yet")
        terminal.send("\x03")
        assert terminal.wait_exit() == 1
    finally:
        terminal.close()
    assert b"Traceback" not in terminal.raw and not (home / "settings.toml").exists()


def test_an_existing_top_level_key_is_rewritten_in_place(tmp_path: Path) -> None:
    settings = tmp_path / "settings.toml"
    settings.write_text('# mine\nmodel = "old"\n\n[permissions]\ntrusted_projects = ["/x"]\n')
    settings_file.set_strings(str(settings), {"provider": "openai", "model": "gpt-5"})
    assert settings.read_text() == (
        'provider = "openai"\n# mine\nmodel = "gpt-5"\n\n[permissions]\ntrusted_projects = ["/x"]\n'
    )


def test_chatgpt_sign_in_on_a_pty_saves_codex_and_names_the_login_command(tmp_path: Path) -> None:
    home = tmp_path / "home"
    terminal = Terminal([], tmp_path, home, first_run=True)
    try:
        terminal.wait_for("No provider is configured yet")
        terminal.send("\x1b[B" * CHOICE["codex"] + "\r")
        terminal.wait_for("Choose a model of codex")
        terminal.send("\r")
        assert terminal.wait_exit() == 0
    finally:
        terminal.close()
    assert b"run `magi-code login codex`, then `magi-code`" in terminal.raw
    assert saved(home) == {"provider": "codex", "model": "gpt-5-codex"}
