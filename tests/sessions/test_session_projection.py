"""What history shows: reconciliation, privacy filters, redaction, interrupted and torn turns,
and how cancelled and failed turns ended (kept beside the entries, never paged)."""

from pathlib import Path
from typing import Any

from sessions_support import finished, header, line, messages, pages, user, write_session

from magi_code.sessions import SessionStore
from magi_code.sessions.projection import INTERRUPTED_TEXT, TORN_TEXT, Ending
from magi_code.sessions.reader import read_session


def chunk(run: str, mid: str, index: int, text: str) -> dict[str, Any]:
    return {
        "type": "assistant_chunk",
        "message_id": mid,
        "run_id": run,
        "index": index,
        "text": text,
    }


def assistant(run: str, mid: str, text: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "assistant", "message_id": mid, "run_id": run}
    if text is not None:
        record["text"] = text
    return record


def tool(run: str, aid: str, state: str, summary: str = "") -> dict[str, Any]:
    return {
        "type": "tool",
        "activity_id": aid,
        "run_id": run,
        "name": "read_file",
        "state": state,
        "summary": summary,
        "result": "RAW-RESULT-BODY",
    }


def summary(run: str, item: str, text: str, provider: bool | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "type": "reasoning_summary",
        "item_id": item,
        "run_id": run,
        "text": text,
    }
    if provider is not None:
        record["provider_summary"] = provider
    return record


def shown(
    store: SessionStore, cwd: Path, records: list[dict[str, Any]], tail: bytes = b""
) -> tuple[list[tuple[str, str, bool]], bool]:
    write_session(store, [header(cwd), *records], tail=tail)
    attachment, _ = store.open("s-test_0001", cwd)
    try:
        all_pages = pages(attachment.history)
    finally:
        attachment.close()
    return messages(all_pages), all_pages[-1].complete


def test_reconciled_assistant_wins_over_its_chunks(store: SessionStore, cwd: Path) -> None:
    records = [
        user("r1", "question"),
        chunk("r1", "a1", 0, "draft "),
        chunk("r1", "a1", 1, "text"),
        tool("r1", "t1", "started"),
        tool("r1", "t1", "completed", "src/x.py"),
        chunk("r1", "a2", 0, "second"),
        assistant("r1", "a1", "final text"),
        assistant("r1", "a2", "second segment"),
        finished("r1"),
    ]
    got, complete = shown(store, cwd, records)
    assert got == [
        ("user", "question", False),
        ("assistant", "final text", False),
        ("activity", "read_file completed: src/x.py", False),
        ("assistant", "second segment", False),
    ]
    assert complete


def test_legacy_assistant_without_text_uses_chunks(store: SessionStore, cwd: Path) -> None:
    records = [
        user("r1", "q"),
        chunk("r1", "a", 0, "he"),
        chunk("r1", "a", 1, "llo"),
        assistant("r1", "a", None),
        finished("r1"),
    ]
    got, complete = shown(store, cwd, records)
    assert got[1] == ("assistant", "hello", False) and complete


def test_private_records_and_raw_results_never_show(store: SessionStore, cwd: Path) -> None:
    records = [
        user("r1", "q"),
        {"type": "internal", "text": "PROVIDER-ONLY"},
        {"type": "assessment", "text": "PRIVATE-ASSESSMENT"},
        {"type": "reasoning", "run_id": "r1", "text": "RAW-THOUGHTS"},
        summary("r1", "i1", "no provenance", None),
        summary("r1", "i2", "false provenance", False),
        tool("r1", "t1", "failed", "permission denied"),
        finished("r1", "failed", "execution_failed"),
    ]
    got, complete = shown(store, cwd, records)
    joined = repr(got)
    for secret in [
        "PROVIDER-ONLY",
        "PRIVATE-ASSESSMENT",
        "RAW-THOUGHTS",
        "RAW-RESULT-BODY",
        "provenance",
    ]:
        assert secret not in joined
    assert got == [("user", "q", False), ("activity", "read_file failed: permission denied", False)]
    assert complete


def test_repeated_reasoning_summary_replaces_in_place(store: SessionStore, cwd: Path) -> None:
    records = [
        user("r1", "q"),
        summary("r1", "i1", "first", True),
        assistant("r1", "a1", "answer"),
        summary("r1", "i1", "refined", True),
        finished("r1"),
        user("r2", "q2"),
        summary("r2", "i1", "same item id, other run", True),
        finished("r2"),
    ]
    got, _ = shown(store, cwd, records)
    assert got == [
        ("user", "q", False),
        ("reasoning_summary", "refined", False),
        ("assistant", "answer", False),
        ("user", "q2", False),
        ("reasoning_summary", "same item id, other run", False),
    ]


def test_failed_and_cancelled_turns_keep_partial_replies_and_can_be_complete(
    store: SessionStore, cwd: Path
) -> None:
    records = [
        user("r1", "q1"),
        chunk("r1", "a1", 0, "half"),
        finished("r1", "cancelled"),
        user("r2", "q2"),
        chunk("r2", "a2", 0, "broken"),
        tool("r2", "t", "started"),
        finished("r2", "failed", "execution_failed"),
    ]
    got, complete = shown(store, cwd, records)
    assert got == [
        ("user", "q1", False),
        ("assistant", "half", True),
        ("user", "q2", False),
        ("assistant", "broken", True),
        ("activity", "read_file started", True),
    ]
    assert complete


