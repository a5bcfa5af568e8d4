"""Rewind for Mission Control (`/rewind`, Esc Esc): the turns a person can go back to, what
going back would change, and going back. No screen: app.py asks the questions.

A point is a turn of the conversation as it stands (sessions/turns.py). Going back to it:
- the conversation: a `rewind` record naming the turn's prompt is appended, so this session,
  a resume and `--continue` go on from just before that turn; the later turns stay in the
  file as they were;
- the code: the workspace goes back to the first checkpoint taken before a change
  (checkpoints/) since the turn was sent, which is what the turn met. Without one, nothing
  changed since to go back on.
"""

import contextlib
import os
from datetime import datetime

from magi_code.checkpoints.limits import NAMED_PATHS
from magi_code.checkpoints.manifest import Manifest
from magi_code.checkpoints.plan import RewindPlan, plan_rewind
from magi_code.checkpoints.store import CheckpointStore, Listed
from magi_code.records import record
from magi_code.sessions import Attachment, SessionError
from magi_code.sessions.store import utc_now
from magi_code.sessions.turns import StoredTurn, conversation_turns

PROMPT_CHARS = 72  # of a prompt's first line in the list of turns


@record
class RewindPoint:
    number: int  # the turn's place in the conversation, from 1
    turn: StoredTurn
    target: Listed | None  # the checkpoint its code goes back to; None: nothing changed since

    def label(self) -> str:
        lines = self.turn.prompt.strip().split("\n")
        first = lines[0][:PROMPT_CHARS] + (
            "…" if len(lines) > 1 or len(lines[0]) > PROMPT_CHARS else ""
        )
        what = "code and conversation" if self.target is not None else "conversation"
        return f"{self.number:>3}  {local_time(self.turn.at):>5}  {first}  ({what})"


@record
class CodeRewind:
    target: Manifest
    plan: RewindPlan


class Rewinder:
    def __init__(self, attachment: Attachment, store: CheckpointStore) -> None:
        self.attachment, self.store = attachment, store

    def points(self) -> list[RewindPoint]:
        """The conversation's turns, oldest first."""
        turns = conversation_turns(self.attachment.records()) if self.attachment.durable else []
        befores = [m for m in self.store.listed() if m.phase == "before"]
        points = []
        for number, turn in enumerate(turns, 1):
            sent = sent_ns(turn.at)
            target = None
            if sent is not None:  # the first checkpoint taken before a change since it was sent
                target = next((m for m in befores if m.started_ns > sent), None)
            points.append(RewindPoint(number, turn, target))
        return points

    def plan_code(self, point: RewindPoint) -> CodeRewind | None:
        """What going back to `point` would change in the workspace (a walk: run it in a
        worker thread); None when nothing changed since."""
        if point.target is None:
            return None
        listed = self.store.listed()
        target, *since = self.store.load([m for m in listed if m.seq >= point.target.seq])
        return CodeRewind(target, plan_rewind(target, since, self.store.current()))

    def rewind_code(self, code: CodeRewind) -> list[str]:
        """Put the workspace back (a walk and writes: a worker thread); the paths that failed."""
        return self.store.restore(f"rewind-{os.urandom(8).hex()}", code.target, code.plan)

    def rewind_conversation(self, point: RewindPoint) -> None:
        """Go on from just before `point` (OSError or SessionError: nothing changed). The
        history is then read afresh; a failure there shows when it is drawn."""
        record = {"type": "rewind", "drop_from": point.turn.message_id, "at": utc_now()}
        self.attachment.append(record, fsync=True)
        with contextlib.suppress(SessionError):
            self.attachment.snapshot()


def sent_ns(at: str | None) -> int | None:
    """A record's ISO 8601 time as nanoseconds since the epoch (None when there is none)."""
    try:
        when = None if at is None else datetime.fromisoformat(at)
    except ValueError:
        return None
    if when is None or when.tzinfo is None:
        return None
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def local_time(at: str | None) -> str:
    """`14:05` in local time (the date too when not today), from a record's ISO 8601."""
    if at is None:
        return "-"
    try:
        when = datetime.fromisoformat(at).astimezone()
    except ValueError:
        return "-"
    if when.date() == datetime.now().astimezone().date():
        return when.strftime("%H:%M")
    return when.strftime("%Y-%m-%d %H:%M")


def named(paths: tuple[str, ...] | list[str]) -> str:
    """The first NAMED_PATHS paths, and how many more."""
    shown = ", ".join(paths[:NAMED_PATHS])
    more = len(paths) - NAMED_PATHS
    return shown + (f" and {more} more" if more > 0 else "")


def describe(plan: RewindPlan) -> str:
    """What a code rewind changes, in a line."""
    parts = []
    if plan.write:
        parts.append(f"restores {named(plan.write)}")
    if plan.delete:
        parts.append(f"deletes {named(plan.delete)}")
    if plan.make_dirs or plan.remove_dirs:
        parts.append(f"{len(plan.make_dirs) + len(plan.remove_dirs)} folders")
    return "; ".join(parts) or "no file differs"
