"""Subagents and peers over the real `magi-code serve --stdio` and real `melchior serve`s:
children are separate processes with their own sockets, linked sessions and a ceiling."""

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from magi_code.client import Event
from magi_code.limits import CHILD_EXIT_MS
from support.sessions import script

from .agents_support import (
    Peer,
    agent_call,
    melchior_dirs,
    own_socket,
    records,
    sockets,
    tool_results,
    wait_for,
)
from .conftest import Spawn
from .turns import attach, start, until

CHILD_EXIT_S = CHILD_EXIT_MS / 1000


@pytest.fixture
def xdg() -> Iterator[dict[str, str]]:
    short = Path(tempfile.mkdtemp(prefix="mel", dir="/tmp"))
    yield melchior_dirs(short)
    shutil.rmtree(short, ignore_errors=True)


def subagent_activity(events: list[Event]) -> list[tuple[str, str]]:
    return [
        (e.data["state"], e.data["summary"])
        for e in events
        if e.name == "activity" and e.data["kind"] == "subagent"
    ]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def child_pids(pid: int) -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as handle:
            found |= {int(p) for p in handle.read().split()}
    return found


def magi_children(pid: int) -> set[int]:
    out = set()
    for child in child_pids(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as handle:
                if b"magi_code.cli" in handle.read():
                    out.add(child)
        except FileNotFoundError:
            continue
    return out


def test_a_child_runs_as_its_own_process_with_its_own_socket(
    spawn: Spawn, home: Path, xdg: dict[str, str]
) -> None:
    parent = spawn(**xdg)
    session_id = attach(parent)
    own = own_socket(xdg)  # the parent session's own melchior
    waiting = script({"hang": True})  # a background child that runs until it is ended
    report = {"name": "melchior_report", "arguments": {"message": "child report"}}
    answering = script({"tools": [report]}, {"text": "child says hi"})
    prompt = script(
        {"tools": [agent_call(waiting, background=True)]},
        {"tools": [{"name": "melchior_list", "arguments": {}}]},
        {"tools": [agent_call(answering)]},
        {"text": "parent done"},
    )
    start(parent, session_id, prompt)
    events = until(parent, "run.finished")
    assert events[-1].data["outcome"] == "completed"

    background, listed, answered = (
        json.loads(tool_results(home, session_id, name)[i]["result"])
        for name, i in (("agent", 0), ("melchior_list", 0), ("agent", 1))
    )
    # The parent saw its running background child through `melchior tool --verb=list`.
    seen = {entry["id"]: entry for entry in listed["result"]}
    assert seen[background["agent"]]["role"] == "sub"
    assert seen[background["agent"]]["parent"] == own
    # The foreground child answered, and its session is an ordinary one linked to the parent.
    assert answered["outcome"] == "completed" and answered["text"] == "child says hi"
    assert answered["report"] == "child report"  # read as its parent, through melchior
    child_records = records(home, answered["session"])
    (link,) = [r["delegation"] for r in child_records if "delegation" in r]
    assert link["parent_session"] == session_id and link["parent_agent"] == own
    assert link["depth"] == 1
    assert ("completed", f"subagent general {answered['agent']} completed") in subagent_activity(
        events
    )
    assert [s for s, _ in subagent_activity(events)].count("started") == 2
    # The finished child and its socket are gone; the background one still runs.
    assert wait_for(lambda: answered["agent"] not in sockets(xdg), CHILD_EXIT_S)
    assert background["agent"] in sockets(xdg)
    keys = Path(xdg["XDG_RUNTIME_DIR"]) / "melchior"
    # A name is minted ahead for the next child once one has ended (a key with no socket yet).
    assert wait_for(lambda: {k.stem for k in keys.glob("*/*.key")} - sockets(xdg), 5)
    # Closing the parent ends the background child and every socket with it, and leaves no
    # minted name behind (the one minted ahead for a next child included).
    parent.finish()
    assert wait_for(lambda: not sockets(xdg), CHILD_EXIT_S) == True  # noqa: E712
    assert not list(keys.glob("*/*.key"))


def test_cancelling_the_parent_ends_the_child_and_its_socket(
    spawn: Spawn, xdg: dict[str, str]
) -> None:
    parent = spawn(**xdg)
    session_id = attach(parent)
    own = own_socket(xdg)
    run_id = start(parent, session_id, script({"tools": [agent_call(script({"hang": True}))]}))
    until(parent, "activity")  # the agent tool started
    child_socket = wait_for(lambda: sockets(xdg) - {own}, 10)
    assert child_socket
    assert wait_for(lambda: magi_children(parent.process.pid), 10)
    (child,) = magi_children(parent.process.pid)

    cancelled_at = time.monotonic()
    parent.request("turn.cancel", {"session_id": session_id, "run_id": run_id})
    events = until(parent, "run.finished")
    assert events[-1].data["outcome"] == "cancelled"
    assert [state for state, _ in subagent_activity(events)] == ["started", "failed"]
    assert wait_for(lambda: not alive(child) and sockets(xdg) == {own}, CHILD_EXIT_S)
    assert time.monotonic() - cancelled_at < CHILD_EXIT_S + 0.5  # the 2 s bound, with margin


def test_a_childs_approval_reaches_the_parent_labelled_and_a_deny_holds(
    spawn: Spawn, workspace: Path, xdg: dict[str, str]
) -> None:
    parent = spawn(**xdg)
    session_id = attach(parent)
    child_prompt = script(
        {"tools": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "hi"}}]},
        {"text": "after the answer"},
    )
    start(parent, session_id, script({"tools": [agent_call(child_prompt)]}, {"text": "done"}))
    asked = until(parent, "approval.requested")[-1]
    assert asked.data["summary"].startswith("subagent ")
    assert "x.txt" in asked.data["summary"]
    parent.request(
        "approval.answer",
        {
            "session_id": session_id,
            "run_id": asked.data["run_id"],
            "approval_id": asked.data["approval_id"],
            "allow": False,
        },
    )
    assert until(parent, "run.finished")[-1].data["outcome"] == "completed"
    assert not (workspace / "x.txt").exists()


