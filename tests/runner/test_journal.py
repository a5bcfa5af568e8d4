"""The journal's kept replay and the attachment's live snapshot across real turns: each turn
the model is shown exactly what a replay of the whole file gives, the file is read for it only
once per attachment (or again after someone else changed it), and the revision a run
finishes with is what a fresh read of the file computes."""

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from magi_code.limits import HISTORY_NEAR_SHARE, HISTORY_SNAPSHOT_PARTS, STORED_HISTORY_LINES
from magi_code.providers.base import (
    Item,
    ModelRequest,
    ProviderError,
    ProviderEvent,
    TextDelta,
    UserText,
)
from magi_code.runner import compaction
from magi_code.runner.events import Activity, Diagnostic, RunEvent, RunFinished
from magi_code.runner.journal import (
    HISTORY_NEAR_CODE,
    PROJECTION_NEAR_TEXT,
    STORED_NEAR_TEXT,
    SessionJournal,
)
from magi_code.runner.replay import replay
from magi_code.runner.setup import turn_setup
from magi_code.runner.startup import Admitted, admit
from magi_code.runner.turn import TurnControl, run_turn
from magi_code.sessions import Attachment, Selection, SessionStore, reader
from magi_code.sessions.snapshot import build
from magi_code.tools.approvals import ApprovalBroker
from runner.turn_world import Quiet

pytestmark = pytest.mark.anyio

