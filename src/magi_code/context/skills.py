"""Skills in the open Agent Skills layout: discovery at startup, bodies on demand.

A skill is a folder holding SKILL.md; its front matter has `name` (lowercase ASCII letters,
digits and single hyphens, not at either end, at most SKILL_NAME_CHARS, equal to the folder's
name), `description` (at most SKILL_DESCRIPTION_CHARS) and optionally `allowed-tools` (a
space-delimited string or a list; shown with the body, not enforced); other keys (`license`,
`compatibility`, `metadata`) are accepted and ignored. Every other file in the folder is a
resource the model may read with read_file.

Rules:
- Scopes: MC_HOME/skills/<name>/ (global) and, only in a trusted workspace,
  <root>/.magi-code/skills/<name>/ (project). A project skill shadows a global one of the same
  name, with a notice naming both. Within one scope two skills cannot share a name: the name is
  the folder's.
- `[skills] disabled = [names]` removes skills by name, whichever scope holds them.
- Confinement (confined.py): SKILL.md is read only when it is a regular file inside its skill
  folder as that folder resolves. A global skill folder may be a link to anywhere (MC_HOME is
  the user's own); a project skill folder must resolve inside the repository root. A link out,
  a FIFO or a device is skipped with a notice.
- Startup reads front matter only (`frontmatter.read_head`); `load_body` reads a body when the
  skill tool asks. An invalid SKILL.md is skipped with a notice naming the file and the problem.
- The model is shown names and descriptions only, at most SKILLS_LISTED of them within
  SKILL_LISTING_BYTES; what does not fit is named in a notice (and stays loadable).
"""

from __future__ import annotations

import codecs
import os

from magi_code.context import ContextError, frontmatter
from magi_code.context.confined import Refused, inside, open_confined
from magi_code.limits import (
    SKILL_BODY_BYTES,
    SKILL_DESCRIPTION_CHARS,
    SKILL_LISTING_BYTES,
    SKILL_NAME_CHARS,
    SKILL_RESOURCES_LISTED,
    SKILLS_LISTED,
    SKILLS_SCANNED,
)
from magi_code.records import record

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from magi_code.context import ContextCode

SKILL_FILE = "SKILL.md"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


@record
class Skill:
    name: str
    description: str
    allowed_tools: tuple[str, ...]
    directory: str  # canonical
    scope: str  # global or project

    @property
    def file(self) -> str:
        return os.path.join(self.directory, SKILL_FILE)


class InvalidSkill(ContextError, ValueError):
    """A skill that cannot be listed; the message says why (no file text)."""

    code: ContextCode = "skill_invalid"


def valid_name(name: str) -> bool:
    return (
        0 < len(name) <= SKILL_NAME_CHARS
        and set(name) <= _NAME_CHARS
        and not name.startswith("-")
        and not name.endswith("-")
        and "--" not in name
    )


def read_skill(directory: str, scope: str, folder: str | None = None) -> Skill:
    """The skill in `directory` (canonical) from its front matter; InvalidSkill says what is
    wrong. `folder` is the name it has in its scope (a link's own name), by default the
    directory's. SKILL.md must be a regular file inside `directory`."""
    try:
        fields, _ = frontmatter.read_head(os.path.join(directory, SKILL_FILE), directory)
    except FileNotFoundError:
        raise InvalidSkill(f"no {SKILL_FILE}") from None
    except Refused as refused:
        raise InvalidSkill(refused.problem) from None
    except frontmatter.FrontMatterError as exc:
        raise InvalidSkill(exc.problem) from None
    except UnicodeDecodeError:
        raise InvalidSkill("front matter is not UTF-8") from None
    except OSError:
        raise InvalidSkill("unreadable") from None
    if fields is None:
        raise InvalidSkill("no front matter")
    name, description = fields.get("name"), fields.get("description")
    if not isinstance(name, str) or not valid_name(name):
        raise InvalidSkill(
            f"name must be 1-{SKILL_NAME_CHARS} lowercase letters, digits and single hyphens"
        )
    if name != (folder or os.path.basename(directory)):
        raise InvalidSkill("name does not match the folder name")
    if not isinstance(description, str) or not description.strip():
        raise InvalidSkill("description is missing")
    if len(description) > SKILL_DESCRIPTION_CHARS:
        raise InvalidSkill(f"description longer than {SKILL_DESCRIPTION_CHARS} characters")
    tools = fields.get("allowed-tools", [])
    if isinstance(tools, dict):
        raise InvalidSkill("allowed-tools must be a string or a list")
    allowed = tuple(tools.split() if isinstance(tools, str) else tools)
    return Skill(name, description.strip(), allowed, directory, scope)


