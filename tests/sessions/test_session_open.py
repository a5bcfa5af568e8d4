"""Opening stored sessions: every rejection code, every notice, and what open never does."""

import os
from pathlib import Path
from typing import Any

import pytest
from sessions_support import SID, finished, header, line, pages, user, write_session

from magi_code.sessions import SessionError, SessionStore, valid_session_id

USAGE = {
    "rounds": 2,
    "input_tokens": 230,
    "output_tokens": 17,
    "cached_input_tokens": 60,
    "context_tokens": 137,
}


def finished_with(usage: object) -> dict[str, Any]:
    return {**finished("r"), "usage": usage}


def _code(store: SessionStore, cwd: Path, session_id: str = SID) -> str:
    with pytest.raises(SessionError) as caught:
        store.open(session_id, cwd)
    return caught.value.code


def test_missing_file_is_session_missing(store: SessionStore, cwd: Path) -> None:
    assert _code(store, cwd) == "session_missing"


def test_a_deleted_file_is_missing_even_after_it_existed(store: SessionStore, cwd: Path) -> None:
    path = write_session(store, [header(cwd)])
    attachment, _ = store.open(SID, cwd)
    attachment.close()
    path.unlink()
    assert _code(store, cwd) == "session_missing"


def test_empty_existing_file_is_durable_and_complete(store: SessionStore, cwd: Path) -> None:
    write_session(store, [])
    attachment, notices = store.open(SID, cwd)
    assert attachment.durable is True
    assert attachment.selection is None
    assert notices == ["cwd_unverified"]
    (page,) = pages(attachment.history)
    assert page.entries == [] and page.complete is True and page.next_cursor is None


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"not json\n", id="bad-json"),
        pytest.param(b"[1,2]\n", id="not-an-object"),
        pytest.param(b'{"session_id":"s-test_0001","type":"user","text":"\xff"}\n', id="bad-utf8"),
        pytest.param(b"\n", id="empty-line"),
        pytest.param(line({"type": "diagnostic", "code": "x", "summary": "y"}), id="diagnostic"),
        pytest.param(
            line({"type": "user", "message_id": "u", "run_id": "r", "text": "hi"}, "other"),
            id="other-session",
        ),
        pytest.param(line({"type": "weird"}), id="unknown-type"),
        pytest.param(line({"type": "user", "message_id": "u", "run_id": "r"}), id="missing-text"),
        pytest.param(
            line({"type": "user", "message_id": "u", "run_id": "r", "text": 5}),
            id="text-not-string",
        ),
        pytest.param(
            b'{"session_id":"s-test_0001","type":"user","message_id":"u","run_id":"r",'
            b'"text":"\\ud800"}\n',
            id="lone-surrogate",
        ),
        pytest.param(
            line(
                {
                    "type": "tool",
                    "activity_id": "a",
                    "run_id": "r",
                    "name": "n",
                    "state": "exploded",
                }
            ),
            id="bad-tool-state",
        ),
        pytest.param(
            line({"type": "run_finished", "run_id": "r", "outcome": "maybe"}), id="bad-outcome"
        ),
        pytest.param(
            line(
                {
                    "type": "assistant_chunk",
                    "message_id": "a",
                    "run_id": "r",
                    "index": "0",
                    "text": "x",
                }
            ),
            id="chunk-index-not-int",
        ),
        pytest.param(
            line(
                {
                    "type": "reasoning_summary",
                    "item_id": "i",
                    "run_id": "r",
                    "text": "t",
                    "provider_summary": "yes",
                }
            ),
            id="provenance-not-bool",
        ),
        pytest.param(line(finished_with({"rounds": 1})), id="usage-incomplete"),
        pytest.param(line(finished_with({**USAGE, "input_tokens": -1})), id="usage-negative"),
        pytest.param(line(finished_with({**USAGE, "rounds": True})), id="usage-bool"),
        pytest.param(line(finished_with({**USAGE, "output_tokens": 1.5})), id="usage-float"),
        pytest.param(line(finished_with([1, 2, 3])), id="usage-not-object"),
        pytest.param(b"[" * 100_000 + b"\n", id="too-deep"),
    ],
)
def test_malformed_lines_make_the_session_invalid(
    store: SessionStore, cwd: Path, raw: bytes
) -> None:
    write_session(store, [header(cwd)], tail=raw + line(user("r9", "after")))
    assert _code(store, cwd) == "session_invalid"


def test_a_runs_stored_usage_opens_and_a_run_without_one_too(
    store: SessionStore, cwd: Path
) -> None:
    records = [header(cwd), user("r", "q"), finished_with(USAGE), user("o", "older")]
    write_session(store, [*records, finished("o")])  # a run of an older file: no usage
    attachment, _ = store.open(SID, cwd)
    try:
        assert [r.get("usage") for r in attachment.records() if r["type"] == "run_finished"] == [
            USAGE,
            None,
        ]
        assert pages(attachment.history)[-1].complete
    finally:
        attachment.close()


