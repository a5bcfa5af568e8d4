"""Streamable-HTTP MCP servers for real: the SDK's MCPServer on 127.0.0.1, reached through
`magi-code serve --stdio` and through McpManager."""

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_harness import HttpServer

from magi_code.client import ErrorResponse, Event, LocalAgentClient, environment
from magi_code.mcp.definitions import canonical_digest
from magi_code.mcp.errors import McpUnavailable
from magi_code.mcp.manager import McpManager
from magi_code.mcp.tool import mcp_tools
from magi_code.tools.base import ToolContext, ToolOutcome
from support import local_agent


def write_settings(
    home: Path, name: str, definition: dict[str, Any], allow: list[str], approve: bool = True
) -> None:
    """Global settings that define, approve and (for `allow`) allow the server's tools."""
    home.mkdir(parents=True, exist_ok=True)
    digest = canonical_digest(name, definition) if approve else "0" * 64
    lines = [f'[mcp]\napproved = ["{digest}"]\n']
    lines.append(f"[mcp.servers.{name}]")
    for key, value in definition.items():
        lines.append(f"{key} = {json.dumps(value)}")
    for tool in allow:
        lines.append(f'\n[[permissions.rules]]\ntool = "{tool}"\ndecision = "allow"')
    (home / "settings.toml").write_text("\n".join(lines) + "\n")


def turn(agent: LocalAgentClient, session_id: str, *rounds: dict[str, Any]) -> list[Event]:
    return local_agent.turn(agent, session_id, "fixture:" + json.dumps(list(rounds)))


def activities(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.data["name"], e.data["state"]) for e in events if e.name == "activity"]


def test_serve_stdio_calls_http_tools_and_deletes_the_session_at_shutdown(
    tmp_path: Path, http_server: HttpServer
) -> None:
    definition = {"url": http_server.url, "enabled": True}
    write_settings(tmp_path / "home", "web", definition, ["mcp__web__echo"])
    with LocalAgentClient.spawn(cwd=tmp_path, env=environment(tmp_path / "home")) as agent:
        agent.request("initialize", {"required_capabilities": ["turn.start"]})
        session_id = agent.request("session.create")["session_id"]
        call = {"name": "mcp__web__echo", "arguments": {"text": "over http"}}
        events = turn(agent, session_id, {"tools": [call]}, {"text": "done"})
        assert events[-1].data["outcome"] == "completed"
        assert ("mcp__web__echo", "completed") in activities(events)
        assert "DELETE /mcp" not in http_server.requests()
        agent.request("shutdown")
        assert agent.finish() == 0
    requests = http_server.requests()
    assert requests.count("DELETE /mcp") == 1, requests
    assert requests[-1] == "DELETE /mcp"


def test_a_server_killed_mid_call_fails_that_call_and_the_run_goes_on(
    tmp_path: Path, http_server: HttpServer
) -> None:
    definition = {"url": http_server.url, "enabled": True}
    write_settings(tmp_path / "home", "web", definition, ["mcp__web__nap"])
    with LocalAgentClient.spawn(cwd=tmp_path, env=environment(tmp_path / "home")) as agent:
        agent.request("initialize", {"required_capabilities": ["turn.start"]})
        session_id = agent.request("session.create")["session_id"]
        nap = {"name": "mcp__web__nap", "arguments": {"seconds": 60}}
        prompt = "fixture:" + json.dumps([{"tools": [nap]}, {"text": "after the failure"}])
        agent.request("turn.start", {"session_id": session_id, "prompt": prompt})
        while agent.next_event(30).name != "activity":
            pass
        time.sleep(0.2)  # the POST is in flight
        began = time.monotonic()
        os.kill(http_server.process.pid, signal.SIGKILL)
        events = local_agent.finish(agent)
        assert time.monotonic() - began < 5.0
        assert ("mcp__web__nap", "failed") in activities(events)
        assert events[-1].data["outcome"] == "completed"
        assert agent.request("status")["readiness"] == "ready"
        agent.request("shutdown")
        assert agent.finish() == 0


def call(manager: McpManager, name: str, arguments: str) -> ToolOutcome:
    tool = mcp_tools(manager)[name]

    async def go() -> ToolOutcome:
        return await tool.run(tool.parse(arguments), ToolContext(Path("."), {}))

    return anyio.run(go)


def start(definition: dict[str, Any], **kwargs: Any) -> McpManager:
    return McpManager.start(
        {"web": definition}, approved=[canonical_digest("web", definition)], **kwargs
    )


def test_a_new_tool_list_is_picked_up_and_sampling_is_refused(http_server: HttpServer) -> None:
    manager = start({"url": http_server.url, "enabled": True})
    try:
        assert "mcp__web__extra" not in mcp_tools(manager)
        assert call(manager, "mcp__web__sample", "{}").output == "refused: MCPError"
        assert call(manager, "mcp__web__grow", "{}").ok
        # The announcement travels on the session's GET stream, not with the call's answer:
        # a later turn sees the new list once it has arrived (a turn never lists it itself).
        deadline = time.monotonic() + 5
        while "mcp__web__extra" not in mcp_tools(manager):
            assert time.monotonic() < deadline, "the new tool list was not picked up"
            time.sleep(0.02)
        assert call(manager, "mcp__web__extra", "{}").output == "extra"
    finally:
        manager.close()


def test_headers_come_from_the_environment_and_a_missing_variable_fails_startup(
    http_server: HttpServer,
) -> None:
    definition = {"url": http_server.url, "headers": {"X-Team": "env:TEAM"}, "enabled": True}
    with pytest.raises(McpUnavailable):
        start(definition, env={"PATH": os.environ["PATH"]})
    assert http_server.requests() == []  # nothing went out half-credentialed
    start(definition, env={"TEAM": "blue"}).close()
    assert http_server.requests()[0] == "POST /mcp"


def test_serve_stdio_refuses_an_unapproved_http_server(
    tmp_path: Path, http_server: HttpServer
) -> None:
    definition = {"url": http_server.url, "enabled": True}
    write_settings(tmp_path / "home", "web", definition, [], approve=False)
    with LocalAgentClient.spawn(cwd=tmp_path, env=environment(tmp_path / "home")) as agent:
        with pytest.raises(ErrorResponse) as caught:
            agent.request("initialize", {"required_capabilities": []})
        assert caught.value.code == "mcp_unavailable"
    assert http_server.requests() == []
