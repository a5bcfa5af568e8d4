"""Instructions the model is told, in this documented order:

1. the agent profile's own text (built-in default, or MC_HOME/agents/<name>.md, or
   <cwd>/.magi-code/agents/<name>.md, the project file winning),
2. MC_HOME/AGENTS.md (the user's global instructions),
3. <cwd>/AGENTS.md (the workspace's instructions),
4. each extra Markdown path of the `instructions` setting, in order (relative to cwd).
A missing file is skipped; an unreadable or non-UTF-8 one fails startup (configuration).
"""

import os

DEFAULT_PROFILE = (
    "You are magi-code, a coding agent working in the user's workspace. Use the tools to "
    "read, search and change files and to run commands. Be concise and exact."
)


class InstructionsError(Exception):
    pass


class ProfileError(Exception):
    pass


def read_optional(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InstructionsError("unreadable instructions") from exc


def load_profile(name: str, home: str, cwd: str, trusted: bool = True) -> str:
    """The profile's text; the project's own profiles count only in a trusted folder."""
    if name == "default":
        return DEFAULT_PROFILE
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ProfileError("invalid agent name")
    project = [os.path.join(cwd, ".magi-code", "agents")] if trusted else []
    for directory in (*project, os.path.join(home, "agents")):
        try:
            text = read_optional(os.path.join(directory, f"{name}.md"))
        except InstructionsError as exc:
            raise ProfileError("unreadable agent profile") from exc
        if text is not None:
            return text
    raise ProfileError("unknown agent profile")


def assemble(profile: str, home: str, cwd: str, extra: list[str]) -> str:
    parts = [profile]
    extras = [os.path.join(cwd, p) for p in extra]
    for path in [os.path.join(home, "AGENTS.md"), os.path.join(cwd, "AGENTS.md"), *extras]:
        text = read_optional(path)
        if text and text.strip():
            parts.append(text.strip())
    return "\n\n".join(parts)
