"""Settings: the global file under MC_HOME and the exact-cwd project file, merged.

Precedence: built-in defaults and presets < MC_HOME/settings.toml < <cwd>/.magi-code/
settings.toml. Tables merge key by key; any other value in the project file replaces the
global one. What a project file may set depends on folder trust and is decided in one place,
config/trust.py; the keys it may not set are dropped and reported, never fatal. Untrusted input
never stops startup: in an untrusted folder a project file that cannot be used at all (it does
not parse, is not UTF-8, nests too deeply, is not a regular file, cannot be read) is ignored
whole and reported the same way, with the line and column at fault; a trusted project's file
and the global file fail as ever. A value of the wrong type (config/schema.py has every known
key's) is a `SettingsError` naming the key; an untrusted project's is dropped (config/trust.py).
Loading reads files and never writes them. Errors are `SettingsError` with no file content;
a file nested deeper than SETTINGS_DEPTH is one (and so never reaches recursive code).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from magi_code import cache
from magi_code.config import ConfigError, schema
from magi_code.limits import SETTINGS_DEPTH, SETTINGS_SETTLED_NS

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any, AnyStr, BinaryIO

    from magi_code.config import ConfigCode
    from magi_code.config.trust import Dropped

DEFAULTS: dict[str, Any] = {
    "provider": "fixture",
    "model": "fixture-model",
    "thinking": None,
    "agent": "default",
    "providers": {
        "fixture": {"wire_api": "fixture", "models": ["fixture-model"]},
        # Built-in presets: where credentials stored for these names may be sent.
        "openai": {
            "wire_api": "openai-responses",
            "base_url": "https://api.openai.com/v1",
            "api_key_env": "OPENAI_API_KEY",
        },
        "anthropic": {
            "wire_api": "anthropic",
            "base_url": "https://api.anthropic.com/v1",
            "api_key_env": "ANTHROPIC_API_KEY",
        },
        "codex": {"wire_api": "codex", "base_url": "https://chatgpt.com/backend-api/codex"},
        # A local Ollama at its default address: keyless, as every loopback server may be.
        "ollama": {"wire_api": "openai-chat", "base_url": "http://localhost:11434/v1"},
    },
}


# The last parse of each settings file, in MC_HOME/cache (magi_code/cache.py).
GLOBAL_PARSE = "settings.json"
PROJECT_PARSE = "project-settings.json"


class SettingsError(ConfigError):
    """Settings that cannot be used (a fixed phrase: the key at fault, never a value).
    `reason` says why a file cannot be used at all, for a warning: a fixed phrase and at most
    the position at fault, never the file's content."""

    code: ConfigCode = "configuration_invalid"
    reason = "not valid"


def _unusable(message: str, reason: str) -> SettingsError:
    error = SettingsError(message)
    error.reason = reason
    return error


class Loaded:
    """Merged settings, the layers beneath the project file, the project layer as trust
    admitted it, and what trust decided."""

    __slots__ = ("base", "dropped", "project", "settings", "trusted")

    def __init__(
        self,
        settings: dict[str, Any],
        base: dict[str, Any],
        project: dict[str, Any],
        trusted: bool,
        dropped: list[Dropped],
    ) -> None:
        self.settings, self.base, self.project = settings, base, project
        self.trusted, self.dropped = trusted, dropped


def read_toml(
    path: str, cache_file: str | None = None, *, regular_only: bool = False
) -> dict[str, Any]:
    """The file's tables ({} when there is no file). With `cache_file` (magi_code/cache.py),
    a parse kept there for this very file (same path, inode, size, modification and change
    times) is used instead of parsing again, and a new parse is kept once the file settled
    (a file that does not parse is never kept). `regular_only`: anything but a regular file
    (a FIFO, a link to /dev/zero) is refused without reading it (or waiting on it)."""
    try:
        handle = _open(path, regular_only)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise _unusable("unreadable settings file", "not readable") from exc
    with handle:
        key = _identity(path, handle.fileno()) if cache_file else None
        if cache_file and key:
            kept = cache.kept(cache_file, key)
            if isinstance(kept, dict) and not too_deep(kept):
                return kept
        data = _parse(handle)
    if cache_file and key and _settled(key):
        cache.keep(cache_file, key, data)
    return data


def _open(path: str, regular_only: bool) -> BinaryIO:
    if not regular_only:
        return open(path, "rb")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)  # non-blocking: opening a FIFO must not wait for a writer
    try:
        regular = (os.fstat(fd).st_mode & 0o170000) == 0o100000  # stat.S_ISREG
    except OSError:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise _unusable("unreadable settings file", "not a regular file")
    return os.fdopen(fd, "rb")