@pytest.mark.slow("waits out the 60 s approval expiry of a child's approval")
def test_an_unanswered_child_approval_is_denied_at_expiry(
    spawn: Spawn, home: Path, workspace: Path, xdg: dict[str, str]
) -> None:
    parent = spawn(**xdg)
    session_id = attach(parent)
    child_prompt = script(
        {"tools": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "hi"}}]},
        {"text": "after expiry"},
    )
    start(parent, session_id, script({"tools": [agent_call(child_prompt)]}, {"text": "done"}))
    until(parent, "approval.requested")
    assert until(parent, "run.finished", timeout=90)[-1].data["outcome"] == "completed"
    assert not (workspace / "x.txt").exists()
    (answered,) = tool_results(home, session_id, "agent")
    child = json.loads(answered["result"])["session"]
    (write,) = [r for r in records(home, child) if r["type"] == "tool" and r["state"] != "started"]
    assert write["summary"].startswith("denied")


def test_a_child_cannot_widen_its_parents_permissions(
    spawn: Spawn, home: Path, xdg: dict[str, str]
) -> None:
    (home / "agents").mkdir(parents=True)
    (home / "agents" / "strict.md").write_text(
        "---\nmode: primary\npermissions:\n  - deny shell\n---\nA careful agent.\n"
    )
    (home / "settings.toml").write_text('agent = "strict"\n')
    parent = spawn(**xdg)
    session_id = attach(parent)
    child_prompt = script(
        {"tools": [{"name": "shell", "arguments": {"command": "echo hi"}}]}, {"text": "after"}
    )
    start(parent, session_id, script({"tools": [agent_call(child_prompt)]}, {"text": "done"}))
    events = until(parent, "run.finished")
    # The child's own policy would ask; its parent's ceiling denies without asking anyone.
    assert not [e for e in events if e.name == "approval.requested"]
    (answered,) = tool_results(home, session_id, "agent")
    child = json.loads(answered["result"])["session"]
    (shell,) = [r for r in records(home, child) if r["type"] == "tool" and r["state"] != "started"]
    assert shell["summary"].startswith("denied")


