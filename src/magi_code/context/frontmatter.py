"""Front matter: the `---` block that opens a SKILL.md or an agent profile.

`split` and `parse` are pure (text in, fields or a `FrontMatterError` out); `read_head` is the
one bounded read startup makes of such a file: it stops at the closing `---`, never reading a
body. `parse` tries a strict subset of YAML first, which covers most files at no import cost,
and gives what it refuses to a real YAML parser (PyYAML, imported only then), so that what
real files use is read as YAML reads it: block scalars (`|`, `|-`, `>`, `>-`), escapes in
double quotes, flow and multi-line values, anchors.

The strict subset:
- The file's first line is `---`; the block ends at the next line that is exactly `---`, within
  FRONT_MATTER_BYTES. A file that does not start with `---` has no front matter.
- Inside, each line is blank, a comment (`#` as the first non-blank character), or `key: value`
  at column 0. Keys are ASCII letters, digits, `-` and `_`; each key appears once.
- A value is plain text to the end of the line or to a comment (` #`), trimmed; or `"..."` /
  `'...'` taken verbatim between the quotes (double quotes without a backslash, single quotes
  without a quote inside), a comment allowed after; or `[a, b, "c"]`, an inline list of such.
- An empty value opens a block of indented lines (spaces, no tabs) that are either all
  `- item` (a list of scalars) or all `key: value` (a map of scalars, like `metadata`).

Either way the fields are text, a list of text, or a map of text to text: `true`, `false` and
numbers stay text (each field's reader decides what it accepts), an empty value is "". A value
nested deeper, a key given twice or a block that is not a map of keys is refused, and so is
YAML that does not parse: each refusal names the line (of the file, the fence being line 1) in
a fixed phrase, never the file's text; where YAML fails on the line the strict subset refused,
the strict subset's more precise phrase is kept.
"""

from __future__ import annotations

from magi_code.context import ContextError
from magi_code.context.confined import open_confined
from magi_code.limits import FRONT_MATTER_BYTES

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from yaml.nodes import MappingNode, Node

    from magi_code.context import ContextCode

    Value = str | list[str] | dict[str, str]

FENCE = "---"
FIRST_READ = 1024  # most front matter fits: one small read per file at startup, not the bound
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_REFUSED_STARTS = ("|", ">", "&", "*", "{", "!")


class FrontMatterError(ContextError, ValueError):
    """The block is malformed; `problem` is a fixed phrase and a line number, no file text."""

    code: ContextCode = "front_matter_invalid"

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line  # the line `problem` names, when it names one


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
    """The fields of a front-matter block (the text between the fences)."""
    try:
        return _strict(block)
    except FrontMatterError as refused:
        return _as_yaml(block, refused)


def _refused(number: int, problem: str) -> FrontMatterError:
    return FrontMatterError(f"line {number}: {problem}", number)


def _strict(block: str) -> dict[str, Value]:
    fields: dict[str, Value] = {}
    open_key: str | None = None  # a key whose value is the indented block below it
    for number, raw in enumerate(block.split("\n"), start=2):  # line 1 is the opening fence
        line = raw.rstrip("\r").rstrip()
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        if "\t" in line[: len(line) - len(stripped) + 1]:
            raise _refused(number, "tab in indentation")
        if line[0] == " ":
            if open_key is None:
                raise _refused(number, "unexpected indentation")
            fields[open_key] = _add_to_block(fields[open_key], stripped, number)
            continue
        key, value = _key_value(line, number)
        if key in fields:
            raise _refused(number, f"duplicate key {key}")
        open_key = key if not value else None
        fields[key] = _value(value, number) if value else ""
    return fields


def _key_value(line: str, number: int) -> tuple[str, str]:
    key, colon, value = line.partition(":")
    if not colon or not key or not set(key) <= _KEY_CHARS:
        raise _refused(number, "expected key: value")
    if value and not value.startswith(" "):
        raise _refused(number, "expected a space after the colon")
    return key, _uncomment(value.strip())


