"""history.page over real pipes: params, staleness, mutation, paging bounds, interrupted runs."""

import json
import re
import signal
from pathlib import Path
from typing import Any

from magi_code import limits
from support.sessions import script

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
from .turns import attach, start, until


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


def test_page_entry_count_edge(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    most = limits.HISTORY_PAGE_ENTRIES
    for count, shape in [(most, [most]), (most + 1, [most, 1])]:
        sid = new_sid()
        write(home, sid, header(sid, workspace), record(sid, "compaction", text="c") * count)
        pages = all_pages(child, sid, open_ok(child, sid)["revision"])
        assert [len(p["entries"]) for p in pages] == shape
        assert [p["complete"] for p in pages] == [False] * (len(shape) - 1) + [True]


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


def test_deleted_or_replaced_file_is_stale(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    sid = stored(home, workspace)
    path = session_file(home, sid)
    original = path.read_bytes()
    revision = open_ok(child, sid)["revision"]
    params = {"session_id": sid, "revision": revision}
    child.request("history.page", params)
    path.unlink()
    fails(child, "history.page", params, "stale_revision")
    fails(child, "session.open", {"session_id": sid}, "session_missing")
    replacement = path.with_name("replacement")
    replacement.write_bytes(original)
    replacement.chmod(0o600)
    replacement.rename(path)  # same bytes, another file
    fails(child, "history.page", params, "stale_revision")
    texts = [e["text"] for e in entries(all_pages(child, sid, open_ok(child, sid)["revision"]))]
    assert texts == ["question 0", "answer 0"]


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
    sizes = [page_frame_bytes(page) for page in pages]
    assert max(sizes) > limits.HISTORY_PAGE_BYTES - 512  # the bound is actually approached
    for number, page in enumerate(pages):
        assert sizes[number] <= limits.HISTORY_PAGE_BYTES
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
    assert kinds[0] == "user" and kinds[-1] == "diagnostic"
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
    run_id = start(child, sid, script({"text": "x ", "hang": True}))
    until(child, "message.delta")
    fails(child, "history.page", {"session_id": sid, "revision": revision}, "busy")
    child.request("turn.cancel", {"session_id": sid, "run_id": run_id})
    finished = until(child, "run.finished")[-1].data
    fails(child, "history.page", {"session_id": sid, "revision": revision}, "stale_revision")
    assert entries(all_pages(child, sid, finished["revision"]))


def test_content_chunk_edge(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    sid = new_sid()
    chunk = limits.HISTORY_CHUNK_BYTES
    texts = ["a" * chunk, "a" * (chunk + 1), "😀" * (chunk // 4), "😀" * (chunk // 4 + 1)]
    body = b"".join(record(sid, "compaction", text=text) for text in texts)
    write(home, sid, header(sid, workspace), body)
    got = entries(all_pages(child, sid, open_ok(child, sid)["revision"]))
    by_message: dict[str, list[str]] = {}
    for entry in got:
        by_message.setdefault(entry["message_id"], []).append(entry["text"])
    assert [len(parts) for parts in by_message.values()] == [1, 2, 1, 2]
    assert ["".join(parts) for parts in by_message.values()] == texts
    assert all(len(e["text"].encode()) <= chunk for e in got)


def test_projection_shows_only_presentable_records(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    child = ready(spawn())
    sid = new_sid()
    secret = "sk-" + "A1b2C3d4" * 4
    body = [
        record(sid, "user", message_id="u1", run_id="r1", text=f"my key is {secret}"),
        record(sid, "internal", text="provider-only prompt"),
        record(sid, "assessment", text="private assessment"),
        record(sid, "reasoning", text="raw chain of thought"),
        record(sid, "reasoning_summary", item_id="i0", run_id="r1", text="unmarked"),
        record(
            sid, "reasoning_summary", item_id="i1", run_id="r1", text="first", provider_summary=True
        ),
        record(
            sid,
            "reasoning_summary",
            item_id="i1",
            run_id="r1",
            text="second",
            provider_summary=True,
        ),
        record(
            sid,
            "tool",
            activity_id="t1",
            run_id="r1",
            name="read_file",
            state="started",
            result={"body": "RAW TOOL BODY"},
        ),
        record(
            sid,
            "tool",
            activity_id="t1",
            run_id="r1",
            name="read_file",
            state="completed",
            result="RAW TOOL BODY",
        ),
        record(sid, "assistant_chunk", message_id="a1", run_id="r1", index=0, text="Hel"),
        record(sid, "assistant_chunk", message_id="a1", run_id="r1", index=1, text="lo"),
        record(sid, "assistant", message_id="a1", run_id="r1", text="Hello!"),
        record(sid, "run_finished", run_id="r1", outcome="completed", error_code=None),
    ]
    write(home, sid, header(sid, workspace), *body)
    got = entries(all_pages(child, sid, open_ok(child, sid)["revision"]))
    assert [e["kind"] for e in got] == ["user", "reasoning_summary", "activity", "assistant"]
    text = json.dumps(got)
    for hidden in [
        "provider-only",
        "private assessment",
        "chain of thought",
        "unmarked",
        "RAW TOOL BODY",
        secret,
    ]:
        assert hidden not in text
    assert got[0]["text"] == "my key is [REDACTED]" and got[1]["text"] == "second"
    assert got[2]["partial"] is False and got[3]["text"] == "Hello!"
    for entry in got:
        assert re.fullmatch(r"[A-Za-z0-9._-]{1,64}", entry["message_id"])


def test_a_torn_tail_reads_back_incomplete(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    sid = new_sid()
    write(home, sid, header(sid, workspace), finished_turn(sid, "r1", "q", "a"), b'{"sess')
    opened = open_ok(child, sid)
    assert opened["durable"] is True
    pages = all_pages(child, sid, opened["revision"])
    assert [e["kind"] for e in entries(pages)] == ["user", "assistant", "diagnostic"]
    assert pages[-1]["complete"] is False


def test_shutdown_answers_a_pending_page_or_create(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    sid = stored(home, workspace)
    child = ready(spawn())
    revision = open_ok(child, sid)["revision"]
    page = frame("h1", "history.page", {"session_id": sid, "revision": revision})
    child.send_raw(page + frame("x1", "shutdown"))  # one read batch: shutdown wins the race
    assert child.wait("h1")["error"] == {"code": "operation_cancelled"}
    assert child.result("x1") == {"state": "stopping"}
    assert child.finish() == 0
    other = ready(spawn())
    other.send_raw(frame("k1", "session.create") + frame("x2", "shutdown"))
    assert other.wait("k1")["error"] == {"code": "operation_cancelled"}
    assert other.finish() == 0
    assert sorted(p.name for p in session_file(home, sid).parent.glob("*.jsonl")) == [
        f"{sid}.jsonl"
    ]
    assert open_ok(ready(spawn()), sid)["durable"] is True


def test_session_methods_after_failed_startup(spawn: Spawn, home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.toml").write_text('provider = "absent"\n')
    child = spawn()
    request_id = child.send("initialize", {"required_capabilities": ["session.open"]})
    failure = child.wait(request_id)["error"]["code"]
    assert failure in ("configuration_invalid", "provider_unavailable")
    for method, params in [
        ("session.create", {}),
        ("session.open", {"session_id": new_sid()}),
        ("history.page", {"session_id": new_sid(), "revision": "r0"}),
    ]:
        assert child.wait(child.send(method, params))["error"] == {"code": failure}
    assert child.request("status")["state"] == "failed"


def test_a_turn_never_deletes_records_appended_from_outside(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    child = ready(spawn())
    sid = stored(home, workspace)
    open_ok(child, sid)
    outside = record(sid, "compaction", text="written by another process")
    with session_file(home, sid).open("ab") as handle:
        handle.write(outside)
    start(child, sid, "next prompt")
    until(child, "run.finished")
    assert outside in session_file(home, sid).read_bytes()
