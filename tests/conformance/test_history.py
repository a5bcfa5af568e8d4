"""history.page over real pipes: params, staleness, mutation, paging bounds, interrupted runs."""

import json
import signal
from pathlib import Path
from typing import Any

from magi_code import limits

from .conftest import Spawn, frame
from .sessions_support import (
    all_pages,
    entries,
    fails,
    fails_raw,
    finished_turn,
    header,
    new_sid,
    open_ok,
    ready,
    record,
    session_file,
    write,
)
from .turns import attach, script, start, until


def stored(home: Path, workspace: Path, turns: int = 1) -> str:
    sid = new_sid()
    body = b"".join(
        finished_turn(sid, f"r{n}", f"question {n}", f"answer {n}") for n in range(turns)
    )
    write(home, sid, header(sid, workspace), body)
    return sid


def page_frame_bytes(result: dict[str, Any]) -> int:
    return len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode())


def test_params_are_exact(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    sid = stored(home, workspace)
    revision = open_ok(child, sid)["revision"]
    ok = {"session_id": sid, "revision": revision}
    assert child.request("history.page", ok)["complete"] is True  # cursor omitted
    assert child.request("history.page", {**ok, "cursor": None})["complete"] is True
    for bad in [
        {**ok, "extra": 1},
        {"session_id": sid},
        {"revision": revision},
        {**ok, "cursor": 5},
        {**ok, "cursor": "bad cursor!"},
        {**ok, "cursor": "c" * (limits.ID_BYTES + 1)},
        {**ok, "revision": "r" * (limits.ID_BYTES + 1)},
        {**ok, "revision": None},
        {**ok, "session_id": 7},
    ]:
        fails(child, "history.page", bad, "invalid_params")
    # A well-formed 64-byte cursor that this snapshot never issued is stale, not malformed.
    fails(child, "history.page", {**ok, "cursor": "c" * limits.ID_BYTES}, "stale_revision")
    dup = frame("d1", "history.page", ok)
    dup = dup.replace(b'"revision"', b'"revision":"x","revision"')
    fails_raw(child, "d1", ok, "invalid_params", raw=dup)
    top = frame("d2", "history.page", ok).replace(b'"method"', b'"id":"d3","method"')
    child.send_raw(top)
    answer = child.wait(None)  # a duplicate top-level field makes the identity unusable
    assert answer["error"] == {"code": "invalid_request"}
    assert child.request("history.page", ok)["entries"]


def test_identity_and_revision_errors(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    sid, other = stored(home, workspace, 2), stored(home, workspace)
    fails(child, "history.page", {"session_id": sid, "revision": "r0"}, "session_missing")
    revision = open_ok(child, sid)["revision"]
    fails(child, "history.page", {"session_id": other, "revision": revision}, "stale_session")
    fails(child, "history.page", {"session_id": sid, "revision": revision + "x"}, "stale_revision")
    fails(child, "history.page", {"session_id": sid, "revision": "r0"}, "stale_revision")
    page = child.request("history.page", {"session_id": sid, "revision": revision})
    assert [e["text"] for e in page["entries"]][:2] == ["question 0", "answer 0"]
    # Reopening makes a new snapshot: the old snapshot's revision and cursors go stale.
    other_rev = open_ok(child, other)["revision"]
    fails(child, "history.page", {"session_id": sid, "revision": revision}, "stale_session")
    reopened = open_ok(child, sid)["revision"]
    assert child.request("history.page", {"session_id": sid, "revision": reopened})["entries"]
    fails(child, "history.page", {"session_id": other, "revision": other_rev}, "stale_session")


def test_cursors_belong_to_their_snapshot(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    sid = new_sid()
    count = 2 * limits.HISTORY_PAGE_ENTRIES + 50
    write(home, sid, header(sid, workspace), record(sid, "compaction", text="c") * count)
    first = open_ok(child, sid)["revision"]
    pages = all_pages(child, sid, first)
    assert [len(p["entries"]) for p in pages] == [100, 100, 50]
    assert [p["complete"] for p in pages] == [False, False, True]
    cursor = pages[0]["next_cursor"]
    assert isinstance(cursor, str) and len(cursor) <= limits.ID_BYTES
    # A cursor can be read again within its snapshot...
    again = child.request("history.page", {"session_id": sid, "revision": first, "cursor": cursor})
    assert again == pages[1]
    second = open_ok(child, sid)["revision"]
    for revision in [first, second]:  # ...but never in another snapshot
        fails(
            child,
            "history.page",
            {"session_id": sid, "revision": revision, "cursor": cursor},
            "stale_revision",
        )
    assert len(entries(all_pages(child, sid, second))) == count


def test_outside_mutation_is_stale_for_good(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    sid = stored(home, workspace)
    path = session_file(home, sid)
    original = path.read_bytes()
    revision = open_ok(child, sid)["revision"]
    params = {"session_id": sid, "revision": revision}
    first = child.request("history.page", params)
    with path.open("ab") as handle:  # another process appends behind the child's back
        handle.write(record(sid, "compaction", text="appended"))
    fails(child, "history.page", params, "stale_revision")
    path.write_bytes(original)  # restoring the bytes does not revive the snapshot
    fails(child, "history.page", params, "stale_revision")
    with path.open("ab") as handle:
        handle.write(record(sid, "compaction", text="appended"))
    fresh = open_ok(child, sid)["revision"]
    assert fresh != revision
    texts = [e["text"] for e in entries(all_pages(child, sid, fresh))]
    assert texts == [e["text"] for e in first["entries"]] + ["appended"]
    fails(child, "history.page", params, "stale_revision")


def test_same_size_rewrite_is_stale(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    sid = stored(home, workspace)
    path = session_file(home, sid)
    revision = open_ok(child, sid)["revision"]
    params = {"session_id": sid, "revision": revision}
    child.request("history.page", params)
    path.write_bytes(path.read_bytes().replace(b"answer 0", b"ANSWER 0"))
    fails(child, "history.page", params, "stale_revision")


ESCAPING = "\x00\x01\x1f\x7f\"\\/\u2028\u2029😀é\t\n\r<>&'" + '\\"' * 3


def test_escaping_text_pages_within_bounds(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    sid = new_sid()
    texts = [ESCAPING * 2500, "\x01" * 40_000, "😀" * 9000, "plain " * 3000]
    body = b"".join(
        record(sid, "user", message_id=f"u{n}", run_id=f"r{n}", text=text)
        + record(sid, "assistant", message_id=f"a{n}", run_id=f"r{n}", text=text[::-1])
        + record(sid, "run_finished", run_id=f"r{n}", outcome="completed", error_code=None)
        for n, text in enumerate(texts)
    )
    write(home, sid, header(sid, workspace), body)
    revision = open_ok(child, sid)["revision"]
    pages = all_pages(child, sid, revision)
    assert len(pages) > len(texts)
    for number, page in enumerate(pages):
        assert page_frame_bytes(page) <= limits.HISTORY_PAGE_BYTES
        assert len(page["entries"]) <= limits.HISTORY_PAGE_ENTRIES
        assert page["complete"] is (number == len(pages) - 1)
        assert page["revision"] == revision and page["session_id"] == sid
        for entry in page["entries"]:
            assert len(entry["text"].encode()) <= limits.HISTORY_CHUNK_BYTES
            assert set(entry) == {"message_id", "kind", "text", "partial", "part", "last_part"}
    messages: dict[str, list[dict[str, Any]]] = {}
    for entry in entries(pages):
        messages.setdefault(entry["message_id"], []).append(entry)
    expected = [t for text in texts for t in (text, text[::-1])]
    assert len(messages) == len(expected)
    for parts, text in zip(messages.values(), expected, strict=True):
        assert [p["part"] for p in parts] == list(range(len(parts)))
        assert [p["last_part"] for p in parts] == [False] * (len(parts) - 1) + [True]
        assert "".join(p["text"] for p in parts) == text


def test_a_killed_run_reads_back_incomplete(spawn: Spawn, home: Path) -> None:
    child = spawn()
    sid = attach(child)
    start(child, sid, script({"text": "half a reply", "hang": True}))
    until(child, "message.delta")
    child.process.send_signal(signal.SIGKILL)
    child.process.wait(10)
    fresh = ready(spawn())
    opened = open_ok(fresh, sid)
    pages = all_pages(fresh, sid, opened["revision"])
    kinds = [e["kind"] for e in entries(pages)]
    assert kinds[0] == "user" and "diagnostic" in kinds
    assert all(p["complete"] is False for p in pages)


def test_a_cancelled_turn_keeps_its_partial_reply(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    run_id = start(child, sid, script({"text": "partial words", "hang": True}))
    until(child, "message.delta")
    child.request("turn.cancel", {"session_id": sid, "run_id": run_id})
    finished = until(child, "run.finished")[-1].data
    assert finished["outcome"] == "cancelled" and finished["persistence"] == "durable"
    pages = all_pages(child, sid, finished["revision"])
    got = entries(pages)
    assert [e["kind"] for e in got] == ["user", "assistant"]
    assert got[1]["text"] == "partial words"
    assert pages[-1]["complete"] is True
    assert child.finish() == 0
    fresh = ready(spawn())
    reread = all_pages(fresh, sid, open_ok(fresh, sid)["revision"])
    assert [e["text"] for e in entries(reread)] == [e["text"] for e in got]
    assert reread[-1]["complete"] is True


def test_history_is_busy_during_a_run(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    revision = child.request("session.open", {"session_id": sid})["revision"]
    run_id = start(child, sid, script({"text": "x", "hang": True}))
    until(child, "message.delta")
    fails(child, "history.page", {"session_id": sid, "revision": revision}, "busy")
    child.request("turn.cancel", {"session_id": sid, "run_id": run_id})
    finished = until(child, "run.finished")[-1].data
    fails(child, "history.page", {"session_id": sid, "revision": revision}, "stale_revision")
    assert entries(all_pages(child, sid, finished["revision"]))
