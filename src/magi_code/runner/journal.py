"""The runner's view of an attached session: append records, acknowledge input with the
revision that holds it, a fresh revision after a run, and the items to replay to a model.

The replay items are kept on the attachment (a journal lives for one run; the attachment for
many): built from its records once, then extended by every record appended through a journal.
They are used only while the attachment's revision is the one they were extended to and the
file is as the attachment left it; otherwise they are rebuilt from the file.

History bounds: when the last snapshot's projection holds HISTORY_NEAR_SHARE of its budget,
the next run compacts once before its first model call (`compaction_due`); that compaction
record lets the projection fold at the run's prompt (sessions/reader.py), so the session stays
reopenable. After a run, `history_warning` is a diagnostic for the client while the projection
or the file nears a bound; the stored-read bounds cannot be lowered, so near them it says to
start a new session.
"""

from typing import Any

from magi_code.limits import HISTORY_NEAR_SHARE
from magi_code.records import record
from magi_code.runner.compaction import SizedItems
from magi_code.runner.events import Diagnostic
from magi_code.runner.replay import Replayer
from magi_code.sessions import Attachment, SessionError
from magi_code.sessions.snapshot import projected_message_id

HISTORY_NEAR_CODE = "history_near_limit"
PROJECTION_NEAR_TEXT = (
    "This session's history is nearly at its size limit: the next turn summarizes the earlier "
    "conversation, and only the summary and what follows stay in the history."
)
STORED_NEAR_TEXT = (
    "This session's file is nearly at its size limit and will soon no longer reopen: "
    "start a new session."
)


@record(frozen=False)
class _Replay:
    replayer: Replayer
    revision: str  # the attachment's revision after the last record fed


class SessionJournal:
    def __init__(self, attachment: Attachment) -> None:
        self.attachment = attachment
        self._compaction_asked = False

    def compaction_due(self) -> bool:
        """True at most once per journal (one run), when the projection was nearly at its
        budget at the last snapshot."""
        if self._compaction_asked:
            return False
        self._compaction_asked = True
        return self.attachment.fullness.projection >= HISTORY_NEAR_SHARE

    def history_warning(self) -> Diagnostic | None:
        """The client's warning while the session nears a history bound (ask after
        `revision`, which measures it)."""
        fullness = self.attachment.fullness
        if fullness.stored >= HISTORY_NEAR_SHARE:
            return Diagnostic(HISTORY_NEAR_CODE, STORED_NEAR_TEXT)
        if fullness.projection >= HISTORY_NEAR_SHARE:
            return Diagnostic(HISTORY_NEAR_CODE, PROJECTION_NEAR_TEXT)
        return None

    def append(self, record: dict[str, Any], *, fsync: bool) -> None:
        kept = self._kept()
        before = self.attachment.revision
        try:
            stored = self.attachment.append(record, fsync=fsync)
        except SessionError as exc:
            raise OSError(exc.code) from exc
        if kept is not None and kept.revision == before:
            kept.replayer.feed(stored)
            kept.revision = self.attachment.revision
        else:
            self.attachment.replay = None

    def acknowledge(self, stored_message_id: str) -> tuple[str, str]:
        """The projected id of the input just appended and the revision holding it, without
        re-reading the file."""
        return projected_message_id("user", stored_message_id), self.attachment.revision

    def revision(self) -> str | None:
        try:
            return self.attachment.snapshot().revision
        except SessionError:
            return None

    def replay(self) -> SizedItems:
        kept = self._kept()
        revision = self.attachment.revision
        if kept is None or kept.revision != revision or not self.attachment.intact():
            replayer = Replayer()
            for record in self.attachment.records():
                replayer.feed(record)
            kept = self.attachment.replay = _Replay(replayer, revision)
        return kept.replayer.items()

    def starts_attachment(self) -> bool:
        """True for the first run of this attachment (create or open) in this process: when
        `session_start` hooks fire. Opening the session again is a new attachment."""
        started, self.attachment.ran = self.attachment.ran, True
        return not started

    def _kept(self) -> _Replay | None:
        kept = self.attachment.replay
        return kept if isinstance(kept, _Replay) else None
