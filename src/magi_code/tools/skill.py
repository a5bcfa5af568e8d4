"""The `skill` tool: progressive disclosure of the admitted skills.

The model is told only names and descriptions at startup; this tool hands it one skill's
SKILL.md body (after the front matter, bounded by SKILL_BODY_BYTES with a visible note when cut)
and the absolute paths of the skill's resource files, which it reads with read_file. It knows
only the skills admitted at startup: a name outside them is an error outcome, and no path the
model gives is ever opened. It only reads, so its thread is abandoned on cancellation.
"""

from pathlib import Path

import anyio

from magi_code.context import frontmatter
from magi_code.context.skills import Skill, load_body, resources
from magi_code.limits import SKILL_BODY_BYTES
from magi_code.records import record
from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolOutcome
from magi_code.tools.files import failed
from magi_code.tools.summaries import safe_summary


@record
class SkillArgs:
    name: str


class SkillTool:
    name = "skill"
    description = (
        "Load one skill's instructions by name (the names are listed in your instructions), "
        "with the paths of the skill's resource files, which you can read with read_file."
    )

    def __init__(self, skills: list[Skill]) -> None:
        self.skills = {skill.name: skill for skill in skills}
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {"name": {"type": "string", "enum": sorted(self.skills)}},
            "required": ["name"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> SkillArgs:
        return SkillArgs(A.text(A.load_object(arguments, {"name"}, set()), "name"))

    def access(self, args: SkillArgs, ctx: ToolContext) -> Access:
        skill = self.skills.get(args.name)
        return Access("read", (Path(skill.file),) if skill else ())

    def describe(self, args: SkillArgs, ctx: ToolContext) -> str:
        shown = args.name if args.name in self.skills else "an unknown skill"
        return safe_summary(f"load skill {shown}")

    async def run(self, args: SkillArgs, ctx: ToolContext) -> ToolOutcome:
        skill = self.skills.get(args.name)
        if skill is None:
            return failed("unknown_skill", "no skill of that name", "load skill")
        summary = f"load skill {skill.name}"
        try:
            output = await anyio.to_thread.run_sync(_render, skill, abandon_on_cancel=True)
        except (OSError, UnicodeDecodeError, frontmatter.FrontMatterError):
            return failed("unreadable", skill.name, summary)
        return ToolOutcome(ok=True, output=output, summary=summary)


def _render(skill: Skill) -> str:
    body, cut = load_body(skill)
    lines = [f"# Skill {skill.name}", "", body]
    if cut:
        lines += ["", f"[SKILL.md is larger than {SKILL_BODY_BYTES} bytes: the rest is cut]"]
    if skill.allowed_tools:
        lines += ["", f"Allowed tools: {' '.join(skill.allowed_tools)}"]
    files, more = resources(skill)
    if files:
        lines += ["", f"Resources in {skill.directory} (read them with read_file):"]
        lines += [f"- {path}" for path in files]
        if more:
            lines.append("- ... (more files not listed)")
    return "\n".join(lines)
