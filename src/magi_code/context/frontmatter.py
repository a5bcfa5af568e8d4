"""Front matter: the `---` block that opens a SKILL.md or an agent profile.

`split` and `parse` are pure (text in, fields or a `FrontMatterError` out); `read_head` is the
one bounded read startup makes of such a file: it stops at the closing `---`, never reading a
body. No PyYAML: what is accepted is a strict subset of YAML, enough for the Agent Skills and
profile fields, and anything else is refused with the line number, never guessed at:

- The file's first line is `---`; the block ends at the next line that is exactly `---`, within
  FRONT_MATTER_BYTES. A file that does not start with `---` has no front matter.
- Inside, each line is blank, a comment (`#` as the first non-blank character), or `key: value`
  at column 0. Keys are ASCII letters, digits, `-` and `_`; each key appears once.
- A value is plain text to the end of the line (trimmed), or `"..."` / `'...'` taken verbatim
  between the quotes (no escapes), or `[a, b, "c"]`, an inline list of such scalars.
- An empty value opens a block of indented lines (spaces, no tabs) that are either all
  `- item` (a list of scalars) or all `key: value` (a map of scalars, like `metadata`).
- `true`, `false` and numbers stay text: each field's reader decides what it accepts.
Block scalars (`|`, `>`), anchors, flow maps and deeper nesting are refused.
"""

from __future__ import annotations

from magi_code.context import ContextError
from magi_code.context.confined import open_confined
from magi_code.limits import FRONT_MATTER_BYTES

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from magi_code.context import ContextCode

    Value = str | list[str] | dict[str, str]

FENCE = "---"
FIRST_READ = 1024  # most front matter fits: one small read per file at startup, not the bound
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_REFUSED_STARTS = ("|", ">", "&", "*", "{", "!")


class FrontMatterError(ContextError, ValueError):
    """The block is malformed; `problem` is a fixed phrase and a line number, no file text."""

    code: ContextCode = "front_matter_invalid"

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def split(text: str) -> tuple[str | None, str]:
    """(the block between the fences or None when there is none, the body after it)."""
    lines = text.split("\n")
    if lines[0].rstrip("\r") != FENCE:
        return None, text
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") == FENCE:
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :])
    raise FrontMatterError("front matter has no closing ---")


def parse(block: str) -> dict[str, Value]:
    fields: dict[str, Value] = {}
    open_key: str | None = None  # a key whose value is the indented block below it
    for number, raw in enumerate(block.split("\n"), start=2):  # line 1 is the opening fence
        line = raw.rstrip("\r").rstrip()
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        if "\t" in line[: len(line) - len(stripped) + 1]:
            raise FrontMatterError(f"line {number}: tab in indentation")
        if line[0] == " ":
            if open_key is None:
                raise FrontMatterError(f"line {number}: unexpected indentation")
            fields[open_key] = _add_to_block(fields[open_key], stripped, number)
            continue
        key, value = _key_value(line, number)
        if key in fields:
            raise FrontMatterError(f"line {number}: duplicate key {key}")
        open_key = key if not value else None
        fields[key] = _value(value, number) if value else ""
    return fields


def _key_value(line: str, number: int) -> tuple[str, str]:
    key, colon, value = line.partition(":")
    if not colon or not key or not set(key) <= _KEY_CHARS:
        raise FrontMatterError(f"line {number}: expected key: value")
    if value and not value.startswith(" "):
        raise FrontMatterError(f"line {number}: expected a space after the colon")
    return key, value.strip()


def _value(text: str, number: int) -> str | list[str]:
    if text.startswith("["):
        if not text.endswith("]"):
            raise FrontMatterError(f"line {number}: unterminated list")
        inner = text[1:-1].strip()
        return [_scalar(item.strip(), number) for item in inner.split(",")] if inner else []
    return _scalar(text, number)


def _scalar(text: str, number: int) -> str:
    if text[:1] in ('"', "'"):
        if len(text) < 2 or text[-1] != text[0] or text[0] in text[1:-1]:
            raise FrontMatterError(f"line {number}: bad quoting")
        return text[1:-1]
    if not text or text.startswith(_REFUSED_STARTS) or text.startswith(("[", "]")):
        raise FrontMatterError(f"line {number}: unsupported value")
    return text


def _add_to_block(current: Value, item: str, number: int) -> Value:
    if item.startswith("- ") or item == "-":
        if isinstance(current, dict) and current:
            raise FrontMatterError(f"line {number}: list item in a map")
        items = current if isinstance(current, list) else []
        return [*items, _scalar(item[1:].strip(), number)]
    if isinstance(current, list) and current:
        raise FrontMatterError(f"line {number}: map entry in a list")
    key, value = _key_value(item, number)
    mapping = current if isinstance(current, dict) else {}
    if key in mapping:
        raise FrontMatterError(f"line {number}: duplicate key {key}")
    return {**mapping, key: _scalar(value, number)}


def read_head(path: str, root: str | None = None) -> tuple[dict[str, Value] | None, int]:
    """The parsed front matter of `path` (None when it has none) and the byte offset of its
    body. Reads at most FRONT_MATTER_BYTES + 1 bytes, of a regular file inside `root` only
    (confined.open_confined). OSError (`confined.Refused` among them), UnicodeDecodeError and
    FrontMatterError pass to the caller, who names the file in a notice."""
    with open_confined(path, root) as handle:
        head = handle.read(FIRST_READ)
        if len(head) == FIRST_READ and b"\n---\n" not in head and b"\n---\r\n" not in head:
            head += handle.read(FRONT_MATTER_BYTES + 1 - FIRST_READ)
    if not head.startswith(b"---\n") and not head.startswith(b"---\r\n"):
        return None, 0
    end, fence = head.find(b"\n---\n"), 5
    if end < 0:
        end, fence = head.find(b"\n---\r\n"), 6
    if end < 0 and head.endswith(b"\n---") and len(head) <= FRONT_MATTER_BYTES:
        end, fence = len(head) - 4, 4  # the file ends at the closing fence
    if end < 0 and len(head) <= FRONT_MATTER_BYTES:
        raise FrontMatterError("front matter has no closing ---")
    if end < 0 or end + fence > FRONT_MATTER_BYTES:
        raise FrontMatterError(f"front matter longer than {FRONT_MATTER_BYTES} bytes")
    block = head[head.index(b"\n") + 1 : end].decode("utf-8")
    return parse(block), end + fence
