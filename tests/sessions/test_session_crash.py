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


FULL_DISK = """
import json, resource, sys
from pathlib import Path
from magi_code.sessions import SessionStore
from magi_code.sessions.chunking import dumps

store = SessionStore(Path(sys.argv[1]))
attachment = store.create(sys.argv[2], None)
path = store.path_of(attachment.session_id)
header = len(dumps(attachment._header())) + 1  # the same length whenever it is made
space = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (header + 20, space[1]))  # the disk fills up
record = {"type": "user", "message_id": "u1", "run_id": "r1", "text": "x" * 100}
try:
    attachment.append(record, fsync=True)
    first = "written"
except OSError:
    first = "failed"
torn = path.read_bytes()
resource.setrlimit(resource.RLIMIT_FSIZE, space)  # space returns
results = []
for number in (2, 3):
    try:
        later = {**record, "message_id": f"u{number}", "run_id": f"r{number}"}
        attachment.append(later, fsync=True)
        results.append("written")
    except OSError:
        results.append("failed")
try:
    snapshot = attachment.snapshot()
    ids = [entry["message_id"] for entry in snapshot.page(snapshot.revision, None).entries]
except Exception as error:
    ids = [getattr(error, "code", type(error).__name__)]
torn_shape = [header, len(torn), torn.count(b"\\n")]
print(json.dumps({"first": first, "torn": torn_shape, "later": results, "ids": ids}))
"""


def test_a_torn_append_on_a_full_disk_is_dropped_by_its_writer(tmp_path: Path) -> None:
    """A new session's first append cut by a full disk (RLIMIT_FSIZE, in a real process)
    after its header's LF: once space returns, the writer's next appends succeed (it drops
    its own torn bytes), and the file holds only whole records."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(home), str(cwd)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    result = json.loads(done.stdout)
    header = result["torn"][0]
    assert result["first"] == "failed"
    assert result["torn"] == [header, header + 20, 1]  # the header whole, the record cut
    assert result["later"] == ["written", "written"]
    assert result["ids"] == ["u.u2", "m1", "u.u3", "m3"]  # each run shown interrupted
    stored = next((home / "sessions").glob("*.jsonl")).read_bytes()
    kinds = [json.loads(raw)["type"] for raw in stored.split(b"\n")[:-1]]
    assert kinds == ["session", "user", "user"] and stored.endswith(b"\n")
