"""The history projector: validated stored records in, reconciled redacted entries out.

Pure (records in, entries out; no files, no clock). Rules, in the order they apply:

- Order follows stored order; an entry sits where its message first appeared, and later
  records for the same message (a reconciled assistant copy, a repeated reasoning summary item,
  a tool state change) replace it in place.
- Assistant: the ``assistant`` record wins over its chunks, so one copy is projected. Without
  it, the chunks are joined; that reply is ``partial`` unless its run completed.
- Reasoning summaries only with ``provider_summary: true``; tools (and ``activity`` records:
  hook runs, Code Mode calls) as name, state and summary
  (never the raw result; ``started`` alone is partial); internal prompts, assessments and raw
  reasoning never.
- A run (opened by any run-scoped record) that has no ``run_finished`` before another run's
  user input, or before the end, was interrupted: it gets an ``interrupted`` diagnostic entry
  and the projection is not complete. A torn last line does the same.
- Texts are reconciled first, then redacted; chunking happens in snapshot.py.

Budgets are checked by `finish` against a lower bound of the final size (code points never
exceed serialized UTF-8 bytes, every entry yields at least one part); snapshot.py measures the
exact one. Feeding goes on past a budget, because a later fold can bring the projection back
within it; what it holds meanwhile is bounded by the stored-read bounds the reader enforces.
One approximation: chunks still waiting for a reconciled copy are counted before redaction
(which can only shorten secrets), so a reply of nearly the whole budget that contains secrets
may be refused slightly early, never late. Activity summaries are clipped to SUMMARY_BYTES
after redaction (the runner stores them within that bound already).

Folding (`fold`): the entries before a user prompt are dropped, so the projection starts at
that prompt. The reader folds at a `compaction` record that names the prompt it keeps
(``keep_from``) when the history is nearly at its budget; the compaction entry, which follows
that prompt in stored order, then stands for what was dropped (see reader.py for why the
spec allows it). Records that arrive later for a dropped entry start a new one.

Endings: a run recorded as ``cancelled`` or ``failed`` keeps its partial reply and no entry
says how it ended (the wire's entry kinds are fixed, and its projection may be complete); the
projection carries, beside its entries, an `Ending` for each such run still shown: the entry it
ended after (its last), its outcome and error code, for a face that says so where it did live
(Mission Control). A run shown as interrupted, or dropped by a rewind or a fold, has none.

Rewinding (a `rewind` record): the entries from the prompt it names (``drop_from``) on are
dropped, so the projection ends where the conversation goes on; a run still open then is one
of the dropped turns and is no longer shown as interrupted. A prompt no longer shown (folded
away, or dropped by an earlier rewind) rewinds nothing. The records stay in the file.

The projector stays live: `finish` does not change what later records will do, so an owner
can keep feeding it and take a projection after each batch of appends. Entries are made once
per change of their slot and then reused (the same `Entry` object), which lets snapshot.py
keep the parts of entries that did not change; a projection shares the projector's list of
entries (a `Prefix`, prefixes.py) instead of copying it, so taking one costs what changed.
"""

from collections.abc import Callable, Sequence
from typing import cast

from magi_code.limits import HISTORY_SNAPSHOT_BYTES, HISTORY_SNAPSHOT_PARTS, SUMMARY_BYTES
from magi_code.prefixes import Growing
from magi_code.records import record
from magi_code.redact import redact
from magi_code.sessions.errors import SessionError
from magi_code.sessions.records import Record

INTERRUPTED_TEXT = "This turn was interrupted before it finished; the reply may be incomplete."
TORN_TEXT = "A record that was still being written when the session stopped was ignored."


@record
class Entry:
    """One projected message before chunking."""

    kind: str
    text: str
    partial: bool
    stored_id: str | None = None  # the stored message_id of a user or assistant message


@record
class Ending:
    """How a run that did not complete ended, after the entry at index `after` (its last)."""

    after: int
    outcome: str  # cancelled | failed
    error_code: str | None


@record
class Projection:
    entries: Sequence[Entry]  # immutable; shares the projector's list (prefixes.py)
    complete: bool
    endings: tuple[Ending, ...] = ()  # in stored order (module doc: Endings)


@record(frozen=False)
class _Slot:
    kind: str
    text: str = ""
    partial: bool = False
    run_id: str | None = None
    stored_id: str | None = None
    chunks: list[str] | None = None  # assistant pieces still waiting for a reconciled copy
    index: int = -1  # position in the projector's slots


