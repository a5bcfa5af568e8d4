"""The closed set of error codes the local-agent protocol may put on the wire.

A code is all an error response carries: never an exception's text, a path, a credential
or any part of the input that caused it. Anything else reaching the wire is a bug.
"""

from magi_code.errors import MagiError

PROTOCOL_ERRORS = frozenset(
    {
        "invalid_frame",
        "invalid_request",
        "invalid_params",
        "protocol_mismatch",
        "unsupported_method",
        "unsupported_capability",
        "not_initialized",
        "already_initialized",
        "duplicate_id",
        "request_limit",
        "frame_too_large",
        "incomplete_frame",
    }
)
STARTUP_ERRORS = frozenset(
    {
        "configuration_invalid",
        "provider_unavailable",
        "profile_invalid",
        "mcp_unavailable",
        "startup_cancelled",
        "startup_failed",
    }
)
SESSION_ERRORS = frozenset(
    {
        "busy",
        "stale_session",
        "session_missing",
        "session_busy",
        "session_invalid",
        "cwd_mismatch",
        "history_limit",
        "stale_revision",
        "content_limit",
        "operation_cancelled",
    }
)
TURN_ERRORS = frozenset(
    {"stale_run", "stale_approval", "execution_failed", "persistence_failed", "output_unavailable"}
)
ALL_ERRORS = PROTOCOL_ERRORS | STARTUP_ERRORS | SESSION_ERRORS | TURN_ERRORS

# After these the child stops admitting input and closes.
CLOSING_ERRORS = frozenset({"protocol_mismatch", "request_limit", "frame_too_large"})


class RequestRejected(MagiError):
    """A request answered with an error code; `code` is always one of ALL_ERRORS."""

    def __init__(self, code: str) -> None:
        assert code in ALL_ERRORS, code
        super().__init__(code)
        self.code = code
