"""A writer killed with SIGKILL between appends leaves a history that reopens truthfully."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sessions_support import messages, run_child

from magi_code.sessions import Page, SessionStore
from magi_code.sessions.projection import INTERRUPTED_TEXT, TORN_TEXT

WRITER = """
import os, sys
from pathlib import Path
from magi_code.sessions import SessionStore
store = SessionStore(Path(sys.argv[1]))
attachment = store.create(sys.argv[2], None)
print(attachment.session_id, flush=True)
append = attachment.append
append({"type": "user", "message_id": "u0", "run_id": "r0", "text": "first"}, fsync=True)
append({"type": "assistant", "message_id": "a0", "run_id": "r0", "text": "done"}, fsync=True)
append({"type": "run_finished", "run_id": "r0", "outcome": "completed"}, fsync=True)
append({"type": "user", "message_id": "u1", "run_id": "r1", "text": "second"}, fsync=True)
for i in range(int(sys.argv[3])):
    append({"type": "assistant_chunk", "message_id": "a1", "run_id": "r1", "index": i,
            "text": f"<{i}>"}, fsync=True)
if sys.argv[4] == "torn":  # a crash in the middle of writing one more record
    fd = os.open(store.path_of(attachment.session_id), os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'{"session_id":"' + attachment.session_id.encode() + b'","type":"assis')
    print("waiting", flush=True)
    import signal
    signal.pause()  # the parent kills us here, the torn record left behind
while True:
    append({"type": "internal", "text": "more"}, fsync=True)
"""

READER = """
import json, sys
from pathlib import Path
from magi_code.sessions import SessionStore
store = SessionStore(Path(sys.argv[1]))
attachment, notices = store.open(sys.argv[2], sys.argv[3])
snapshot = attachment.history
out = [snapshot.page(snapshot.revision, None)]
while out[-1].next_cursor is not None:
    out.append(snapshot.page(snapshot.revision, out[-1].next_cursor))
print(json.dumps({"notices": notices, "pages": [p.result() for p in out]}))
"""


def _kill_writer(home: Path, cwd: Path, chunks: int, mode: str) -> str:
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(home), str(cwd), str(chunks), mode],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    session_id = child.stdout.readline().strip()
    path = SessionStore(home).path_of(session_id)
    deadline = time.monotonic() + 30
    if mode == "torn":
        assert child.stdout.readline() == "waiting\n"
    else:  # kill while chunks are still streaming in
        while not path.exists() or path.read_bytes().count(b"\n") < 5 + chunks // 2:
            assert time.monotonic() < deadline
            time.sleep(0.001)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    return session_id


@pytest.mark.parametrize("mode", ["between-appends", "torn"])
def test_killed_writer_reopens_truthfully(tmp_path: Path, mode: str) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    chunks = 40
    session_id = _kill_writer(home, cwd, chunks, mode)
    stored = SessionStore(home).path_of(session_id).read_bytes()
    torn = not stored.endswith(b"\n")
    written = [json.loads(raw) for raw in stored.split(b"\n")[:-1]]
    pieces = [r["text"] for r in written if r["type"] == "assistant_chunk"]
    assert pieces == [f"<{i}>" for i in range(len(pieces))]  # fsynced in order, none lost
    if mode == "torn":
        assert torn and len(pieces) == chunks

    result = run_child(READER, str(home), session_id, str(cwd))  # a fresh process
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["notices"] == []
    all_pages = [Page(**page) for page in report["pages"]]
    expected = [("user", "first", False), ("assistant", "done", False), ("user", "second", False)]
    if pieces:
        expected.append(("assistant", "".join(pieces), True))
    expected.append(("diagnostic", INTERRUPTED_TEXT, False))
    if torn:
        expected.append(("diagnostic", TORN_TEXT, False))
    assert messages(all_pages) == expected
    assert all_pages[-1].complete is False
