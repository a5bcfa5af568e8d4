"""The local agent and the OS sandbox: where the kernel offers none, the first turn says so
once (`diagnostic` `sandbox_unavailable`); with `approval_mode = "auto"` a sandboxed command
runs without an `approval.requested`, and a refused one is offered outside the sandbox."""

from pathlib import Path

import pytest

from magi_code.tools.sandbox.modes import support
from support.sessions import script

from .conftest import Spawn
from .turns import attach, run, start, until


def shell(command: str) -> dict[str, object]:
    return {"tools": [{"name": "shell", "arguments": {"command": command}}]}


def test_no_landlock_is_said_once_at_the_first_turn(spawn: Spawn) -> None:
    child = spawn(MC_NO_LANDLOCK="1")
    session_id = attach(child)
    _, events = run(child, session_id, "hello")
    said = [e.data for e in events if e.name == "diagnostic"]
    assert [d["code"] for d in said] == ["sandbox_unavailable"]
    assert "No OS sandbox here" in said[0]["summary"]
    _, events = run(child, session_id, "again")
    assert [e for e in events if e.name == "diagnostic"] == []


@pytest.mark.skipif(support()[1] is not None, reason=f"no Landlock here: {support()[1]}")
def test_auto_runs_what_the_sandbox_contains_and_offers_the_rest_outside(
    spawn: Spawn, workspace: Path, home: Path
) -> None:
    home.mkdir()
    (home / "settings.toml").write_text('approval_mode = "auto"\n')
    child = spawn()
    session_id = attach(child)
    _, events = run(child, session_id, script(shell("touch made")))
    assert [e for e in events if e.name == "approval.requested"] == []
    assert (workspace / "made").exists()
    # Refused inside the sandbox (/etc is not writable there), and denied outside it here.
    run_id = start(child, session_id, script(shell("touch /etc/made-by-a-sandboxed-command")))
    asked = until(child, "approval.requested")[-1]
    assert asked.data["summary"].startswith("Run outside the sandbox?")
    answer = {"session_id": session_id, "run_id": run_id, "approval_id": asked.data["approval_id"]}
    assert child.request("approval.answer", {**answer, "allow": False}) == {"recorded": True}
    finished = until(child, "run.finished")[-1]
    assert finished.data["outcome"] == "completed"
