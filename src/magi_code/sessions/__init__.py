"""Owned sessions and chat history: the store, leases, projection and paged snapshots.

Public API (the rest of this package is implementation detail):

- `SessionStore(root)` (root = MC_HOME; files in root/sessions): `new_id()`,
  `create(cwd, selection)` -> `Attachment` (lazy: no file, leases taken),
  `open(session_id, cwd, available)` -> `(Attachment, notices)`; `path_of(id)` validates the
  id grammar (`valid_session_id` first: a malformed id is `invalid_params` on the wire).
- `Attachment`: `session_id`, `durable`, `selection`, `revision`, `history` (the current
  `HistorySnapshot`), `snapshot()`, `page(session_id, revision, cursor)` -> `Page`,
  `turn()` (context manager: history is `busy` meanwhile), `append(record, fsync=)`, `close()`,
  `fullness` (how much of the history bounds the last snapshot used: `Fullness`).
- `HistorySnapshot.page(revision, cursor)` -> `Page`; `Page.result()` is the wire object;
  `HistorySnapshot.endings`: how runs that did not complete ended, by entry (never paged).
- `SessionError(code)` with the closed codes in `SESSION_CODES`; `redact(text)`.

How the protocol server and runner are expected to drive it:

    attachment = store.create(cwd, selection)           # session.create
    attachment, notices = store.open(sid, cwd, avail)   # session.open (same-process reopen ok)
    result = {"revision": attachment.history.revision, "durable": attachment.durable, ...}
    attachment.page(sid, revision, cursor).result()     # history.page
    with attachment.turn():                             # turn.start .. run.finished
        attachment.append(user_record, fsync=True)      # then input.persisted with
        ack = attachment.revision                       #   projected_message_id("user", mid)
        attachment.append(...)                          # chunks, tools, run_finished ...
    attachment.snapshot().revision                      # run.finished.revision

Imports nothing from runner, tools or any face.
"""

from magi_code.redact import redact
from magi_code.sessions.errors import SESSION_CODES, SessionCode, SessionError
from magi_code.sessions.ids import valid_opaque_id, valid_session_id
from magi_code.sessions.leases import is_active
from magi_code.sessions.snapshot import HistorySnapshot, Page, projected_message_id
from magi_code.sessions.store import Attachment, Selection, SessionStore

__all__ = [
    "SESSION_CODES",
    "Attachment",
    "HistorySnapshot",
    "Page",
    "Selection",
    "SessionCode",
    "SessionError",
    "SessionStore",
    "is_active",
    "projected_message_id",
    "redact",
    "valid_opaque_id",
    "valid_session_id",
]
