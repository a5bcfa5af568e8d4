"""turn.start, turn.cancel, approval.answer and every run event, over real pipes."""

import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from magi_code import limits
from magi_code.client import ErrorResponse, LocalAgentClient, environment, serve_command
from magi_code.tools.sandbox.modes import containment, support
from support.escapes import machine_pid, mark
from support.sessions import script

from .conftest import Spawn, initialize
from .turns import attach, pages, reconciled, run, start, until

RUN_KEYS = {"session_id", "run_id"}


def test_a_turn_end_to_end(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    reply = "Hello there, this is a reply in parts."
    run_id, events = run(child, sid, script({"text": reply, "deltas": 5}))
    names = [e.name for e in events]
    assert names[0] == "input.persisted" and names[-1] == "run.finished"
    assert names.count("run.finished") == 1
    for event in events:
        assert event.data["session_id"] == sid and event.data["run_id"] == run_id
    admission = next(f for f in child.frames if f.get("result", {}).get("run_id") == run_id)
    assert admission["seq"] < events[0].seq  # the admission response precedes its events
    deltas = [e.data for e in events if e.name == "message.delta"]
    assert [d["part"] for d in deltas] == list(range(5))
    assert "".join(d["text"] for d in deltas) == reply
    assert list(reconciled(events).values()) == [reply]
    last = [e.data for e in events if e.name == "message.reconcile"][-1]
    assert last["last_part"] is True and last["partial"] is False
    finished = events[-1].data
    assert finished["outcome"] == "completed" and finished["persistence"] == "durable"
    assert finished["error_code"] is None
    history = pages(child, sid, finished["revision"])
    entries = [e for p in history for e in p["entries"]]
    assert [e["kind"] for e in entries] == ["user", "assistant"]
    assert entries[1]["text"] == reply and history[-1]["complete"] is True
    assert child.request("status")["run_id"] is None


def test_input_persisted_names_the_projected_message(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    _, events = run(child, sid, "plain prompt")
    ack = events[0].data
    assert set(ack) == RUN_KEYS | {"message_id", "revision", "durable"}
    assert ack["durable"] is True
    entries = pages(child, sid, events[-1].data["revision"])[0]["entries"]
    assert entries[0]["message_id"] == ack["message_id"] and entries[0]["text"] == "plain prompt"


def test_prompt_bounds(spawn: Spawn, home: Path) -> None:
    child = spawn()
    sid = attach(child)
    for prompt in ["", "  \n\t ", "é" * (limits.PROMPT_BYTES // 2) + "x"]:
        with pytest.raises(ErrorResponse) as caught:
            start(child, sid, prompt)
        assert caught.value.code == "invalid_params"
    assert list((home / "sessions").glob("*.jsonl")) == []  # a rejected start persists nothing
    _, events = run(child, sid, "é" * (limits.PROMPT_BYTES // 2))
    assert events[-1].data["outcome"] == "completed"


def test_turn_start_identity_errors(spawn: Spawn) -> None:
    child = spawn()
    initialize(child, "turn.start")
    with pytest.raises(ErrorResponse) as missing:
        start(child, "nosuch", "hi")
    assert missing.value.code == "session_missing"
    sid = child.request("session.create")["session_id"]
    with pytest.raises(ErrorResponse) as stale:
        start(child, sid + "x", "hi")
    assert stale.value.code == "stale_session"
    with pytest.raises(ErrorResponse) as bad:
        child.request("turn.start", {"session_id": sid, "prompt": "hi", "extra": 1})
    assert bad.value.code == "invalid_params"


def test_busy_while_a_run_is_active_and_cancel(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    run_id = start(child, sid, script({"text": "streaming ", "hang": True}))
    until(child, "message.delta")
    assert child.request("status")["run_id"] == run_id
    assert child.request("status")["state"] == "running"
    for method, params in [
        ("turn.start", {"session_id": sid, "prompt": "again"}),
        ("session.create", {}),
        ("session.open", {"session_id": sid}),
        ("history.page", {"session_id": sid, "revision": "r", "cursor": None}),
    ]:
        with pytest.raises(ErrorResponse) as busy:
            child.request(method, params)
        assert busy.value.code == "busy", method
    with pytest.raises(ErrorResponse) as wrong:
        child.request("turn.cancel", {"session_id": sid, "run_id": "not-the-run"})
    assert wrong.value.code == "stale_run"
    cancel = {"session_id": sid, "run_id": run_id}
    assert child.request("turn.cancel", cancel) == {"cancellation_requested": True}
    events = until(child, "run.finished")
    finished = events[-1].data
    assert (finished["outcome"], finished["persistence"]) == ("cancelled", "durable")
    partial = [e.data for e in events if e.name == "message.reconcile"]
    assert partial and partial[-1]["partial"] is True and partial[-1]["last_part"] is True
    assert "".join(p["text"] for p in partial) == "streaming "
    with pytest.raises(ErrorResponse) as finished_run:
        child.request("turn.cancel", cancel)
    assert finished_run.value.code == "stale_run"
    # A recorded cancelled turn keeps its partial reply and can be complete.
    history = pages(child, sid, finished["revision"])
    entries = [e for p in history for e in p["entries"]]
    assert [e["kind"] for e in entries] == ["user", "assistant"]
    assert entries[1]["partial"] is True and history[-1]["complete"] is True


def test_cancel_is_idempotent_and_during_setup(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    start_id = child.send("turn.start", {"session_id": sid, "prompt": script({"hang": True})})
    run_id = child.result(start_id)["run_id"]
    cancel = {"session_id": sid, "run_id": run_id}
    first, second = child.send("turn.cancel", cancel), child.send("turn.cancel", cancel)
    assert child.result(first) == {"cancellation_requested": True}
    assert child.result(second) == {"cancellation_requested": True}
    events = until(child, "run.finished")
    assert events[-1].data["outcome"] == "cancelled"
    assert [e.name for e in events].count("run.finished") == 1


def allow_shell(home: Path) -> None:
    home.mkdir(exist_ok=True)
    (home / "settings.toml").write_text(
        '[[permissions.rules]]\ntool = "shell"\ndecision = "allow"\n'
    )


# Writes its pid and PID namespace to FILE, then sleeps: in the sandbox a command has a PID
# namespace and a /proc of its own, so the test finds the machine's pid from outside.
def mark_and_sleep(file: Path) -> str:
    return mark(str(file)) + "; exec sleep 60"


def test_cancel_during_a_tool_kills_it(spawn: Spawn, home: Path, workspace: Path) -> None:
    """A turn cancelled mid-command ends the command, and (where the sandbox contains
    commands) what it started in a new session too."""
    allow_shell(home)
    child = spawn()
    sid = attach(child)
    marker, escaped = workspace / "pid", workspace / "escaped"
    detached = f"setsid sh -c '{mark_and_sleep(escaped)}' > /dev/null 2>&1 &"
    command = f"{detached} {mark_and_sleep(marker)}"
    run_id = start(
        child, sid, script({"tools": [{"name": "shell", "arguments": {"command": command}}]})
    )
    started = until(child, "activity")[-1].data
    assert started["state"] == "started" and started["name"] == "shell"
    deadline = time.monotonic() + 10
    while not all(f.exists() and f.read_text().strip() for f in (marker, escaped)):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    pid, detached_pid = (machine_pid(f.read_text()) for f in (marker, escaped))
    child.request("turn.cancel", {"session_id": sid, "run_id": run_id})
    events = until(child, "run.finished")
    failed = [e.data for e in events if e.name == "activity"]
    assert failed and failed[-1]["state"] == "failed"
    assert events[-1].data["outcome"] == "cancelled"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    if support()[1] is None and containment() is None:  # the child's kernel is this one
        with pytest.raises(ProcessLookupError):
            os.kill(detached_pid, 0)
    else:
        os.kill(detached_pid, signal.SIGKILL)


def write_script(path: str = "out.txt") -> str:
    return script(
        {"tools": [{"name": "write_file", "arguments": {"path": path, "content": "x"}}]},
        {"text": "after the tool"},
    )


def test_approval_allow_deny_and_stale(spawn: Spawn, workspace: Path) -> None:
    child = spawn()
    sid = attach(child)
    run_id = start(child, sid, write_script("allowed.txt"))
    asked = until(child, "approval.requested")[-1].data
    assert asked["expires_in_ms"] == limits.APPROVAL_EXPIRY_MS
    assert asked["summary"] and len(asked["summary"].encode()) <= limits.SUMMARY_BYTES
    answer = {"session_id": sid, "run_id": run_id, "approval_id": asked["approval_id"]}
    with pytest.raises(ErrorResponse) as wrong:
        child.request("approval.answer", {**answer, "approval_id": "nope", "allow": True})
    assert wrong.value.code == "stale_approval"
    assert child.request("approval.answer", {**answer, "allow": True}) == {"recorded": True}
    with pytest.raises(ErrorResponse) as again:
        child.request("approval.answer", {**answer, "allow": False})
    assert again.value.code == "stale_approval"
    assert until(child, "run.finished")[-1].data["outcome"] == "completed"
    assert (workspace / "allowed.txt").read_text() == "x"

    run_id = start(child, sid, write_script("denied.txt"))
    asked = until(child, "approval.requested")[-1].data
    answer = {"session_id": sid, "run_id": run_id, "approval_id": asked["approval_id"]}
    assert child.request("approval.answer", {**answer, "allow": False}) == {"recorded": True}
    events = until(child, "run.finished")
    assert [e.data["state"] for e in events if e.name == "activity"] == ["failed"]
    assert not (workspace / "denied.txt").exists()


def test_cancel_while_an_approval_waits_denies_it(spawn: Spawn, workspace: Path) -> None:
    child = spawn()
    sid = attach(child)
    run_id = start(child, sid, write_script())
    asked = until(child, "approval.requested")[-1].data
    child.request("turn.cancel", {"session_id": sid, "run_id": run_id})
    assert until(child, "run.finished")[-1].data["outcome"] == "cancelled"
    with pytest.raises(ErrorResponse) as late:
        child.request(
            "approval.answer",
            {
                "session_id": sid,
                "run_id": run_id,
                "approval_id": asked["approval_id"],
                "allow": True,
            },
        )
    assert late.value.code == "stale_approval"
    assert not (workspace / "out.txt").exists()


def test_disconnect_denies_a_waiting_approval(spawn: Spawn, workspace: Path) -> None:
    child = spawn()
    sid = attach(child)
    start(child, sid, write_script())
    until(child, "approval.requested")
    assert child.finish() == 0
    assert not (workspace / "out.txt").exists()


@pytest.mark.slow("waits out the 60 s approval expiry")
def test_an_approval_expires_after_60_seconds_and_denies(spawn: Spawn, workspace: Path) -> None:
    child = spawn()
    sid = attach(child)
    run_id = start(child, sid, write_script())
    asked = until(child, "approval.requested")[-1].data
    asked_at = time.monotonic()
    events = until(child, "run.finished", timeout=limits.APPROVAL_EXPIRY_MS / 1000 + 30)
    waited = time.monotonic() - asked_at
    assert limits.APPROVAL_EXPIRY_MS / 1000 - 1 <= waited < limits.APPROVAL_EXPIRY_MS / 1000 + 10
    assert [e.data["state"] for e in events if e.name == "activity"] == ["failed"]
    assert events[-1].data["outcome"] == "completed"
    assert not (workspace / "out.txt").exists()
    with pytest.raises(ErrorResponse) as late:
        child.request(
            "approval.answer",
            {
                "session_id": sid,
                "run_id": run_id,
                "approval_id": asked["approval_id"],
                "allow": True,
            },
        )
    assert late.value.code == "stale_approval"


def test_provider_failure_fails_the_run(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    tool = {"name": "list_dir", "arguments": {}}
    _, events = run(
        child, sid, script({"text": "part", "tools": [tool]}, {"error": "server_error"})
    )
    finished = events[-1].data
    assert (finished["outcome"], finished["error_code"]) == ("failed", "execution_failed")
    assert finished["persistence"] == "durable"
    assert list(reconciled(events).values()) == ["part"]


@pytest.mark.slow("streams the 8 MiB run content bound through the real protocol")
def test_content_limit_at_its_edge(spawn: Spawn) -> None:
    child = spawn(MC_DEBUG_STDERR="1")  # CI lost this child once: its stderr would say why
    sid = attach(child)
    piece = "abcd" * 1024  # 4096 bytes
    exact = limits.RUN_CONTENT_BYTES // len(piece)
    _, events = run(child, sid, script({"text": piece, "repeat": exact}))
    assert events[-1].data["outcome"] == "completed"
    assert sum(len(t) for t in reconciled(events).values()) == limits.RUN_CONTENT_BYTES
    assert events[-1].data["revision"] is None  # the projection is now over its 8 MiB budget
    with pytest.raises(ErrorResponse) as over:
        child.request("session.open", {"session_id": sid})
    assert over.value.code == "history_limit"
    sid = child.request("session.create")["session_id"]
    tool = {"name": "list_dir", "arguments": {}}
    over = script({"text": piece, "repeat": exact, "tools": [tool]}, {"text": "x"})
    _, events = run(child, sid, over)
    finished = events[-1].data
    assert (finished["outcome"], finished["error_code"]) == ("failed", "content_limit")
    parts = [e.data for e in events if e.name == "message.reconcile"]
    assert parts[-1]["last_part"] is True


def test_segment_limit_at_its_edge(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    tool = {"name": "list_dir", "arguments": {}}
    n = limits.RUN_CONTENT_SEGMENTS
    _, events = run(
        child, sid, script({"text": "s", "tools": [tool], "times": n - 1}, {"text": "end"})
    )
    assert events[-1].data["outcome"] == "completed"
    assert len(reconciled(events)) == n
    _, events = run(child, sid, script({"text": "s", "tools": [tool], "times": n}, {"text": "end"}))
    assert events[-1].data["error_code"] == "content_limit"
    assert len(reconciled(events)) == n


def test_no_secret_reaches_the_client(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    secret = "sk-proj-" + "A1b2C3d4" * 5
    _, events = run(child, sid, script({"text": f"the key is {secret} ok", "deltas": 1}))
    history = pages(child, sid, events[-1].data["revision"])
    assert secret not in json.dumps([e.data for e in events]) + json.dumps(history)


def test_sigkill_mid_turn_then_a_fresh_child_tells_the_truth(spawn: Spawn, home: Path) -> None:
    child = spawn()
    sid = attach(child)
    piece = "y" * 4096  # persisted as a chunk record every 16 KiB
    start(child, sid, script({"text": piece, "repeat": 8, "hang": True}))
    until(child, "message.delta")
    stored = home / "sessions" / f"{sid}.jsonl"
    deadline = time.monotonic() + 20
    while not stored.exists() or stored.read_bytes().count(b"y") < len(piece) * 8:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    child.process.send_signal(signal.SIGKILL)
    child.process.wait(10)
    fresh = spawn()
    initialize(fresh, "session.open")
    opened = fresh.request("session.open", {"session_id": sid})
    assert opened["durable"] is True
    history = pages(fresh, sid, opened["revision"])
    entries = [e for p in history for e in p["entries"]]
    assert history[-1]["complete"] is False
    kinds = [e["kind"] for e in entries]
    assert kinds[0] == "user" and kinds[-1] == "diagnostic"
    assistant = "".join(e["text"] for e in entries if e["kind"] == "assistant")
    assert assistant == piece * 8
    assert all(e["partial"] for e in entries if e["kind"] == "assistant")


def limited_child(workspace: Path, home: Path, file_bytes: int) -> LocalAgentClient:
    """A child that cannot grow any file past `file_bytes` (RLIMIT_FSIZE: writes fail with
    EFBIG; Python ignores SIGXFSZ), so its session appends fail for real."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))

    process = subprocess.Popen(
        serve_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=workspace,
        env=environment(home),
        preexec_fn=limit,
    )
    return LocalAgentClient(process)


def test_failed_required_input_append_is_failed_not_started(workspace: Path, home: Path) -> None:
    with limited_child(workspace, home, 64) as child:
        sid = attach(child)
        _, events = run(child, sid, "hello")
        assert [e.name for e in events] == ["run.finished"]  # no input.persisted
        finished = events[0].data
        assert finished == {
            "session_id": sid,
            "run_id": finished["run_id"],
            "outcome": "failed",
            "persistence": "not_started",
            "revision": None,
            "error_code": "persistence_failed",
        }


def test_a_later_append_failure_is_degraded(workspace: Path, home: Path) -> None:
    with limited_child(workspace, home, 4096) as child:
        sid = attach(child)
        _, events = run(child, sid, script({"text": "z" * 100, "repeat": 80}))
        names = [e.name for e in events]
        assert names[0] == "input.persisted"
        assert "diagnostic" in names
        diagnostic = next(e.data for e in events if e.name == "diagnostic")
        assert diagnostic["code"] == "persistence_failed"
        finished = events[-1].data
        assert (finished["outcome"], finished["persistence"]) == ("completed", "degraded")
        assert finished["revision"] is None
        assert list(reconciled(events).values()) == ["z" * 8000]  # displayed, not durable


def test_shutdown_during_a_run_still_ends_it(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    run_id = start(child, sid, script({"text": "working ", "hang": True}))
    until(child, "message.delta")
    assert child.request("shutdown") == {"state": "stopping"}
    finished = until(child, "run.finished")[-1].data
    assert (finished["run_id"], finished["outcome"]) == (run_id, "cancelled")
    assert child.process.wait(10) == 0


def test_live_chunks_are_at_most_4000_bytes(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    text = "é" * 5001  # 10,002 bytes in one provider delta
    _, events = run(child, sid, script({"text": text}))
    for event in events:
        if event.name in ("message.delta", "message.reconcile"):
            assert len(event.data["text"].encode()) <= limits.LIVE_CHUNK_BYTES
    assert "".join(e.data["text"] for e in events if e.name == "message.delta") == text
    assert list(reconciled(events).values()) == [text]
    parts = [e.data["part"] for e in events if e.name == "message.reconcile"]
    assert parts == [0, 1, 2]


def test_activity_identity_limit_at_its_edge(spawn: Spawn) -> None:
    child = spawn()
    sid = attach(child)
    batch = [{"name": "list_dir", "arguments": {}}] * 64  # 64 calls a round keeps replay short
    n = limits.RUN_ACTIVITY_IDS
    rounds = n // len(batch)
    _, events = run(child, sid, script({"tools": batch, "times": rounds}, {"text": "end"}))
    assert events[-1].data["outcome"] == "completed"
    assert len({e.data["activity_id"] for e in events if e.name == "activity"}) == n
    one_more = script({"tools": batch, "times": rounds}, {"tools": batch[:1]}, {"text": "end"})
    _, events = run(child, sid, one_more)
    finished = events[-1].data
    assert (finished["outcome"], finished["error_code"]) == ("failed", "execution_failed")
    assert len({e.data["activity_id"] for e in events if e.name == "activity"}) == n


def test_compaction_when_history_outgrows_the_context_window(spawn: Spawn, home: Path) -> None:
    home.mkdir()
    (home / "settings.toml").write_text(
        '[providers.fixture]\nwire_api = "fixture"\nmodels = ["fixture-model"]\n'
        "context_window = 300\n"  # tokens: compaction past 240, ~960 bytes of history
    )
    child = spawn()
    sid = attach(child)
    _, first = run(child, sid, "a" * 600)
    assert not [e for e in first if e.data.get("kind") == "compaction"]
    _, second = run(child, sid, "b" * 600)  # 1,200+ bytes before the model call: compact
    states = [e.data["state"] for e in second if e.data.get("kind") == "compaction"]
    assert states == ["started", "completed"]
    assert second[-1].data["outcome"] == "completed"
    _, third = run(child, sid, "c" * 100)  # replay starts from the summary: no new compaction
    assert not [e for e in third if e.data.get("kind") == "compaction"]
    entries = [e for p in pages(child, sid, third[-1].data["revision"]) for e in p["entries"]]
    kinds = [e["kind"] for e in entries]
    assert kinds.count("compaction") == 1
    assert kinds.index("compaction") > kinds.index("user")  # history keeps what came before
