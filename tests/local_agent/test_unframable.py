"""Backstops for text that cannot be framed (a lone surrogate that slipped past the runner):
a response becomes an error code, a delta is dropped, any other run event ends the run with
output_unavailable, and an unframable terminal is an output failure. Nothing half-written."""

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from magi_code.local_agent.output import OutputFailed
from magi_code.local_agent.runtime import ActiveRun, LocalRuntime
from magi_code.local_agent.server import Server
from magi_code.runner.startup import admit
from magi_code.runner.turn import TurnControl


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    server = Server(in_r, out_w, str(tmp_path), {})
    server.out_r = out_r  # type: ignore[attr-defined]
    yield server
    for fd in (in_r, in_w, out_r, out_w):
        os.close(fd)


def written(server: Server) -> list[dict[str, object]]:
    os.set_blocking(server.out_r, False)  # type: ignore[attr-defined]
    try:
        data = os.read(server.out_r, 1 << 16)  # type: ignore[attr-defined]
    except BlockingIOError:
        return []
    return [json.loads(line) for line in data.split(b"\n") if line]


def test_an_unframable_result_is_answered_content_limit(server: Server) -> None:
    server.reply("r1", {"text": "a\ud800"})
    [frame] = written(server)
    assert (frame["id"], frame["error"], frame["seq"]) == ("r1", {"code": "content_limit"}, 1)


@pytest.fixture
def runtime(server: Server, tmp_path: Path) -> Iterator[LocalRuntime]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    admitted = admit(str(workspace), {"MC_HOME": str(tmp_path / "home"), "PATH": "/usr/bin"})
    runtime = server.runtime = LocalRuntime(server, admitted)
    runtime.portal()
    runtime.run = ActiveRun("run-1", TurnControl())
    yield runtime
    runtime.close(5)


def test_an_unframable_delta_is_dropped(server: Server, runtime: LocalRuntime) -> None:
    runtime.channel.offer_delta(("message.delta", {"message_id": "m", "text": "\ud800"}))
    runtime.channel.offer_delta(("message.delta", {"message_id": "m", "text": "ok"}))
    runtime.pump()
    [frame] = written(server)
    assert frame["data"] == {"message_id": "m", "text": "ok", "part": 1}  # part 0 is missing
    assert runtime.run is not None and not runtime.run.control.cancelled


def test_an_unframable_critical_event_ends_the_run(server: Server, runtime: LocalRuntime) -> None:
    runtime.channel.try_put(("activity", {"summary": "\ud800"}))
    runtime.pump()
    assert written(server) == []
    assert runtime.run is not None
    control = runtime.run.control
    deadline = time.monotonic() + 5
    while not control.cancelled:  # the cancel runs on the runtime's event loop
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert control.reason == "output_unavailable"


def test_an_unframable_terminal_is_an_output_failure(server: Server, runtime: LocalRuntime) -> None:
    runtime.channel.try_put(("run.finished", {"error_code": "\ud800"}))
    with pytest.raises(OutputFailed):
        runtime.pump()