def test_how_cancelled_and_failed_turns_ended_is_kept_beside_the_entries_never_paged(
    store: SessionStore, cwd: Path
) -> None:
    records = [
        user("r1", "q1"),
        chunk("r1", "a1", 0, "half"),
        finished("r1", "cancelled"),
        user("r2", "q2"),
        tool("r2", "t", "started"),
        finished("r2", "failed", "execution_failed"),
        user("r3", "q3"),  # interrupted: its diagnostic entry says so, no ending
        user("r4", "q4"),
        assistant("r4", "a4", "fine"),
        finished("r4"),
    ]
    write_session(store, [header(cwd), *records])
    attachment, _ = store.open("s-test_0001", cwd)
    try:
        entries = messages(pages(attachment.history))
        assert [kind for kind, _, _ in entries] == [
            "user",
            "assistant",
            "user",
            "activity",
            "user",
            "diagnostic",
            "user",
            "assistant",
        ]  # the wire's entries, as they were
        cancelled, failed = Ending(1, "cancelled", None), Ending(3, "failed", "execution_failed")
        assert attachment.history.endings == (cancelled, failed)  # after each run's last entry
        attachment.append(user("r5", "q5"), fsync=False)
        attachment.append(finished("r5", "cancelled", "output_unavailable"), fsync=False)
        live = attachment.snapshot().endings
        assert live == (cancelled, failed, Ending(8, "cancelled", "output_unavailable"))
        fresh = read_session(store.path_of("s-test_0001"), "s-test_0001", str(cwd.resolve()))
        assert fresh.projection.endings == live  # the live attachment and a fresh read agree
    finally:
        attachment.close()


def test_interrupted_turn_adds_partial_reply_and_diagnostic(store: SessionStore, cwd: Path) -> None:
    records = [
        user("r1", "q1"),
        chunk("r1", "a1", 0, "par"),
        chunk("r1", "a1", 1, "tial"),
        user("r2", "q2"),
        assistant("r2", "a2", "done"),
        finished("r2"),
        user("r3", "q3"),
        chunk("r3", "a3", 0, "cut"),
    ]
    got, complete = shown(store, cwd, records)
    assert got == [
        ("user", "q1", False),
        ("assistant", "partial", True),
        ("diagnostic", INTERRUPTED_TEXT, False),
        ("user", "q2", False),
        ("assistant", "done", False),
        ("user", "q3", False),
        ("assistant", "cut", True),
        ("diagnostic", INTERRUPTED_TEXT, False),
    ]
    assert not complete


def test_torn_last_line_is_ignored_and_reported(store: SessionStore, cwd: Path) -> None:
    torn = line(user("r2", "never acknowledged"))[:-9]
    got, complete = shown(store, cwd, [user("r1", "q"), finished("r1")], tail=torn)
    assert got == [("user", "q", False), ("diagnostic", TORN_TEXT, False)]
    assert not complete


def test_torn_line_of_invalid_utf8_is_still_only_torn(store: SessionStore, cwd: Path) -> None:
    torn = line(user("r2", "é"))[:-4]  # ends inside the two-byte character
    got, complete = shown(store, cwd, [user("r1", "q"), finished("r1")], tail=torn)
    assert got[-1] == ("diagnostic", TORN_TEXT, False) and not complete


def test_redaction_after_reconciliation(store: SessionStore, cwd: Path) -> None:
    key = "sk-" + "A1b2C3d4E5f6G7h8I9j0"
    records = [
        user("r1", f"my key is {key}"),
        chunk("r1", "a1", 0, "echo sk-A1b2C3d4"),  # the secret only appears once joined
        chunk("r1", "a1", 1, "E5f6G7h8I9j0 done"),
        tool("r1", "t", "completed", "Authorization: Bearer abcdefghijklmnop"),
        finished("r1"),
    ]
    got, _ = shown(store, cwd, records)
    text = repr(got)
    assert "A1b2C3d4E5f6" not in text and "abcdefghijklmnop" not in text
    assert got[1] == ("assistant", "echo [REDACTED] done", False)


def activity(run: str, aid: str, state: str, **extra: str) -> dict[str, Any]:
    return {"type": "activity", "activity_id": aid, "run_id": run, "name": "hook:stop",
            "state": state, "summary": "exit 0", **extra}  # fmt: skip


def test_activity_records_show_like_tools_and_never_their_context(
    store: SessionStore, cwd: Path
) -> None:
    """Hook runs and Code Mode calls (`activity` records) were refused as an unknown type."""
    records = [
        user("r1", "q"),
        activity("r1", "h1", "started"),
        activity("r1", "h1", "completed", context="CONTEXT-FOR-THE-MODEL", drops_prompt="m1"),
        activity("r1", "h2", "started"),
        finished("r1"),
    ]
    got, complete = shown(store, cwd, records)
    assert got == [
        ("user", "q", False),
        ("activity", "hook:stop completed: exit 0", False),
        ("activity", "hook:stop started: exit 0", True),
    ]
    assert complete


def test_malformed_activity_records_make_the_session_invalid(
    store: SessionStore, cwd: Path
) -> None:
    from magi_code.sessions import SessionError
    from magi_code.sessions.records import check_record

    good = {"session_id": "s", **activity("r1", "a1", "completed")}
    assert check_record(good, "s") == good
    for bad in (
        {**good, "state": "paused"},
        {**good, "context": 3},
        {**good, "drops_prompt": ["m1"]},
        {k: v for k, v in good.items() if k != "activity_id"},
    ):
        try:
            check_record(bad, "s")
        except SessionError as refused:
            assert refused.code == "session_invalid"
        else:
            raise AssertionError(bad)
