"""The closed sets of MCP failures: startup's, as protocol startup codes, and a tool call's
(`McpCallFailure`, which the model is told in words of our own). No text, no paths; but for
`NotSent`, whose sentence is for the person at a face, never for a wire."""

from typing import Literal

from magi_code.errors import MagiError

McpStartupCode = Literal["mcp_unavailable", "startup_cancelled"]

# Why a tool call has no result: no_result (an error answer, the timeout, the connection
# closed); over HTTP, too_large (an answer over MESSAGE_BYTES), compressed (a compressed
# answer), malformed (bad HTTP framing), unreachable (the connection failed), session_lost
# (the server lost our session and a new one could not be opened); over stdio, stopped (the
# server ended during the call), failed (it ended and could not be restarted, or no restart is
# left).
McpCallFailure = Literal[
    "no_result",
    "too_large",
    "compressed",
    "malformed",
    "unreachable",
    "session_lost",
    "stopped",
    "failed",
]


class McpStartupError(MagiError):
    code: McpStartupCode = "mcp_unavailable"

    def __init__(self) -> None:
        super().__init__(self.code)


class McpUnavailable(McpStartupError):
    """An enabled server is unapproved, failed to start, or missed its deadline. `server` (its
    settings name) and `reason` (our words, with its bounded, redacted stderr tail: failures.py)
    are for a person's face, never for a protocol's wire."""

    code: McpStartupCode = "mcp_unavailable"

    def __init__(self, server: str | None = None, reason: str | None = None) -> None:
        super().__init__()
        self.server, self.reason = server, reason


class McpLoginRequired(McpUnavailable):
    """An HTTP server needs an OAuth login (none stored, or its refresh was refused). Startup
    never prompts: a terminal face tells the user to run `magi-code mcp login <server>`."""

    def __init__(self, server: str) -> None:
        super().__init__(server, "it needs a login")
        self.server: str = server  # the settings name, for the terminal advice; never on the wire


class McpCancelled(McpStartupError):
    """Startup was cancelled (shutdown) before every server connected."""

    code: McpStartupCode = "startup_cancelled"


class DefinitionError(MagiError, ValueError):
    """The `[mcp]` settings have a bad shape. Carries no settings text."""

    code: Literal["configuration_invalid"] = "configuration_invalid"


class NotSent(Exception):
    """A prompt is not sent: an MCP prompt command or an `@server:uri` mention could not be
    had. `why` says what is wrong and what to do."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why
