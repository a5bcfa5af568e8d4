"""The skill tool over real files: body and resources, their bounds at the edge, unknown names."""

from pathlib import Path

import pytest

from magi_code.context.skills import load_body, read_skill, resources
from magi_code.limits import SKILL_BODY_BYTES, SKILL_RESOURCES_LISTED
from magi_code.tools.base import ToolContext
from magi_code.tools.skill import SkillTool

from .files import skill

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_body_bound_at_its_edge(tmp_path: Path) -> None:
    folder = skill(tmp_path, "big")
    head = (folder / "SKILL.md").read_text().split("---\n")[1]
    front = f"---\n{head}---\n"
    body = "b" * (SKILL_BODY_BYTES - len(front))
    (folder / "SKILL.md").write_text(front + body)
    assert load_body(read_skill(str(folder), "global")) == (body, False)
    (folder / "SKILL.md").write_text(front + body + "b")
    assert load_body(read_skill(str(folder), "global")) == (body, True)


def test_resources_bound_at_its_edge(tmp_path: Path) -> None:
    folder = skill(tmp_path, "many")
    for i in range(SKILL_RESOURCES_LISTED):
        (folder / f"r{i:03d}.txt").write_text("r")
    listed, more = resources(read_skill(str(folder), "global"))
    assert len(listed) == SKILL_RESOURCES_LISTED and not more
    assert str(folder / "SKILL.md") not in listed
    (folder / "zzz.txt").write_text("r")
    listed, more = resources(read_skill(str(folder), "global"))
    assert len(listed) == SKILL_RESOURCES_LISTED and more


async def test_the_tool_loads_known_skills_only(tmp_path: Path) -> None:
    folder = skill(tmp_path, "pdf", body="USE PDFTOTEXT")
    (folder / "ref.md").write_text("ref")
    tool = SkillTool([read_skill(str(folder), "global")])
    ctx = ToolContext(workspace=tmp_path, env={})
    done = await tool.run(tool.parse('{"name": "pdf"}'), ctx)
    assert done.ok and "USE PDFTOTEXT" in done.output and str(folder / "ref.md") in done.output
    assert "name: pdf" not in done.output  # front matter stays out
    unknown = tool.parse('{"name": "../../etc"}')
    assert tool.access(unknown, ctx).paths == ()
    missing = await tool.run(unknown, ctx)
    assert not missing.ok and missing.output == "error: unknown_skill: no skill of that name"
