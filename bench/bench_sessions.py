"""Open a session at the stored-history bounds and page through its whole projection.

Builds a session file of exactly STORED_HISTORY_BYTES in exactly STORED_HISTORY_LINES lines,
shaped like real turns (user input, streamed chunks plus the reconciled reply, tool activity
with large raw results, raw reasoning) so that its projection stays inside the snapshot budget.
A fresh child process then opens it and pages to the end; it reports wall time and peak RSS
growth (ru_maxrss before/after). The baseline is the same child streaming the raw bytes only.
Targets: under 2 s, RSS growth under 64 MiB.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from magi_code.limits import STORED_HISTORY_BYTES, STORED_HISTORY_LINES
from magi_code.sessions import SessionStore
from magi_code.sessions.chunking import dumps

SESSION_ID = "bench-session"
TURN_LINES = 50
CHUNKS = 20
TOOLS = 2
RAW_REASONING = TURN_LINES - (1 + CHUNKS + 1 + 2 * TOOLS + 1)

CHILD = """
import json, os, resource, sys, time, hashlib
from pathlib import Path
from magi_code.sessions import SessionStore

def rss_kib():
    # VmHWM is this process image's own peak; ru_maxrss would carry the parent's peak
    # across fork and exec.
    try:
        with open("/proc/self/status") as status:
            for row in status:
                if row.startswith("VmHWM:"):
                    return int(row.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

home, session_id, cwd, mode = sys.argv[1:5]
store = SessionStore(Path(home))
before = rss_kib()
start, cpu = time.perf_counter(), time.process_time()
pages = parts = 0
if mode == "raw":
    digest = hashlib.blake2b(digest_size=20)
    with open(store.path_of(session_id), "rb", buffering=0) as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
            parts += block.count(b"\\n")
else:
    attachment, notices = store.open(session_id, cwd)
    snapshot = attachment.history
    cursor = None
    while True:
        page = attachment.page(session_id, snapshot.revision, cursor)
        pages += 1
        parts += len(page.entries)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert page.complete
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"seconds": elapsed, "cpu": cpu, "rss_before_kib": before,
                  "rss_after_kib": rss_kib(), "pages": pages, "parts": parts}))
"""


def _turn(n: int, pad: int) -> list[dict[str, Any]]:
    run = f"run-{n:05d}"
    reply = f"Answer {n}: " + "the quick brown fox jumps over the lazy dog. " * 13
    step = len(reply) // CHUNKS + 1
    records: list[dict[str, Any]] = [
        {"type": "user", "message_id": f"u{n}", "run_id": run, "text": f"Question {n}? " * 14}
    ]
    records += [
        {
            "type": "assistant_chunk",
            "message_id": f"a{n}",
            "run_id": run,
            "index": i,
            "text": reply[i * step : (i + 1) * step],
        }
        for i in range(CHUNKS)
    ]
    records.append({"type": "assistant", "message_id": f"a{n}", "run_id": run, "text": reply})
    for t in range(TOOLS):
        base = {"type": "tool", "activity_id": f"t{n}.{t}", "run_id": run, "name": "read_file"}
        records.append({**base, "state": "started", "summary": f"src/module_{t}.py"})
        records.append(
            {
                **base,
                "state": "completed",
                "summary": f"src/module_{t}.py, 400 lines",
                "result": "x" * pad,
            }
        )
    records += [{"type": "reasoning", "run_id": run, "text": "r" * pad}] * RAW_REASONING
    records.append(
        {"type": "run_finished", "run_id": run, "outcome": "completed", "error_code": None}
    )
    return records


def _lines(records: list[dict[str, Any]]) -> list[bytes]:
    return [(dumps({"session_id": SESSION_ID, **r}) + "\n").encode() for r in records]


def build(store: SessionStore, cwd: Path) -> Path:
    """Write exactly STORED_HISTORY_BYTES in exactly STORED_HISTORY_LINES lines."""
    turns = (STORED_HISTORY_LINES - 1) // TURN_LINES
    extras = STORED_HISTORY_LINES - 1 - turns * TURN_LINES
    assert extras >= 1, "one never-projected record takes the byte remainder"
    header = {"type": "session", "cwd": str(cwd), "created_at": "2026-01-01T00:00:00Z"}
    extra = {"type": "internal", "text": ""}
    bare = sum(len(x) for x in _lines([header, *[extra] * extras]))
    bare += sum(sum(len(x) for x in _lines(_turn(n, 0))) for n in range(turns))
    # every padded record grows by exactly `pad` ASCII bytes; the remainder goes to one extra
    pad, remainder = divmod(STORED_HISTORY_BYTES - bare, turns * (TOOLS + RAW_REASONING))
    store.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = store.path_of(SESSION_ID)
    with path.open("wb") as out:
        first = {**extra, "text": "p" * remainder}
        out.write(b"".join(_lines([header, first, *[extra] * (extras - 1)])))
        for n in range(turns):
            out.write(b"".join(_lines(_turn(n, pad))))
    os.chmod(path, 0o600)
    return path


def _measure(home: Path, cwd: Path, mode: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(home), SESSION_ID, str(cwd), mode],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(done.stderr)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp) / "work"
        cwd.mkdir()
        path = build(SessionStore(home), cwd)
        size = path.stat().st_size
        with path.open("rb") as stream:
            lines = sum(block.count(b"\n") for block in iter(lambda: stream.read(1 << 20), b""))
        raw = _measure(home, cwd, "raw")
        full = _measure(home, cwd, "open")
    mib = 1024
    growth = (full["rss_after_kib"] - raw["rss_after_kib"]) / mib
    print(f"session file: {size} bytes ({size / mib / mib:.1f} MiB), {lines} lines")
    print(
        f"baseline (fresh process, stream + hash the raw bytes): {raw['seconds']:.3f} s wall, "
        f"{raw['cpu']:.3f} s cpu, peak rss {raw['rss_after_kib'] / mib:.1f} MiB"
    )
    print(
        f"open + page all (fresh process): {full['seconds']:.3f} s wall, {full['cpu']:.3f} s cpu "
        f"({full['seconds'] / raw['seconds']:.1f}x baseline wall), {full['pages']} pages, "
        f"{full['parts']} parts"
    )
    print(
        f"peak rss {full['rss_after_kib'] / mib:.1f} MiB, growth over baseline {growth:.1f} MiB "
        f"(own before/after {(full['rss_after_kib'] - full['rss_before_kib']) / mib:.1f} MiB); "
        f"targets: < 2 s {'met' if full['seconds'] < 2 else 'MISSED'}, "
        f"< 64 MiB {'met' if growth < 64 else 'MISSED'}"
    )
