"""Owned sessions and chat history: the store, leases, projection and paged snapshots.

Public API (everything else in this package is an implementation detail):

- `SessionStore(root)`: `new_id()`, `create(cwd, selection)`, `open(session_id, cwd,
  available)` -> `(Attachment, notices)`.
- `Attachment`: `session_id`, `durable`, `selection`, `append(record, fsync=)`,
  `history` / `snapshot()` -> `HistorySnapshot`, `page(revision, cursor)`, `close()`.
- `HistorySnapshot.page(revision, cursor)` -> `Page` (`result()` is the wire object).
- `SessionError(code)` with the closed codes in `SESSION_CODES`; `valid_session_id(s)`.
- `redact(text)`.

Imports nothing from runner, tools or any face.
"""

from magi_code.sessions.errors import SESSION_CODES, SessionCode, SessionError
from magi_code.sessions.ids import valid_opaque_id, valid_session_id
from magi_code.sessions.leases import is_active
from magi_code.sessions.redact import redact
from magi_code.sessions.snapshot import HistorySnapshot, Page
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
    "redact",
    "valid_opaque_id",
    "valid_session_id",
]
