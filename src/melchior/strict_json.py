"""JSON for melchior: strict decoding and the canonical encoding, without the import cost.

`import json` pulls in `re` and `enum`, and compiles six patterns. On a slow machine that is a
fifth of what one `melchior tool` exec may spend. The C accelerator behind the json package
(`_json`) needs none of that, so this module drives it directly: the same scanner and encoder
that `json.loads` and `json.dumps` use. Where `_json` is missing or its interface differs
(another interpreter, a future CPython), the json package does the work instead. The results
are the same either way: a differential test checks that.

Strict: invalid UTF-8, a BOM, NaN/Infinity, a number too large for a double (`1e999`, which
would read as Infinity) and duplicate keys are refused (ValueError), and so is nesting too deep
(RecursionError). `loads` raises nothing else on any text. Pure: no I/O.

Errors without the json package: the scanner reports a syntax error by raising
`json.decoder.JSONDecodeError`. Up to CPython 3.11, `_json` looks that class up in
`sys.modules` without importing it, and when `json.decoder` was never imported (as here) it
returns NULL with no exception set, which the interpreter turns into a `SystemError`. `loads`
turns that back into the ValueError it stands for.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WS = " \t\n\r"  # JSON's whitespace, exactly


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Duplicate  # two spellings of one key: readers would disagree on which wins
    return out


def _no_constant(_name: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value - value != 0.0:  # `1e999` reads as Infinity, which no encoder writes back
        raise ValueError("a number too large for a double")
    return value


def _unencodable(value: object) -> Any:
    raise TypeError("not a JSON value")


class _Context:
    """What `_json.make_scanner` reads its settings from."""

    def __init__(self) -> None:
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = _no_duplicates
        self.parse_float = _finite
        self.parse_int = int
        self.parse_constant = _no_constant
        self.memo: dict[str, str] = {}


def _fast() -> tuple[Callable[[str, int], tuple[Any, int]], Callable[[Any, int], Any]] | None:
    try:
        import _json

        context: Any = _Context()  # make_scanner reads its settings as attributes
        scan = _json.make_scanner(context)
        encode = _json.make_encoder(
            None, _unencodable, _json.encode_basestring, None, ":", ",", True, False, False
        )
        if "".join(encode({"b": [1], "a": "é"}, 0)) != '{"a":"é","b":[1]}':
            return None
    except (ImportError, AttributeError, TypeError):
        return None
    return scan, encode


_FAST = _fast()


def loads(text: str) -> Any:
    """One JSON value filling `text` (JSON whitespace around it allowed)."""
    if _FAST is None:
        import json

        return json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite,
        )
    start = len(text) - len(text.lstrip(_WS))
    try:
        value, end = _FAST[0](text, start)
    except StopIteration:
        raise ValueError("no JSON value") from None
    except SystemError:
        # A syntax error that `_json` could not raise (see the module's docstring).
        raise ValueError("not JSON") from None
    if len(text.rstrip(_WS)) != end:
        raise ValueError("more than one JSON value")
    return value


def dumps(value: Any) -> str:
    """The canonical encoding: compact, keys sorted by code point, non-ASCII as UTF-8 text."""
    if _FAST is None:
        import json

        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    return "".join(_FAST[1](value, 0))
