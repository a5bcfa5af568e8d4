"""`magi-code exec` over real pipes: the real console script, a real MC_HOME, the fixture model."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from magi_code.client import environment
from magi_code.records import field_names
from magi_code.runner import events
from support.exec import MAGI_CODE, exec_run, json_lines
from support.sessions import records, script

FIELDS = {
    name: {"session_id", "run_id", *field_names(kind)}
    for kind, name in (events.EVENT_NAMES | events.DETAIL_NAMES).items()
}


def test_a_prompt_on_stdin_prints_the_final_text_only(workspace: Path, home: Path) -> None:
    done = exec_run([], workspace, home, stdin=b"say hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"Hello from the fixture model.\n"
    dashed = exec_run(
        ["-"], workspace, home, stdin=script({"text": "one"}, {"text": "two"}).encode()
    )
    assert dashed.stdout == b"one\n"


def test_the_final_text_is_the_last_reply_after_tools(workspace: Path, home: Path) -> None:
    prompt = script(
        {"text": "looking first", "tools": [{"name": "list_dir", "arguments": {}}]},
        {"text": "all ", "deltas": 3},
    )
    done = exec_run([prompt], workspace, home)
    assert done.returncode == 0
    assert done.stdout == b"all \n"
    assert b"[list_dir completed]" in done.stderr  # progress goes to stderr


def test_json_lines_are_the_local_agent_events_after_one_session_line(
    workspace: Path, home: Path
) -> None:
    prompt = script(
        {"text": "reading", "deltas": 2, "tools": [{"name": "list_dir", "arguments": {}}]},
        {"text": "done"},
    )
    done = exec_run(["--json", prompt], workspace, home)
    assert done.returncode == 0, done.stderr
    parsed = json_lines(done.stdout)
    assert all(set(line) == {"event", "data"} for line in parsed)
    first = parsed[0]
    assert first["event"] == "session"
    assert set(first["data"]) == {"session_id", "provider", "model"}
    assert first["data"]["provider"] == "fixture"
    assert [line["event"] for line in parsed].count("run.finished") == 1
    assert parsed[-1]["event"] == "run.finished"
    assert parsed[-1]["data"]["outcome"] == "completed"
    assert parsed[1]["event"] == "input.persisted"
    names = [line["event"] for line in parsed[1:]]
    assert {"message.delta", "message.reconcile", "activity"} <= set(names)
    for line in parsed[1:]:
        assert set(line["data"]) == FIELDS[line["event"]], line
        assert line["data"]["session_id"] == first["data"]["session_id"]


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        ([script({"text": "fine"})], 0, b""),
        ([script({"error": "server_error"})], 1, b"run failed: execution_failed"),
        (["--approval-mode", "maybe", "hi"], 2, b"--approval-mode takes ask, edits, full or auto"),
        (["--frobnicate", "hi"], 2, b"unknown option --frobnicate"),
        (["one", "two"], 2, b"give exactly one PROMPT"),
        (["--continue", "--session", "abc", "hi"], 2, b"exclude each other"),
        (["--session", "nosuchsession", "hi"], 2, b"session_missing"),
        (["--continue", "hi"], 2, b"no earlier session in this folder"),
        (["--model", "gpt-none", "hi"], 2, b"offers no such model"),
        (["--x\x1b[31m", "hi"], 2, b"unknown option (see"),  # odd input is never echoed
        (["   "], 2, b"the prompt is empty"),
        (["--agent", "nobody", "hi"], 2, b"startup failed: profile_invalid"),
    ],
)
def test_exit_codes(workspace: Path, home: Path, args: list[str], code: int, says: bytes) -> None:
    done = exec_run(args, workspace, home)
    assert done.returncode == code, done.stderr
    assert says in done.stderr
    if code == 2:
        assert done.stdout == b""


def test_a_startup_failure_exits_2_with_what_to_do(workspace: Path, home: Path) -> None:
    home.mkdir()
    (home / "settings.toml").write_text("provider = [")
    done = exec_run(["hi"], workspace, home)
    assert done.returncode == 2
    assert b"configuration_invalid" in done.stderr
    assert str(home / "settings.toml").encode() in done.stderr
    assert done.stdout == b""


def test_a_provider_without_a_key_names_the_login_command_and_the_variable(
    workspace: Path, home: Path
) -> None:
    home.mkdir()
    (home / "settings.toml").write_text('provider = "openai"\nmodel = "gpt-5"\n')
    env = {k: v for k, v in environment(home).items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        [MAGI_CODE, "exec", "hi"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=workspace,
        env=env,
    )
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().strip() == (
        "magi-code exec: startup failed: provider_unavailable: the provider openai has no "
        "usable credentials: run `magi-code login openai`, or set OPENAI_API_KEY"
    )


def spawn_json(prompt: str, cwd: Path, home: Path, **pipes: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [MAGI_CODE, "exec", "--json", prompt],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=environment(home),
        **({"stdout": subprocess.PIPE} | pipes),
    )


@pytest.mark.parametrize(("signal_number", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_stream_cancels_records_and_exits(
    workspace: Path, home: Path, signal_number: int, code: int
) -> None:
    hang = script({"text": "streaming ", "hang": True})  # not held back: no longer a last word
    child = spawn_json(hang, workspace, home)
    assert child.stdout is not None
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1]["event"] != "message.delta":
        seen.append(json.loads(child.stdout.readline()))
    child.send_signal(signal_number)
    rest, _ = child.communicate(timeout=30)
    assert child.returncode == code
    parsed = seen + json_lines(rest)
    assert parsed[-1]["event"] == "run.finished"
    assert parsed[-1]["data"]["outcome"] == "cancelled"
    stored = records(home, parsed[0]["data"]["session_id"])
    finished = [r for r in stored if r["type"] == "run_finished"]
    assert [(r["outcome"], r["error_code"]) for r in finished] == [("cancelled", None)]
    assert any(r["type"] == "assistant_chunk" and r["text"] == "streaming " for r in stored)


def test_a_closed_stdout_cancels_the_run_and_exits_promptly(workspace: Path, home: Path) -> None:
    prompt = script({"text": "x", "repeat": 100_000, "delay_ms": 1})
    child = spawn_json(prompt, workspace, home)
    head = subprocess.Popen(["head", "-c1"], stdin=child.stdout, stdout=subprocess.PIPE)
    assert child.stdout is not None
    child.stdout.close()  # only `head` reads the pipe now
    assert head.communicate(timeout=30)[0] == b"{"
    started = time.monotonic()
    _, stderr = child.communicate(timeout=30)
    assert time.monotonic() - started < 10, "a 100 s stream must stop when its reader goes"
    assert child.returncode == 141, stderr
    (stored_file,) = (home / "sessions").glob("*.jsonl")
    stored = records(home, stored_file.stem)
    finished = [r for r in stored if r["type"] == "run_finished"]
    assert [(r["outcome"], r["error_code"]) for r in finished] == [
        ("cancelled", "output_unavailable")
    ]


def write_round(path: str, content: str) -> dict[str, Any]:
    return {"tools": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def test_the_default_mode_refuses_what_would_ask_and_says_so(workspace: Path, home: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("old")
    done = exec_run(["--json", script(write_round("notes.txt", "new"))], workspace, home)
    assert done.returncode == 0, done.stderr
    parsed = json_lines(done.stdout)
    names = [line["event"] for line in parsed]
    assert names.count("approval.requested") == 1
    (diagnostic,) = [line["data"] for line in parsed if line["event"] == "diagnostic"]
    assert diagnostic["code"] == "approval_denied"
    assert "notes.txt" in diagnostic["summary"]
    assert "--approval-mode edits" in diagnostic["summary"]
    assert names.index("approval.requested") < names.index("diagnostic")
    assert target.read_text() == "old"
    text = exec_run([script(write_round("notes.txt", "new"))], workspace, home)
    assert b"approval_denied" in text.stderr  # said on stderr without --json
    assert target.read_text() == "old"


def test_edits_mode_allows_workspace_edits_only(workspace: Path, home: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("old")
    outside = workspace.parent / "outside.txt"
    edit = script(write_round("notes.txt", "new"))
    done = exec_run(["--approval-mode", "edits", edit], workspace, home)
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "new"
    away = exec_run(
        ["--approval-mode", "edits", script(write_round(str(outside), "x"))], workspace, home
    )
    assert b"approval_denied" in away.stderr
    assert not outside.exists()
    shell = {"tools": [{"name": "shell", "arguments": {"command": "touch made"}}]}
    ran = exec_run(["--approval-mode", "edits", script(shell)], workspace, home)
    assert b"approval_denied" in ran.stderr
    assert not (workspace / "made").exists()


def test_full_mode_allows_shell_but_never_a_protected_path(workspace: Path, home: Path) -> None:
    shell = {"tools": [{"name": "shell", "arguments": {"command": "touch made"}}]}
    ran = exec_run(["--approval-mode", "full", script(shell)], workspace, home)
    assert ran.returncode == 0, ran.stderr
    assert (workspace / "made").exists()
    (workspace / ".git").mkdir()
    hook = exec_run(
        ["--approval-mode", "full", script(write_round(".git/config", "x"))], workspace, home
    )
    assert b"approval_denied" in hook.stderr
    assert not (workspace / ".git" / "config").exists()


def test_continue_and_session_resume_the_same_session(workspace: Path, home: Path) -> None:
    first = json_lines(exec_run(["--json", "first"], workspace, home).stdout)
    session_id = first[0]["data"]["session_id"]
    again = exec_run(["--json", "--continue", "second"], workspace, home)
    assert again.returncode == 0, again.stderr
    assert json_lines(again.stdout)[0]["data"]["session_id"] == session_id
    named = exec_run(["--json", "--session", session_id, "third"], workspace, home)
    assert json_lines(named.stdout)[0]["data"]["session_id"] == session_id
    prompts = [r["text"] for r in records(home, session_id) if r["type"] == "user"]
    assert prompts == ["first", "second", "third"]
    elsewhere = workspace.parent / "elsewhere"
    elsewhere.mkdir()
    other = exec_run(["--continue", "hi"], elsewhere, home)
    assert other.returncode == 2  # --continue never picks another folder's session
    moved = exec_run(["--session", session_id, "hi"], elsewhere, home)
    assert moved.returncode == 2
    assert b"cwd_mismatch" in moved.stderr


def test_help_and_no_prompt_on_a_terminal(workspace: Path, home: Path) -> None:
    helped = exec_run(["--help"], workspace, home)
    assert helped.returncode == 0
    assert b"--approval-mode" in helped.stdout
    leader, follower = os.openpty()
    try:
        done = subprocess.run(
            [MAGI_CODE, "exec"],
            stdin=follower,
            capture_output=True,
            cwd=workspace,
            env=environment(home),
        )
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 2
    assert b"give a PROMPT, or pipe one on stdin" in done.stderr


def test_a_closed_stdout_at_start_is_a_usage_error(workspace: Path, home: Path) -> None:
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" exec hi >&-', MAGI_CODE],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=workspace,
        env=environment(home),
        timeout=60,
    )
    assert done.returncode == 2
    assert b"stdout is closed" in done.stderr
    assert not (home / "sessions").exists() or not list((home / "sessions").glob("*.jsonl"))


GUARD = """
import os
os.close(2)
from magi_code.exec import Output
out = Output()
os.write(1, b"a library's print ")  # what fd 1 gets now must not reach the real stdout
out.write(b"the answer")
"""


def test_with_no_stderr_fd_1_still_cannot_reach_stdout(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", GUARD], stdout=subprocess.PIPE, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout == b"the answer"
