"""Decoding the model's argument JSON into checked fields. Pure.

Strict on shape: an object, no unknown or duplicate keys, exact types (a bool is not an int).
Errors are ToolInputError codes and never echo the input.
"""

import json
from collections.abc import Mapping

from magi_code.tools.base import ToolInputError
from magi_code.tools.limits import ARGUMENTS_BYTES

Fields = Mapping[str, object]


def load_object(arguments: str, required: set[str], optional: set[str]) -> Fields:
    """The arguments object, with every required key and no key outside the two sets."""
    value = load_any_object(arguments)
    keys = set(value)
    if not required <= keys or not keys <= required | optional:
        raise ToolInputError("invalid_arguments")
    return value


def load_any_object(arguments: str) -> dict[str, object]:
    """One JSON object within ARGUMENTS_BYTES, without duplicate keys; its keys unchecked."""
    if len(arguments) > ARGUMENTS_BYTES or len(arguments.encode("utf-8", "replace")) > (
        ARGUMENTS_BYTES
    ):
        raise ToolInputError("arguments_too_large")
    try:
        value = json.loads(arguments or "{}", object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError):
        raise ToolInputError("invalid_json") from None
    if not isinstance(value, dict):
        raise ToolInputError("invalid_arguments")
    return value


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("duplicate key")
    return out


def text(
    fields: Fields, key: str, default: str | None = None, *, empty: bool = False, nul: bool = False
) -> str:
    """A string field; empty strings and NUL (paths, commands) are refused unless allowed."""
    value = fields.get(key, default)
    if not isinstance(value, str) or (not nul and "\x00" in value) or (not value and not empty):
        raise ToolInputError("invalid_arguments")
    return value


def whole(fields: Fields, key: str, default: int, lo: int, hi: int) -> int:
    value = fields.get(key, default)
    if type(value) is not int or not lo <= value <= hi:
        raise ToolInputError("invalid_arguments")
    return value


def number(fields: Fields, key: str, default: float, lo: float, hi: float) -> float:
    """A positive bounded number; `lo` is exclusive so zero timeouts are refused."""
    value = fields.get(key, default)
    if type(value) not in (int, float):
        raise ToolInputError("invalid_arguments")
    assert isinstance(value, int | float)
    if not lo < value <= hi:
        raise ToolInputError("invalid_arguments")
    return float(value)


def flag(fields: Fields, key: str) -> bool:
    value = fields.get(key, False)
    if not isinstance(value, bool):
        raise ToolInputError("invalid_arguments")
    return value
