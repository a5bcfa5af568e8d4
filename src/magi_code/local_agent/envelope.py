"""Sans-I/O request validation: one frame's bytes in, a `Request` or a `Rejection` out.

Order of checks, each with its code (never an echo of the input):
  empty frame -> invalid_frame; bad UTF-8 -> invalid_request; nesting over JSON_DEPTH ->
  invalid_frame; bad JSON or not an object -> invalid_request; a wrong protocol or version ->
  protocol_mismatch (the caller closes); duplicate, missing or unknown top-level fields, or a
  bad id/method grammar -> invalid_request; params not an object or with duplicate keys ->
  invalid_params.
The id is echoed only when it is itself valid; otherwise the rejection carries id None.
Only a well-formed envelope (valid id, exact fields) is `retained`: it spends one of the
child's request ids even when its method or params are then refused.
"""

from __future__ import annotations

import json
import re

from magi_code.limits import ID_BYTES, JSON_DEPTH, PROTOCOL, PROTOCOL_VERSION
from magi_code.records import record

_NAME = re.compile(rb"[A-Za-z0-9._-]{1,%d}" % ID_BYTES)
# A JSON string, or an unterminated one up to the end of the frame (a lone trailing backslash
# included). Possessive and always matching at a quote: linear in the frame, where the old
# backtracking form rescanned the rest of the frame from every quote of `"\"\"\"...`.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.?)*+(?:"|\Z)', re.S)
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")
_OPENERS = b"[{"
FIELDS = frozenset({"protocol", "version", "id", "method", "params"})


TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any


@record
class Request:
    id: str
    method: str
    params: dict[str, Any]


@record
class Rejection:
    code: str
    id: str | None
    retained: bool = False


class DuplicateKeys(dict[str, object]):
    """A JSON object in which some key appeared twice (kept to be refused, never used)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    return DuplicateKeys(obj) if len(obj) != len(pairs) else obj


def _no_constants(name: str) -> Any:
    raise ValueError("non-standard JSON constant")


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_no_constants)


def valid_name(value: object) -> bool:
    """The grammar of ids, method and capability names: 1-64 bytes of [A-Za-z0-9._-]."""
    return (
        isinstance(value, str) and value.isascii() and _NAME.fullmatch(value.encode()) is not None
    )


def nesting_exceeds(data: bytes, limit: int = JSON_DEPTH) -> bool:
    """Whether containers outside strings nest deeper than `limit`; linear in `data`."""
    depth = 0
    for byte in _STRING.sub(b"", data).translate(None, _NOT_BRACKETS):
        if byte in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def parse_json(data: bytes) -> tuple[str | None, Any]:
    """Strict JSON for a whole frame: (error code, None) or (None, value)."""
    if not data:
        return "invalid_frame", None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "invalid_request", None
    if nesting_exceeds(data):
        return "invalid_frame", None
    try:
        return None, _DECODER.decode(text)
    except (ValueError, RecursionError):
        return "invalid_request", None


def parse_request(data: bytes) -> Request | Rejection:
    error, obj = parse_json(data)
    if error is not None:
        return Rejection(error, None)
    if not isinstance(obj, dict):
        return Rejection("invalid_request", None)
    raw_id = obj.get("id")
    request_id = raw_id if valid_name(raw_id) else None
    duplicated = isinstance(obj, DuplicateKeys)
    if not duplicated and _mismatched(obj):
        return Rejection("protocol_mismatch", request_id)
    if duplicated or set(obj) != FIELDS or request_id is None:
        return Rejection("invalid_request", None if duplicated else request_id)
    method, params = obj["method"], obj["params"]
    if not valid_name(method):
        return Rejection("invalid_request", request_id)
    assert isinstance(request_id, str) and isinstance(method, str)
    if not isinstance(params, dict) or isinstance(params, DuplicateKeys):
        return Rejection("invalid_params", request_id, retained=True)
    return Request(request_id, method, params)


def _mismatched(obj: dict[str, Any]) -> bool:
    if "protocol" in obj and obj["protocol"] != PROTOCOL:
        return True
    version = obj.get("version", PROTOCOL_VERSION)
    return type(version) is not int or version != PROTOCOL_VERSION
