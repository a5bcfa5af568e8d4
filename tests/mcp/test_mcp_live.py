"""Live progress of an MCP call (mcp/live.py, tool.py): a burst of reports reaches the face as
at most one per PROGRESS_INTERVAL_S, the newest; a message is cut at its bound; the summary
keeps the last numbers. Against the real echo server (tests/mcp/echo_server.py)."""

import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_harness import Definition

from magi_code.mcp.definitions import canonical_digest
from magi_code.mcp.elicitation import shown
from magi_code.mcp.limits import FORM_TEXT_CHARS, PROGRESS_INTERVAL_S, PROGRESS_MESSAGE_CHARS
from magi_code.mcp.live import LiveCall
from magi_code.mcp.manager import McpManager
from magi_code.mcp.tool import mcp_tools
from magi_code.tools.base import ToolContext
from magi_code.tools.progress import ToolProgress


def test_a_burst_of_progress_reaches_the_face_rate_bound(server_def: Any, tmp_path: Path) -> None:
    servers: dict[str, Definition] = {"echo": server_def("ok")}
    approved = [canonical_digest("echo", servers["echo"])]
    manager = McpManager.start(servers, approved=approved)
    seen: list[tuple[float, ToolProgress]] = []

    async def detail(event: Any) -> None:
        assert isinstance(event, ToolProgress)
        seen.append((time.monotonic(), event))

    async def go() -> str:
        tool = mcp_tools(manager)["mcp__echo__burst"]
        ctx = ToolContext(tmp_path, {}, detail=detail, activity_id="a1")
        return (await tool.run(tool.parse('{"count": 50}'), ctx)).summary

    try:
        summary = anyio.run(go)
    finally:
        manager.close()
    assert summary == "echo.burst completed (progress 50 of 50)"
    assert 1 <= len(seen) <= 3  # 50 reports: the first, then the newest after a pause
    times = [at for at, _ in seen]
    assert all(later - earlier >= PROGRESS_INTERVAL_S for earlier, later in pairwise(times))
    last = seen[-1][1]
    assert (last.progress, last.total, last.message) == (50, 50, "step 50")
    assert {event.activity_id for _, event in seen} == {"a1"}
    assert last.text() == "50/50 step 50"


@pytest.mark.anyio
async def test_a_progress_message_is_cut_at_its_bound() -> None:
    live = LiveCall(answers=False)
    await live.update(1, None, "m" * PROGRESS_MESSAGE_CHARS)
    report = live.latest()
    assert report is not None and report.message == "m" * PROGRESS_MESSAGE_CHARS
    assert live.latest() is None  # taken once
    await live.update(2, None, "m" * (PROGRESS_MESSAGE_CHARS + 1) + "\nsk-proj-" + "a" * 40)
    report = live.latest()
    assert report is not None and len(report.message.encode()) <= PROGRESS_MESSAGE_CHARS
    assert report.message != "m" * PROGRESS_MESSAGE_CHARS and "\n" not in report.message


def test_what_a_server_wrote_is_cut_at_its_bound_for_the_screen() -> None:
    assert shown("t" * FORM_TEXT_CHARS) == "t" * FORM_TEXT_CHARS
    cut = shown("t" * (FORM_TEXT_CHARS + 1))
    assert len(cut.encode()) <= FORM_TEXT_CHARS and cut != "t" * FORM_TEXT_CHARS
    assert shown("a\x1b[31mb\nc") == "a[31mb\nc"  # no control characters but newlines
