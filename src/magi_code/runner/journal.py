"""The runner's view of an attached session: append records, acknowledge input with the
revision that holds it, a fresh revision after a run, and the items to replay to a model.

The replay items are kept per attachment (a journal lives for one run; the attachment for
many): built from the file once, then extended by every record appended through a journal.
They are used only while the attachment's revision is the one they were extended to and the
file is as the attachment left it; otherwise they are rebuilt from the file.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary, WeakSet

import jiter

from magi_code.providers.base import Item
from magi_code.runner.replay import Replayer
from magi_code.sessions import Attachment, SessionError
from magi_code.sessions.snapshot import projected_message_id

BLOCK_BYTES = 1 << 20


@dataclass
class _Replay:
    replayer: Replayer
    revision: str  # the attachment's revision after the last record fed


_REPLAYS: "WeakKeyDictionary[Attachment, _Replay]" = WeakKeyDictionary()
_STARTED: "WeakSet[Attachment]" = WeakSet()  # attachments that ran a turn in this process


class SessionJournal:
    def __init__(self, attachment: Attachment, path: Path) -> None:
        self.attachment, self.path = attachment, path

    def append(self, record: dict[str, Any], *, fsync: bool) -> None:
        kept = _REPLAYS.get(self.attachment)
        before = self.attachment.revision
        try:
            stored = self.attachment.append(record, fsync=fsync)
        except SessionError as exc:
            raise OSError(exc.code) from exc
        if kept is not None and kept.revision == before:
            kept.replayer.feed(stored)
            kept.revision = self.attachment.revision
        else:
            _REPLAYS.pop(self.attachment, None)

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
        kept = _REPLAYS.get(self.attachment)
        revision = self.attachment.revision
        if kept is None or kept.revision != revision or not self.attachment.intact():
            replayer = Replayer()
            for record in self.records():
                replayer.feed(record)
            kept = _REPLAYS[self.attachment] = _Replay(replayer, revision)
        return kept.replayer.items()

    def starts_attachment(self) -> bool:
        """True for the first run of this attachment (create or open) in this process: when
        `session_start` hooks fire. Opening the session again is a new attachment."""
        if self.attachment in _STARTED:
            return False
        _STARTED.add(self.attachment)
        return True

    def records(self) -> Iterator[dict[str, Any]]:
        """Every whole record of the file, split on b"\\n"; a torn tail is not a record."""
        with self.path.open("rb") as handle:
            pending = b""
            while block := handle.read(BLOCK_BYTES):
                lines = (pending + block).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line:
                        yield jiter.from_json(line, cache_mode="keys")
