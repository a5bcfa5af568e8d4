"""One grant, every face: "allow for this session" on a write to notes.md covers that exact
call again and never a write to ~/.bashrc, in Mission Control, ACP, the local agent and
`exec`'s modes (tools/grants.py is the one rule; the faces only render the question)."""

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import text_block

from conformance.turns import attach, start, until
from magi_code.client import LocalAgentClient, environment
from magi_code.limits import APPROVAL_ARM_MS
from magi_code.mission_control.app import MissionControl
from magi_code.mission_control.screens import ApprovalScreen
from magi_code.tools.approvals import Asked
from magi_code.tools.base import Access
from magi_code.tools.grants import GrantedPolicy, SessionGrants
from magi_code.tools.policy import Policy
from mission_control.helpers import make_driver
from mission_control.helpers import until as mc_until
from support.acp import agent
from support.exec import exec_run, json_lines, named
from support.sessions import script


def write(path: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": "granted?\n"}}


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    workspace, home, user = tmp_path / "ws", tmp_path / "mc-home", tmp_path / "user"
    workspace.mkdir()
    user.mkdir()
    return workspace, home, user


def test_the_rule_covers_the_exact_call_only(tmp_path: Path) -> None:
    notes, bashrc = tmp_path / "notes.md", tmp_path / "home" / ".bashrc"
    grants = SessionGrants()
    grants.grant(Asked("write_file", Access("write", (notes,)), "{}"))
    policy = GrantedPolicy.over(Policy(), grants)
    assert policy.decide("write_file", Access("write", (notes,)), tmp_path) == "allow"
    assert policy.decide("write_file", Access("write", (bashrc,)), tmp_path) == "ask"
    assert policy.decide("edit_file", Access("write", (notes,)), tmp_path) == "ask"


def test_acp(places: tuple[Path, Path, Path]) -> None:
    workspace, home, user = places
    bashrc = user / ".bashrc"

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            client.answers = ["allow_always"]
            await conn.prompt(
                session_id=sid, prompt=[text_block(script({"tools": [write("notes.md")]}))]
            )
            await conn.prompt(
                session_id=sid, prompt=[text_block(script({"tools": [write("notes.md")]}))]
            )
            assert len(client.asked) == 1  # the same call: granted
            client.answers = ["reject_once"]
            await conn.prompt(
                session_id=sid, prompt=[text_block(script({"tools": [write(str(bashrc))]}))]
            )
            assert len(client.asked) == 2  # another path: asked again

    asyncio.run(asyncio.wait_for(scenario(), timeout=60))
    assert (workspace / "notes.md").exists() and not bashrc.exists()


@pytest.mark.anyio
async def test_mission_control(places: tuple[Path, Path, Path], tmp_path: Path) -> None:
    workspace, _, user = places
    bashrc = user / ".bashrc"
    driver = make_driver(tmp_path, workspace)
    app = MissionControl(driver)
    try:
        async with app.run_test(size=(100, 30)) as pilot:

            async def send(call: dict[str, Any]) -> None:
                from magi_code.mission_control.widgets import PromptArea

                app.query_one(PromptArea).insert(script({"tools": [call]}))
                await pilot.press("enter")

            await send(write("notes.md"))
            await mc_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            await pilot.pause(APPROVAL_ARM_MS / 1000 + 0.05)
            await pilot.press("a")  # allow for this session
            await mc_until(pilot, lambda: app.control is None and app.state == "idle")
            (workspace / "notes.md").unlink()
            await send(write("notes.md"))
            await mc_until(pilot, lambda: (workspace / "notes.md").exists())  # granted
            await mc_until(pilot, lambda: app.control is None and app.state == "idle")
            await send(write(str(bashrc)))
            await mc_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))  # asked
            await pilot.pause(APPROVAL_ARM_MS / 1000 + 0.05)
            await pilot.press("n")
            await mc_until(pilot, lambda: app.control is None and app.state == "idle")
    finally:
        driver.close()
    assert not bashrc.exists()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_local_agent(places: tuple[Path, Path, Path]) -> None:
    workspace, home, user = places
    bashrc = user / ".bashrc"
    with LocalAgentClient.spawn(cwd=workspace, env=environment(home)) as child:
        session_id = attach(child)
        for path, allow in (("notes.md", True), (str(bashrc), False)):
            run_id = start(child, session_id, script({"tools": [write(path)]}))
            asked = until(child, "approval.requested")[-1]  # each call is asked
            answer = {"session_id": session_id, "run_id": run_id, "allow": allow}
            child.request("approval.answer", {**answer, "approval_id": asked.data["approval_id"]})
            until(child, "run.finished")
    assert (workspace / "notes.md").exists() and not bashrc.exists()


def test_exec_modes(places: tuple[Path, Path, Path]) -> None:
    workspace, home, user = places
    bashrc = user / ".bashrc"
    for path in ("notes.md", str(bashrc)):
        edit = script({"tools": [write(path)]})
        done = exec_run(["--json", "--approval-mode", "edits", edit], workspace, home)
        assert done.returncode == 0, done.stderr
        refused = named(json_lines(done.stdout), "diagnostic")

        assert bool(refused) is (path != "notes.md")
    assert (workspace / "notes.md").exists() and not bashrc.exists()
