"""The plan over ACP: the real `magi-code acp` process, the fixture model calling
`update_plan`. Each update is a `plan` session/update (the whole plan, priority medium, ACP's
statuses), in order after its tool call started; a refused call sends none; `session/load`
replays each plan after its tool call, so the client ends on the session's last plan."""

import json
from pathlib import Path
from typing import Any

from acp import text_block
from acp.schema import AgentPlanUpdate, ToolCallProgress, ToolCallStart

from magi_code.redact import REDACTED
from support.acp import agent, run
from support.sessions import script

SECRET = "sk-" + "d" * 40


def plan_round(*steps: tuple[str, str]) -> dict[str, Any]:
    plan = [{"step": step, "status": status} for step, status in steps]
    return {"tools": [{"name": "update_plan", "arguments": {"plan": plan}}]}


def entries(update: AgentPlanUpdate) -> list[tuple[str, str, str]]:
    return [(e.content, e.priority, e.status) for e in update.entries]


def test_each_update_is_a_plan_and_load_replays_them(workspace: Path, home: Path) -> None:
    prompt = script(
        plan_round(("Read the code", "in_progress"), (f"Rotate {SECRET}", "pending")),
        plan_round(("Read the code", "completed"), (f"Rotate {SECRET}", "in_progress")),
        {"text": "Done."},
    )
    first = [
        ("Read the code", "medium", "in_progress"),
        (f"Rotate {REDACTED}", "medium", "pending"),
    ]
    last = [
        ("Read the code", "medium", "completed"),
        (f"Rotate {REDACTED}", "medium", "in_progress"),
    ]

    async def scenario() -> None:
        async with agent(workspace, home) as (conn, client):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            done = await conn.prompt(session_id=sid, prompt=[text_block(prompt)])
            assert done.stop_reason == "end_turn"
            assert not client.asked  # it never asks
            plans = [u for u in client.updates if isinstance(u, AgentPlanUpdate)]
            assert [entries(p) for p in plans] == [first, last]
            assert SECRET not in json.dumps([p.model_dump() for p in plans])
            kinds = [type(u).__name__ for u in client.updates]
            started = [i for i, k in enumerate(kinds) if k == "ToolCallStart"]
            placed = [i for i, k in enumerate(kinds) if k == "AgentPlanUpdate"]
            assert started[0] < placed[0] < started[1] < placed[1]
            calls = [u for u in client.updates if isinstance(u, ToolCallStart)]
            assert {c.kind for c in calls} == {"think"}
            ended = [u for u in client.updates if isinstance(u, ToolCallProgress)]
            assert [e.status for e in ended] == ["completed", "completed"]
            client.updates = []  # a refused call: its tool call fails and no plan is sent
            bad = script(plan_round(("a", "in_progress"), ("b", "in_progress")), {"text": "ok"})
            done = await conn.prompt(session_id=sid, prompt=[text_block(bad)])
            assert done.stop_reason == "end_turn"
            assert not [u for u in client.updates if isinstance(u, AgentPlanUpdate)]
            ended = [u for u in client.updates if isinstance(u, ToolCallProgress)]
            assert [e.status for e in ended] == ["failed"]
        async with agent(workspace, home) as (conn, client):
            await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            plans = [u for u in client.updates if isinstance(u, AgentPlanUpdate)]
            assert [entries(p) for p in plans] == [first, last]  # none for the refused call
            kinds = [type(u).__name__ for u in client.updates]
            assert kinds.index("ToolCallStart") < kinds.index("AgentPlanUpdate")

    run(scenario)
