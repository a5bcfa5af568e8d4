"""Helpers for the session tests: stored files written byte for byte, paging, children."""

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from magi_code.sessions import HistorySnapshot, Page, SessionStore
from magi_code.sessions.chunking import dumps

SID = "s-test_0001"


def line(record: dict[str, Any], session_id: str = SID) -> bytes:
    return (dumps({"session_id": session_id, **record}) + "\n").encode("utf-8")


def header(cwd: Path | str, selection: dict[str, Any] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"type": "session", "cwd": str(cwd), "created_at": "2026-01-01T00:00Z"}
    if selection is not None:
        record["selection"] = selection
    return record


def user(run: str, text: str, message_id: str | None = None) -> dict[str, Any]:
    return {"type": "user", "message_id": message_id or f"u-{run}", "run_id": run, "text": text}


def finished(run: str, outcome: str = "completed", error: str | None = None) -> dict[str, Any]:
    return {"type": "run_finished", "run_id": run, "outcome": outcome, "error_code": error}


def write_session(
    store: SessionStore,
    records: Iterable[dict[str, Any]],
    *,
    session_id: str = SID,
    tail: bytes = b"",
) -> Path:
    """Write records as a stored session file (0600 in a 0700 directory), plus raw `tail`."""
    store.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = store.path_of(session_id)
    with open(path, "wb") as out:
        out.write(b"".join(line(r, session_id) for r in records) + tail)
    os.chmod(path, 0o600)
    return path


def pages(snapshot: HistorySnapshot) -> list[Page]:
    """Every page of a snapshot, following cursors from the start."""
    out = [snapshot.page(snapshot.revision, None)]
    while out[-1].next_cursor is not None:
        out.append(snapshot.page(snapshot.revision, out[-1].next_cursor))
    return out


def messages(all_pages: list[Page]) -> list[tuple[str, str, bool]]:
    """Reassemble (kind, text, partial) per message, checking part numbering on the way."""
    result: list[tuple[str, str, bool]] = []
    current: str | None = None
    expected_part = 0
    for page in all_pages:
        for entry in page.entries:
            if entry["message_id"] != current:
                assert current is None or expected_part == 0, "message ended without last_part"
                current = entry["message_id"]
                result.append((entry["kind"], "", entry["partial"]))
            assert entry["part"] == expected_part
            kind, text, partial = result[-1]
            result[-1] = (kind, text + entry["text"], partial)
            expected_part = 0 if entry["last_part"] else expected_part + 1
    assert expected_part == 0
    return result


def run_child(code: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def page_json(page: Page) -> bytes:
    return json.dumps(page.result(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
