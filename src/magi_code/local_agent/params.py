"""Exact params shapes: every field named, typed, and nothing else (else invalid_params)."""

from __future__ import annotations

from magi_code.local_agent.errors import RequestRejected

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any

Shape = dict[str, tuple[type, ...]]


def exact(params: dict[str, Any], required: Shape, optional: Shape | None = None) -> None:
    optional = optional or {}
    if not set(required) <= set(params) <= set(required) | set(optional):
        raise RequestRejected("invalid_params")
    for key, value in params.items():
        allowed = required.get(key) or optional[key]
        # bool is an int subclass: only accept it where bool itself is named.
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            raise RequestRejected("invalid_params")
