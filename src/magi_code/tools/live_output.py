"""A running command's output as a person watches it: `ToolOutputDelta` detail events (exec
--json's `tool.output.delta`, Mission Control's running card), handed to the context's detail
sink (runner/turn.py DetailEmitter) while the command runs.

Rules: at most one event per LIVE_OUTPUT_INTERVAL_MS, carrying at most the newest
LIVE_OUTPUT_BYTES of what arrived since the last one (what it skipped is counted); redacted as
live text is (redact.py LiveRedactor: a secret split between two events is never shown); sent
only when there is something new. The tool's result is untouched: this is only a view of it.
"""

import codecs
from collections.abc import Awaitable, Callable
from typing import Any

from magi_code.records import record
from magi_code.redact import LiveRedactor
from magi_code.tools.limits import LIVE_OUTPUT_BYTES, LIVE_OUTPUT_INTERVAL_MS


@record
class ToolOutputDelta:
    """What a running call printed since its last delta (`text`, redacted), after
    `skipped_bytes` it printed faster than they were shown."""

    activity_id: str
    name: str
    text: str
    skipped_bytes: int = 0


class LiveFeed:
    """Takes a command's output chunks (`add`, cheap) and, while `report` runs, hands the
    detail sink a delta at most every LIVE_OUTPUT_INTERVAL_MS; `end` sends the rest."""

    def __init__(
        self, detail: Callable[[Any], Awaitable[None]], activity_id: str, name: str
    ) -> None:
        self.detail, self.activity_id, self.name = detail, activity_id, name
        self.pending = bytearray()
        self.skipped = 0
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.redactor = LiveRedactor()

    def add(self, chunk: bytes) -> None:
        self.pending += chunk
        over = len(self.pending) - LIVE_OUTPUT_BYTES
        if over > 0:
            del self.pending[:over]
            self.skipped += over

    async def report(self) -> None:
        """Until cancelled."""
        import anyio  # here: run events import this module on the serve path's way to start

        while True:
            await anyio.sleep(LIVE_OUTPUT_INTERVAL_MS / 1000)
            await self.send(final=False)

    async def end(self) -> None:
        await self.send(final=True)

    async def send(self, final: bool) -> None:
        text = self.decoder.decode(bytes(self.pending), final)
        self.pending.clear()
        shown = self.redactor.feed(text) + (self.redactor.end() if final else "")
        if shown or self.skipped:
            skipped, self.skipped = self.skipped, 0
            await self.detail(ToolOutputDelta(self.activity_id, self.name, shown, skipped))