def test_symlinked_session_file_is_invalid(store: SessionStore, cwd: Path, tmp_path: Path) -> None:
    real = write_session(store, [header(cwd)], session_id="real")
    store.path_of(SID).symlink_to(real)
    assert _code(store, cwd) == "session_invalid"


def test_world_writable_session_file_is_invalid(store: SessionStore, cwd: Path) -> None:
    path = write_session(store, [header(cwd)])
    os.chmod(path, 0o666)
    assert _code(store, cwd) == "session_invalid"


def test_failed_open_releases_its_leases(store: SessionStore, cwd: Path) -> None:
    path = write_session(store, [header(cwd)], tail=b"oops\n")
    assert _code(store, cwd) == "session_invalid"
    path.write_bytes(line(header(cwd)))
    attachment, _ = store.open(SID, cwd)
    assert attachment.durable


# ---- workspace ---------------------------------------------------------------------------


def test_matching_cwd_through_a_symlink_alias_verifies(
    store: SessionStore, cwd: Path, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(cwd)
    write_session(store, [header(alias)])
    _, notices = store.open(SID, cwd)
    assert notices == []


@pytest.mark.parametrize("kind", ["other-dir", "relative", "deleted"])
def test_cwd_mismatch(store: SessionStore, cwd: Path, tmp_path: Path, kind: str) -> None:
    other = tmp_path / "other"
    other.mkdir()
    recorded = {"other-dir": str(other), "relative": "work", "deleted": str(tmp_path / "gone")}
    write_session(store, [header(recorded[kind])])
    assert _code(store, cwd) == "cwd_mismatch"


def test_every_recorded_cwd_must_match(store: SessionStore, cwd: Path, tmp_path: Path) -> None:
    write_session(store, [header(cwd), user("r1", "hi"), header(tmp_path)])
    assert _code(store, cwd) == "cwd_mismatch"


@pytest.mark.parametrize("recorded", [None, ""])
def test_absent_cwd_is_unverified(store: SessionStore, cwd: Path, recorded: str | None) -> None:
    first: dict[str, Any] = {"type": "session", "created_at": "2020-01-01T00:00Z"}
    if recorded is not None:
        first["cwd"] = recorded
    write_session(store, [first, user("r1", "hi"), finished("r1")])
    attachment, notices = store.open(SID, cwd)
    assert notices == ["cwd_unverified"]
    assert len(attachment.history.page(attachment.history.revision, None).entries) == 1


# ---- selection -----------------------------------------------------------------------------

SELECTION = {"provider": "fixture", "model": "fixture-model", "thinking": "high"}


def test_saved_selection_restored_when_available(store: SessionStore, cwd: Path) -> None:
    write_session(store, [header(cwd, SELECTION)])
    asked: list[tuple[str, str]] = []

    def available(provider: str, model: str) -> bool:
        asked.append((provider, model))
        return True

    attachment, notices = store.open(SID, cwd, available)
    assert notices == [] and asked == [("fixture", "fixture-model")]
    assert attachment.selection is not None
    assert (attachment.selection.provider, attachment.selection.thinking) == ("fixture", "high")


def test_unavailable_selection_keeps_saved_thinking_and_writes_nothing(
    store: SessionStore, cwd: Path
) -> None:
    path = write_session(store, [header(cwd, SELECTION)])
    before = (path.read_bytes(), os.stat(path).st_mtime_ns)
    attachment, notices = store.open(SID, cwd, lambda provider, model: False)
    assert notices == ["saved_selection_unavailable"]
    assert attachment.selection is not None and attachment.selection.thinking == "high"
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before


def test_malformed_selection_gives_a_notice(store: SessionStore, cwd: Path) -> None:
    write_session(store, [header(cwd, {"provider": 1})])
    attachment, notices = store.open(SID, cwd, lambda provider, model: True)
    assert notices == ["saved_selection_notice"]
    assert attachment.selection is None


def test_the_last_selection_wins(store: SessionStore, cwd: Path) -> None:
    later = {**SELECTION, "model": "later-model"}
    write_session(store, [header(cwd, SELECTION), user("r1", "x"), header(cwd, later)])
    attachment, _ = store.open(SID, cwd)
    assert attachment.selection is not None and attachment.selection.model == "later-model"


# ---- ids ---------------------------------------------------------------------------------------


def test_session_id_grammar(store: SessionStore) -> None:
    assert valid_session_id("A-z_09") and valid_session_id("x" * 64)
    for bad in ["", "x" * 65, "a.b", "../x", "a/b", "é", "a b", None, 7]:
        assert not valid_session_id(bad)
    for _ in range(20):
        assert valid_session_id(store.new_id())
    with pytest.raises(ValueError):
        store.open("../escape", Path("/"))