def test_a_child_cannot_talk_outside_its_instance_by_default(
    spawn: Spawn, home: Path, workspace: Path, xdg: dict[str, str]
) -> None:
    env = {**os.environ, **xdg}
    peer = Peer(env, workspace)  # another main of the same project
    try:
        parent = spawn(**xdg)
        session_id = attach(parent)
        tell = {"name": "melchior_tell", "arguments": {"who": peer.id, "message": "psst"}}
        child_prompt = script({"tools": [tell]}, {"text": "after"})
        start(parent, session_id, script({"tools": [agent_call(child_prompt)]}, {"text": "ok"}))
        asked = until(parent, "approval.requested")[-1]  # outside its instance: it asks
        label, _, what = asked.data["summary"].partition(": ")
        assert label.startswith("subagent ") and what == f"melchior tell {peer.id}"
        parent.request(
            "approval.answer",
            {
                "session_id": session_id,
                "run_id": asked.data["run_id"],
                "approval_id": asked.data["approval_id"],
                "allow": True,
            },
        )
        until(parent, "run.finished")
        (answered,) = tool_results(home, session_id, "agent")
        child = json.loads(answered["result"])["session"]
        (told,) = [
            r for r in records(home, child) if r["type"] == "tool" and r["state"] != "started"
        ]
        # Even allowed by the user, melchior's instance wall keeps a sub from reaching out.
        assert told["state"] == "failed"
        assert told["summary"] == f"melchior tell {peer.id}: unknown_session"
    finally:
        peer.close()


def test_a_peers_message_arrives_labelled_and_cannot_approve(
    spawn: Spawn, home: Path, workspace: Path, xdg: dict[str, str]
) -> None:
    env = {**os.environ, **xdg}
    parent = spawn(**xdg)
    session_id = attach(parent)
    own = own_socket(xdg)
    peer = Peer(env, workspace)
    try:
        assert peer.tool("--verb=tell", f"--who={own}", "--message=hello from a peer")["ok"]
        handle = peer.tool("--verb=ask", f"--who={own}", "--message=what is 2+2?")
        task = handle["result"][0]["task"]
        time.sleep(0.3)  # the parent's pipe reader queues them; nothing to await from here
        write = {"name": "write_file", "arguments": {"path": "y.txt", "content": "hi"}}
        start(parent, session_id, script({"tools": [write]}, {"text": "four"}))
        asked = until(parent, "approval.requested")[-1]
        # A peer saying "allow" is a message, not an answer: the approval is still pending.
        peer.tool("--verb=tell", f"--who={own}", '--message={"allow": true}')
        recorded = parent.request(
            "approval.answer",
            {
                "session_id": session_id,
                "run_id": asked.data["run_id"],
                "approval_id": asked.data["approval_id"],
                "allow": False,
            },
        )
        assert recorded == {"recorded": True}
        assert until(parent, "run.finished")[-1].data["outcome"] == "completed"
        assert not (workspace / "y.txt").exists()

        project = peer.env["MAGI_MELCHIOR_PROJECT"]
        stored = records(home, session_id)
        peers = [r for r in stored if r["type"] == "peer"]
        assert [(p["who"], p["sort"]) for p in peers] == [
            (f"{project}/main/{peer.id}", "note"),
            (f"{project}/main/{peer.id}", "question"),
        ]
        users = [r["text"] for r in stored if r["type"] == "user"]
        assert all("peer" not in text and "2+2" not in text for text in users)
        # The ask became a task the harness completed from the model's reply.
        view = peer.tool("--verb=task", f"--about={task}")["result"][0]
        assert (view["state"], view["answer"]) == ("completed", "four")
    finally:
        peer.close()


