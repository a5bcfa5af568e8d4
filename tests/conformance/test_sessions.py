"""session.create and session.open over real pipes and real session files under MC_HOME."""

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from magi_code import limits
from support.sessions import script

from .conftest import Spawn, frame
from .sessions_support import (
    all_pages,
    entries,
    exists_with_prefix,
    fails,
    finished_turn,
    header,
    new_sid,
    open_ok,
    ready,
    record,
    session_file,
    sessions_dir,
    write,
)
from .turns import run, start, until

MIB = 1024 * 1024


def big_valid_file(home: Path, sid: str, workspace: Path, size: int) -> Path:
    """A valid session of exactly `size` bytes: a header plus large private records."""
    head = header(sid, workspace)
    skeleton = record(sid, "internal", pad="")
    body_lines = 64
    room = size - len(head) - body_lines * len(skeleton)
    pads = [room // body_lines] * body_lines
    pads[-1] += room - sum(pads)
    path = write(home, sid, head, *(record(sid, "internal", pad="x" * n) for n in pads))
    assert path.stat().st_size == size
    return path


def test_create_is_lazy_then_a_turn_makes_it_durable(spawn: Spawn, home: Path) -> None:
    child = ready(spawn())
    created = child.request("session.create")
    assert set(created) == {"session_id", "durable", "revision", "notices"}
    assert created["durable"] is False and created["notices"] == []
    sid = created["session_id"]
    assert isinstance(created["revision"], str) and len(created["revision"]) <= 64
    assert not session_file(home, sid).exists()
    assert child.request("status")["session_id"] == sid
    reopened = open_ok(child, sid)
    assert reopened["durable"] is False and reopened["notices"] == []
    assert not session_file(home, sid).exists()
    page = child.request("history.page", {"session_id": sid, "revision": reopened["revision"]})
    assert page["entries"] == [] and page["complete"] is True and page["next_cursor"] is None
    _, events = run(child, sid, "hello there")
    assert events[0].name == "input.persisted" and events[0].data["durable"] is True
    stale = {"session_id": sid, "revision": reopened["revision"]}
    fails(child, "history.page", stale, "stale_revision")
    assert session_file(home, sid).exists()
    assert session_file(home, sid).stat().st_mode & 0o777 == 0o600
    after = open_ok(child, sid)
    assert after["durable"] is True and after["notices"] == []


def test_a_created_but_never_persisted_session_is_missing_in_a_fresh_child(spawn: Spawn) -> None:
    first = ready(spawn())
    sid = first.request("session.create")["session_id"]
    assert first.finish() == 0
    second = ready(spawn())
    fails(second, "session.open", {"session_id": sid}, "session_missing")


def test_open_takes_exact_well_formed_ids_only(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    sid = new_sid()
    write(home, sid, header(sid, workspace))
    for bad in ["a/b", "a.b", "", " ", "..", "é", "a" * (limits.SESSION_ID_BYTES + 1), 5, None]:
        fails(child, "session.open", {"session_id": bad}, "invalid_params")
    edge = "b" * limits.SESSION_ID_BYTES
    fails(child, "session.open", {"session_id": edge}, "session_missing")
    assert not exists_with_prefix(home, edge)  # a missing open leaves no lock files behind
    widest = "Az09_-" * 10 + "q_-Z"
    assert len(widest) == limits.SESSION_ID_BYTES
    write(home, widest, header(widest, workspace))
    assert open_ok(child, widest)["durable"] is True
    for near in [sid[:-1], sid + "0", sid.upper()]:
        fails(child, "session.open", {"session_id": near}, "session_missing")
    fails(child, "session.open", {}, "invalid_params")
    fails(child, "session.open", {"session_id": sid, "x": 1}, "invalid_params")
    assert child.request("status")["session_id"] == widest
    assert open_ok(child, sid)["durable"] is True


def test_a_session_held_by_another_child_is_busy(spawn: Spawn, home: Path, workspace: Path) -> None:
    sid = new_sid()
    write(home, sid, header(sid, workspace), finished_turn(sid, "r1", "q", "a"))
    first, second = ready(spawn()), ready(spawn())
    open_ok(first, sid)
    fails(second, "session.open", {"session_id": sid}, "session_busy")
    assert second.request("status")["session_id"] is None
    first.request("session.create")  # replacing the attachment releases the session
    assert open_ok(second, sid)["durable"] is True
    fails(first, "session.open", {"session_id": sid}, "session_busy")
    second.request("shutdown")
    assert second.finish() == 0  # exiting releases it too
    assert open_ok(first, sid)["durable"] is True


def test_unsafe_or_malformed_files_are_session_invalid(
    spawn: Spawn, home: Path, workspace: Path, tmp_path: Path
) -> None:
    child = ready(spawn())
    nested = b"[" * 5000 + b"]" * 5000
    breaking: dict[str, Callable[[str], bytes]] = {  # each breaks one stored-read rule
        "diagnostic record": lambda sid: record(sid, "diagnostic", text="x"),
        "another session": lambda sid: record(new_sid(), "compaction", text="x"),
        "bad json": lambda sid: b'{"session_id": "' + sid.encode() + b"\n",
        "invalid utf-8": lambda sid: record(sid, "compaction", text="\u00e9").replace(
            "\u00e9".encode(), b"\xc3\x28"
        ),
        "lone surrogate": lambda sid: record(sid, "compaction", text="@").replace(b"@", b"\\ud800"),
        "not an object": lambda sid: b"[1,2]\n",
        "blank line": lambda sid: b"\n",
        "unknown type": lambda sid: record(sid, "mystery", text="x"),
        "missing field": lambda sid: record(sid, "user", message_id="m", run_id="r"),
        "bad cwd type": lambda sid: record(sid, "session", cwd=5),
        "bad tool state": lambda sid: record(
            sid, "tool", activity_id="a", run_id="r", name="t", state="done"
        ),
        "too deep": lambda sid: record(sid, "internal", pad="@").replace(b'"@"', nested),
    }
    invalid = []
    for make in breaking.values():
        sid = new_sid()
        write(home, sid, header(sid, workspace), make(sid), finished_turn(sid, "r9", "q", "a"))
        invalid.append(sid)
    # Unsafe files: a symlink to a valid session, group- and world-writable files, a directory.
    target_sid = new_sid()
    target = write(
        home, target_sid, header(target_sid, workspace), finished_turn(target_sid, "r9", "q", "a")
    )
    link_sid = new_sid()
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(header(link_sid, workspace))
    os.symlink(outside, session_file(home, link_sid))
    group_sid, world_sid, dir_sid = new_sid(), new_sid(), new_sid()
    write(home, group_sid, header(group_sid, workspace), mode=0o620)
    write(home, world_sid, header(world_sid, workspace), mode=0o602)
    session_file(home, dir_sid).mkdir()
    foreign_sid, lock_sid = new_sid(), new_sid()
    write(home, foreign_sid, header(foreign_sid, workspace))
    if os.geteuid() == 0:  # only root can give a file away
        os.chown(session_file(home, foreign_sid), 65534, 65534)
        invalid.append(foreign_sid)
    write(home, lock_sid, header(lock_sid, workspace))
    decoy = tmp_path / "decoy.lock"
    decoy.write_bytes(b"")
    (sessions_dir(home) / f"{lock_sid}.writer.lock").symlink_to(decoy)
    for sid in [*invalid, link_sid, group_sid, world_sid, dir_sid, lock_sid]:
        fails(child, "session.open", {"session_id": sid}, "session_invalid")
        assert child.request("status")["session_id"] is None
    assert open_ok(child, target_sid)["durable"] is True and target.exists()
    assert os.readlink(session_file(home, link_sid)) == str(outside)  # never followed/replaced


def test_stored_read_bounds_at_their_edges(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    # Bytes: exactly STORED_HISTORY_BYTES opens; one more byte is history_limit.
    at = new_sid()
    big_valid_file(home, at, workspace, limits.STORED_HISTORY_BYTES)
    over = new_sid()
    big_valid_file(home, over, workspace, limits.STORED_HISTORY_BYTES + 1)
    fails(child, "session.open", {"session_id": over}, "history_limit")
    assert open_ok(child, at)["durable"] is True
    session_file(home, at).unlink()
    session_file(home, over).unlink()
    # Lines: exactly STORED_HISTORY_LINES opens; one more (or a torn tail) is history_limit.
    line_at, line_over, torn_over = new_sid(), new_sid(), new_sid()
    for sid, extra in [(line_at, b""), (line_over, None), (torn_over, b'{"session_id"')]:
        body = record(sid, "internal") * (limits.STORED_HISTORY_LINES - 1)
        tail = record(sid, "internal") if extra is None else extra
        write(home, sid, header(sid, workspace), body, tail)
    fails(child, "session.open", {"session_id": line_over}, "history_limit")
    fails(child, "session.open", {"session_id": torn_over}, "history_limit")
    assert open_ok(child, line_at)["durable"] is True


def _compaction_part_bytes(index: int, text: str, part: int, last: bool) -> int:
    entry = {
        "message_id": f"m{index}",
        "kind": "compaction",
        "text": text,
        "partial": False,
        "part": part,
        "last_part": last,
    }
    return len(json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode())


def _projection_bytes(length: int) -> int:
    """Serialized bytes of one compaction entry of `length` ASCII letters, as parts."""
    chunk = limits.HISTORY_CHUNK_BYTES
    sizes = [min(chunk, length - start) for start in range(0, length, chunk)]
    return sum(
        _compaction_part_bytes(0, "x" * n, i, i == len(sizes) - 1) for i, n in enumerate(sizes)
    )


def test_snapshot_bounds_at_their_edges(spawn: Spawn, home: Path, workspace: Path) -> None:
    child = ready(spawn())
    budget = limits.HISTORY_SNAPSHOT_BYTES
    low, high = 0, budget  # the longest text whose serialized parts fit the budget
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if _projection_bytes(mid) <= budget else (low, mid - 1)
    length = low
    assert _projection_bytes(length + 1) > budget
    fit, over = new_sid(), new_sid()
    write(home, fit, header(fit, workspace), record(fit, "compaction", text="x" * length))
    write(home, over, header(over, workspace), record(over, "compaction", text="x" * (length + 1)))
    fails(child, "session.open", {"session_id": over}, "history_limit")
    opened = open_ok(child, fit)
    got = entries(all_pages(child, fit, opened["revision"]))
    sizes = [len(json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode()) for e in got]
    assert sum(sizes) == _projection_bytes(length) <= budget
    assert "".join(e["text"] for e in got) == "x" * length
    # Parts: exactly HISTORY_SNAPSHOT_PARTS opens, one more is history_limit.
    parts_at, parts_over = new_sid(), new_sid()
    count = limits.HISTORY_SNAPSHOT_PARTS
    write(
        home,
        parts_at,
        header(parts_at, workspace),
        record(parts_at, "compaction", text="y") * count,
    )
    write(
        home,
        parts_over,
        header(parts_over, workspace),
        record(parts_over, "compaction", text="y") * (count + 1),
    )
    fails(child, "session.open", {"session_id": parts_over}, "history_limit")
    opened = open_ok(child, parts_at)
    assert len(entries(all_pages(child, parts_at, opened["revision"]))) == count


def test_workspace_rules(spawn: Spawn, home: Path, workspace: Path, tmp_path: Path) -> None:
    child = ready(spawn())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    deleted = tmp_path / "deleted-dir"
    deleted.mkdir()
    wrong: dict[str, Path | str | None] = {
        "other": elsewhere,
        "gone": deleted,
        "relative": "workspace",
        "relative to itself": ".",  # would resolve to the workspace, but is not absolute
        "later": None,
    }
    deleted.rmdir()
    attached = None
    for name, cwd in wrong.items():
        sid = new_sid()
        if name == "later":  # a later header naming another cwd also fails
            write(home, sid, header(sid, workspace), header(sid, elsewhere))
        else:
            write(home, sid, header(sid, cwd))
        fails(child, "session.open", {"session_id": sid}, "cwd_mismatch")
        assert child.request("status")["session_id"] == attached
        write(home, sid, header(sid, workspace))  # fixed: the failed open kept no lease
        assert open_ok(child, sid)["notices"] == []
        attached = sid
    equivalents: list[Path | str] = [alias, f"{workspace}/./", f"{workspace}/../{workspace.name}"]
    for equivalent in equivalents:
        sid = new_sid()
        write(home, sid, header(sid, equivalent))
        assert open_ok(child, sid)["notices"] == []
    for cwd in [None, ""]:
        sid = new_sid()
        write(home, sid, header(sid, cwd), finished_turn(sid, "r1", "q", "a"))
        assert open_ok(child, sid)["notices"] == ["cwd_unverified"]


def test_saved_selection_notices(spawn: Spawn, home: Path, workspace: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    settings = '[providers.alt]\nwire_api = "fixture"\nmodels = ["alt-model"]\n'
    (home / "settings.toml").write_text(settings)
    child = ready(spawn())
    startup = child.request("status")
    assert (startup["provider"], startup["model"]) == ("fixture", "fixture-model")
    unavailable = [
        {"provider": "alt", "model": "nope", "thinking": "high"},  # model not configured
        {"provider": "gone", "model": "m", "thinking": None},  # provider not configured
    ]
    for selection in unavailable:
        sid = new_sid()
        write(home, sid, header(sid, workspace, selection))
        assert open_ok(child, sid)["notices"] == ["saved_selection_unavailable"]
        status = child.request("status")
        assert (status["provider"], status["model"]) == ("fixture", "fixture-model")
        assert status["session_id"] == sid
    for malformed in ["alt/alt-model", {"provider": "alt"}, {"provider": "alt", "model": 3}]:
        sid = new_sid()
        write(home, sid, header(sid, workspace, malformed))
        assert open_ok(child, sid)["notices"] == ["saved_selection_notice"]
    restored = new_sid()
    write(home, restored, header(restored, workspace, {"provider": "alt", "model": "alt-model"}))
    assert open_ok(child, restored)["notices"] == []
    status = child.request("status")
    assert (status["provider"], status["model"]) == ("alt", "alt-model")
    expected = header(restored, workspace, {"provider": "alt", "model": "alt-model"})
    assert session_file(home, restored).read_bytes() == expected  # opening wrote nothing
    assert (home / "settings.toml").read_text() == settings


def test_empty_file_is_durable_and_deleted_file_is_missing(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    child = ready(spawn())
    empty = new_sid()
    write(home, empty)
    opened = open_ok(child, empty)
    assert opened["durable"] is True and opened["notices"] == ["cwd_unverified"]
    page = child.request("history.page", {"session_id": empty, "revision": opened["revision"]})
    assert page["entries"] == [] and page["complete"] is True and page["next_cursor"] is None
    assert session_file(home, empty).read_bytes() == b""
    # A deleted file is missing: in the same child (reopen) and in a fresh one.
    gone = new_sid()
    write(home, gone, header(gone, workspace), finished_turn(gone, "r1", "q", "a"))
    open_ok(child, gone)
    session_file(home, gone).unlink()
    fails(child, "session.open", {"session_id": gone}, "session_missing")
    assert child.request("shutdown") == {"state": "stopping"}
    assert child.finish() == 0
    fresh = ready(spawn())
    fails(fresh, "session.open", {"session_id": gone}, "session_missing")
    assert sorted(p.name for p in sessions_dir(home).glob("*.jsonl")) == [f"{empty}.jsonl"]


def test_a_failed_open_keeps_the_previous_attachment(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    child = ready(spawn())
    good, bad = new_sid(), new_sid()
    write(home, good, header(good, workspace), finished_turn(good, "r1", "question", "answer"))
    write(home, bad, header(bad, workspace), b"not json\n")
    revision = open_ok(child, good)["revision"]
    for sid, code in [(bad, "session_invalid"), (new_sid(), "session_missing")]:
        fails(child, "session.open", {"session_id": sid}, code)
        assert child.request("status")["session_id"] == good
        texts = [e["text"] for e in entries(all_pages(child, good, revision))]
        assert texts == ["question", "answer"]


def test_open_and_create_while_a_run_is_active_are_busy(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    child = ready(spawn())
    other = new_sid()
    write(home, other, header(other, workspace))
    sid = child.request("session.create")["session_id"]
    run_id = start(child, sid, script({"text": "working ", "hang": True}))
    until(child, "message.delta")
    fails(child, "session.open", {"session_id": other}, "busy")
    fails(child, "session.open", {"session_id": sid}, "busy")
    fails(child, "session.create", {}, "busy")
    assert child.request("status")["session_id"] == sid
    child.request("turn.cancel", {"session_id": sid, "run_id": run_id})
    assert until(child, "run.finished")[-1].data["outcome"] == "cancelled"
    assert open_ok(child, other)["notices"] == []
    assert child.request("status")["session_id"] == other


def test_status_reflects_the_last_completed_attachment(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    child = ready(spawn())
    first = child.request("session.create")["session_id"]
    slow = new_sid()
    big_valid_file(home, slow, workspace, 48 * MIB)
    # One write: the loop reads both frames before the open's worker can report back.
    child.send_raw(frame("o1", "session.open", {"session_id": slow}) + frame("s1", "status"))
    assert child.result("s1")["session_id"] == first
    assert child.result("o1")["session_id"] == slow
    assert child.request("status")["session_id"] == slow
    # An overlapping session operation is busy without cancelling the one in flight.
    child.send_raw(
        frame("o2", "session.open", {"session_id": slow})
        + frame("o3", "session.create")
        + frame("h3", "history.page", {"session_id": slow, "revision": "r0"})
        + frame("t3", "turn.start", {"session_id": slow, "prompt": "hi"})
    )
    for overlapping in ["o3", "h3", "t3"]:
        assert child.wait(overlapping)["error"] == {"code": "busy"}
    assert child.result("o2")["durable"] is True
    assert child.request("status")["session_id"] == slow
    # Replacing the lazy session released it; with nothing persisted it is gone.
    fails(child, "session.open", {"session_id": first}, "session_missing")
    assert child.request("status")["session_id"] == slow


def test_shutdown_during_open_answers_operation_cancelled(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    sid = new_sid()
    big_valid_file(home, sid, workspace, 48 * MIB)
    child = ready(spawn())
    child.send_raw(frame("o1", "session.open", {"session_id": sid}) + frame("x1", "shutdown"))
    assert child.result("x1") == {"state": "stopping"}
    assert child.wait("o1")["error"] == {"code": "operation_cancelled"}
    assert child.finish() == 0
    # The cancelled open released its leases: another child can own the session now.
    assert open_ok(ready(spawn()), sid)["durable"] is True


def test_eof_during_open_answers_operation_cancelled(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    sid = new_sid()
    big_valid_file(home, sid, workspace, limits.STORED_HISTORY_BYTES)
    child = ready(spawn())
    child.send_raw(frame("o1", "session.open", {"session_id": sid}))
    child.close_input()  # EOF right behind the frame; reading 64 MiB takes far longer
    assert child.wait("o1")["error"] == {"code": "operation_cancelled"}
    assert child.finish() == 0
    assert open_ok(ready(spawn()), sid)["durable"] is True


def test_session_methods_need_initialization(spawn: Spawn) -> None:
    child = spawn()
    for method, params in [
        ("session.create", {}),
        ("session.open", {"session_id": new_sid()}),
        ("history.page", {"session_id": new_sid(), "revision": "r0"}),
    ]:
        answer = child.wait(child.send(method, params))
        assert answer["error"] == {"code": "not_initialized"}
    ready(child)
    fails(child, "session.create", {"unexpected": True}, "invalid_params")
    sid = child.request("session.create")["session_id"]
    assert child.request("status")["session_id"] == sid


def test_a_fifo_session_file_is_invalid_without_blocking(spawn: Spawn, home: Path) -> None:
    child = ready(spawn())
    sid = new_sid()
    fifo = session_file(home, sid)
    os.mkfifo(fifo, 0o600)
    request_id = child.send("session.open", {"session_id": sid})
    try:
        answer = child.wait(request_id, timeout=3)
    except TimeoutError:
        # Unblock the stuck reader (a writer that closes at once) so the child can end.
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        raise
    assert answer["error"] == {"code": "session_invalid"}
    assert child.request("session.create")["durable"] is False  # the worker is free again


def test_an_unavailable_selection_falls_back_to_the_startup_one(
    spawn: Spawn, home: Path, workspace: Path
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.toml").write_text(
        '[providers.alt]\nwire_api = "fixture"\nmodels = ["alt-model"]\n'
    )
    child = ready(spawn())
    restored, unavailable = new_sid(), new_sid()
    write(home, restored, header(restored, workspace, {"provider": "alt", "model": "alt-model"}))
    write(home, unavailable, header(unavailable, workspace, {"provider": "alt", "model": "nope"}))
    assert open_ok(child, restored)["notices"] == []
    assert child.request("status")["model"] == "alt-model"
    assert open_ok(child, unavailable)["notices"] == ["saved_selection_unavailable"]
    status = child.request("status")
    assert (status["provider"], status["model"]) == ("fixture", "fixture-model")


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def test_a_failed_open_leaves_no_melchior_behind(spawn: Spawn) -> None:
    """melchior is launched before the session is read (it boots meanwhile); an open that
    fails ends it again."""
    child = ready(spawn())
    fails(child, "session.open", {"session_id": new_sid()}, "session_missing")
    deadline = time.monotonic() + 5
    while _children(child.process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _children(child.process.pid) == []
    sid = child.request("session.create")["session_id"]  # and the next attach still works
    assert child.request("status")["session_id"] == sid