def scan(base: str, scope: str, notices: list[str], root: str | None = None) -> dict[str, Skill]:
    """Every valid skill under `base` (absent is empty), by name; with a `root`, a folder
    that resolves outside it is skipped."""
    canonical_base = os.path.realpath(base)  # once: resolving every folder costs milliseconds
    try:
        with os.scandir(canonical_base) as entries:
            folders = sorted(
                (e.name, os.path.realpath(e.path) if e.is_symlink() else e.path)
                for e in entries
                if e.is_dir()
            )
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError:
        notices.append(f"{base}: skills folder unreadable")
        return {}
    if len(folders) > SKILLS_SCANNED:
        notices.append(f"{base}: more than {SKILLS_SCANNED} skill folders; the rest are ignored")
        folders = folders[:SKILLS_SCANNED]
    found: dict[str, Skill] = {}
    canonical_root = None if root is None else os.path.realpath(root)
    for name, folder in folders:
        shown = os.path.join(canonical_base, name, SKILL_FILE)
        if canonical_root is not None and not inside(folder, canonical_root):
            notices.append(f"{shown}: skill skipped: leads outside {root}")
            continue
        try:
            skill = read_skill(folder, scope, name)
        except InvalidSkill as exc:
            notices.append(f"{shown}: skill skipped: {exc}")
            continue
        found[skill.name] = skill
    return found


def discover(
    home: str, root: str, trusted: bool, disabled: list[str], notices: list[str]
) -> list[Skill]:
    """The enabled skills, by name: project over global, disabled ones removed."""
    skills = scan(os.path.join(home, "skills"), "global", notices)
    if trusted:
        for name, skill in scan(
            os.path.join(root, ".magi-code", "skills"), "project", notices, root
        ).items():
            if name in skills:
                notices.append(f"skill {name}: {skill.file} shadows {skills[name].file}")
            skills[name] = skill
    off = set(disabled)
    return [skills[name] for name in sorted(skills) if name not in off]


def listing(skills: list[Skill], notices: list[str]) -> str:
    """What the model is told about the skills: names and descriptions, bounded."""
    if not skills:
        return ""
    lines = [
        "Skills: call the `skill` tool with a name to load that skill's instructions when a "
        "task matches its description.",
    ]
    used = len(lines[0].encode())
    left_out: list[str] = []
    for skill in skills:
        line = f"- {skill.name}: {skill.description}"
        if len(lines) > SKILLS_LISTED or used + len(line.encode()) + 1 > SKILL_LISTING_BYTES:
            left_out.append(skill.name)
            continue
        lines.append(line)
        used += len(line.encode()) + 1
    if left_out:
        notices.append(
            f"{len(left_out)} skills not listed to the model (more than {SKILLS_LISTED} or "
            f"{SKILL_LISTING_BYTES} bytes): {', '.join(left_out)}"
        )
    return "\n".join(lines)


def load_body(skill: Skill) -> tuple[str, bool]:
    """The SKILL.md body after its front matter (at most SKILL_BODY_BYTES) and whether it was
    cut. OSError (`confined.Refused` among them: SKILL.md must still be a regular file inside
    its folder), UnicodeDecodeError and FrontMatterError pass to the caller."""
    with open_confined(skill.file, skill.directory) as handle:
        data = handle.read(SKILL_BODY_BYTES + 1)
    cut = len(data) > SKILL_BODY_BYTES
    text = codecs.getincrementaldecoder("utf-8")().decode(data[:SKILL_BODY_BYTES], final=not cut)
    _, body = frontmatter.split(text)
    return body.strip(), cut


def resources(skill: Skill) -> tuple[list[str], bool]:
    """Absolute paths of the files beside SKILL.md (sorted, at most SKILL_RESOURCES_LISTED)
    and whether there were more. Symlinked folders are not followed."""
    found: list[str] = []
    for directory, folders, files in os.walk(skill.directory):
        folders.sort()
        for name in sorted(files):
            path = os.path.join(directory, name)
            if path == skill.file:
                continue
            if len(found) == SKILL_RESOURCES_LISTED:
                return found, True
            found.append(path)
    return found, False
