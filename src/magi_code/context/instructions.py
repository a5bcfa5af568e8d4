"""Instructions the model is told, in this documented order:

1. the agent profile's own text (built-in default, or MC_HOME/agents/<name>.md, or
   <cwd>/.magi-code/agents/<name>.md, the project file winning),
2. MC_HOME/AGENTS.md (the user's global instructions),
3. <cwd>/AGENTS.md (the workspace's instructions),
4. each extra Markdown path of the `instructions` setting, in order (relative to cwd).
A missing file is skipped; an unreadable or non-UTF-8 one fails startup (configuration).
"""

from pathlib import Path

DEFAULT_PROFILE = (
    "You are magi-code, a coding agent working in the user's workspace. Use the tools to "
    "read, search and change files and to run commands. Be concise and exact."
)


class InstructionsError(Exception):
    pass


class ProfileError(Exception):
    pass


def read_optional(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InstructionsError("unreadable instructions") from exc


def load_profile(name: str, home: Path, cwd: Path) -> str:
    if name == "default":
        return DEFAULT_PROFILE
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ProfileError("invalid agent name")
    for directory in (cwd / ".magi-code" / "agents", home / "agents"):
        try:
            text = read_optional(directory / f"{name}.md")
        except InstructionsError as exc:
            raise ProfileError("unreadable agent profile") from exc
        if text is not None:
            return text
    raise ProfileError("unknown agent profile")


def assemble(profile: str, home: Path, cwd: Path, extra: list[str]) -> str:
    parts = [profile]
    for path in [home / "AGENTS.md", cwd / "AGENTS.md", *(cwd / p for p in extra)]:
        text = read_optional(path)
        if text and text.strip():
            parts.append(text.strip())
    return "\n\n".join(parts)
