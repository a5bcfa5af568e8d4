"""The closed set of session/history error codes, raised as `SessionError(code)`.

A `SessionError` carries only its code: never a path, record content, or an exception's text,
so the protocol server can put `error.code` on the wire as it is.
"""

from typing import Literal, get_args

from magi_code.errors import MagiError

SessionCode = Literal[
    "busy",
    "stale_session",
    "session_missing",
    "session_busy",
    "session_invalid",
    "cwd_mismatch",
    "history_limit",
    "stale_revision",
    "content_limit",
]

SESSION_CODES: frozenset[str] = frozenset(get_args(SessionCode))


class SessionError(MagiError):
    """A session operation failed with one closed code; `str(err)` is the code itself."""

    def __init__(self, code: SessionCode) -> None:
        super().__init__(code)
        self.code: SessionCode = code
