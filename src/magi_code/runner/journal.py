"""The runner's view of an attached session: append records, acknowledge input with the
revision that holds it, a fresh revision after a run, and the items to replay to a model."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from magi_code.providers.base import Item
from magi_code.runner.replay import replay
from magi_code.sessions import Attachment, SessionError
from magi_code.sessions.snapshot import projected_message_id

BLOCK_BYTES = 1 << 20


class SessionJournal:
    def __init__(self, attachment: Attachment, path: Path) -> None:
        self.attachment, self.path = attachment, path

    def append(self, record: dict[str, Any], *, fsync: bool) -> None:
        try:
            self.attachment.append(record, fsync=fsync)
        except SessionError as exc:
            raise OSError(exc.code) from exc

    def acknowledge(self, stored_message_id: str) -> tuple[str, str]:
        """The projected id of the input just appended and the revision holding it, without
        re-reading the file."""
        return projected_message_id("user", stored_message_id), self.attachment.revision

    def revision(self) -> str | None:
        try:
            return self.attachment.snapshot().revision
        except SessionError:
            return None

    def replay(self) -> list[Item]:
        return replay(self.records())

    def records(self) -> Iterator[dict[str, Any]]:
        """Every whole record of the file, split on b"\\n"; a torn tail is not a record."""
        with self.path.open("rb") as handle:
            pending = b""
            while block := handle.read(BLOCK_BYTES):
                lines = (pending + block).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line:
                        yield json.loads(line)
