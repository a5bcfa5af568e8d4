"""The history budget over long sessions: a compaction folds the projection at the edge of
HISTORY_NEAR_SHARE (N folds, N-1 keeps everything), a live attachment folds exactly where a
fresh read does, and past a budget a snapshot answers history_limit without reading the file
again, until a compaction brings the session back within its budget."""

from pathlib import Path
from typing import Any

import pytest
from sessions_support import SID, finished, header, line, user, write_session

from magi_code.limits import HISTORY_NEAR_SHARE, HISTORY_SNAPSHOT_PARTS, STORED_HISTORY_LINES
from magi_code.sessions import SessionError, SessionStore, reader
from magi_code.sessions import store as store_module
from magi_code.sessions.snapshot import build

NEAR_PARTS = int(HISTORY_NEAR_SHARE * HISTORY_SNAPSHOT_PARTS)


def turn(number: int) -> list[dict[str, Any]]:
    """One finished one-line turn: two parts (the prompt and the reply)."""
    run = f"r{number}"
    reply = {"type": "assistant", "run_id": run, "message_id": f"a{number}", "text": "ok"}
    return [user(run, f"question {number}", f"u{number}"), reply, finished(run)]


def prefilled(cwd: Path, parts: int) -> list[dict[str, Any]]:
    """Finished turns and plain compaction records (one part each) making `parts` parts."""
    records = [header(cwd)]
    for number in range(parts // 2):
        records += turn(number)
    return records + [{"type": "compaction", "text": "filler"}] * (parts % 2)


def prompt_and_compaction() -> list[dict[str, Any]]:
    """A new run's prompt and the compaction its runner records before the model call."""
    return [
        user("rP", "the prompt", "uP"),
        {"type": "compaction", "run_id": "rP", "text": "the summary", "keep_from": "uP"},
    ]


def kinds_and_texts(store: SessionStore, cwd: Path) -> list[tuple[str, str]]:
    read = reader.read_session(store.path_of(SID), SID, str(cwd.resolve()))
    return [(entry.kind, entry.text) for entry in read.projection.entries]


@pytest.mark.parametrize(("parts", "folds"), [(NEAR_PARTS, True), (NEAR_PARTS - 1, False)])
def test_a_compaction_folds_at_the_edge_of_the_near_share(
    store: SessionStore, cwd: Path, parts: int, folds: bool
) -> None:
    # at the compaction record: the prompt, the compaction and the open run's diagnostic
    write_session(store, [*prefilled(cwd, parts - 3), *prompt_and_compaction(), finished("rP")])
    entries = kinds_and_texts(store, cwd)
    if folds:
        assert entries == [("user", "the prompt"), ("compaction", "the summary")]
    else:
        assert len(entries) == parts - 1 and entries[0] == ("user", "question 0")


def test_a_compaction_without_keep_from_never_folds(store: SessionStore, cwd: Path) -> None:
    plain = {"type": "compaction", "text": "old style"}
    write_session(store, [*prefilled(cwd, HISTORY_SNAPSHOT_PARTS - 1), plain])
    assert len(kinds_and_texts(store, cwd)) == HISTORY_SNAPSHOT_PARTS


def test_the_live_attachment_folds_where_a_fresh_read_does(store: SessionStore, cwd: Path) -> None:
    write_session(store, prefilled(cwd, NEAR_PARTS - 3))
    attachment, _ = store.open(SID, cwd)
    for record in prompt_and_compaction():
        attachment.append(record, fsync=False)
    live = attachment.snapshot()
    fresh = reader.read_session(store.path_of(SID), SID, attachment.cwd)
    assert live.part_count == len(build(fresh.projection).parts) == 3
    assert live.revision.split(".", 1)[1] == fresh.digest
    assert attachment.fullness.projection == 3 / HISTORY_SNAPSHOT_PARTS
    attachment.close()


class CountingReads:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = reader.read_session

        def counted(*args: Any) -> reader.ReadResult:
            self.count += 1
            return real(*args)

        monkeypatch.setattr(store_module, "read_session", counted)


def test_past_the_budget_no_snapshot_reads_the_file_and_a_compaction_recovers(
    store: SessionStore, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_session(store, prefilled(cwd, HISTORY_SNAPSHOT_PARTS - 1))
    attachment, _ = store.open(SID, cwd)
    assert attachment.fullness.projection == (HISTORY_SNAPSHOT_PARTS - 1) / HISTORY_SNAPSHOT_PARTS
    reads = CountingReads(monkeypatch)
    for number in range(HISTORY_SNAPSHOT_PARTS, HISTORY_SNAPSHOT_PARTS + 3):
        for record in turn(number):
            attachment.append(record, fsync=False)
        with pytest.raises(SessionError) as refused:
            attachment.snapshot()
        assert refused.value.code == "history_limit"
        assert attachment.fullness.projection == 1.0
    assert reads.count == 0  # refused from the live projection, never by reading the file
    with pytest.raises(SessionError):
        store.open(SID, cwd)  # another process's fresh read agrees: same-process reopen
    for record in prompt_and_compaction():
        attachment.append(record, fsync=False)
    snapshot = attachment.snapshot()
    assert (snapshot.part_count, reads.count) == (3, 1)  # only the reopen read the file
    attachment.close()
    reopened, _ = store.open(SID, cwd)  # reopenable again
    assert reopened.history.part_count == 3
    reopened.close()


def test_past_the_stored_lines_no_snapshot_reads_the_file(
    store: SessionStore, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    internal = line({"type": "internal", "text": ""})
    write_session(store, [header(cwd)], tail=internal * (STORED_HISTORY_LINES - 2))
    attachment, _ = store.open(SID, cwd)
    assert attachment.fullness.stored == (STORED_HISTORY_LINES - 1) / STORED_HISTORY_LINES
    reads = CountingReads(monkeypatch)
    attachment.append({"type": "internal"}, fsync=False)  # line N: still fine
    assert attachment.snapshot().part_count == 0
    assert attachment.fullness.stored == 1.0
    for _ in range(3):  # line N+1 and later
        attachment.append({"type": "internal"}, fsync=False)
        with pytest.raises(SessionError) as refused:
            attachment.snapshot()
        assert refused.value.code == "history_limit"
    assert reads.count == 0
    attachment.close()
