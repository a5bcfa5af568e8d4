"""The Lua client against live `melchior serve` processes, under Lua 5.1, 5.2, 5.3, 5.4 and
LuaJIT: hello with a proven identity, status, tell (labelled as a peer's on the target's
pipe), ask and task, a report read in pages, refusals as Lua errors carrying their code, and a
SIGKILLed session whose socket nobody answers."""

from __future__ import annotations

import hashlib
import io
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mel_harness import DEADLINE, Melchior, Session
from test_melchior_lua_host import RUNTIMES, Host
from test_melchior_reuse import heir_of

from melchior import names, registry, tool
from melchior.limits import MAX_REPORT, PROJECT_MAX, REPORT_CHUNK, REPORT_PAGE

LONG = "l" * PROJECT_MAX  # a project whose directory name must be shortened


class World:
    """Sessions shared by every runtime's tests: started once, closed at the end."""

    def __init__(self, tmp: Path) -> None:
        self.mel = Melchior(tmp)
        self.a = self.mel.start()  # a main: the target
        self.sub = self.mel.start(parent=self.a, role="sub")  # private to a's instance
        self.dead = self.mel.start()
        self.dead.proc.send_signal(signal.SIGKILL)
        self.dead.proc.wait(timeout=DEADLINE)
        self.caller = self.identity(self.mel.fork())  # another main, proven by key only
        self.writer = self.mel.start()  # stores reports from Lua
        self.far = self.mel.start(project=LONG)
        self.far_caller = self.identity(self.mel.fork(project=LONG))
        # Multi-byte characters straddling the page edges: pages are cut on characters.
        self.body = ("é" * (REPORT_PAGE // 2 - 1) + "x€" + "😀" * (REPORT_PAGE // 4)) * 2 + "end"
        stored, code = self.a.tool("--verb=report", "--about=-", stdin=self.body.encode())
        assert code == 0, stored
        self.revision = stored["result"][0]["revision"]

    def identity(self, spec: dict[str, Any]) -> dict[str, str]:
        return {**self.mel.env, **spec["environment"]}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("lua-live"))
    yield w
    w.mel.close()


@pytest.fixture(params=RUNTIMES)
def host(request: pytest.FixtureRequest, world: World) -> Host:
    return Host(request.param, world.caller)


def caller_label(world: World) -> str:
    return names.label("demo", "main", world.caller["MAGI_MELCHIOR_ID"])


def events_until(session: Session, check: Any) -> dict[str, Any]:
    """The next event on the session's pipe that `check` accepts (others are its own)."""
    while True:
        event = session.next_event()
        if check(event):
            return event


def test_status_over_a_proven_connection(host: Host, world: World) -> None:
    them = host.m.connect(world.a.id.encode())
    status = host.py(them.status())
    assert status == {
        "id": world.a.id,
        "role": "main",
        "parent": None,
        "busy": False,
        "working_for": 0,
        "waiting": 0,
    }
    host.lua.eval("function(them) return them:status() end")(them)  # colon calls work too
    them.close()


def test_tell_reaches_the_pipe_labelled_as_a_peer(host: Host, world: World) -> None:
    them = host.m.connect(world.a.id.encode())
    text = f"the parser is done ✓ 😀 ({host.version})"
    assert host.py(them.tell(text.encode(), b"attention")) == {"delivered": True}
    assert host.py(them.tell(b"a note")) == {"delivered": True}  # sort defaults to note
    host.lua.eval("function(them) them:close() end")(them)
    event = events_until(world.a, lambda e: e.get("event") == "message")
    assert event == {
        "event": "message",
        "who": caller_label(world),
        "sort": "attention",
        "text": text,
    }
    assert events_until(world.a, lambda e: e.get("event") == "message")["sort"] == "note"


def test_ask_and_task_round_trip(host: Host, world: World) -> None:
    them = host.m.connect(world.a.id.encode())
    asked = host.py(them.ask(b"what is six times seven?"))
    assert asked["state"] == "submitted" and asked["task"].startswith(world.a.id + "@")
    question = events_until(world.a, lambda e: e.get("sort") == "question")
    assert question["task"] == asked["task"] and question["who"] == caller_label(world)
    assert host.py(them.task(asked["task"].encode()))["state"] == "submitted"
    world.a.send({"event": "answer", "task": asked["task"], "text": "forty-two"})
    end = time.monotonic() + DEADLINE
    while (view := host.py(them.task(asked["task"].encode())))["state"] != "completed":
        assert time.monotonic() < end, "the answer never arrived"
        time.sleep(0.01)
    assert view == {
        "task": asked["task"],
        "state": "completed",
        "answer": "forty-two",
        "text": "forty-two",
    }
    them.close()


def test_task_states_reach_the_client_unchanged(world: World) -> None:
    """One runtime: a task the harness needs input for, then canceled by the client."""
    host = Host("lua54", world.caller)
    them = host.m.connect(world.a.id.encode())
    handle = host.py(them.ask(b"which branch?"))["task"]
    events_until(world.a, lambda e: e.get("task") == handle)
    world.a.send({"event": "task", "task": handle, "state": "input-required", "text": "main?"})
    end = time.monotonic() + DEADLINE
    while (view := host.py(them.task(handle.encode())))["state"] == "submitted":
        assert time.monotonic() < end, "the state never moved"
        time.sleep(0.01)
    assert view == {"task": handle, "state": "input-required", "answer": None, "text": "main?"}
    assert host.py(them.cancel(handle.encode()))["state"] == "canceled"
    told = events_until(world.a, lambda e: e.get("event") == "task")
    assert (told["task"], told["state"]) == (handle, "canceled")
    assert host.refusal(them.cancel, handle.encode()) == "task_final"
    them.close()


def test_report_read_in_pages(host: Host, world: World) -> None:
    them = host.m.connect(world.a.id.encode())
    first = host.py(them.report(0))
    assert first["pages"] >= 3 and first["revision"] == world.revision
    parts = [first["text"]]
    for page in range(1, first["pages"]):
        got = host.py(them.report(page, first["revision"]))
        assert got["page"] == page and len(got["text"].encode()) <= REPORT_PAGE
        parts.append(got["text"])
    body = "".join(parts)
    assert body == world.body
    assert first["sha256"] == hashlib.sha256(body.encode()).hexdigest()
    assert host.refusal(them.report, first["pages"]) == "bad_args"
    assert host.refusal(them.report, 1, first["revision"] + 1) == "changed"
    them.close()


def test_refusals_are_lua_errors_carrying_the_code(host: Host, world: World) -> None:
    them = host.m.connect(world.a.id.encode())
    assert host.refusal(them.task, f"{world.a.id}@nothing".encode()) == "unknown_task"
    assert host.refusal(them.tell, b"hi", b"question") == "bad_args"
    assert host.refusal(them.call, b"end", host.lua.table()) == "not_minter"
    assert host.refusal(them.call, b"launch", host.lua.table()) == "unknown_call"
    them.close()
    assert host.refusal(them.status) == "broken"  # closed: nothing more goes out
    shape = host.lua.eval(
        "function(m, id) local _, e = pcall(m.connect, id) return type(e), tostring(e), e.code end"
    )
    assert shape(host.m, b"nobody-here") == (
        b"table",
        b"melchior: unknown_session",
        b"unknown_session",
    )
    host.env = {**world.caller, "MAGI_MELCHIOR_TOKEN": "not-the-secret"}
    assert host.refusal(host.m.connect, world.a.id.encode()) == "unauthenticated"


def test_dead_and_absent_sessions(host: Host, world: World) -> None:
    path = registry.join(world.mel.directory(), world.dead.id)
    assert os.path.exists(path)  # a SIGKILLed session leaves its socket behind
    assert host.refusal(host.m.connect, world.dead.id.encode()) == "gone"
    # A valid id the minter never draws (not two of its words), so no session here holds it.
    assert host.refusal(host.m.connect, b"nobody-here") == "unknown_session"
    assert host.refusal(host.m.connect, b"../demo") == "unknown_session"


def test_a_shortened_project_directory(host: Host, world: World) -> None:
    host.env = world.far_caller
    directory = registry.project_dir(LONG, world.mel.env)
    assert "~" in os.path.basename(directory)
    assert host.m.project_dir(LONG.encode()).decode() == directory
    them = host.m.connect(world.far.id.encode())
    assert host.py(them.status())["id"] == world.far.id
    them.close()
    # The project wall: from this project, demo's session is somewhere never looked.
    assert host.refusal(host.m.connect, world.a.id.encode()) == "unknown_session"


def test_storing_the_callers_own_report(host: Host, world: World) -> None:
    host.env = world.writer.env
    body = "a" * (REPORT_CHUNK - 1) + "😀" + "b" * REPORT_CHUNK + f" ({host.version})"
    before, _ = world.writer.tool("--verb=report", "--about=json")
    summary = host.py(host.m.report(body.encode()))
    assert summary["bytes"] == len(body.encode())
    assert summary["sha256"] == hashlib.sha256(body.encode()).hexdigest()
    whole, code = world.writer.tool("--verb=report", "--about=json")
    assert code == 0 and whole["result"][0]["body"] == body
    if before["ok"]:
        assert summary["revision"] == before["result"][0]["revision"] + 1
    assert host.refusal(host.m.report, b"a" * (MAX_REPORT + 1)) == "report_too_large"
    assert host.refusal(host.m.report, b"\xff") == "bad_args"
    host.env = world.caller  # a session that does not serve has no socket to store into
    assert host.refusal(host.m.report, b"x") == "unknown_session"


def test_a_report_of_exactly_max_report_bytes(world: World) -> None:
    host = Host("lua54", world.writer.env)
    body = ("€" + "x" * (REPORT_CHUNK - 3)).encode() * (MAX_REPORT // REPORT_CHUNK)
    assert len(body) == MAX_REPORT
    assert host.py(host.m.report(body))["bytes"] == MAX_REPORT


def test_the_walls_on_both_sides(host: Host, world: World) -> None:
    """Another instance's sub is private: the caller's own check makes it look absent, as the
    tool does; a caller claiming a wider setting passes its own check and the callee, whose
    setting is narrower, refuses it; a host without `io` leaves the check to the callee."""
    sub = world.sub.id.encode()
    assert host.refusal(host.m.connect, sub) == "unknown_session"
    host.env = {**world.caller, "MAGI_MELCHIOR_TALK": "project"}
    assert host.refusal(host.m.connect, sub) == "forbidden"
    sandboxed = Host(host.version, world.caller, sandboxed=True)
    assert sandboxed.refusal(sandboxed.m.connect, sub) == "forbidden"
    assert sandboxed.py(sandboxed.m.connect(world.a.id.encode()).status())["id"] == world.a.id


def test_the_same_answers_as_the_python_tool(host: Host, world: World) -> None:
    """Whatever the tool answers a caller with this environment, the Lua client answers too.
    (Not for the dead session: the tool would reap its socket, which Lua cannot do.)"""
    for target in (world.a.id, world.sub.id, "nobody-here", world.far.id, "../demo"):
        answer, _ = tool.run(["--verb=status", f"--who={target}"], world.caller, io.BytesIO())
        ok, value = host.try_(host.m.connect, target.encode())
        assert ok == answer["ok"], target
        if not ok:
            assert value.decode() == answer["code"], target
        else:
            value.close()


def test_a_session_dying_mid_connection(host: Host, world: World) -> None:
    """Its pipe closes, it removes its socket and exits: the open connection is broken, and
    stays broken (closed), and a new connect finds nobody."""
    victim = world.mel.start()
    them = host.m.connect(victim.id.encode())
    assert host.py(them.status())["id"] == victim.id
    assert victim.close() == 0
    assert host.refusal(them.status) == "broken"
    assert host.refusal(them.status) == "broken"
    assert host.refusal(host.m.connect, victim.id.encode()) == "unknown_session"


def test_the_heir_of_a_minters_id_is_no_parent_to_lua(tmp_path: Path) -> None:
    """The client's own check binds the fork link to the minter's key digest, as the tool's."""
    mel = Melchior(tmp_path)
    try:
        root = mel.start()
        parent = mel.start(root)
        sub = mel.start(parent, role="sub")
        assert parent.close() == 0
        heir = heir_of(mel, root, parent)
        answer, _ = heir.tool("--verb=status", f"--who={sub.id}")
        assert answer["code"] == "unknown_session"
        for version in RUNTIMES:
            host = Host(version, heir.env)
            assert host.refusal(host.m.connect, sub.id.encode()) == "unknown_session", version
            assert host.py(host.m.connect(root.id.encode()).status())["id"] == root.id
    finally:
        mel.close()