def _parse(handle: BinaryIO) -> dict[str, Any]:
    """What `tomllib.load` does, each failure with its reason (and position: line and column,
    counted as tomllib counts them)."""
    import tomllib  # only when a file must be parsed: it costs milliseconds at startup

    try:
        raw = handle.read()
    except OSError as exc:
        raise _unusable("unreadable settings file", "not readable") from exc
    try:
        text = raw.decode()
    except UnicodeDecodeError as exc:
        where = _position(raw, b"\n", exc.start)
        raise _unusable("unreadable settings file", f"not valid UTF-8{where}") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        import re

        found = re.search(r"\(at line (\d+), column (\d+)\)$", str(exc))  # where tomllib says
        if found:
            where = f" at line {found[1]}, column {found[2]}"
        else:  # "(at end of document)"
            where = _position(text, "\n", len(text))
        raise _unusable("unreadable settings file", f"not valid TOML{where}") from exc
    except RecursionError as exc:
        raise _unusable("unreadable settings file", "nested too deeply") from exc
    if too_deep(data):
        raise _unusable("settings nested too deeply", "nested too deeply")
    return data


def _position(text: AnyStr, newline: AnyStr, offset: int) -> str:
    line = text.count(newline, 0, offset) + 1
    column = offset - text.rfind(newline, 0, offset)  # rfind: -1 on the first line
    return f" at line {line}, column {column}"


def _identity(path: str, fd: int) -> list[object] | None:
    """What changes whenever the file's bytes may have: its path, device and inode, size,
    and modification and change times (no program sets the latter)."""
    from magi_code import __version__

    try:
        info = os.fstat(fd)
    except OSError:
        return None
    where = os.path.realpath(path)
    times = [info.st_mtime_ns, info.st_ctime_ns]
    return [__version__, where, info.st_dev, info.st_ino, info.st_size, *times]


def _settled(key: list[object]) -> bool:
    """Unchanged for SETTINGS_SETTLED_NS: a change within the timestamps' granularity after
    this parse could otherwise leave the key as it is."""
    import time

    times = [t for t in key[-2:] if isinstance(t, int)]
    return time.time_ns() - max(times) >= SETTINGS_SETTLED_NS


def too_deep(value: object) -> bool:
    """Whether tables and arrays nest deeper than SETTINGS_DEPTH (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list) and depth > SETTINGS_DEPTH:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return False


def merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load(global_file: str, project_file: str) -> dict[str, Any]:
    return load_layers(global_file, project_file).settings


def trusted_for(cwd: str, global_file: str) -> bool:
    """`trust.is_trusted` against the global settings file; False if it cannot be read."""
    from magi_code.config import trust

    try:
        return trust.is_trusted(cwd, read_toml(global_file))
    except SettingsError:
        return False


def load_layers(
    global_file: str, project_file: str, *, may_trust: bool = True, cache_home: str | None = None
) -> Loaded:
    """The merged settings; `project_file` is <workspace>/.magi-code/settings.toml, and the
    workspace's trust decides what of it applies (an untrusted one that cannot be used at all
    is ignored: a `Dropped` with no key). `may_trust` False (a subagent of an untrusted
    parent) treats a trusted workspace as untrusted. With `cache_home` (MC_HOME) the files'
    parses are cached there (`read_toml`)."""
    from magi_code.config import trust

    def cache_file(name: str) -> str | None:
        return cache.named(cache_home, name) if cache_home is not None else None

    global_settings = read_toml(global_file, cache_file(GLOBAL_PARSE))
    base = base_layers(global_settings)
    workspace = os.path.dirname(os.path.dirname(project_file))
    trusted = may_trust and trust.is_trusted(workspace, global_settings)
    # In the folder that holds MC_HOME (cwd = ~), the "project" file is the global one.
    is_global = os.path.realpath(project_file) == os.path.realpath(global_file)
    raw: dict[str, Any] = {}
    unusable: list[Dropped] = []
    if not is_global:
        try:
            raw = read_toml(project_file, cache_file(PROJECT_PARSE), regular_only=True)
        except SettingsError as exc:
            if trusted:
                raise
            unusable.append(trust.Dropped("", project_file, False, exc.reason))
    project, dropped = trust.admit_project(raw, base, trusted, project_file)
    settings = merge(base, project)
    validate(settings)
    return Loaded(settings, base, project, trusted, [*unusable, *dropped])


def base_layers(global_settings: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults, presets and the global settings: what no project file has touched. A value
    of the wrong type in the global file fails here, whatever a project file says."""
    base = merge(DEFAULTS, global_settings)
    check_types(base)
    return base


def check_types(settings: Mapping[str, Any]) -> None:
    """Every known key's value has its type (config/schema.py), or SettingsError names it."""
    found = schema.fault(settings)
    if found is not None:
        path, wanted = found
        raise SettingsError(f"{schema.shown(path)} must be {wanted}")


def validate(settings: Mapping[str, Any]) -> None:
    """The merged settings: every type, and a selected provider that is configured."""
    check_types(settings)
    if settings["provider"] not in settings["providers"]:
        raise SettingsError("the selected provider is not configured")
