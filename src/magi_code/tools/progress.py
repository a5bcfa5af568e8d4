"""ToolProgress: how far a running tool call has got, as its tool shows it live (a detail
event: `exec --json`'s `tool.progress`, Mission Control's running card, ACP's tool call). Today
only MCP tools report it, from their servers' progress notifications (mcp/live.py)."""

from magi_code.records import record


@record
class ToolProgress:
    """`progress` of `total` (None: unknown) and the server's message (one line, redacted,
    bounded), at most one per PROGRESS_INTERVAL_S (mcp/limits.py)."""

    activity_id: str
    name: str
    progress: float
    total: float | None
    message: str

    def text(self) -> str:
        """`3/10 message`; `3 message` without a total."""
        of = "" if self.total is None else f"/{self.total:g}"
        return f"{self.progress:g}{of} {self.message}".rstrip()
