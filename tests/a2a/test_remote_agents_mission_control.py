"""A remote A2A agent in Mission Control: the `a2a_peer` call shows as cards (the tool's, with
the remote's reply streamed in, and the `subagent` activity's), in a Pilot test and on the real
binary on a pty; the remote is tests/a2a/remote_agent.py, a real server process."""

from collections.abc import Callable
from pathlib import Path

import pytest
from test_remote_agents import Remote, start

from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.widgets import PromptArea, ToolCard
from mission_control.helpers import make_driver, until
from mission_control.terminal import Terminal, prompt
from support.sessions import script

__all__ = ["start"]  # the fixture, taken from the tool's tests


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def settings(home: Path, url: str) -> None:
    home.mkdir(exist_ok=True)
    (home / "settings.toml").write_text(f'[a2a.agents.peer]\nurl = "{url}"\n')


def call(text: str) -> dict[str, object]:
    return {"name": "a2a_peer", "arguments": {"prompt": text}}


@pytest.mark.anyio
async def test_the_call_shows_as_cards_with_the_reply_in_mission_control(
    start: Callable[..., Remote], tmp_path: Path
) -> None:
    remote = start()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings(tmp_path / "home", remote.url)
    driver = make_driver(tmp_path, workspace)
    try:
        driver.set_approval_mode("full")
        app = MissionControl(driver)
        async with app.run_test(size=(100, 40)) as pilot:
            app.query_one(PromptArea).insert(script({"tools": [call("from pilot")]}))
            await pilot.press("enter")

            def done() -> bool:
                cards = list(app.query(ToolCard))
                return len(cards) == 2 and all(c.state == "completed" for c in cards)

            await until(pilot, done, seconds=20)
            headings = [card.heading() for card in app.query(ToolCard)]
            assert all("a2a peer (127.0.0.1)" in heading for heading in headings), headings
            bodies = [str(card.body.render()) for card in app.query(ToolCard)]
            assert any("echo: from pilot" in body for body in bodies), bodies
    finally:
        driver.close()


def test_the_real_binary_shows_the_remote_reply(
    start: Callable[..., Remote], tmp_path: Path
) -> None:
    remote = start()
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    settings(home, remote.url)
    rounds = prompt({"tools": [call("from the terminal")]}, {"text": "the peer said it"})
    terminal = Terminal(["--approval-mode", "full", "--prompt", rounds], workspace, home)
    try:
        terminal.wait_for("the peer said it", seconds=30)
        assert terminal.wait_exit() == 0
        assert "a2a peer (127.0.0.1)" in terminal.text()
    finally:
        terminal.close()
