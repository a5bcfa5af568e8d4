"""Attachments: lazy create, appends, same-process reopen, busy, stale sessions and revisions."""

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sessions_support import SID, finished, header, line, messages, pages, user, write_session

from magi_code.sessions import Attachment, Selection, SessionError, SessionStore
from magi_code.sessions.ids import valid_opaque_id
from magi_code.sessions.leases import Leases
from magi_code.sessions.projection import INTERRUPTED_TEXT
from magi_code.sessions.snapshot import projected_message_id

SELECTION = Selection("fixture", "fixture-model", "low")


def _raises(code: str) -> pytest.RaisesExc[SessionError]:
    return pytest.raises(SessionError, match=f"^{code}$")


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(raw) for raw in path.read_bytes().split(b"\n") if raw]


def test_create_is_lazy_until_the_first_append(store: SessionStore, cwd: Path) -> None:
    attachment = store.create(cwd, SELECTION)
    path = store.path_of(attachment.session_id)
    assert attachment.durable is False and not path.exists()
    (page,) = pages(attachment.history)
    assert page.entries == [] and page.complete
    attachment.append(user("r1", "hello"), fsync=True)
    assert attachment.durable is True
    assert path.stat().st_mode & 0o777 == 0o600
    first, second = _records(path)
    assert first["type"] == "session" and first["session_id"] == attachment.session_id
    assert first["cwd"] == os.path.realpath(cwd)
    assert first["selection"] == {
        "provider": "fixture",
        "model": "fixture-model",
        "thinking": "low",
    }
    assert second == {"session_id": attachment.session_id, **user("r1", "hello")}
    created = datetime.fromisoformat(str(first["created_at"]))
    assert created.utcoffset() == timedelta(0) and len(str(first["created_at"])) == 29
    assert abs(datetime.now(UTC) - created) < timedelta(seconds=60)
    attachment.close()


def test_same_process_reopen_of_a_lazy_handle(store: SessionStore, cwd: Path) -> None:
    first = store.create(cwd, SELECTION)
    second, notices = store.open(first.session_id, cwd)
    assert notices == [] and second.durable is False and second.selection == SELECTION
    with _raises("stale_session"):
        first.append(user("r1", "late"), fsync=False)
    first.close()  # closing the superseded handle must not release the successor's leases
    with _raises("session_busy"):
        Leases.acquire(store.directory, second.session_id)
    second.append(user("r1", "hi"), fsync=False)
    second.close()
    reopened, notices = store.open(first.session_id, cwd)
    assert reopened.durable and notices == []
    assert messages(pages(reopened.history)) == [("user", "hi", False), _interrupted()]


def _interrupted() -> tuple[str, str, bool]:
    return ("diagnostic", INTERRUPTED_TEXT, False)


def test_failed_reopen_leaves_the_attachment_intact(store: SessionStore, cwd: Path) -> None:
    path = write_session(store, [header(cwd)])
    attachment, _ = store.open(SID, cwd)
    with path.open("ab") as out:
        out.write(b"garbage\n")
    with _raises("session_invalid"):
        store.open(SID, cwd)
    assert attachment.history.revision  # still attached (a detached one is stale_session) ...
    with pytest.raises(OSError) as refused:  # ... and it never writes over a foreign record
        attachment.append(user("r1", "still mine"), fsync=False)
    assert not isinstance(refused.value, SessionError)
    assert path.read_bytes().endswith(b"garbage\n")
    attachment.close()


def test_reopen_from_another_cwd_is_a_mismatch(
    store: SessionStore, cwd: Path, tmp_path: Path
) -> None:
    attachment = store.create(cwd, None)
    with _raises("cwd_mismatch"):
        store.open(attachment.session_id, tmp_path)
    attachment.close()


def test_closed_attachment_is_stale(store: SessionStore, cwd: Path) -> None:
    attachment = store.create(cwd, None)
    attachment.close()
    attachment.close()
    with _raises("stale_session"):
        attachment.append(user("r1", "x"), fsync=False)
    with _raises("stale_session"):
        attachment.snapshot()
    with _raises("stale_session"):
        attachment.page(attachment.session_id, attachment.history.revision, None)


