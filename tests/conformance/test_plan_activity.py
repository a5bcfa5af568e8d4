"""`update_plan` on the local agent (`serve --stdio`, real pipes): a tool activity like any
other, of a kind the spec allows, whose summary counts steps and never shows one; no event the
spec lacks (the plan itself is for the faces that take detail events)."""

import json

from magi_code.runner.events import EVENT_NAMES
from support.sessions import script

from .conftest import Spawn
from .turns import attach, pages, run

STEP = "Rotate the deploy key"


def test_a_plan_is_a_tool_activity_and_nothing_more(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    plan = [{"step": STEP, "status": "in_progress"}, {"step": "Tell ops", "status": "pending"}]
    call = {"name": "update_plan", "arguments": {"explanation": "first", "plan": plan}}
    _, events = run(child, sid, script({"tools": [call]}, {"text": "Planned."}))
    assert {e.name for e in events} <= set(EVENT_NAMES.values())
    assert "approval.requested" not in {e.name for e in events}  # it never asks
    activities = [e.data for e in events if e.name == "activity"]
    assert [(a["kind"], a["name"], a["state"]) for a in activities] == [
        ("tool", "update_plan", "started"),
        ("tool", "update_plan", "completed"),
    ]
    assert activities[-1]["summary"] == "plan: 0 of 2 done, step 1 in progress"
    assert STEP not in json.dumps([e.data for e in events])
    finished = events[-1].data
    assert finished["outcome"] == "completed"
    entries = [e for p in pages(child, sid, finished["revision"]) for e in p["entries"]]
    assert [e["kind"] for e in entries] == ["user", "activity", "assistant"]
    assert STEP not in entries[1]["text"]