TOOL_ROUNDS = [
    {"text": "reading", "tools": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
    {"text": "it says alpha", "reasoning": "looked at the file"},
]
PROMPTS = [
    "hello",
    "fixture:" + json.dumps(TOOL_ROUNDS),
    "fixture:" + json.dumps([{"text": "long " * 5000, "deltas": 7}]),  # persisted as chunks
    "fixture:" + json.dumps([{"tools": [{"name": "no_such_tool", "arguments": {}}]}]),
]


class BreaksMidReply:
    """Streams some text, then fails: the run keeps a partial reply as chunks only."""

    id = "breaks"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        yield TextDelta("half a repl")
        raise ProviderError("server_error")


class CountingReplays:
    """Counts how often a journal reads the whole file for a replay."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        records = Attachment.records

        def counted(attachment: Attachment) -> Any:
            self.count += 1
            return records(attachment)

        monkeypatch.setattr(Attachment, "records", counted)


@pytest.fixture
def world(tmp_path: Path) -> tuple[Admitted, SessionStore, Attachment]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    admitted = admit(str(workspace), {"MC_HOME": str(home), "PATH": "/usr/bin:/bin"})
    store = SessionStore(Path(admitted.paths.home))
    attachment = store.create(admitted.cwd, Selection("fixture", "fixture-model", None))
    return admitted, store, attachment


async def _turn(
    world: tuple[Admitted, SessionStore, Attachment], prompt: str, breaks: bool = False
) -> tuple[RunFinished, list[Item]]:
    admitted, _, attachment = world
    quiet = Quiet()
    setup = turn_setup(
        admitted,
        ("fixture", None, None),
        attachment.session_id,
        os.urandom(8).hex(),
        ApprovalBroker(quiet.announce),
    )
    seen: list[Item] = []
    provider = BreaksMidReply() if breaks else setup.provider
    inner = provider.stream

    def stream(request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if not seen:
            seen.extend(request.items)  # what the first model call of the turn was shown
        return inner(request)

    setup.provider = type("Spy", (), {"id": provider.id, "stream": staticmethod(stream)})()
    journal = SessionJournal(attachment)
    finished = await run_turn(setup, journal, quiet, TurnControl(), prompt)
    return finished, seen


def _from_file(store: SessionStore, attachment: Attachment) -> list[Item]:
    path = store.path_of(attachment.session_id)
    if not path.exists():
        return []
    return replay(json.loads(raw) for raw in path.read_bytes().split(b"\n") if raw)


def _fresh_revision_digest(world: tuple[Admitted, SessionStore, Attachment]) -> str:
    admitted, store, attachment = world
    path = store.path_of(attachment.session_id)
    return reader.read_session(path, attachment.session_id, str(admitted.cwd)).digest


async def test_each_turn_replays_the_whole_file_without_reading_it(
    world: tuple[Admitted, SessionStore, Attachment], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = CountingReplays(monkeypatch)
    _, store, attachment = world
    for number in range(3):
        for prompt in PROMPTS:
            before = _from_file(store, attachment)
            finished, seen = await _turn(world, prompt)
            assert finished.persistence == "durable" and finished.revision is not None
            # the model saw every earlier item, then this turn's prompt
            assert seen[:-1] == before and len(seen) == len(before) + 1
            assert finished.revision.split(".", 1)[1] == _fresh_revision_digest(world)
        finished, seen = await _turn(world, "break", breaks=True)
        assert finished.outcome == "failed"
        assert seen[:-1] == _from_file(store, attachment)[: len(seen) - 1]
        assert number > 0 or reads.count == 1  # read once, at the first turn
    assert reads.count == 1
    path = store.path_of(attachment.session_id)
    kinds = {json.loads(raw)["type"] for raw in path.read_bytes().split(b"\n") if raw}
    assert {"assistant_chunk", "tool", "reasoning_summary"} <= kinds
    snapshot = attachment.snapshot()
    read = reader.read_session(path, attachment.session_id, attachment.cwd)
    assert snapshot.part_count == len(build(read.projection).parts)


async def test_a_change_by_someone_else_is_replayed_from_the_file(
    world: tuple[Admitted, SessionStore, Attachment], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = CountingReplays(monkeypatch)
    _, store, attachment = world
    await _turn(world, "first question")
    await _turn(world, "second question")
    path = store.path_of(attachment.session_id)
    data = path.read_bytes()
    with path.open("r+b") as out:  # same size: our next append does not refuse it
        out.seek(data.index(b"first question"))
        out.write(b"FIRST")
    _, seen = await _turn(world, "third")
    assert reads.count == 2
    assert seen[:-1] == _from_file(store, attachment)[: len(seen) - 1]
    assert any(getattr(item, "text", "").startswith("FIRST question") for item in seen)
    await _turn(world, "fourth")  # the re-read at the end of "third" renewed the revision
    assert reads.count == 3
    finished, _ = await _turn(world, "fifth")
    assert reads.count == 3  # kept again
    assert finished.revision is not None
    assert finished.revision.split(".", 1)[1] == _fresh_revision_digest(world)


async def test_a_new_attachment_builds_its_own_replay(
    world: tuple[Admitted, SessionStore, Attachment], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = CountingReplays(monkeypatch)
    admitted, store, attachment = world
    await _turn(world, "one")
    reopened, _ = store.open(attachment.session_id, admitted.cwd)  # same-process reopen
    _, seen = await _turn((admitted, store, reopened), "two")
    assert reads.count == 2
    assert seen[:-1] == _from_file(store, reopened)[: len(seen) - 1]
    reopened.close()


@pytest.mark.parametrize("legacy", [{}, {"text": None}], ids=["absent", "null"])
async def test_a_legacy_assistant_record_replays_its_chunks(
    world: tuple[Admitted, SessionStore, Attachment], legacy: dict[str, Any]
) -> None:
    """A stored assistant record without text is replayed from its chunks, as the history
    projection shows it; later chunks of a reconciled segment change nothing."""
    admitted, store, lazy = world
    sid = lazy.session_id
    lazy.close()
    old, new = "r-old", "r-new"
    records = [
        {"type": "session", "cwd": admitted.cwd, "created_at": "2026-01-01T00:00Z"},
        {"type": "user", "run_id": old, "message_id": "u1", "text": "first"},
        {"type": "assistant_chunk", "run_id": old, "message_id": "a1", "index": 0, "text": "Hel"},
        {"type": "assistant_chunk", "run_id": old, "message_id": "a1", "index": 1, "text": "lo"},
        {"type": "assistant", "run_id": old, "message_id": "a1", **legacy},
        {"type": "run_finished", "run_id": old, "outcome": "completed", "error_code": None},
        {"type": "user", "run_id": new, "message_id": "u2", "text": "second"},
        {"type": "assistant", "run_id": new, "message_id": "a2", "text": "whole"},
        {"type": "assistant_chunk", "run_id": new, "message_id": "a2", "index": 0, "text": "late"},
        {"type": "run_finished", "run_id": new, "outcome": "completed", "error_code": None},
    ]
    path = store.path_of(sid)
    lines = [json.dumps({"session_id": sid, **r}).encode() + b"\n" for r in records]
    path.write_bytes(b"".join(lines))
    attachment, _ = store.open(sid, admitted.cwd)
    shown = [e.text for e in reader.read_session(path, sid, attachment.cwd).projection.entries]
    assert shown == ["first", "Hello", "second", "whole"]
    for prompt in ("third", "fourth"):  # every later turn works, not only the first
        finished, seen = await _turn((admitted, store, attachment), prompt)
        assert finished.outcome == "completed" and finished.persistence == "durable"
        assert [getattr(item, "text", None) for item in seen[:4]] == shown
    kinds = [json.loads(raw)["type"] for raw in path.read_bytes().split(b"\n") if raw]
    assert kinds.count("run_finished") == 4
    attachment.close()


class Recording(Quiet):
    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    async def critical(self, event: RunEvent) -> None:
        self.events.append(event)


def _prefilled(world: tuple[Admitted, SessionStore, Attachment], parts: int) -> Attachment:
    """The world's session replaced by a stored one of `parts` one-line parts, opened."""
    admitted, store, lazy = world
    sid = lazy.session_id
    lazy.close()
    records: list[dict[str, Any]] = [
        {"type": "session", "cwd": admitted.cwd, "created_at": "2026-01-01T00:00Z"}
    ]
    for number in range(parts // 2):
        run = f"r{number}"
        records += [
            {"type": "user", "run_id": run, "message_id": f"u{number}", "text": f"q{number}"},
            {"type": "assistant", "run_id": run, "message_id": f"a{number}", "text": "ok"},
            {"type": "run_finished", "run_id": run, "outcome": "completed", "error_code": None},
        ]
    records += [{"type": "compaction", "text": "filler"}] * (parts % 2)
    lines = [json.dumps({"session_id": sid, **r}).encode() + b"\n" for r in records]
    store.path_of(sid).write_bytes(b"".join(lines))
    attachment, _ = store.open(sid, admitted.cwd)
    assert attachment.history.part_count == parts
    return attachment


async def _recorded_turn(
    world: tuple[Admitted, SessionStore, Attachment], attachment: Attachment, prompt: str
) -> tuple[RunFinished, list[RunEvent]]:
    admitted, _, _ = world
    recording = Recording()
    setup = turn_setup(
        admitted,
        ("fixture", None, None),
        attachment.session_id,
        os.urandom(8).hex(),
        ApprovalBroker(recording.announce),
    )
    journal = SessionJournal(attachment)
    finished = await run_turn(setup, journal, recording, TurnControl(), prompt)
    return finished, recording.events


NEAR_PARTS = int(HISTORY_NEAR_SHARE * HISTORY_SNAPSHOT_PARTS)


@pytest.mark.parametrize(("parts", "warned"), [(NEAR_PARTS, True), (NEAR_PARTS - 1, False)])
async def test_a_turn_that_brings_the_history_near_its_budget_warns(
    world: tuple[Admitted, SessionStore, Attachment], parts: int, warned: bool
) -> None:
    attachment = _prefilled(world, parts - 2)  # a one-line turn adds its prompt and reply
    finished, events = await _recorded_turn(world, attachment, "one more")
    assert (finished.persistence, finished.revision is not None) == ("durable", True)
    assert attachment.history.part_count == parts
    assert not [e for e in events if isinstance(e, Activity)]  # no compaction yet
    warnings = [e for e in events if isinstance(e, Diagnostic)]
    assert warnings == ([Diagnostic(HISTORY_NEAR_CODE, PROJECTION_NEAR_TEXT)] if warned else [])
    attachment.close()


async def test_the_next_turn_compacts_and_the_session_stays_reopenable(
    world: tuple[Admitted, SessionStore, Attachment],
) -> None:
    admitted, store, _ = world
    attachment = _prefilled(world, NEAR_PARTS)
    finished, events = await _recorded_turn(world, attachment, "and now?")
    assert (finished.outcome, finished.persistence) == ("completed", "durable")
    assert finished.revision is not None
    compactions = [e.state for e in events if isinstance(e, Activity) and e.kind == "compaction"]
    assert compactions == ["started", "completed"]
    assert not [e for e in events if isinstance(e, Diagnostic)]  # folded: nothing to warn of
    assert attachment.history.part_count == 3  # the prompt, the summary, the reply
    sid = attachment.session_id
    attachment.close()
    reopened, _ = store.open(sid, admitted.cwd)
    page = reopened.history.page(reopened.history.revision, None)
    assert [entry["kind"] for entry in page.entries] == ["user", "compaction", "assistant"]
    assert page.entries[0]["text"] == "and now?" and page.complete
    _, events = await _recorded_turn(world, reopened, "later")  # no second compaction
    assert not [e for e in events if isinstance(e, Activity)]
    reopened.close()


def test_a_replay_knows_its_size_as_records_replace_and_compact() -> None:
    """The size a replay hands over (for the token estimate) is the sum a full count gives,
    through chunks, their reconciled copy, tools and a compaction; appended items count too."""
    records: list[dict[str, Any]] = [
        {"type": "user", "run_id": "r1", "message_id": "u1", "text": "héllo"},
        {"type": "assistant_chunk", "run_id": "r1", "message_id": "a1", "index": 0, "text": "ab"},
        {"type": "assistant_chunk", "run_id": "r1", "message_id": "a1", "index": 1, "text": "c"},
        {"type": "assistant", "run_id": "r1", "message_id": "a1", "text": "abcdef"},
        {"type": "tool", "run_id": "r1", "activity_id": "t", "name": "read", "state": "completed"},
        {"type": "user", "run_id": "r2", "message_id": "u2", "text": "more"},
        {"type": "compaction", "run_id": "r2", "text": "summary", "keep_from": "u2"},
        {"type": "assistant", "run_id": "r2", "message_id": "a2", "text": "x" * 100},
    ]
    for end in range(len(records) + 1):
        items = replay(records[:end])
        assert compaction.total_bytes(items) == sum(map(compaction.item_bytes, list(items)))
        items.append(UserText("appended"))
        assert compaction.total_bytes(items) == sum(map(compaction.item_bytes, list(items)))


NEAR_LINES = int(HISTORY_NEAR_SHARE * STORED_HISTORY_LINES)


@pytest.mark.parametrize(("lines", "warned"), [(NEAR_LINES, True), (NEAR_LINES - 1, False)])
def test_a_file_near_the_stored_lines_bound_says_to_start_a_new_session(
    world: tuple[Admitted, SessionStore, Attachment], lines: int, warned: bool
) -> None:
    admitted, store, lazy = world
    sid = lazy.session_id
    lazy.close()
    header = {"type": "session", "cwd": admitted.cwd, "created_at": "2026-01-01T00:00Z"}
    internal = json.dumps({"session_id": sid, "type": "internal"}).encode() + b"\n"
    path = store.path_of(sid)
    path.write_bytes(json.dumps({"session_id": sid, **header}).encode() + b"\n")
    with path.open("ab") as out:
        out.write(internal * (lines - 1))
    attachment, _ = store.open(sid, admitted.cwd)
    warning = SessionJournal(attachment).history_warning()
    assert warning == (Diagnostic(HISTORY_NEAR_CODE, STORED_NEAR_TEXT) if warned else None)
    attachment.close()