def test_page_for_another_session_is_stale_session(store: SessionStore, cwd: Path) -> None:
    attachment = store.create(cwd, None)
    with _raises("stale_session"):
        attachment.page("someone-else", attachment.history.revision, None)
    attachment.close()


def test_history_is_busy_during_a_turn(store: SessionStore, cwd: Path) -> None:
    attachment = store.create(cwd, None)
    with attachment.turn():
        attachment.append(user("r1", "q"), fsync=True)
        with _raises("busy"):
            attachment.page(attachment.session_id, attachment.history.revision, None)
        with _raises("busy"):
            attachment.snapshot()
        with _raises("busy"), attachment.turn():
            pass
        attachment.append(finished("r1"), fsync=True)
    snapshot = attachment.snapshot()
    assert messages(pages(snapshot)) == [("user", "q", False)]
    attachment.close()


def test_append_refuses_records_outside_the_schema(store: SessionStore, cwd: Path) -> None:
    attachment = store.create(cwd, None)
    bad_records: list[dict[str, object]] = [
        {"type": "diagnostic", "code": "x"},
        {"type": "user", "text": "no ids"},
        {"type": "user", "message_id": "m", "run_id": "r", "text": "x", "session_id": "other"},
        {"type": "user", "message_id": "m", "run_id": "r", "text": "lone \ud800 surrogate"},
        {
            "type": "tool",
            "activity_id": "a",
            "run_id": "r",
            "name": "n",
            "state": "started",
            "result": object(),
        },
    ]
    for bad in bad_records:
        with pytest.raises(ValueError):
            attachment.append(bad, fsync=False)
    assert not store.path_of(attachment.session_id).exists()
    attachment.close()


def test_append_repairs_a_torn_tail_first(store: SessionStore, cwd: Path) -> None:
    path = write_session(store, [header(cwd), user("r1", "q")], tail=b'{"session_id":"s-te')
    attachment, _ = store.open(SID, cwd)
    assert not attachment.history.complete
    attachment.append(finished("r1"), fsync=True)
    attachment.close()
    assert path.read_bytes().endswith(b"\n") and len(_records(path)) == 3
    reopened, _ = store.open(SID, cwd)
    (page,) = pages(reopened.history)
    assert page.complete and messages([page]) == [("user", "q", False)]


def test_a_file_holding_only_a_torn_header_gets_a_fresh_header(
    store: SessionStore, cwd: Path
) -> None:
    path = write_session(store, [], tail=line(header(cwd))[:10])
    attachment, notices = store.open(SID, cwd)
    assert notices == ["cwd_unverified"]
    attachment.append(user("r1", "q"), fsync=False)
    attachment.close()
    kinds = [r["type"] for r in _records(path)]
    assert kinds == ["session", "user"]


# ---- revisions and cursors -----------------------------------------------------------------


def _opened(store: SessionStore, cwd: Path, count: int = 300) -> Attachment:
    runs = []
    for n in range(count):
        runs += [user(f"r{n}", f"question {n} " + "x" * 300), finished(f"r{n}")]
    write_session(store, [header(cwd), *runs])
    attachment, _ = store.open(SID, cwd)
    return attachment


def test_wrong_revision_and_foreign_cursors_are_stale(store: SessionStore, cwd: Path) -> None:
    attachment = _opened(store, cwd)
    snapshot = attachment.history
    first = snapshot.page(snapshot.revision, None)
    assert first.next_cursor is not None
    with _raises("stale_revision"):
        snapshot.page("r0.not-this-one", None)
    with _raises("stale_revision"):
        snapshot.page(snapshot.revision, first.next_cursor + "0")
    with _raises("stale_revision"):
        snapshot.page(snapshot.revision, "0000000000000000.1")
    fresh = attachment.snapshot()
    assert fresh.revision == snapshot.revision  # same bytes, same generation
    with _raises("stale_revision"):
        fresh.page(fresh.revision, first.next_cursor)  # a cursor of the replaced snapshot
    with _raises("stale_revision"):
        snapshot.page(snapshot.revision, None)  # the replaced snapshot itself
    assert fresh.page(fresh.revision, None).entries == first.entries
    attachment.close()


