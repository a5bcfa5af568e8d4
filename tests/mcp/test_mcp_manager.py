"""McpManager against real MCP server processes: approval, startup, calls, failure, close."""

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_harness import Definition, alive, gone_within, kill_quietly, pid_of

from magi_code.mcp.definitions import canonical_digest
from magi_code.mcp.errors import McpCancelled, McpUnavailable
from magi_code.mcp.limits import CLOSE_S, STDIN_GRACE_S, TERM_GRACE_S
from magi_code.mcp.manager import McpManager
from magi_code.mcp.tool import mcp_tools
from magi_code.tools.base import ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.limits import ARGUMENTS_BYTES
from magi_code.tools.policy import Policy

MakeDef = Callable[..., Definition]
# Time for a stopped server to be gone once its stop sequence runs (process reaping included).
STOP_S = STDIN_GRACE_S + TERM_GRACE_S + 2.0


def approvals(servers: dict[str, Definition]) -> list[str]:
    return [canonical_digest(name, d) for name, d in servers.items()]


@pytest.fixture
def started(server_def: MakeDef) -> Iterator[McpManager]:
    servers = {"echo": server_def("ok")}
    manager = McpManager.start(servers, approved=approvals(servers))
    try:
        yield manager
    finally:
        manager.close()
        for pid in manager.pids():
            kill_quietly(pid)


def call(manager: McpManager, name: str, arguments: str, tmp: Path) -> ToolOutcome:
    """One call through the Tool adapter, from an event loop of the test's own."""
    tool = mcp_tools(manager)[name]

    async def go() -> ToolOutcome:
        return await tool.run(tool.parse(arguments), ToolContext(tmp, {}))

    return anyio.run(go)


def test_unapproved_server_fails_before_anything_starts(server_def: MakeDef) -> None:
    servers = {"echo": server_def("ok")}
    with pytest.raises(McpUnavailable):
        McpManager.start(servers, approved=[canonical_digest("other", servers["echo"])])
    assert pid_of(servers["echo"]) is None  # never spawned


def test_no_enabled_server_starts_nothing(server_def: MakeDef) -> None:
    manager = McpManager.start({"echo": {**server_def("ok"), "enabled": False}}, approved=[])
    assert mcp_tools(manager) == {} and manager.portal is None
    manager.close()


def test_approved_server_connects_and_lists_tools(started: McpManager) -> None:
    tools = mcp_tools(started)
    # Its own tools, then our two for its resources (the SDK's server declares them).
    names = ("echo", "repeat", "fail", "nap", "die", "burst", "ask")
    names += ("list_resources", "read_resource")
    assert set(tools) == {f"mcp__echo__{t}" for t in names}
    echo = tools["mcp__echo__echo"]
    assert echo.description == "Return the text."
    assert "text" in echo.parameters["properties"]  # type: ignore[operator]
    (pid,) = started.pids()
    assert alive(pid)


def test_call_round_trip_from_another_loop(started: McpManager, tmp_path: Path) -> None:
    result = call(started, "mcp__echo__echo", '{"text": "hello, secret-free world"}', tmp_path)
    assert result == ToolOutcome(True, "hello, secret-free world", "echo.echo completed")


def test_error_result_is_not_ok_and_summary_carries_no_payload(
    started: McpManager, tmp_path: Path
) -> None:
    result = call(started, "mcp__echo__fail", "{}", tmp_path)
    assert not result.ok and result.summary == "echo.fail failed"
    unknown_args = call(started, "mcp__echo__echo", '{"wrong": "PAYLOAD"}', tmp_path)
    assert not unknown_args.ok and "PAYLOAD" not in unknown_args.summary


def test_calls_ask_by_default(started: McpManager, tmp_path: Path) -> None:
    tool = mcp_tools(started)["mcp__echo__echo"]
    ctx = ToolContext(tmp_path, {})
    access = tool.access(tool.parse('{"text": "x"}'), ctx)
    assert Policy().decide(tool.name, access, tmp_path) == "ask"
    rule = Policy.from_settings({"rules": [{"tool": tool.name, "decision": "allow"}]})
    assert rule.decide(tool.name, access, tmp_path) == "allow"
    wildcard = Policy.from_settings({"rules": [{"command": "*", "decision": "allow"}]})
    assert wildcard.decide(tool.name, access, tmp_path) == "ask"


