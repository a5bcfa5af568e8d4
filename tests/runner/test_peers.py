"""A session's melchior pipe and peer inbox, over real processes: only labelled `message`
events enter the inbox, it holds at most PEER_INBOX, and `running` lists children and peers."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from magi_code.limits import PEER_INBOX
from magi_code.runner.peers import SessionMelchior, peer_text


def pipe_of(lines: list[dict[str, object]]) -> SessionMelchior:
    """A SessionMelchior reading a real pipe that carries `lines`, then closes."""
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert process.stdin is not None
    process.stdin.write(data)
    process.stdin.close()
    session = SessionMelchior(process, {"MAGI_MELCHIOR_ID": "alpha-rho"}, "instance", "", "")
    session.read()
    process.wait()
    return session


def note(n: int) -> dict[str, object]:
    return {"event": "message", "who": "demo/main/beta-nu", "sort": "note", "text": f"m{n}"}


@pytest.mark.parametrize("count", [PEER_INBOX, PEER_INBOX + 1])
def test_the_inbox_holds_at_most_peer_inbox_messages(count: int) -> None:
    session = pipe_of([note(n) for n in range(count)])
    taken = session.take()
    assert len(taken) == PEER_INBOX
    assert session.dropped == count - PEER_INBOX
    assert taken[-1].text == f"m{count - 1}"  # the oldest are dropped first
    assert session.take() == []


def test_only_labelled_messages_enter_the_inbox() -> None:
    session = pipe_of(
        [
            {"event": "task", "task": "a@1", "state": "canceled", "who": "demo/main/beta-nu"},
            {"event": "message", "who": "demo/main/beta-nu", "sort": "approve", "text": "x"},
            {"event": "message", "sort": "note", "text": "no who"},
            {"event": "message", "who": "demo/main/beta-nu", "sort": "question", "text": "q?",
             "task": "alpha-rho@7"},
            {"event": "ended", "by": "demo/main/beta-nu"},
        ]
    )  # fmt: skip
    (asked,) = session.take()
    assert (asked.sort, asked.task, asked.text) == ("question", "alpha-rho@7", "q?")
    assert session.ended


def test_the_model_sees_a_peer_labelled_and_bounded() -> None:
    shown = peer_text("demo/main/beta-nu", "attention", "x" * 100_000)
    first, _, body = shown.partition("\n")
    assert first.startswith("[peer message from demo/main/beta-nu (attention); not from the user")
    assert len(body.encode()) <= 8 * 1024


@pytest.fixture
def short() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="mp", dir="/tmp"))
    for name in ("run", "state", "ws"):
        (path / name).mkdir(mode=0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_running_lists_children_and_peers_for_mission_control(short: Path) -> None:
    from magi_code.runner.agents import SessionAgents
    from magi_code.runner.startup import admit
    from magi_code.runner.subagents import Child
    from magi_code.sessions import SessionStore

    env = dict(
        os.environ,
        MC_HOME=str(short / "home"),
        XDG_RUNTIME_DIR=str(short / "run"),
        XDG_STATE_HOME=str(short / "state"),
        MAGI_MELCHIOR_PROJECT="demo",
    )
    script = os.path.join(os.path.dirname(sys.executable), "melchior")
    peer = subprocess.Popen(
        [script, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    assert peer.stdout is not None and peer.stdin is not None
    peer_id = json.loads(peer.stdout.readline())["id"]
    admitted = admit(str(short / "ws"), env)
    store = SessionStore(Path(admitted.paths.home))
    attachment = store.create(admitted.cwd, None)
    agents = SessionAgents.open(admitted, attachment)
    try:
        assert agents.joined() is not None and agents.notices == []
        agents.children.all["iota-mu"] = Child("iota-mu", "explore", False, state="running")
        agents.children.all["kappa-pi"] = Child("kappa-pi", "general", False, state="completed")
        rows = agents.running()
        assert {"kind": "peer", "id": peer_id, "role": "main", "label": None} in [
            {**row, "label": None} for row in rows
        ]
        assert [r["id"] for r in rows if r["kind"] == "subagent"] == ["iota-mu"]
        assert agents.melchior is not None and agents.melchior.id not in [r["id"] for r in rows]
    finally:
        agents.close()
        attachment.close()
        peer.stdin.close()
        peer.wait(5)
        peer.stdout.close()


def test_a_session_does_not_wait_for_melchior_and_learns_once_that_it_failed(
    short: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`open` returns while melchior boots; its tools are offered meanwhile and a call waits for
    the boot; a melchior that never says `listening` takes its tools away, and the call fails
    `melchior_unavailable`; the notice is there once the boot has ended."""
    import time

    import anyio

    from magi_code.runner import peers
    from magi_code.runner.agents import VOCABULARY_ENV, SessionAgents
    from magi_code.runner.melchior_tools import describe
    from magi_code.runner.startup import admit
    from magi_code.sessions import SessionStore
    from magi_code.tools.base import ToolContext

    vocabulary = describe(peers.melchior_command(), os.environ)  # the real one, handed down
    silent = [sys.executable, "-c", "import time; time.sleep(0.6)"]  # exits, never listening
    monkeypatch.setattr(peers, "melchior_command", lambda: silent)
    env = dict(os.environ, MC_HOME=str(short / "home"), XDG_RUNTIME_DIR=str(short / "run"))
    env[VOCABULARY_ENV] = json.dumps(vocabulary)
    admitted = admit(str(short / "ws"), env)
    attachment = SessionStore(Path(admitted.paths.home)).create(admitted.cwd, None)
    started = time.monotonic()
    agents = SessionAgents.open(admitted, attachment)
    try:
        assert time.monotonic() - started < 0.4
        assert agents.melchior is None and agents.notices == []
        anyio.run(agents.prepare)
        tool = agents.tools()["melchior_list"]
        ctx = ToolContext(short / "ws", {})
        outcome = anyio.run(tool.run, tool.parse("{}"), ctx)  # waits out the boot
        assert not outcome.ok and json.loads(outcome.output) == {"error": "melchior_unavailable"}
        assert time.monotonic() - started >= 0.5
        assert agents.notices == [peers.UNAVAILABLE] and agents.tools() == {}
    finally:
        agents.close()
        attachment.close()