@pytest.mark.parametrize("change", ["append", "same-size-rewrite", "replace-file"])
def test_outside_changes_invalidate_for_good(store: SessionStore, cwd: Path, change: str) -> None:
    attachment = _opened(store, cwd)
    snapshot = attachment.history
    path = store.path_of(SID)
    original = path.read_bytes()
    first = snapshot.page(snapshot.revision, None)
    if change == "append":
        with path.open("ab") as out:
            out.write(line(user("rX", "sneaky")))
    elif change == "same-size-rewrite":
        with path.open("r+b") as out:
            out.seek(len(original) - 40)
            out.write(b"y")
    else:
        replacement = path.with_suffix(".new")
        replacement.write_bytes(original)
        replacement.replace(path)
    with _raises("stale_revision"):
        snapshot.page(snapshot.revision, first.next_cursor)
    path.write_bytes(original)  # even restoring the bytes does not revive the snapshot
    with _raises("stale_revision"):
        snapshot.page(snapshot.revision, None)
    renewed = attachment.snapshot()
    assert renewed.page(renewed.revision, None).entries
    attachment.close()


def test_own_appends_invalidate_and_change_the_revision(store: SessionStore, cwd: Path) -> None:
    attachment = _opened(store, cwd, count=2)
    old = attachment.history
    attachment.append(user("r9", "new question"), fsync=False)
    with _raises("stale_revision"):
        old.page(old.revision, None)
    new = attachment.snapshot()
    assert new.revision != old.revision
    assert messages(pages(new))[-2] == ("user", "new question", False)
    assert new.message_id_for("u-r9") == pages(new)[-1].entries[-2]["message_id"]
    attachment.close()


def test_opaque_ids_follow_the_grammar(store: SessionStore, cwd: Path) -> None:
    attachment = _opened(store, cwd)
    snapshot = attachment.history
    all_pages = pages(snapshot)
    assert len(all_pages) > 2
    assert valid_opaque_id(snapshot.revision)
    for page in all_pages:
        assert page.next_cursor is None or valid_opaque_id(page.next_cursor)
        assert all(valid_opaque_id(e["message_id"]) for e in page.entries)
    assert [p.complete for p in all_pages] == [False] * (len(all_pages) - 1) + [True]
    attachment.close()


# ---- acknowledgement revision and message IDs ----------------------------------------------


@pytest.mark.parametrize("start", ["lazy", "durable", "torn"])
def test_revision_after_append_matches_a_fresh_snapshot(
    store: SessionStore, cwd: Path, start: str
) -> None:
    if start == "lazy":
        attachment = store.create(cwd, SELECTION)
    else:
        tail = b'{"session_id":"s-test_0001","ty' if start == "torn" else b""
        write_session(store, [header(cwd), user("r0", "q"), finished("r0")], tail=tail)
        attachment, _ = store.open(SID, cwd)
    assert attachment.revision == attachment.history.revision
    revisions = {attachment.revision}
    with attachment.turn():
        attachment.append(user("r1", "next", message_id="f00d"), fsync=True)
        acknowledged = attachment.revision
        revisions.add(acknowledged)
    snapshot = attachment.snapshot()
    assert snapshot.revision == acknowledged and len(revisions) == 2
    assert snapshot.message_id_for("f00d") == projected_message_id("user", "f00d")
    ids = [e["message_id"] for p in pages(snapshot) for e in p.entries]
    assert projected_message_id("user", "f00d") in ids
    attachment.close()


def test_unusable_or_repeated_stored_ids_fall_back(store: SessionStore, cwd: Path) -> None:
    records = [
        header(cwd),
        user("r1", "a", message_id="same"),
        user("r1", "b", message_id="same"),
        user("r1", "c", message_id="has space"),
        user("r1", "d", message_id="x" * 63),
        finished("r1"),
    ]
    write_session(store, records)
    attachment, _ = store.open(SID, cwd)
    ids = [e["message_id"] for p in pages(attachment.history) for e in p.entries]
    assert ids[0] == projected_message_id("user", "same")
    assert len(set(ids)) == len(ids) == 4
    assert all(valid_opaque_id(i) for i in ids)
    attachment.close()
