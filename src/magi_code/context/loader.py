"""The one context policy every face and subagent uses: select the primary profile, gather
instruction sources in order, discover skills and profiles, and collect notices.

`load` reads files only (front matter of every skill and profile, the selected profile's body,
the AGENTS.md chain and the `instructions` paths); it never writes. It raises `ProfileError`
(startup code `profile_invalid`) when the selected primary cannot be used, and
`ContextSettingsError` (`configuration_invalid`) when `[skills]` or `[agents]` has a bad shape.
Everything else that is wrong becomes a notice: a line naming the file and the problem.
The settings come as `config.settings.Loaded`: the merged table, whether the workspace is
trusted, and the project layer as trust admitted it. An untrusted project may name only a
profile the user has; naming another drops its `agent` key (a trust warning) rather than
failing startup.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from magi_code.context import ContextError, instructions, profiles, skills
from magi_code.context.instructions import Source
from magi_code.limits import INSTRUCTION_FILE_BYTES

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any

    from magi_code.config.settings import Loaded
    from magi_code.context import ContextCode

SKILL_TOOL = "skill"


class ContextSettingsError(ContextError):
    """The context settings (instructions, skills, profiles) have a bad shape."""

    code: ContextCode = "configuration_invalid"


class Context:
    """What the model is told and may load, for one process (read-only by convention)."""

    __slots__ = ("instructions", "notices", "profile", "profiles", "root", "skills", "sources")

    def __init__(
        self,
        profile: profiles.Profile,
        sources: list[Source],
        skills: list[skills.Skill],
        profiles: profiles.Profiles,
        root: str,
        notices: list[str],
    ) -> None:
        self.profile, self.sources, self.skills = profile, sources, skills
        self.profiles, self.root, self.notices = profiles, root, notices
        self.instructions = instructions.told(sources)

    def add_servers(self, servers: list[tuple[str, str]]) -> None:
        """Each connected MCP server's instructions (its name, its text), after every other
        source and under the same total bound, headed by the server's name: told from now on,
        and shown where the sources are (`/status`, `magi-code context`)."""
        collector = instructions.Collector(self.notices)
        collector.used = sum(len(source.text.encode()) for source in self.sources)
        for name, text in servers:
            said = f"Instructions of the MCP server {name}:\n{text}"
            collector.add_text("mcp", f"MCP server {name}", said)
        self.sources = [*self.sources, *collector.sources]
        self.instructions = instructions.told(self.sources)

    def subagents(self) -> list[profiles.Profile]:
        """Subagent profiles on offer (for the subagent tool); disabled ones are not."""
        return self.profiles.subagents()


def load(
    home: str, cwd: str, loaded: Loaded, *, agent: str | None, subagent: bool = False
) -> Context:
    """`subagent`: the process is a subagent running profile `agent` (runner/delegation.py)."""
    conf = loaded.settings
    try:
        return load_for(home, cwd, loaded, agent=agent, subagent=subagent)
    except profiles.ProfileError:
        if agent or loaded.trusted or conf["agent"] == loaded.base["agent"]:
            raise
    from magi_code.config import paths, trust

    loaded.dropped.append(trust.Dropped("agent", paths.project_settings(cwd)))
    conf["agent"] = loaded.base["agent"]
    return load_for(home, cwd, loaded, agent=None)


def load_for(
    home: str, cwd: str, loaded: Loaded, *, agent: str | None, subagent: bool = False
) -> Context:
    conf, trusted = loaded.settings, loaded.trusted
    notices: list[str] = []
    root = instructions.repository_root(cwd)
    found = profiles.Profiles(home, root, trusted, disabled_names(conf, "agents"), notices)
    profile = found.primary(agent or conf.get("agent") or "default", subagent=subagent)
    check_profile(profile, conf)
    body, cut = profiles.load_body(profile)
    if cut:
        notices.append(
            f"{profile.origin}: profile body larger than {INSTRUCTION_FILE_BYTES} bytes; cut to "
            f"its first {INSTRUCTION_FILE_BYTES}"
        )
    collector = instructions.collect(
        Source("profile", profile.origin, body), home, cwd, extra_paths(loaded, home, cwd), notices
    )
    enabled: list[skills.Skill] = []
    if offers(profile, SKILL_TOOL):
        enabled = skills.discover(home, root, trusted, disabled_names(conf, "skills"), notices)
    collector.add_text("skills", "skill listing", skills.listing(enabled, notices))
    found.subagents()  # read now, so that the snapshot and its notices are complete
    return Context(profile, collector.sources, enabled, found, root, notices)


def offers(profile: profiles.Profile, tool: str) -> bool:
    """Whether the profile's allow-list (absent: every tool) admits `tool`."""
    if profile.tools is None:
        return True
    from fnmatch import fnmatchcase

    return any(fnmatchcase(tool, pattern) for pattern in profile.tools)


def check_profile(profile: profiles.Profile, conf: Mapping[str, Any]) -> None:
    """A profile naming an unknown provider or a bad rule is malformed: ProfileError."""
    if profile.provider is not None and profile.provider not in conf["providers"]:
        raise profiles.ProfileError(f"agent profile {profile.name!r}: provider not configured")
    if profile.permissions:
        from magi_code.tools.policy import Policy, PolicyError

        try:
            Policy.from_settings({"rules": list(profile.permissions)})
        except PolicyError:
            raise profiles.ProfileError(
                f"agent profile {profile.name!r}: a permissions rule is not valid"
            ) from None


def disabled_names(conf: Mapping[str, Any], table: str) -> list[str]:
    section = conf.get(table, {})
    names = section.get("disabled", []) if isinstance(section, Mapping) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ContextSettingsError(f"{table}.disabled must be a list of names")
    return names


def extra_paths(loaded: Loaded, home: str, cwd: str) -> list[tuple[str, str, str | None]]:
    """(base directory, path, root) of each `instructions` entry: relative to the settings
    file that names it (the project file replaces the global list when it sets one). A
    project's paths must stay inside the repository root; a path the global settings name
    is the user's own choice (root None: it need only be a regular file)."""
    paths = loaded.settings.get("instructions", [])
    if not paths:
        return []
    if "instructions" not in loaded.project:
        return [(home, path, None) for path in paths]
    from magi_code.config import paths as where

    base = os.path.dirname(where.project_settings(cwd))
    root = instructions.repository_root(cwd)
    return [(base, path, root) for path in paths]


def ordered_sources(context: Context) -> list[tuple[str, str, int]]:
    """(kind, origin, bytes) of each instruction source in the order the model reads them:
    what `/status` and `magi-code context` show."""
    return [(s.kind, s.origin, len(s.text.encode())) for s in context.sources]


def with_profile_selection(conf: Mapping[str, Any], profile: profiles.Profile) -> dict[str, Any]:
    """The settings with the selected profile's provider, model and thinking applied."""
    chosen = {"provider": profile.provider, "model": profile.model, "thinking": profile.thinking}
    return {**conf, **{key: value for key, value in chosen.items() if value is not None}}
