"""Recording folder trust in the GLOBAL settings file: `[permissions] trusted_projects`.

There is no TOML writer in the standard library, and the file is the user's: it is edited as
text, as little as possible. Only the `trusted_projects` array changes (rewritten in place, or
inserted after the `[permissions]` header, or as a new table at the end); every other byte -
comments, order, spacing - is kept. Each edit is checked before it is kept: the new text must
parse, and parse to the old settings with only `permissions.trusted_projects` changed;
otherwise nothing is written and `TrustFileError` says so. Writes are atomic (a temporary file
in the same folder, fsync, rename, fsync of the folder) and leave the file mode 0600; a
settings file that is a symlink is written through to its target.
"""

import contextlib
import os
import re
import tempfile
import tomllib

from magi_code.config.trust import trusted_paths

KEY = "trusted_projects"
_HEADER = re.compile(r"^[ \t]*\[[ \t]*permissions[ \t]*\][ \t]*(#.*)?$")
_ANY_HEADER = re.compile(r"^[ \t]*\[")
_KEY_LINE = re.compile(r"^[ \t]*(trusted_projects|\"trusted_projects\")[ \t]*=[ \t]*")
_ROOT_KEY_LINE = re.compile(r"^[ \t]*permissions[ \t]*\.[ \t]*trusted_projects[ \t]*=[ \t]*")


class TrustFileError(Exception):
    """The global settings could not be read, edited safely or written (a fixed phrase)."""


def trust(settings_file: str, folder: str) -> bool:
    """List the canonical `folder`; False when it was already listed (nothing written)."""
    canonical = os.path.realpath(folder)
    listed = _read_list(settings_file)
    if canonical in [os.path.realpath(os.path.expanduser(p)) for p in listed]:
        return False
    _rewrite(settings_file, [*listed, canonical])
    return True


def untrust(settings_file: str, folder: str) -> bool:
    """Remove every entry naming the canonical `folder`; False when none did."""
    canonical = os.path.realpath(folder)
    listed = _read_list(settings_file)
    kept = [p for p in listed if os.path.realpath(os.path.expanduser(p)) != canonical]
    if len(kept) == len(listed):
        return False
    _rewrite(settings_file, kept)
    return True


def trusted_through(settings_file: str, folder: str) -> str | None:
    """The listed ancestor (or the folder itself) that makes `folder` trusted, if any."""
    here = os.path.realpath(folder)
    for root in trusted_paths({"permissions": {KEY: _read_list(settings_file)}}):
        if here == root or here.startswith(root.rstrip("/") + "/"):
            return root
    return None


def _load(text: str) -> dict[str, object]:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        raise TrustFileError("the global settings are not valid TOML") from None


def _read_text(settings_file: str) -> str:
    try:
        with open(settings_file, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError):
        raise TrustFileError("the global settings cannot be read") from None


def _read_list(settings_file: str) -> list[str]:
    table = _load(_read_text(settings_file)).get("permissions", {})
    listed = table.get(KEY, []) if isinstance(table, dict) else []
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise TrustFileError("permissions.trusted_projects is not a list of paths")
    return listed


def toml_string(value: str) -> str:
    """A TOML basic string; control characters escaped. Raises on text that is not Unicode."""
    out = []
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        elif 0xD800 <= ord(char) <= 0xDFFF:
            raise TrustFileError("the path is not valid Unicode")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_array(paths: list[str]) -> str:
    return "[" + ", ".join(toml_string(p) for p in paths) + "]"


def _rewrite(settings_file: str, paths: list[str]) -> None:
    text = _read_text(settings_file)
    before = _load(text)
    array = toml_array(paths)
    for edit in (_replace_value, _after_header, _new_table, _root_dotted):
        edited = edit(text, array)
        if edited is not None and _only_trust_changed(before, edited, paths):
            _write_atomic(settings_file, edited)
            return
    raise TrustFileError("the global settings cannot be edited safely; edit them by hand")


def _only_trust_changed(before: dict[str, object], edited: str, paths: list[str]) -> bool:
    try:
        after = tomllib.loads(edited)
    except (tomllib.TOMLDecodeError, RecursionError):
        return False
    old = {k: v for k, v in before.items() if k != "permissions"}
    new = {k: v for k, v in after.items() if k != "permissions"}
    old_perm = before.get("permissions", {})
    new_perm = after.get("permissions", {})
    if not isinstance(old_perm, dict) or not isinstance(new_perm, dict):
        return False
    same_rest = {k: v for k, v in old_perm.items() if k != KEY} == {
        k: v for k, v in new_perm.items() if k != KEY
    }
    return old == new and same_rest and new_perm.get(KEY) == paths


def _lines(text: str) -> list[str]:
    return text.split("\n")  # never splitlines(): U+2028 and friends are not line ends in TOML


def _replace_value(text: str, array: str) -> str | None:
    """Rewrite the existing `trusted_projects = [...]` under `[permissions]` (or dotted)."""
    lines = _lines(text)
    in_permissions = False
    offset = 0
    for line in lines:
        if _ANY_HEADER.match(line):
            in_permissions = bool(_HEADER.match(line))
        match = (_KEY_LINE if in_permissions else _ROOT_KEY_LINE).match(line)
        if match is not None and (in_permissions or not _in_table(text, offset)):
            start = offset + match.end()
            end = _array_end(text, start)
            if end is None:
                return None
            return text[:start] + array + text[end:]
        offset += len(line) + 1
    return None


def _in_table(text: str, offset: int) -> bool:
    return any(_ANY_HEADER.match(line) for line in _lines(text[:offset]))


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


def _after_header(text: str, array: str) -> str | None:
    lines = _lines(text)
    for index, line in enumerate(lines):
        if _HEADER.match(line):
            return "\n".join([*lines[: index + 1], f"{KEY} = {array}", *lines[index + 1 :]])
    return None


def _root_dotted(text: str, array: str) -> str | None:
    """Where `permissions` is made of dotted keys at the root: add one before any header."""
    return f"permissions.{KEY} = {array}\n" + text


def _new_table(text: str, array: str) -> str | None:
    separator = "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
    return f"{text}{separator}[permissions]\n{KEY} = {array}\n"


def _write_atomic(settings_file: str, text: str) -> None:
    target = os.path.realpath(settings_file)
    folder = os.path.dirname(target)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".settings.", suffix=".toml", dir=folder)  # 0600
    except OSError:
        raise TrustFileError("the global settings cannot be written") from None
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
        raise TrustFileError("the global settings cannot be written") from None