def _uncomment(text: str) -> str:
    """`text` without a trailing comment (a `#` after a space or tab); quoted text keeps its
    `#`s, and what follows its closing quote is kept unless it is a comment."""
    if text[:1] in ('"', "'"):
        end = text.find(text[0], 1)
        rest = text[end + 1 :] if end > 0 else ""
        if rest[:1] in (" ", "\t") and rest.lstrip().startswith("#"):
            return text[: end + 1]
        return text
    if text.startswith("#"):
        return ""
    for index in range(1, len(text)):
        if text[index] == "#" and text[index - 1] in (" ", "\t"):
            return text[:index].rstrip()
    return text


def _value(text: str, number: int) -> str | list[str]:
    if text.startswith("["):
        if not text.endswith("]"):
            raise _refused(number, "unterminated list")
        inner = text[1:-1].strip()
        return [_scalar(item.strip(), number) for item in inner.split(",")] if inner else []
    return _scalar(text, number)


def _scalar(text: str, number: int) -> str:
    if text[:1] in ('"', "'"):
        if len(text) < 2 or text[-1] != text[0] or text[0] in text[1:-1]:
            raise _refused(number, "bad quoting")
        if text[0] == '"' and "\\" in text:
            raise _refused(number, "escape in quotes")
        return text[1:-1]
    if not text or text.startswith(_REFUSED_STARTS) or text.startswith(("[", "]")):
        raise _refused(number, "unsupported value")
    return text


def _add_to_block(current: Value, item: str, number: int) -> Value:
    if item.startswith("- ") or item == "-":
        if isinstance(current, dict) and current:
            raise _refused(number, "list item in a map")
        items = current if isinstance(current, list) else []
        return [*items, _scalar(_uncomment(item[1:].strip()), number)]
    if isinstance(current, list) and current:
        raise _refused(number, "map entry in a list")
    key, value = _key_value(item, number)
    mapping = current if isinstance(current, dict) else {}
    if key in mapping:
        raise _refused(number, f"duplicate key {key}")
    return {**mapping, key: _scalar(value, number)}


def _as_yaml(block: str, strict: FrontMatterError) -> dict[str, Value]:
    """The block as YAML reads it, for what the strict subset refused (`strict`)."""
    import yaml  # only here: most front matter never needs it, and startup pays nothing

    try:
        root = yaml.compose(block, Loader=yaml.SafeLoader)  # nodes only: nothing is built
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise _yaml_refusal(mark.line + 2 if mark else None, strict) from None
    except yaml.YAMLError as error:  # a character YAML refuses
        position = getattr(error, "position", None)
        number = block.count("\n", 0, position) + 2 if isinstance(position, int) else None
        raise _yaml_refusal(number, strict) from None
    except RecursionError:
        raise strict from None
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        raise _yaml_refusal(_line(root), strict, "expected key: value")
    return {key: _node_value(node) for key, node in _pairs(root)}


def _yaml_refusal(
    number: int | None, strict: FrontMatterError, problem: str = "not valid YAML"
) -> FrontMatterError:
    """The strict subset's refusal when YAML fails on the same line, else YAML's line."""
    if number is None or number == strict.line:
        return strict
    return _refused(number, problem)


def _pairs(node: MappingNode) -> list[tuple[str, Node]]:
    import yaml

    seen: set[str] = set()
    pairs = []
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise _refused(_line(key_node), "expected key: value")
        key = str(key_node.value)
        if key in seen:
            named = f" {key}" if key and set(key) <= _KEY_CHARS else ""
            raise _refused(_line(key_node), f"duplicate key{named}")
        seen.add(key)
        pairs.append((key, value_node))
    return pairs


def _node_value(node: Node) -> Value:
    import yaml

    if isinstance(node, yaml.ScalarNode):
        return str(node.value)
    if isinstance(node, yaml.SequenceNode):
        return [_scalar_node(item) for item in node.value]
    if isinstance(node, yaml.MappingNode):
        return {key: _scalar_node(value) for key, value in _pairs(node)}
    raise _refused(_line(node), "unsupported value")


def _scalar_node(node: Node) -> str:
    import yaml

    if not isinstance(node, yaml.ScalarNode):
        raise _refused(_line(node), "value nested too deeply")
    return str(node.value)


def _line(node: Node) -> int:
    return int(node.start_mark.line) + 2  # the block starts on the file's line 2


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