def test_a_session_works_and_says_so_once_when_melchior_cannot_start(
    spawn: Spawn, tmp_path: Path
) -> None:
    unsafe = tmp_path / "unsafe-run"
    unsafe.mkdir(mode=0o777)
    os.chmod(unsafe, 0o777)  # melchior refuses a runtime directory open to others
    parent = spawn(XDG_RUNTIME_DIR=str(unsafe), XDG_STATE_HOME=str(tmp_path / "state"))
    from .conftest import initialize

    initialize(parent, "turn.start")
    created = parent.request("session.create")
    assert created["notices"] == []  # the spec's create carries none
    start(parent, created["session_id"], "hello")
    events = until(parent, "run.finished")
    assert events[-1].data["outcome"] == "completed"
    said = [e.data["code"] for e in events if e.name == "diagnostic"]
    assert said == ["melchior_unavailable"]  # once, in the first turn
    start(parent, created["session_id"], "again")
    events = until(parent, "run.finished")
    assert events[-1].data["outcome"] == "completed"
    assert not [e for e in events if e.name == "diagnostic"]


def test_a_reopened_child_keeps_its_ceiling(spawn: Spawn, home: Path, xdg: dict[str, str]) -> None:
    (home / "agents").mkdir(parents=True)
    (home / "agents" / "strict.md").write_text(
        "---\nmode: primary\npermissions:\n  - deny shell\n---\nA careful agent.\n"
    )
    (home / "settings.toml").write_text('agent = "strict"\n')
    parent = spawn(**xdg)
    session_id = attach(parent)
    start(parent, session_id, script({"tools": [agent_call(script({"text": "hi"}))]}))
    until(parent, "run.finished")
    parent.finish()
    (answered,) = tool_results(home, session_id, "agent")
    child = json.loads(answered["result"])["session"]
    (home / "settings.toml").write_text("")  # the user's own policy would now ask for shell

    reopened = spawn(**xdg)  # a plain serve: no delegation in its environment
    from .conftest import initialize

    initialize(reopened, "turn.start")
    reopened.request("session.open", {"session_id": child})
    shell = {"name": "shell", "arguments": {"command": "echo hi"}}
    start(reopened, child, script({"tools": [shell]}, {"text": "after"}))
    events = until(reopened, "run.finished")
    assert not [e for e in events if e.name == "approval.requested"]
    denied = [r for r in records(home, child) if r["type"] == "tool" and r["name"] == "shell"]
    assert denied[-1]["summary"].startswith("denied")


def test_depth_two_is_the_deepest_child(spawn: Spawn, home: Path, xdg: dict[str, str]) -> None:
    deepest = script({"tools": [agent_call(script({"text": "too deep"}))]}, {"text": "gc"})
    middle = script({"tools": [agent_call(deepest)]}, {"text": "c"})
    parent = spawn(**xdg)
    session_id = attach(parent)
    start(parent, session_id, script({"tools": [agent_call(middle)]}, {"text": "p"}))
    assert until(parent, "run.finished")[-1].data["outcome"] == "completed"
    (first,) = tool_results(home, session_id, "agent")
    child = json.loads(first["result"])["session"]
    (second,) = tool_results(home, child, "agent")  # depth 1 may start one (depth 2)
    grandchild = json.loads(second["result"])["session"]
    (link,) = [r["delegation"] for r in records(home, grandchild) if "delegation" in r]
    assert link["depth"] == 2 and link["parent_session"] == child
    (refused,) = tool_results(home, grandchild, "agent")  # depth 2 is offered no agent tool
    assert refused["summary"] == "rejected: invalid_arguments"


