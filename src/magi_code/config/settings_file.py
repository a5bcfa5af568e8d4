"""Safe edits of the user's GLOBAL settings file, as text: the one TOML writer.

There is no TOML writer in the standard library, and the file is the user's: it is edited as
text, as little as possible, and every other byte - comments, order, spacing - is kept. Four
edits exist: set a string array in a top-level table (`set_array`, e.g. `[permissions]
trusted_projects` or `[mcp] approved`), set top-level strings (`set_strings`, e.g. `provider`
and `model`), append a new table (`add_table`, e.g. `[mcp.servers.NAME]`), and remove a table
with its sub-tables (`remove_table`).

Each edit is checked before it is kept: the new text must parse, and parse to exactly the old
settings with only the intended change made; otherwise nothing is written and
`SettingsFileError` says so with a fixed phrase. Writes are atomic (a temporary file in the
same folder, fsync, rename, fsync of the folder) and leave the file mode 0600; a settings
file that is a symlink is written through to its target.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import tempfile
import tomllib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from magi_code.config import ConfigError

if TYPE_CHECKING:
    from magi_code.config import ConfigCode  # defined for type checkers only (config/__init__)

_ANY_HEADER = re.compile(r"^[ \t]*\[")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class SettingsFileError(ConfigError):
    """The global settings could not be read, edited safely or written (a fixed phrase)."""

    code: ConfigCode = "settings_file_failed"


def read(settings_file: str) -> dict[str, Any]:
    """The parsed global settings ({} when the file does not exist)."""
    return _load(_read_text(settings_file))


def set_array(settings_file: str, table: str, key: str, values: list[str]) -> None:
    """Make `[table] key = [values...]`, in place where it is, else where it fits."""
    text = _read_text(settings_file)
    before = _load(text)
    array = toml_array(values)

    def expected(settings: dict[str, Any]) -> None:
        settings.setdefault(table, {})[key] = values

    edits = (
        _replace_value(text, table, key, array),
        _after_header(text, table, key, array),
        _append(text, f"[{table}]\n{key} = {array}\n"),
        f"{table}.{key} = {array}\n" + text,  # where the table is made of dotted root keys
    )
    _write_first(settings_file, before, expected, edits)


def set_strings(settings_file: str, values: dict[str, str]) -> None:
    """Make each top-level `key = "value"`: its line rewritten where it is, else a new line at
    the top of the file (top-level keys come before every table)."""
    text = _read_text(settings_file)
    before = _load(text)

    def expected(settings: dict[str, Any]) -> None:
        settings.update(values)

    edited = text
    for key, value in values.items():
        line = f"{toml_key(key)} = {toml_string(value)}"
        edited = _replace_root_line(edited, key, line) or f"{line}\n{edited}"
    _write_first(settings_file, before, expected, (edited,))


def add_table(settings_file: str, path: list[str], values: dict[str, Any]) -> None:
    """Append `[a.b.c]` with `values` (strings, booleans, string lists, string tables).
    Fails when the table already exists."""
    text = _read_text(settings_file)
    before = _load(text)
    if _get(before, path) is not None:
        raise SettingsFileError("that table already exists in the global settings")
    lines = [f"[{dotted(path)}]"]
    for key, value in values.items():
        lines.append(f"{toml_key(key)} = {toml_value(value)}")

    def expected(settings: dict[str, Any]) -> None:
        parent = settings
        for part in path[:-1]:
            parent = parent.setdefault(part, {})
        parent[path[-1]] = copy.deepcopy(values)

    _write_first(settings_file, before, expected, (_append(text, "\n".join(lines) + "\n"),))


def remove_table(settings_file: str, path: list[str]) -> bool:
    """Remove the `[a.b.c]` table and its sub-tables; False when it is not there."""
    text = _read_text(settings_file)
    before = _load(text)
    if _get(before, path) is None:
        return False

    def expected(settings: dict[str, Any]) -> None:
        parent = _get(settings, path[:-1])
        assert isinstance(parent, dict)
        del parent[path[-1]]

    _write_first(settings_file, before, expected, (_without_table(text, path),), prune=True)
    return True


def toml_string(value: str) -> str:
    """A TOML basic string; control characters escaped. Raises on text that is not Unicode."""
    out = []
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        elif 0xD800 <= ord(char) <= 0xDFFF:
            raise SettingsFileError("the text is not valid Unicode")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_array(values: list[str]) -> str:
    return "[" + ", ".join(toml_string(v) for v in values) + "]"


def toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else toml_string(key)


def dotted(path: list[str]) -> str:
    return ".".join(toml_key(part) for part in path)


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return toml_array(value)
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        pairs = ", ".join(f"{toml_key(k)} = {toml_string(v)}" for k, v in value.items())
        return "{" + pairs + "}" if pairs else "{}"
    raise SettingsFileError("that value cannot be written to the settings")


# ---- checking and writing -------------------------------------------------------------------


def _write_first(
    settings_file: str,
    before: dict[str, Any],
    change: Callable[[dict[str, Any]], None],
    candidates: tuple[str | None, ...],
    prune: bool = False,
) -> None:
    """Write the first candidate text that parses to `before` with `change` applied (with
    `prune`, tables left empty may also vanish: `[a.b.c]` alone defined `a` and `a.b`)."""
    expected = copy.deepcopy(before)
    try:
        change(expected)
    except (AttributeError, TypeError):  # a key on the way is not a table
        raise SettingsFileError(_BY_HAND) from None
    allowed = [expected, _pruned(expected)] if prune else [expected]
    for text in candidates:
        if text is not None and _parses_to(text, allowed):
            _write_atomic(settings_file, text)
            return
    raise SettingsFileError(_BY_HAND)


_BY_HAND = "the global settings cannot be edited safely; edit them by hand"


def _parses_to(text: str, allowed: list[dict[str, Any]]) -> bool:
    try:
        return tomllib.loads(text) in allowed
    except (tomllib.TOMLDecodeError, RecursionError):
        return False


def _pruned(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` without the tables that hold nothing (recursively)."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            value = _pruned(value)
            if not value:
                continue
        out[key] = value
    return out


def _load(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        raise SettingsFileError("the global settings are not valid TOML") from None


def _read_text(settings_file: str) -> str:
    try:
        with open(settings_file, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError):
        raise SettingsFileError("the global settings cannot be read") from None


def _get(settings: dict[str, Any], path: list[str]) -> object:
    node: object = settings
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _write_atomic(settings_file: str, text: str) -> None:
    target = os.path.realpath(settings_file)
    folder = os.path.dirname(target)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".settings.", suffix=".toml", dir=folder)  # 0600
    except OSError:
        raise SettingsFileError("the global settings cannot be written") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
        directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise SettingsFileError("the global settings cannot be written") from None


# ---- text edits (each may be wrong: the parse check decides) --------------------------------


def _lines(text: str) -> list[str]:
    return text.split("\n")  # never splitlines(): U+2028 and friends are not line ends in TOML


def _header(table: str) -> re.Pattern[str]:
    return re.compile(rf"^[ \t]*\[[ \t]*{re.escape(table)}[ \t]*\][ \t]*(#.*)?$")


def _replace_value(text: str, table: str, key: str, array: str) -> str | None:
    """Rewrite the existing `key = [...]` under `[table]` (or `table.key = [...]` at the root)."""
    header = _header(table)
    in_table_key = re.compile(rf"^[ \t]*({re.escape(key)}|\"{re.escape(key)}\")[ \t]*=[ \t]*")
    root_key = re.compile(rf"^[ \t]*{re.escape(table)}[ \t]*\.[ \t]*{re.escape(key)}[ \t]*=[ \t]*")
    in_table, seen_header, offset = False, False, 0
    for line in _lines(text):
        if _ANY_HEADER.match(line):
            in_table, seen_header = bool(header.match(line)), True
        match = (in_table_key if in_table else root_key).match(line)
        if match is not None and (in_table or not seen_header):
            start = offset + match.end()
            end = _array_end(text, start)
            return None if end is None else text[:start] + array + text[end:]
        offset += len(line) + 1
    return None


def _array_end(text: str, start: int) -> int | None:
    """The offset just past the array that starts at `start`, strings and comments skipped."""
    if text[start : start + 1] != "[":
        return None
    depth, i = 0, start
    while i < len(text):
        char = text[i]
        if char == "#":
            newline = text.find("\n", i)
            i = len(text) if newline < 0 else newline
            continue
        if char in "\"'":
            i = _string_end(text, i)
            if i < 0:
                return None
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _string_end(text: str, i: int) -> int:
    quote = text[i]
    delimiter = quote * 3 if text.startswith(quote * 3, i) else quote
    j = i + len(delimiter)
    while j < len(text):
        if quote == '"' and text[j] == "\\":
            j += 2
            continue
        if text.startswith(delimiter, j):
            return j + len(delimiter)
        j += 1
    return -1


def _replace_root_line(text: str, key: str, line: str) -> str | None:
    """The text with the top-level `key = ...` line (before any table) replaced by `line`."""
    assignment = re.compile(rf"^[ \t]*({re.escape(key)}|\"{re.escape(key)}\")[ \t]*=")
    lines = _lines(text)
    for index, current in enumerate(lines):
        if _ANY_HEADER.match(current):
            return None
        if assignment.match(current):
            return "\n".join([*lines[:index], line, *lines[index + 1 :]])
    return None


def _after_header(text: str, table: str, key: str, array: str) -> str | None:
    lines = _lines(text)
    header = _header(table)
    for index, line in enumerate(lines):
        if header.match(line):
            return "\n".join([*lines[: index + 1], f"{key} = {array}", *lines[index + 1 :]])
    return None


def _append(text: str, block: str) -> str:
    separator = "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
    return f"{text}{separator}{block}"


def _without_table(text: str, path: list[str]) -> str | None:
    """The text without the `[path]` table and its `[path.*]` sub-tables (each up to the next
    header; blank lines stay, as the separators they are). Headers are compared after parsing
    them, so any quoting style matches."""
    lines = _lines(text)
    kept: list[str] = []
    dropping = found = False
    for line in lines:
        if _ANY_HEADER.match(line):
            parsed = _header_path(line)
            dropping = parsed is not None and parsed[: len(path)] == path
            found = found or dropping
        if not dropping or not line.strip():
            kept.append(line)
    return "\n".join(kept) if found else None


def _header_path(line: str) -> list[str] | None:
    """The key path a `[a."b".c]` header line names (None for `[[arrays]]` and bad lines)."""
    stripped = line.strip()
    if stripped.startswith("[["):
        return None
    try:
        parsed = tomllib.loads(stripped)
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    node: object = parsed
    while isinstance(node, dict) and len(node) == 1:
        key = next(iter(node))
        path.append(key)
        node = node[key]
    return path if node == {} else None
