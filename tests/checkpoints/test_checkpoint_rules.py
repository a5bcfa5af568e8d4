"""Which calls a turn checkpoints before (runner/checkpointing.py): the tools said to change
no file really ask only to read or reach the network, and a subagent counts as a write unless
its profile offers only those, by name, with no Code Mode."""

import json
from pathlib import Path
from typing import Any

from magi_code.context.profiles import BUILTINS, Profile
from magi_code.records import replace
from magi_code.runner.checkpointing import CHANGES_FILES, READ_ONLY_TOOLS, may_change_files
from magi_code.runner.subagents import AgentTool, Children, reads_only
from magi_code.tools.base import Access, ToolContext
from magi_code.tools.builtin import builtin_tools
from magi_code.tools.skill import SkillTool

SAMPLES = {
    "read_file": {"path": "a.txt"},
    "list_dir": {"path": "."},
    "glob": {"pattern": "**/*.py"},
    "grep": {"pattern": "x"},
    "web_fetch": {"url": "https://example.com/"},
    "update_plan": {"plan": [{"step": "look", "status": "pending"}]},
    "skill": {"name": "any"},
}


def test_the_read_only_tools_ask_only_to_read_or_reach_the_network(tmp_path: Path) -> None:
    tools = {**builtin_tools(), "skill": SkillTool([])}
    ctx = ToolContext(tmp_path, {})
    assert set(SAMPLES) == READ_ONLY_TOOLS
    for name in READ_ONLY_TOOLS:
        tool = tools[name]
        access = tool.access(tool.parse(json.dumps(SAMPLES[name])), ctx)
        assert access.kind in ("read", "network") and not may_change_files(access), name
    writers = [name for name in tools if name not in READ_ONLY_TOOLS]
    assert sorted(writers) == ["edit_file", "shell", "write_file"]


def unused(*_: object) -> Any:
    raise AssertionError("deciding a call starts nothing")


def test_a_subagent_counts_as_a_write_unless_its_profile_only_reads(tmp_path: Path) -> None:
    explore, general = BUILTINS["explore"], BUILTINS["general"]
    assert reads_only(explore) and not reads_only(general)
    assert not reads_only(replace(explore, tools=("read_file", "grep*")))  # a glob: any tool
    assert not reads_only(replace(explore, tools=("read_file", "write_file")))
    assert not reads_only(replace(explore, code_mode=True))
    profiles: list[Profile] = [explore, general]
    tool = AgentTool(Children(1), profiles, unused, unused, unused, [], unused)
    ctx = ToolContext(tmp_path, {})
    for profile, writes in (("explore", False), ("general", True)):
        access = tool.access(tool.parse(json.dumps({"prompt": "go", "profile": profile})), ctx)
        assert access.kind == "read"  # decided as a read: the child asks for its own actions
        assert may_change_files(access) is writes
    assert "read" not in CHANGES_FILES
    assert may_change_files(Access("write", (tmp_path,)))
