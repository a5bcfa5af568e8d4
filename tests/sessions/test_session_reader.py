"""The streaming reader: block boundaries never change the result; oversize entries fail loudly."""

import os
from pathlib import Path

import pytest
from sessions_support import SID, finished, header, messages, pages, user, write_session

from magi_code.limits import HISTORY_PAGE_BYTES
from magi_code.sessions import HistorySnapshot, SessionError, SessionStore, reader
from magi_code.sessions.chunking import serialized_bytes
from magi_code.sessions.snapshot import Built

TEXTS = ["é" * 50, "plain", '😀\n\x00"\\' * 30, "中文" * 20]


def _records(cwd: Path) -> list[dict[str, object]]:
    records: list[dict[str, object]] = [header(cwd), {"type": "internal", "text": "x" * 999}]
    for n, text in enumerate(TEXTS):
        records += [user(f"r{n}", text), finished(f"r{n}")]
    return records


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 1000])
def test_block_size_never_changes_the_projection(
    store: SessionStore, cwd: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    write_session(store, _records(cwd), tail=b'{"torn')
    attachment, _ = store.open(SID, cwd)
    expected = messages(pages(attachment.history))
    revision = attachment.history.revision
    attachment.close()
    monkeypatch.setattr(reader, "BLOCK_BYTES", block)
    again, _ = store.open(SID, cwd)
    assert messages(pages(again.history)) == expected
    assert again.history.revision == revision
    assert [m[1] for m in expected[: len(TEXTS)]] == TEXTS
    again.close()


def test_read_result_reports_the_durable_prefix(store: SessionStore, cwd: Path) -> None:
    path = write_session(store, [header(cwd), user("r1", "q")], tail=b'{"torn')
    result = reader.read_session(path, SID, os.path.realpath(cwd))
    assert result.durable_size == path.stat().st_size - len(b'{"torn')
    assert result.fingerprint.size == path.stat().st_size


def test_an_entry_that_can_never_fit_a_page_is_content_limit() -> None:
    # chunking makes this unreachable from stored records; the page guard still holds
    oversized = {
        "message_id": "m0",
        "kind": "user",
        "text": "x" * HISTORY_PAGE_BYTES,
        "partial": False,
        "part": 0,
        "last_part": True,
    }
    built = Built([oversized], [serialized_bytes(oversized)], True, {}, serialized_bytes(oversized))
    snapshot = HistorySnapshot(SID, "r0.x", built, lambda: True)
    with pytest.raises(SessionError, match=r"^content_limit$"):
        snapshot.page("r0.x", None)
