"""Writer and active leases, against real second processes."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sessions_support import SID, header, run_child, write_session

from magi_code.sessions import SessionError, SessionStore, is_active
from support.sessions import HOLDER, hold_open

GRAB = """
import sys
from pathlib import Path
from magi_code.sessions import SessionError
from magi_code.sessions.leases import Leases
try:
    Leases.acquire(Path(sys.argv[1]), sys.argv[2])
except SessionError as err:
    print(err.code)
else:
    print("acquired")
"""


def _busy(store: SessionStore, cwd: Path) -> None:
    with pytest.raises(SessionError) as caught:
        store.open(SID, cwd)
    assert caught.value.code == "session_busy"


def test_another_process_owning_the_session_makes_it_busy(store: SessionStore, cwd: Path) -> None:
    write_session(store, [header(cwd)])
    child = hold_open(store.directory.parent, SID, cwd)
    try:
        assert is_active(store.directory, SID)
        _busy(store, cwd)
    finally:
        out, _ = child.communicate("", timeout=30)
    assert out == "released\n"
    assert not is_active(store.directory, SID)
    attachment, _ = store.open(SID, cwd)
    attachment.close()


def test_a_killed_owner_releases_its_leases(store: SessionStore, cwd: Path) -> None:
    write_session(store, [header(cwd)])
    child = hold_open(store.directory.parent, SID, cwd)
    _busy(store, cwd)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    attachment, _ = store.open(SID, cwd)
    assert attachment.durable
    attachment.close()


def test_we_hold_and_a_child_is_refused(store: SessionStore, cwd: Path) -> None:
    write_session(store, [header(cwd)])
    attachment, _ = store.open(SID, cwd)
    result = run_child(HOLDER, str(store.directory.parent), SID, str(cwd))
    assert result.stdout == "session_busy\n"
    attachment.close()
    result = subprocess.run(
        [sys.executable, "-c", HOLDER, str(store.directory.parent), SID, str(cwd)],
        input="",
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert result.stdout == "held\nreleased\n"


def test_create_takes_the_leases_before_any_file_exists(store: SessionStore, cwd: Path) -> None:
    attachment = store.create(cwd, None)
    assert not store.path_of(attachment.session_id).exists()
    assert run_child(GRAB, str(store.directory), attachment.session_id).stdout == "session_busy\n"
    attachment.close()
    assert run_child(GRAB, str(store.directory), attachment.session_id).stdout == "acquired\n"


def test_a_second_store_in_the_same_process_is_refused(store: SessionStore, cwd: Path) -> None:
    write_session(store, [header(cwd)])
    attachment, _ = store.open(SID, cwd)
    _busy(SessionStore(store.directory.parent), cwd)
    attachment.close()


def test_lock_files_are_private(store: SessionStore, cwd: Path) -> None:
    attachment = store.create(cwd, None)
    modes = {p.name: p.stat().st_mode & 0o777 for p in store.directory.iterdir()}
    assert modes and set(modes.values()) == {0o600}
    assert store.directory.stat().st_mode & 0o777 == 0o700
    attachment.close()
