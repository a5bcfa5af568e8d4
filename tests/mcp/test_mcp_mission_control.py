"""MCP in Mission Control, against the reference server `@modelcontextprotocol/server-everything`
(conftest.py) and servers that fail: `/mcp` and `/status` say each server's real state (one
that failed at startup with why, one whose process died, a disabled one), `/mcp reconnect`
connects one again, a server's prompts are commands (`/mcp__ev__args-prompt CITY`) whose
messages become the user's message, and an `@ev:URI` mention attaches the resource the model
is sent (a local HTTP server records the request). Pilot tests of the real app and driver,
and the real binary on a pty."""

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from magi_code.mcp.definitions import canonical_digest
from magi_code.mission_control import commands
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.driver import Driver, startup
from magi_code.mission_control.widgets import PromptArea, UserMessage
from mission_control.helpers import anyio_backend, until
from mission_control.terminal import Terminal
from mission_control.test_app import SIZE, ended, kinds, notices, type_and_send
from providers.local_server import LocalServer, Reply, sse

__all__ = ["anyio_backend"]

DOCUMENT = "demo://resource/static/document/architecture.md"
CHAT_ANSWER = sse(
    (None, {"choices": [{"index": 0, "delta": {"content": "Read it."}}]}),
    (None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    (None, "[DONE]"),
)


def failing(code: int, said: str) -> dict[str, Any]:
    script = f"import sys; print({said!r}, file=sys.stderr); sys.exit({code})"
    return {"command": sys.executable, "args": ["-c", script], "enabled": True}


def flaky(entry: Path, flag: Path) -> dict[str, Any]:
    """Fails while `flag` is absent; once it exists, it is the everything server."""
    script = (
        f"import os, sys\nif not os.path.exists({str(flag)!r}):\n"
        "    print('not yet', file=sys.stderr); sys.exit(4)\n"
        f"os.execvp('node', ['node', {str(entry)!r}, 'stdio'])\n"
    )
    return {"command": sys.executable, "args": ["-c", script], "enabled": True}


def write_settings(home: Path, servers: dict[str, dict[str, Any]], head: str = "") -> None:
    home.mkdir(exist_ok=True)
    approved = [canonical_digest(name, d) for name, d in servers.items() if d["enabled"]]
    text = head + f"[mcp]\napproved = {json.dumps(approved)}\n"
    for name, definition in servers.items():
        table = "\n".join(f"{key} = {json.dumps(value)}" for key, value in definition.items())
        text += f"[mcp.servers.{name}]\n{table}\n"
    (home / "settings.toml").write_text(text)


def everything_def(entry: Path, enabled: bool = True) -> dict[str, Any]:
    return {"command": "node", "args": [str(entry), "stdio"], "enabled": enabled}


def mc_driver(tmp_path: Path, servers: dict[str, dict[str, Any]], head: str = "") -> Driver:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    write_settings(home, servers, head)
    env = {"MC_HOME": str(home), "PATH": os.environ.get("PATH", "")}
    admitted, _ = startup(str(workspace), env, skip_failed_mcp=True)
    return Driver(admitted)


@pytest.fixture
def servers(everything: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    return {
        "ev": everything_def(everything),
        "bad": failing(3, "boom: no config"),
        "flaky": flaky(everything, tmp_path / "flag"),
        "off": everything_def(everything, enabled=False),
    }


@pytest.fixture
def driver(tmp_path: Path, servers: dict[str, dict[str, Any]]) -> Iterator[Driver]:
    made = mc_driver(tmp_path, servers)
    yield made
    made.close()


def prompt_text(app: MissionControl) -> str:
    return app.query_one(PromptArea).text


@pytest.mark.anyio
async def test_mcp_and_status_say_each_servers_real_state(driver: Driver) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/mcp")
        await until(pilot, lambda: "MCP servers:" in notices(app))
        said = notices(app)
        assert driver.admitted.mcp is not None
        tools = len(driver.admitted.mcp.connections["ev"].tools)
        assert f"  ev{' ' * 15}connected  {tools} tools, 4 prompts\n" in said
        assert "bad              failed\n    it exited with status 3" in said
        assert "boom: no config" in said
        assert "flaky            failed" in said and "not yet" in said
        assert "off              disabled" in said
        assert "/mcp__ev__args-prompt city [state]" in said
        await type_and_send(pilot, app, "/status")
        await until(pilot, lambda: "MCP servers   " in notices(app))
        line = "bad (failed), ev (connected), flaky (failed), off (disabled) - /mcp says why"
        assert line in notices(app)
        pid = driver.admitted.mcp.connections["ev"].pid
        assert pid is not None
        os.killpg(pid, signal.SIGKILL)  # the server dies after startup
        await until(pilot, lambda: driver.mcp_states()[1].state == "restarting")
        await type_and_send(pilot, app, "/status")
        await until(pilot, lambda: "ev (restarting)" in notices(app))
        await type_and_send(pilot, app, "/mcp")
        await until(pilot, lambda: "(3 of 3 restarts left)" in notices(app))
    assert driver.attachment is None  # nothing reached the model


@pytest.mark.anyio
async def test_mcp_reconnect_connects_a_failed_server_and_offers_its_prompts(
    driver: Driver, tmp_path: Path
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        assert "mcp__flaky__simple-prompt" not in commands.COMMANDS
        await type_and_send(pilot, app, "/mcp reconnect flaky")  # still failing
        await until(
            pilot, lambda: "flaky failed to connect: it exited with status 4" in notices(app)
        )
        (tmp_path / "flag").touch()
        await type_and_send(pilot, app, "/mcp reconnect flaky")
        await until(pilot, lambda: "Reconnected flaky." in notices(app))
        assert "mcp__flaky__simple-prompt" in commands.COMMANDS  # the `/` picker's registry
        assert [s.state for s in driver.mcp_states() if s.name == "flaky"] == ["connected"]
        await type_and_send(pilot, app, "/mcp reconnect off")
        await until(pilot, lambda: "off is disabled in the settings" in notices(app))
        await type_and_send(pilot, app, "/mcp reconnect nosuch")
        await until(pilot, lambda: "No MCP server is named 'nosuch'" in notices(app))
        await type_and_send(pilot, app, "/mcp restart ev")
        await until(pilot, lambda: "Usage: /mcp lists the MCP servers" in notices(app))
        assert driver.admitted.mcp is not None
        old = driver.admitted.mcp.connections["ev"].pid
        await type_and_send(pilot, app, "/mcp reconnect ev")  # a connected one: a fresh process
        await until(pilot, lambda: "Reconnected ev." in notices(app))
        new = driver.admitted.mcp.connections["ev"].pid
        assert new is not None and new != old
        with pytest.raises(ProcessLookupError):
            os.kill(old or 0, 0)


@pytest.mark.anyio
async def test_a_prompt_command_sends_the_servers_messages_and_needs_its_arguments(
    driver: Driver,
) -> None:
    app = MissionControl(driver)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, app, "/mcp__ev__args-prompt")
        await until(pilot, lambda: "Not sent:" in notices(app))
        assert "/mcp__ev__args-prompt needs city. Usage: /mcp__ev__args-prompt city [state]" in (
            notices(app)
        )
        assert prompt_text(app) == "/mcp__ev__args-prompt"  # nothing lost
        assert driver.attachment is None  # nothing reached the model
        app.query_one(PromptArea).insert(' "New York" state=NY')
        await pilot.press("enter")
        await until(pilot, lambda: ended(app, driver))
        await type_and_send(pilot, app, "/mcp__ev__simple-prompt")
        await until(pilot, lambda: ended(app, driver, 2))
        shown = [m.text for m in app.query(UserMessage)]
        assert shown[0] == '/mcp__ev__args-prompt "New York" state=NY'
    sent = [r["text"] for r in kinds(driver, "user")]
    assert sent == ["What's weather in New York, NY?", "This is a simple prompt without arguments."]


@pytest.mark.anyio
async def test_an_mcp_mention_attaches_the_resource_the_model_is_sent(
    tmp_path: Path, everything: Path
) -> None:
    with LocalServer() as server:
        server.script(
            "/v1/chat/completions",
            Reply(200, [CHAT_ANSWER], {"content-type": "text/event-stream"}, content_length=True),
        )
        head = (
            'provider = "local"\nmodel = "m"\n[providers.local]\nwire_api = "openai-chat"\n'
            f'base_url = "{server.url}/v1"\nmodels = ["m"]\n'
        )
        driver = mc_driver(tmp_path, {"ev": everything_def(everything)}, head)
        try:
            app = MissionControl(driver)
            async with app.run_test(size=SIZE) as pilot:
                await type_and_send(pilot, app, "what is in @nope:demo://x ?")
                await until(pilot, lambda: "Not sent:" in notices(app))
                assert "@nope:demo://x: no MCP server nope is connected (connected: ev" in (
                    notices(app)
                )
                assert prompt_text(app) == "what is in @nope:demo://x ?"
                app.query_one(PromptArea).clear()
                await type_and_send(pilot, app, "what is in @ev:demo://resource/missing?")
                await until(pilot, lambda: "could not be read" in notices(app))
                app.query_one(PromptArea).clear()
                await type_and_send(pilot, app, f"Summarize @ev:{DOCUMENT}.")
                await until(pilot, lambda: ended(app, driver))
                assert "Attached 1 MCP resource." in notices(app)
        finally:
            driver.close()
    assert len(server.requests) == 1  # the refused prompts never reached the model
    sent = json.loads(server.requests[0].body)["messages"][-1]["content"]
    text = sent if isinstance(sent, str) else "".join(p.get("text", "") for p in sent)
    assert text.startswith(f"Summarize @ev:{DOCUMENT}.\n\n[resource: uri={DOCUMENT}")
    assert "# Everything Server – Architecture" in text


def test_mcp_and_a_prompt_command_on_the_real_binary(tmp_path: Path, everything: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    write_settings(home, {"ev": everything_def(everything), "bad": failing(3, "boom")})
    terminal = Terminal([], workspace, home, columns=120, rows=40)
    try:
        terminal.wait_for("failed to start")  # the question on the plain terminal
        terminal.send("c\n")
        terminal.wait_for("idle", 30)
        terminal.send("/mcp\r")
        screen = terminal.wait_for("tools, 4 prompts")
        assert "bad              failed" in screen and "boom" in screen
        terminal.send("/mcp__ev__args-prompt Paris\r")
        terminal.wait_for("tokens this turn")
    finally:
        terminal.close()
    sessions = list((home / "sessions").glob("*.jsonl"))
    users = [json.loads(line) for line in sessions[0].read_text().splitlines()]
    assert [r["text"] for r in users if r["type"] == "user"] == ["What's weather in Paris?"]
