"""Settings: the global file under MC_HOME and the exact-cwd project file, merged.

Precedence: built-in defaults < MC_HOME/settings.toml < <cwd>/.magi-code/settings.toml.
Tables merge key by key; any other value in the project file replaces the global one.
Three keys are global-only, so a project cannot grant itself trust or delete history:
`mcp.approved` (which MCP server definitions are approved), `permissions.trusted_projects`
and `sessions.retention_days` (the sessions under MC_HOME belong to every project).
Loading reads files and never writes them. Errors are `SettingsError` with no file content.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any

DEFAULTS: dict[str, Any] = {
    "provider": "fixture",
    "model": "fixture-model",
    "thinking": None,
    "agent": "default",
    "providers": {"fixture": {"wire_api": "fixture", "models": ["fixture-model"]}},
}
GLOBAL_ONLY = (
    ("mcp", "approved"),
    ("permissions", "trusted_projects"),
    ("sessions", "retention_days"),  # sessions are global: a project must not prune them
)


class SettingsError(Exception):
    pass


def read_toml(path: str) -> dict[str, Any]:
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, once tomllib is imported
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError("unreadable settings file") from exc
    import tomllib  # only when there is a file: it costs milliseconds at startup

    with handle:
        try:
            return tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SettingsError("unreadable settings file") from exc


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load(global_file: str, project_file: str) -> dict[str, Any]:
    project = read_toml(project_file)
    for table, key in GLOBAL_ONLY:
        section = project.get(table)
        if isinstance(section, dict):
            section.pop(key, None)
    settings = merge(merge(DEFAULTS, read_toml(global_file)), project)
    validate(settings)
    return settings


def validate(settings: Mapping[str, Any]) -> None:
    for key in ("provider", "model", "agent"):
        if not isinstance(settings.get(key), str) or not settings[key]:
            raise SettingsError(f"{key} must be a non-empty string")
    if settings.get("thinking") is not None and not isinstance(settings["thinking"], str):
        raise SettingsError("thinking must be a string")
    providers = settings.get("providers")
    if not isinstance(providers, Mapping) or not all(
        isinstance(conf, Mapping) for conf in providers.values()
    ):
        raise SettingsError("providers must be a table of tables")
    if settings["provider"] not in providers:
        raise SettingsError("the selected provider is not configured")
    instructions = settings.get("instructions", [])
    if not isinstance(instructions, list) or not all(isinstance(p, str) for p in instructions):
        raise SettingsError("instructions must be a list of paths")
    sessions = settings.get("sessions", {})
    days = sessions.get("retention_days", 0) if isinstance(sessions, Mapping) else None
    if isinstance(days, bool) or not isinstance(days, int) or days < 0:
        raise SettingsError("sessions.retention_days must be a whole number of days, 0 or more")
