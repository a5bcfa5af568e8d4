"""`magi-code exec --json` and the plan: the real console script, a real MC_HOME, the fixture
model calling `update_plan`. Each update is one `plan.updated` line, in its place between the
call's activities, redacted; the call never asks, even under `--approval-mode ask`; a refused
call tells the model what to fix and updates nothing."""

import json
from pathlib import Path
from typing import Any

import pytest

from magi_code.redact import REDACTED
from support.exec import exec_run as run
from support.exec import json_lines as lines
from support.sessions import records, script

SECRET = "ghp_" + "c" * 36


def plan_round(*steps: tuple[str, str], **more: Any) -> dict[str, Any]:
    plan = [{"step": step, "status": status} for step, status in steps]
    return {"tools": [{"name": "update_plan", "arguments": {"plan": plan, **more}}]}


def named(parsed: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [line["data"] for line in parsed if line["event"] == event]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


def test_each_update_is_one_plan_updated_line(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "mc-home"
    prompt = script(
        plan_round(("Read the code", "in_progress"), (f"Rotate {SECRET}", "pending")),
        plan_round(
            ("Read the code", "completed"),
            (f"Rotate {SECRET}", "in_progress"),
            explanation="the code is read",
        ),
        {"text": "Done."},
    )
    done = run(["--json", "--approval-mode", "ask", prompt], workspace, home)
    assert done.returncode == 0, done.stderr
    parsed = lines(done.stdout)
    session_id, run_id = parsed[0]["data"]["session_id"], parsed[1]["data"]["run_id"]
    first, second = named(parsed, "plan.updated")
    shown = f"Rotate {REDACTED}"
    assert first == {
        "session_id": session_id,
        "run_id": run_id,
        "explanation": None,
        "plan": [
            {"step": "Read the code", "status": "in_progress"},
            {"step": shown, "status": "pending"},
        ],
    }
    assert second["explanation"] == "the code is read"
    assert [step["status"] for step in second["plan"]] == ["completed", "in_progress"]
    assert SECRET not in done.stdout.decode()
    # each update in its place: after its call started, before it completed
    order = [(line["event"], line["data"].get("state")) for line in parsed]
    for nth in range(2):
        started = [i for i, e in enumerate(order) if e == ("activity", "started")][nth]
        completed = [i for i, e in enumerate(order) if e == ("activity", "completed")][nth]
        updated = [i for i, e in enumerate(order) if e[0] == "plan.updated"][nth]
        assert started < updated < completed
    activities = named(parsed, "activity")
    assert {a["name"] for a in activities} == {"update_plan"}
    assert activities[-1]["summary"] == "plan: 1 of 2 done, step 2 in progress"
    assert not named(parsed, "approval.requested") and not named(parsed, "diagnostic")
    # the session keeps the call's arguments: what a reopened session reads its plan from
    stored = [r for r in records(home, session_id) if r["type"] == "tool"]
    kept = [r["arguments"] for r in stored if r["state"] == "completed"]
    assert json.loads(kept[-1])["explanation"] == "the code is read"


def test_a_refused_call_says_what_to_fix_and_updates_nothing(
    workspace: Path, tmp_path: Path
) -> None:
    home = tmp_path / "mc-home"
    prompt = script(
        plan_round(("one", "in_progress"), ("two", "in_progress")),
        {"text": "Fixed."},
    )
    done = run(["--json", prompt], workspace, home)
    assert done.returncode == 0, done.stderr
    parsed = lines(done.stdout)
    assert not named(parsed, "plan.updated")
    [output] = named(parsed, "tool.output")
    told = json.loads(output["output"])
    assert output["ok"] is False and told["error"] == "rejected: invalid_arguments"
    assert told["fix"].startswith("steps 1, 2 are in_progress: at most one step")
    assert parsed[-1]["data"]["outcome"] == "completed"


def test_without_json_the_plan_is_progress_on_stderr(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "mc-home"
    prompt = script(plan_round(("only step", "completed")), {"text": "All done."})
    done = run([prompt], workspace, home)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"All done.\n"
    assert b"[update_plan completed] plan: 1 of 1 done" in done.stderr