class Projector:
    """Feed validated records in stored order, then `finish` once."""

    def __init__(
        self,
        *,
        max_bytes: int = HISTORY_SNAPSHOT_BYTES,
        max_parts: int = HISTORY_SNAPSHOT_PARTS,
    ) -> None:
        self._max_bytes = max_bytes
        self._max_parts = max_parts
        self._slots: list[_Slot] = []
        # per slot, None until made after a change; `finish` hands out prefixes of it
        self._entries: Growing[Entry | None] = Growing()
        self._changed: set[int] = set()  # slots whose entry must be made again
        self._chunked: dict[str, list[_Slot]] = {}  # run_id -> its chunk-only slots
        self._by_key: dict[tuple[str, str, str], _Slot] = {}
        self._open_runs: dict[str, None] = {}  # insertion-ordered set
        self._outcomes: dict[str, str] = {}  # run_id -> outcome, "interrupted" included
        self._prompts: dict[str, _Slot] = {}  # stored user message_id -> its slot
        self._interruptions = 0  # interrupted diagnostics among the slots
        self._endings: list[tuple[_Slot, str, str | None]] = []  # last slot, outcome, code
        self._size = 0  # lower bound of the serialized projection
        self._handlers: dict[str, Callable[[Record], None]] = {
            "user": self._on_user,
            "compaction": self._on_compaction,
            "rewind": self._on_rewind,
            "assistant_chunk": self._on_assistant_chunk,
            "assistant": self._on_assistant,
            "reasoning_summary": self._on_reasoning_summary,
            "tool": self._on_tool,
            "activity": self._on_tool,
        }

    def feed(self, record: Record) -> None:
        kind = record["type"]
        run_id = record.get("run_id")
        if isinstance(run_id, str):
            self._track_run(run_id, kind)
        if kind == "run_finished":
            self._open_runs.pop(record["run_id"], None)
            # a finish recorded after the run was already shown as interrupted changes nothing
            if record["run_id"] not in self._outcomes:
                self._set_outcome(record["run_id"], record["outcome"])
                self._note_ending(record)
        else:
            handler = self._handlers.get(kind)
            if handler is not None:
                handler(record)

    def finish(self, *, torn: bool = False) -> Projection:
        """The projection as if the input ended here: every open run shown as interrupted,
        a torn tail as a diagnostic. Leaves the projector as it was; history_limit when the
        result breaks a budget, exactly as feeding those diagnostics would."""
        tail = [INTERRUPTED_TEXT] * len(self._open_runs) + ([TORN_TEXT] if torn else [])
        if len(self._slots) + len(tail) > self._max_parts:
            raise SessionError("history_limit")
        if self._size + sum(map(len, tail)) > self._max_bytes:
            raise SessionError("history_limit")
        for index in self._changed:
            self._entries[index] = self._entry(self._slots[index])
        self._changed.clear()
        entries = self._entries.prefix([Entry("diagnostic", text, False) for text in tail])
        complete = not torn and not self._interruptions and not self._open_runs
        endings = tuple(Ending(slot.index, outcome, code) for slot, outcome, code in self._endings)
        return Projection(cast(Sequence[Entry], entries), complete, endings)

    # ---- runs ----------------------------------------------------------------------------

    def _track_run(self, run_id: str, kind: str) -> None:
        if kind == "user":
            for other in [r for r in self._open_runs if r != run_id]:
                self._interrupt(other)
        if run_id not in self._outcomes and run_id not in self._open_runs:
            self._open_runs[run_id] = None

    def _interrupt(self, run_id: str) -> None:
        self._open_runs.pop(run_id, None)
        self._set_outcome(run_id, "interrupted")
        self._interruptions += 1
        self._add(_Slot("diagnostic", INTERRUPTED_TEXT))

    def _note_ending(self, record: Record) -> None:
        """A run that did not complete ended after the last entry so far (module doc)."""
        if record["outcome"] != "completed" and self._slots:
            self._endings.append((self._slots[-1], record["outcome"], record.get("error_code")))

    def _set_outcome(self, run_id: str, outcome: str) -> None:
        self._outcomes[run_id] = outcome
        for slot in self._chunked.pop(run_id, ()):
            self._touch(slot)  # whether its chunks are partial follows the outcome

    # ---- record kinds --------------------------------------------------------------------

    def _on_user(self, record: Record) -> None:
        text = redact(record["text"])
        slot = _Slot("user", text, run_id=record["run_id"], stored_id=record["message_id"])
        self._prompts[record["message_id"]] = self._add(slot)

    def _on_compaction(self, record: Record) -> None:
        self._add(_Slot("compaction", redact(record["text"])))

    def _on_assistant_chunk(self, record: Record) -> None:
        slot = self._assistant_slot(record)
        if slot.chunks is not None:
            slot.chunks.append(record["text"])
            self._touch(slot)
            self._grow(len(record["text"]))

    def _on_assistant(self, record: Record) -> None:
        slot = self._assistant_slot(record)
        text = record.get("text")
        if text is None:
            return  # legacy record without text: its chunks stand
        old_size = len(slot.text) + sum(map(len, slot.chunks or ()))
        slot.chunks = None
        self._replace(slot, redact(text), old_size)

    def _on_reasoning_summary(self, record: Record) -> None:
        if record.get("provider_summary") is not True:
            return
        key = ("reasoning", record["run_id"], record["item_id"])
        slot = self._by_key.get(key)
        if slot is None:
            slot = self._by_key[key] = self._add(_Slot("reasoning_summary"))
        self._replace(slot, redact(record["text"]))

    def _on_tool(self, record: Record) -> None:
        key = ("tool", record["run_id"], record["activity_id"])
        slot = self._by_key.get(key)
        if slot is None:
            slot = self._by_key[key] = self._add(_Slot("activity"))
        state = record["state"]
        text = f"{redact(record['name'])} {state}"
        summary = record.get("summary")
        if summary:
            text += ": " + _clip_utf8(redact(summary), SUMMARY_BYTES)
        slot.partial = state == "started"
        self._replace(slot, text)  # marks the slot changed

    # ---- slots ---------------------------------------------------------------------------

    def _assistant_slot(self, record: Record) -> _Slot:
        run_id = record["run_id"]
        key = ("assistant", run_id, record["message_id"])
        slot = self._by_key.get(key)
        if slot is None:
            slot = _Slot("assistant", run_id=run_id, stored_id=record["message_id"], chunks=[])
            self._by_key[key] = self._add(slot)
            self._chunked.setdefault(run_id, []).append(slot)
        return slot

    def _add(self, slot: _Slot) -> _Slot:
        slot.index = len(self._slots)
        self._slots.append(slot)
        self._entries.append(None)
        self._touch(slot)
        self._grow(len(slot.text))
        return slot

    def _replace(self, slot: _Slot, text: str, old_size: int | None = None) -> None:
        self._size -= len(slot.text) if old_size is None else old_size
        slot.text = text
        self._touch(slot)
        self._grow(len(text))

    def _touch(self, slot: _Slot) -> None:
        self._changed.add(slot.index)

    def _grow(self, size: int) -> None:
        self._size += size

    # ---- folding -------------------------------------------------------------------------

    def can_fold(self, keep_from: str) -> bool:
        """Whether a fold at the prompt `keep_from` would drop anything."""
        slot = self._prompts.get(keep_from)
        return slot is not None and slot.index > 0

    def fold(self, keep_from: str) -> None:
        """Drop every entry before the prompt `keep_from`; nothing when it is not shown."""
        if not self.can_fold(keep_from):
            return
        cut = self._prompts[keep_from].index
        for slot in self._slots[:cut]:
            self._size -= len(slot.text) + sum(map(len, slot.chunks or ()))
            if slot.kind == "diagnostic":
                self._interruptions -= 1
            slot.index = -1
        del self._slots[:cut]
        self._entries.drop_front(cut)
        for index, slot in enumerate(self._slots):
            slot.index = index
        self._changed = {index - cut for index in self._changed if index >= cut}
        self._forget_dropped()

    def _on_rewind(self, record: Record) -> None:
        """Drop every entry from the prompt `drop_from` on (module doc: Rewinding)."""
        slot = self._prompts.get(record["drop_from"])
        if slot is None:
            return
        cut = slot.index
        for dropped in self._slots[cut:]:
            self._size -= len(dropped.text) + sum(map(len, dropped.chunks or ()))
            if dropped.kind == "diagnostic":
                self._interruptions -= 1
            dropped.index = -1
        del self._slots[cut:]
        self._entries.truncate(cut)
        self._changed = {index for index in self._changed if index < cut}
        for run_id in self._open_runs:
            self._outcomes[run_id] = "rewound"  # its later records start nothing
        self._open_runs.clear()
        self._forget_dropped()

    def _forget_dropped(self) -> None:
        """Drop the look-ups of slots no longer shown (index -1)."""
        self._by_key = {key: slot for key, slot in self._by_key.items() if slot.index >= 0}
        self._prompts = {key: slot for key, slot in self._prompts.items() if slot.index >= 0}
        self._endings = [ending for ending in self._endings if ending[0].index >= 0]
        self._chunked = {
            run: kept
            for run, slots in self._chunked.items()
            if (kept := [slot for slot in slots if slot.index >= 0])
        }

    def _entry(self, slot: _Slot) -> Entry:
        if slot.chunks is None:
            return Entry(slot.kind, slot.text, slot.partial, slot.stored_id)
        outcome = self._outcomes.get(slot.run_id or "")
        text = redact("".join(slot.chunks))
        return Entry(slot.kind, text, outcome != "completed", slot.stored_id)


def _clip_utf8(text: str, limit: int) -> str:
    """The longest prefix of `text` within `limit` UTF-8 bytes, cut between code points."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")
