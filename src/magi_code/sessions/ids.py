"""Identifier grammars and generators for sessions, revisions, cursors and message IDs.

Session IDs: `[A-Za-z0-9_-]+`, at most SESSION_ID_BYTES. Opaque protocol IDs (revision, cursor,
message ID): `[A-Za-z0-9._-]+`, at most ID_BYTES. Nothing here touches files.
"""

import re
import time

from magi_code.ids import token_hex
from magi_code.limits import ID_BYTES, SESSION_ID_BYTES

_SESSION_ID = re.compile(r"[A-Za-z0-9_-]+")
_OPAQUE_ID = re.compile(r"[A-Za-z0-9._-]+")


def valid_session_id(value: object) -> bool:
    """True when `value` is a session ID a path may be built from."""
    return (
        isinstance(value, str)
        and len(value) <= SESSION_ID_BYTES
        and _SESSION_ID.fullmatch(value) is not None
    )


def valid_opaque_id(value: object) -> bool:
    """True when `value` follows the protocol's 64-byte ID grammar."""
    return (
        isinstance(value, str)
        and len(value) <= ID_BYTES
        and _OPAQUE_ID.fullmatch(value) is not None
    )


def new_session_id() -> str:
    """A fresh, time-sortable session ID: 12 hex digits of milliseconds + 20 random hex digits."""
    return f"{time.time_ns() // 1_000_000:012x}{token_hex(10)}"
