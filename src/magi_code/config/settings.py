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
A key the schema does not know is warned about with the closest known key (`unknown_keys`).
A selection that names no model gets its provider's default (providers/known_models.py); a
model its provider does not offer is `ModelUnknown` at admitted startup (`check_model`), the
close matches named, and an untrusted project's is dropped as not valid.
Loading reads files and never writes them. Errors are `SettingsError` naming the file, the line
and column (TOML, with the parser's phrase when plain), the key, the value (a short printable
one, never one that looks secret: `known_models.shown`) and the choices, and nothing else of
the file; a file nested deeper than SETTINGS_DEPTH is one (and so never reaches recursive code).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from magi_code import cache
from magi_code.config import ConfigError, schema
from magi_code.limits import SETTINGS_DEPTH, SETTINGS_SETTLED_NS, SETTINGS_SHOWN_CHARS
from magi_code.records import field, record

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, AnyStr, BinaryIO

    from magi_code.config import ConfigCode
    from magi_code.config.trust import Dropped

# No default `model`: a selection that names none gets its provider's default (the preset's,
# from the built-in catalog, or the first it lists), so `provider = "openai"` works alone.
DEFAULTS: dict[str, Any] = {
    "provider": "fixture",
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


class ModelUnknown(SettingsError):
    """The selected model is not one its provider offers (providers/known_models.py); the
    message names the close matches."""


def _unusable(message: str, reason: str) -> SettingsError:
    error = SettingsError(message)
    error.reason = reason
    return error


@record
class Loaded:
    """Merged settings, the layers beneath the project file, the project layer as trust
    admitted it, what trust decided, and the keys of either file that are no setting."""

    settings: dict[str, Any]
    base: dict[str, Any]
    project: dict[str, Any]
    trusted: bool
    dropped: list[Dropped]
    unknown: list[Dropped] = field(default_factory=list)

    def warnings(self) -> list[Dropped]:
        """What a face warns of: each key that is no setting (its warning names the closest
        known key), then each key trust dropped that is not one of those."""
        return [*self.unknown, *(d for d in self.dropped if d not in self.unknown)]


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
        raise _unusable(f"{path}: the settings file cannot be read", "not readable") from exc
    with handle:
        key = _identity(path, handle.fileno()) if cache_file else None
        if cache_file and key:
            kept = cache.kept(cache_file, key)
            if isinstance(kept, dict) and not too_deep(kept):
                return kept
        try:
            data = _parse(handle)
        except SettingsError as exc:  # named with its file
            raise _unusable(f"{path}: {exc}", exc.reason) from exc.__cause__
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
        raise _unusable(f"{path}: the settings file is not a regular file", "not a regular file")
    return os.fdopen(fd, "rb")


def _parse(handle: BinaryIO) -> dict[str, Any]:
    """What `tomllib.load` does, each failure with its reason (and position: line and column,
    counted as tomllib counts them). For TOML the message adds the parser's own phrase when it
    is plain (the `reason`, for a warning about an untrusted file, never carries it: that
    phrase may quote the file)."""
    import tomllib  # only when a file must be parsed: it costs milliseconds at startup

    try:
        raw = handle.read()
    except OSError as exc:
        raise _unusable("the settings file cannot be read", "not readable") from exc
    try:
        text = raw.decode()
    except UnicodeDecodeError as exc:
        reason = "not valid UTF-8" + _position(raw, b"\n", exc.start)
        raise _unusable(reason, reason) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        import re

        said, found = str(exc), re.search(r" \(at line (\d+), column (\d+)\)$", str(exc))
        if found:  # where tomllib says
            where, said = f" at line {found[1]}, column {found[2]}", said[: found.start()]
        else:  # "(at end of document)"
            where, said = _position(text, "\n", len(text)), said.partition(" (at ")[0]
        reason = f"not valid TOML{where}"
        raise _unusable(f"{reason}{_plain(said)}", reason) from exc
    except RecursionError as exc:
        raise _unusable("nested too deeply", "nested too deeply") from exc
    if too_deep(data):
        raise _unusable("nested too deeply", "nested too deeply")
    return data


def _plain(phrase: str) -> str:
    """`: phrase` for the parser's phrase when it is short printable ASCII and nothing in it
    looks like a secret; else nothing."""
    from magi_code.redact import looks_secret

    fits = phrase.isascii() and phrase.isprintable() and 0 < len(phrase) <= SETTINGS_SHOWN_CHARS
    return f": {phrase}" if fits and not looks_secret(phrase) else ""


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
    parses are cached there (`read_toml`). A key config/schema.py does not know, in either
    file, is in `unknown` (nothing reads it): its warning names the closest known key.
    A selection that names no model gets its provider's default (`known_models`)."""
    from magi_code.config import trust

    def cache_file(name: str) -> str | None:
        return cache.named(cache_home, name) if cache_home is not None else None

    global_settings = read_toml(global_file, cache_file(GLOBAL_PARSE))
    base = base_layers(global_settings, global_file)
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
    if not trusted:
        home = os.path.dirname(global_file)
        project = _offered_selection(base, project, home, (dropped, project_file))
    settings = merge(base, project)
    validate(settings, {project_file: project, global_file: global_settings})
    with_default_model(settings)
    unknown = [*unknown_keys(global_settings, global_file), *unknown_keys(raw, project_file)]
    return Loaded(settings, base, project, trusted, [*unusable, *dropped], unknown)


def base_layers(
    global_settings: Mapping[str, Any], global_file: str | None = None
) -> dict[str, Any]:
    """Defaults, presets and the global settings: what no project file has touched. A value
    of the wrong type in the global file fails here, whatever a project file says."""
    base = merge(DEFAULTS, global_settings)
    check_types(base, {global_file: global_settings} if global_file else {})
    return base


def check_types(settings: Mapping[str, Any], files: Mapping[str, Mapping[str, Any]]) -> None:
    """Every known key's value has its type (config/schema.py), or SettingsError names it,
    the value it has and the first of `files` (path: its own settings) that sets it."""
    found = schema.fault(settings)
    if found is not None:
        path, wanted = found
        value = _what(_at(settings, path))
        raise SettingsError(
            f"{schema.shown(path)} must be {wanted}, not {value}{_where(path, files)}"
        )


def _at(layer: object, path: tuple[str | int, ...]) -> object:
    """The value at `path` in `layer`; KeyError when it holds none there."""
    for part in path:
        if isinstance(layer, dict) and part in layer:
            layer = layer[part]
            continue
        if not (isinstance(layer, list) and isinstance(part, int) and part < len(layer)):
            raise KeyError(part)
        layer = layer[part]
    return layer


def _what(value: object) -> str:
    """A value as a short phrase: a number or switch as TOML writes it, a string in
    backquotes (`known_models.shown`), else its kind."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        from magi_code.providers.known_models import shown

        return shown(value) if value else "an empty string"
    return (
        "a table"
        if isinstance(value, dict)
        else "a list"
        if isinstance(value, list)
        else "a date or time"
    )


def _where(path: tuple[str | int, ...], files: Mapping[str, Mapping[str, Any]]) -> str:
    """` (in FILE)` for the first file whose own settings hold `path`; else nothing."""
    for file, layer in files.items():
        try:
            _at(layer, path)
        except KeyError:
            continue
        return f" (in {file})"
    return ""


def validate(
    settings: Mapping[str, Any], files: Mapping[str, Mapping[str, Any]] | None = None
) -> None:
    """The merged settings: every type, and a selected provider that is configured. `files`
    (path: its own settings, the project's first) say which file set a bad value."""
    from magi_code.providers.known_models import one_of, shown

    files = files or {}
    check_types(settings, files)
    provider, providers = settings["provider"], settings["providers"]
    if provider not in providers:
        raise SettingsError(
            f"the selected provider is not configured: provider = {shown(provider)}"
            f"{_where(('provider',), files)}{one_of(provider, sorted(providers))}"
        )


def with_default_model(settings: dict[str, Any]) -> None:
    """A selection that names no model takes its provider's default: the preset's (the
    built-in catalog), else the first model the provider lists; none when it lists none
    (`check_model` then says so)."""
    if "model" in settings:
        return
    from magi_code.providers.known_models import default_model

    provider = settings["provider"]
    model = default_model(provider, settings["providers"][provider])
    if model is not None:
        settings["model"] = model


def _offered_selection(
    base: dict[str, Any],
    project: dict[str, Any],
    mc_home: str,
    drops: tuple[list[Dropped], str],
) -> dict[str, Any]:
    """An untrusted project's `model`, then `provider`, dropped as not valid while the
    selection names a model its provider does not offer: untrusted input never stops startup
    (`check_model` would refuse it)."""
    from magi_code.config.trust import INVALID, Dropped

    dropped, file = drops
    for key in ("model", "provider"):
        settings = merge(base, project)
        provider = settings.get("provider")
        if key not in project or not isinstance(provider, str) or _offers(settings, mc_home):
            continue
        project = {k: v for k, v in project.items() if k != key}
        dropped.append(Dropped(key, file, False, INVALID))
    return project


def _offers(settings: dict[str, Any], mc_home: str) -> bool:
    """Whether the selection's model (or its provider's default) is one it offers; True for
    a selection other checks refuse (a provider that is not configured, a value's type)."""
    from magi_code.providers.known_models import refusal

    conf = settings.get("providers", {}).get(settings["provider"])
    if not isinstance(conf, dict) or schema.fault(settings) is not None:
        return True
    with_default_model(settings)
    model = settings.get("model")
    return isinstance(model, str) and refusal(settings["provider"], conf, model, mc_home) is None


def check_model(
    settings: Mapping[str, Any], mc_home: str | None, dropped: Sequence[Dropped] = ()
) -> None:
    """The selected model is one its provider offers (providers/known_models.py: what it
    lists, the built-in catalog, what discovery cached in `mc_home`), or `ModelUnknown` says
    which models are close, and the first key of `dropped` that is no setting (a misspelled
    `provider` most often). Admitted startup runs it, for every face."""
    from magi_code.config.trust import UNKNOWN
    from magi_code.providers.known_models import refusal, shown

    provider = settings["provider"]
    model = settings.get("model")
    refused = refusal(provider, settings["providers"][provider], model, mc_home) if model else None
    if model is None:
        refused = f"no `model` is set, and the provider {shown(provider)} has no default: set one"
    if refused is not None:
        unknown = next((d.warning() for d in dropped if d.reason == UNKNOWN), None)
        raise ModelUnknown(refused + (f"; and {unknown}" if unknown else ""))


def unknown_keys(layer: Mapping[str, Any], file: str) -> list[Dropped]:
    """A `Dropped` for each key of one file's settings that config/schema.py does not know,
    with the closest known key beside it. Tables and each entry of a named-entries table are
    walked; the tables in a list (rules, hooks) are not: their modules refuse an unknown key."""
    from magi_code.config.trust import UNKNOWN, Dropped

    found: list[Dropped] = []

    def walk(value: object, shape: object, prefix: str) -> None:
        if isinstance(shape, schema.Each) and isinstance(value, dict):
            for name, item in value.items():
                walk(item, shape.shape, f"{prefix}{name}.")
        elif isinstance(shape, dict) and isinstance(value, dict):
            for key, item in value.items():
                if key in shape:
                    walk(item, shape[key], f"{prefix}{key}.")
                else:
                    guess = _closest(key, shape)
                    found.append(
                        Dropped(prefix + key, file, False, UNKNOWN, guess and prefix + guess)
                    )

    walk(layer, schema.SETTINGS, "")
    return found


def _closest(key: str, known: Mapping[str, object]) -> str | None:
    from difflib import get_close_matches

    close = get_close_matches(key, list(known), n=1, cutoff=0.6)
    return close[0] if close else None