def test_cancelled_call_is_cancelled_and_the_connection_stays_usable(
    started: McpManager, tmp_path: Path
) -> None:
    nap = mcp_tools(started)["mcp__echo__nap"]

    async def go() -> float:
        began = time.monotonic()
        with anyio.move_on_after(0.3):
            await nap.run(nap.parse('{"seconds": 30}'), ToolContext(tmp_path, {}))
        return time.monotonic() - began

    assert anyio.run(go) < 2.0
    result = call(started, "mcp__echo__echo", '{"text": "still here"}', tmp_path)
    assert result.ok and result.output == "still here"


def test_server_dying_mid_call_fails_the_call_and_the_next_one_restarts_it(
    started: McpManager, tmp_path: Path
) -> None:
    began = time.monotonic()
    (first,) = started.pids()
    died = call(started, "mcp__echo__die", "{}", tmp_path)
    assert not died.ok and "stopped during the call" in died.output
    assert time.monotonic() - began < 5.0
    assert gone_within(first, 2.0)
    again = call(started, "mcp__echo__echo", '{"text": "x"}', tmp_path)
    assert again.ok and again.output.endswith("\nx") and "it was restarted" in again.output
    (second,) = started.pids()
    assert second != first


def test_arguments_must_be_one_json_object(started: McpManager) -> None:
    tool = mcp_tools(started)["mcp__echo__echo"]
    assert tool.parse('{"text": "x"}').arguments == {"text": "x"}
    for bad, code in [
        ("[1]", "invalid_arguments"),
        ("{", "invalid_json"),
        ('{"a":1,"a":2}', "invalid_json"),
    ]:
        with pytest.raises(ToolInputError) as caught:
            tool.parse(bad)
        assert caught.value.code == code
    with pytest.raises(ToolInputError) as caught:
        tool.parse('{"text": "' + "x" * ARGUMENTS_BYTES + '"}')
    assert caught.value.code == "arguments_too_large"


def test_one_failing_server_fails_startup_and_ends_the_other(server_def: MakeDef) -> None:
    servers = {"good": server_def("ok", "good"), "bad": server_def("exit-init", "bad", 2.0)}
    with pytest.raises(McpUnavailable):
        McpManager.start(servers, approved=approvals(servers))
    for definition in servers.values():
        pid = pid_of(definition)
        assert pid is not None, "both servers were started"
        assert gone_within(pid, STOP_S)


def test_hanging_server_misses_the_deadline(server_def: MakeDef) -> None:
    servers = {"slow": server_def("hang")}
    connect_s = 1.0
    began = time.monotonic()
    with pytest.raises(McpUnavailable):
        McpManager.start(servers, approved=approvals(servers), connect_s=connect_s)
    assert time.monotonic() - began < connect_s + CLOSE_S
    pid = pid_of(servers["slow"])
    assert pid is not None and gone_within(pid, STOP_S)


def test_cancel_during_startup_returns_promptly_and_leaves_no_process(
    server_def: MakeDef,
) -> None:
    servers = {"slow": server_def("hang", "slow"), "ok": server_def("ok", "ok")}
    cancel = threading.Event()
    cancelled_at: list[float] = []

    def cancel_once_spawned() -> None:
        pid_of(servers["slow"], wait_s=10.0)
        cancelled_at.append(time.monotonic())
        cancel.set()

    threading.Thread(target=cancel_once_spawned, daemon=True).start()
    with pytest.raises(McpCancelled):
        McpManager.start(servers, cancel, approved=approvals(servers))
    assert time.monotonic() - cancelled_at[0] < CLOSE_S + 0.5
    for definition in servers.values():
        pid = pid_of(definition)
        if pid is not None:
            assert gone_within(pid, STOP_S)


def test_close_ends_every_server_even_one_ignoring_shutdown(server_def: MakeDef) -> None:
    servers: dict[str, Any] = {"a": server_def("ok", "a"), "b": server_def("stubborn", "b")}
    manager = McpManager.start(servers, approved=approvals(servers))
    pids = manager.pids()
    assert len(pids) == 2 and all(map(alive, pids))
    timeout = 1.0
    began = time.monotonic()
    manager.close(timeout)
    assert time.monotonic() - began < timeout + 0.5
    for pid in pids:
        assert gone_within(pid, 2.0)
    assert mcp_tools(manager)["mcp__a__echo"] is not None  # listing survives; calls now fail
    result = call(manager, "mcp__a__echo", '{"text": "x"}', Path("."))
    assert not result.ok
