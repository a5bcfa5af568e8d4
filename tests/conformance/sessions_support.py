"""Helpers for session/history conformance: stored files written directly, error checks.

Session files follow the record schema documented in magi_code.sessions.records: one JSON
object per LF-terminated line, each naming the session and its type. Big files are built
from a few large byte strings so the limit tests stay fast.
"""

import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

from magi_code.client import LocalAgentClient

from .conftest import frame, initialize

OPAQUE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
CAPS = ("session.create", "session.open", "history.page", "turn.start")


def new_sid() -> str:
    return "t" + secrets.token_hex(12)


def sessions_dir(home: Path) -> Path:
    directory = home / "sessions"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory


def session_file(home: Path, sid: str) -> Path:
    return sessions_dir(home) / f"{sid}.jsonl"


def line(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def record(sid: str, kind: str, **fields: Any) -> bytes:
    return line({"session_id": sid, "type": kind, **fields})


def header(sid: str, cwd: Path | str | None, selection: Any = None) -> bytes:
    fields: dict[str, Any] = {"created_at": "2026-11-29T00:00:00.000+00:00"}
    if cwd is not None:
        fields["cwd"] = str(cwd)
    if selection is not None:
        fields["selection"] = selection
    return record(sid, "session", **fields)


def write(home: Path, sid: str, *chunks: bytes, mode: int = 0o600) -> Path:
    path = session_file(home, sid)
    with path.open("wb") as handle:
        for chunk in chunks:
            handle.write(chunk)
    path.chmod(mode)
    return path


def finished_turn(sid: str, run: str, prompt: str, reply: str) -> bytes:
    return b"".join(
        [
            record(sid, "user", message_id=f"u{run}", run_id=run, text=prompt),
            record(sid, "assistant", message_id=f"a{run}", run_id=run, text=reply),
            record(sid, "run_finished", run_id=run, outcome="completed", error_code=None),
        ]
    )


def ready(child: LocalAgentClient) -> LocalAgentClient:
    initialize(child, *CAPS)
    return child


def fails(child: LocalAgentClient, method: str, params: Any, code: str) -> dict[str, Any]:
    """Send one request, expect exactly `{"code": code}`, then prove the connection works."""
    request_id = child.send(method, params)
    answer = child.wait(request_id)
    check_error(child, answer, code, params)
    return answer


def fails_raw(child: LocalAgentClient, request_id: str, params: Any, code: str, **kw: Any) -> None:
    """Like `fails`, for a hand-built frame (duplicate keys, odd types)."""
    raw = kw.pop("raw", None)
    child.send_raw(raw if raw is not None else frame(request_id, kw["method"], params))
    check_error(child, child.wait(request_id), code, params)


def check_error(child: LocalAgentClient, answer: dict[str, Any], code: str, params: Any) -> None:
    assert answer.get("error") == {"code": code}, answer
    assert "result" not in answer
    text = json.dumps(answer, ensure_ascii=False)
    for value in _strings(params):
        if len(value) >= 6:
            assert value not in text  # errors never echo input
    assert child.request("status")["state"] in ("idle", "running")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def open_ok(child: LocalAgentClient, sid: str) -> dict[str, Any]:
    result = child.request("session.open", {"session_id": sid})
    assert set(result) == {"session_id", "durable", "revision", "notices"}
    assert result["session_id"] == sid
    return result


def all_pages(child: LocalAgentClient, sid: str, revision: str) -> list[dict[str, Any]]:
    """Every page from the null cursor on, checking each page's shape and opaque IDs."""
    out, cursor = [], None
    while True:
        page = child.request(
            "history.page", {"session_id": sid, "revision": revision, "cursor": cursor}
        )
        assert set(page) == {"session_id", "revision", "entries", "next_cursor", "complete"}
        assert page["session_id"] == sid and page["revision"] == revision
        for opaque in [revision, page["next_cursor"], *(e["message_id"] for e in page["entries"])]:
            assert opaque is None or OPAQUE_ID.fullmatch(opaque), opaque
        out.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            return out


def entries(pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for p in pages for e in p["entries"]]


def exists_with_prefix(home: Path, sid: str) -> bool:
    return any(name.startswith(sid) for name in os.listdir(sessions_dir(home)))