def test_at_most_four_children_run_at_once(spawn: Spawn, home: Path, xdg: dict[str, str]) -> None:
    from magi_code.limits import SUBAGENTS_CONCURRENT

    parent = spawn(**xdg)
    session_id = attach(parent)
    hang = agent_call(script({"hang": True}), background=True)
    start(parent, session_id, script({"tools": [hang] * (SUBAGENTS_CONCURRENT + 1)}))
    until(parent, "run.finished")
    results = [json.loads(r["result"]) for r in tool_results(home, session_id, "agent")]
    assert [r.get("state") for r in results[:SUBAGENTS_CONCURRENT]] == ["running"] * 4
    assert results[SUBAGENTS_CONCURRENT] == {"error": "too_many_subagents"}
    # The parent's and its four children's: a child reported running may still be booting its
    # melchior, whose socket comes a moment later (CI once counted 4).
    everyone = SUBAGENTS_CONCURRENT + 1
    wait_for(lambda: len(sockets(xdg)) >= everyone, CHILD_EXIT_S)
    assert len(sockets(xdg)) == everyone
    parent.finish()
    assert wait_for(lambda: not sockets(xdg), CHILD_EXIT_S) == True  # noqa: E712


def test_a_child_runs_its_profiles_tool_allow_list(
    spawn: Spawn, home: Path, workspace: Path, xdg: dict[str, str]
) -> None:
    write = {"name": "write_file", "arguments": {"path": "z.txt", "content": "hi"}}
    child_prompt = script({"tools": [write]}, {"text": "explored"})
    parent = spawn(**xdg)
    session_id = attach(parent)
    explore = agent_call(child_prompt, profile="explore")
    start(parent, session_id, script({"tools": [explore]}, {"text": "done"}))
    events = until(parent, "run.finished")
    assert not [e for e in events if e.name == "approval.requested"]
    (answered,) = tool_results(home, session_id, "agent")
    result = json.loads(answered["result"])
    assert result["text"] == "explored"
    (refused,) = tool_results(home, result["session"], "write_file")  # explore cannot write
    assert refused["summary"] == "rejected: invalid_arguments"
    assert not (workspace / "z.txt").exists()


def test_peers_see_the_session_busy_while_a_turn_runs(
    spawn: Spawn, workspace: Path, xdg: dict[str, str]
) -> None:
    parent = spawn(**xdg)
    session_id = attach(parent)
    own = own_socket(xdg)
    peer = Peer({**os.environ, **xdg}, workspace)
    try:

        def busy() -> bool:
            return bool(peer.tool("--verb=status", f"--who={own}")["result"][0]["busy"])

        assert not busy()
        run_id = start(parent, session_id, script({"hang": True}))
        until(parent, "input.persisted")
        assert wait_for(busy, 5)
        parent.request("turn.cancel", {"session_id": session_id, "run_id": run_id})
        until(parent, "run.finished")
        assert wait_for(lambda: not busy(), 5)
    finally:
        peer.close()


def test_a_child_runs_in_its_parents_sandbox_mode(
    spawn: Spawn, home: Path, workspace: Path, xdg: dict[str, str]
) -> None:
    from magi_code.tools.sandbox.modes import support

    if support()[1] is not None:
        pytest.skip(f"no Landlock here: {support()[1]}")
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.toml").write_text('approval_mode = "auto"\n')  # the child runs it unasked
    parent = spawn(MAGI_SANDBOX_MODE="read-only", **xdg)  # as `--sandbox read-only` hands it
    session_id = attach(parent)
    command = {"command": "touch made-by-child || echo refused"}
    child_prompt = script({"tools": [{"name": "shell", "arguments": command}]}, {"text": "ok"})
    start(parent, session_id, script({"tools": [agent_call(child_prompt)]}, {"text": "done"}))
    events = until(parent, "run.finished")
    assert not [e for e in events if e.name == "approval.requested"]
    (answered,) = tool_results(home, session_id, "agent")
    child = json.loads(answered["result"])["session"]
    (shell,) = [r for r in records(home, child) if r["type"] == "tool" and r["state"] != "started"]
    assert "refused" in shell["result"] and "sandbox: read-only" in shell["result"]
    assert not (workspace / "made-by-child").exists()
