"""A real MCP server package from PyPI over stdio: `mcp-server-time` (a dev dependency)."""

import json
import shutil
import sys
from pathlib import Path

import anyio

from magi_code.mcp.definitions import canonical_digest
from magi_code.mcp.manager import McpManager
from magi_code.mcp.tool import mcp_tools
from magi_code.tools.base import ToolContext, ToolOutcome

SERVER = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))


def test_mcp_server_time_lists_and_answers_over_stdio() -> None:
    assert SERVER is not None, "mcp-server-time is a dev dependency (pyproject.toml)"
    definition = {"command": SERVER, "args": ["--local-timezone", "UTC"], "enabled": True}
    manager = McpManager.start(
        {"time": definition}, approved=[canonical_digest("time", definition)]
    )
    try:
        tools = mcp_tools(manager)
        assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(tools)
        tool = tools["mcp__time__get_current_time"]

        async def go() -> ToolOutcome:
            args = tool.parse('{"timezone": "Europe/Paris"}')
            return await tool.run(args, ToolContext(Path("."), {}))

        result = anyio.run(go)
        assert result.ok and result.summary == "time.get_current_time completed"
        assert json.loads(result.output)["timezone"] == "Europe/Paris"
    finally:
        manager.close()
