"""The built-in tool set, by name. The runner adds MCP and melchior bridges beside it."""

from typing import Any

from magi_code.tools.base import Tool
from magi_code.tools.files import EditFile, ReadFile, WriteFile
from magi_code.tools.grep import Grep
from magi_code.tools.limits import SHELL_MAX_TIMEOUT_S, SHELL_TIMEOUT_S
from magi_code.tools.listing import Glob, ListDir
from magi_code.tools.plan import UpdatePlan
from magi_code.tools.shell import Shell
from magi_code.tools.web_fetch import WebFetch


def builtin_tools(
    *,
    shell_timeout_s: float = SHELL_TIMEOUT_S,
    shell_max_timeout_s: float = SHELL_MAX_TIMEOUT_S,
    allow_private: bool = False,  # `[web] allow_private`: web_fetch may reach local addresses
) -> dict[str, Tool[Any]]:
    tools: list[Tool[Any]] = [
        ReadFile(),
        WriteFile(),
        EditFile(),
        ListDir(),
        Glob(),
        Grep(),
        Shell(shell_timeout_s, shell_max_timeout_s),
        WebFetch(allow_private),
        UpdatePlan(),
    ]
    return {tool.name: tool for tool in tools}
