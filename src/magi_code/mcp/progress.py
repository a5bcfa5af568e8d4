from magi_code.records import record

"""Progress: the last progress a server reported for one of our requests, kept for the
activity summary (numbers only, never the server's message)."""


@record(frozen=False)
class Progress:
    progress: float | None = None
    total: float | None = None  # None: the server does not know it

    async def update(self, progress: float, total: float | None, message: str | None) -> None:
        """The SDK's progress callback: the last report counts."""
        self.progress, self.total = progress, total

    def note(self) -> str:
        """For a summary: ` (progress 3 of 5)`, or nothing when none was reported."""
        if self.progress is None:
            return ""
        of = "" if self.total is None else f" of {self.total:g}"
        return f" (progress {self.progress:g}{of})"
