"""The real `magi-code` binary on a pseudo-terminal read through pyte: what a person sees and
types, end to end (startup, Textual, the runner, the session file)."""

import json
import time
from pathlib import Path

from magi_code.limits import APPROVAL_ARM_MS
from mission_control.terminal import Terminal, prompt, run_in_pty


def stored(home: Path) -> list[dict[str, object]]:
    (path,) = (home / "sessions").glob("*.jsonl")
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


def turns_finished(home: Path) -> list[object]:
    files = list((home / "sessions").glob("*.jsonl")) if (home / "sessions").exists() else []
    return [r["outcome"] for r in stored(home) if r["type"] == "run_finished"] if files else []


def wait_turns(terminal: Terminal, home: Path, count: int) -> None:
    deadline = time.monotonic() + 15
    while len(turns_finished(home)) < count:
        assert time.monotonic() < deadline, terminal.text()
        terminal.pump(0.05)


def test_a_session_on_a_real_terminal(tmp_path: Path) -> None:
    """An edit approved from its diff on screen, Esc mid-stream and another turn in the same
    session, a 3-line paste sent as one prompt, Ctrl-C twice at idle: no traceback."""
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello world\n")
    terminal = Terminal([], workspace, home)
    try:
        terminal.wait_for("idle")
        edit = {"name": "edit_file", "arguments": {"path": "a.txt", "old": "hello", "new": "bye"}}
        terminal.send(prompt({"text": "Editing **now**.", "tools": [edit]}) + "\r")
        terminal.wait_for("Allow: edit a.txt?")
        screen = terminal.wait_for("+bye world")
        assert "-hello world" in screen
        terminal.settle(APPROVAL_ARM_MS / 1000 + 0.1)
        terminal.send("y")
        terminal.wait_for("edited a.txt")
        wait_turns(terminal, home, 1)
        assert (workspace / "a.txt").read_text() == "bye world\n"

        terminal.send(prompt({"text": "streaming along ", "deltas": 2, "hang": True}) + "\r")
        terminal.wait_for("streaming along")
        terminal.send("\x1b")
        terminal.wait_for("cancelled")
        wait_turns(terminal, home, 2)

        terminal.send("\x1b[200~one\ntwo\nthree\x1b[201~")
        terminal.wait_for("three")
        terminal.send("\r")
        wait_turns(terminal, home, 3)

        terminal.send("\x03")
        terminal.settle(0.2)
        terminal.send("\x03")
        assert terminal.wait_exit() == 0
        after = terminal.text()  # the conversation stays in the terminal after the app
        assert "Editing now." in after and "› one" in after
    finally:
        terminal.close()
    assert b"Traceback" not in terminal.raw
    records = stored(home)
    assert [r["outcome"] for r in records if r["type"] == "run_finished"] == [
        "completed",
        "cancelled",
        "completed",
    ]
    prompts = [r["text"] for r in records if r["type"] == "user"]
    assert prompts[2] == "one\ntwo\nthree"  # the paste: one user record
    assert len({r["session_id"] for r in records}) == 1  # all in the same session


def test_prompt_runs_one_turn_and_exits_with_its_outcome(tmp_path: Path) -> None:
    text = prompt(
        {"text": "looking", "deltas": 3, "tools": [{"name": "list_dir", "arguments": {}}]},
        {"text": "finished"},
    )
    code, out = run_in_pty(["--prompt", text], tmp_path, tmp_path / "home", {})
    assert code == 0, out
    code, out = run_in_pty(
        ["--prompt", prompt({"error": "server_error"})], tmp_path, tmp_path / "home", {}
    )
    assert code == 1 and b"Traceback" not in out


def test_prompt_denies_at_the_approval(tmp_path: Path) -> None:
    write = {"name": "write_file", "arguments": {"path": "b.txt", "content": "no"}}
    code, out = run_in_pty(
        ["--prompt", prompt({"tools": [write]}, {"text": "ok"})],
        tmp_path,
        tmp_path / "home",
        {b"Allow: create b.txt?": b"n"},
    )
    assert code == 0, out
    assert not (tmp_path / "b.txt").exists()


def test_a_startup_error_says_what_to_do_without_a_traceback(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.toml").write_text('provider = "nowhere"\n')
    code, out = run_in_pty([], tmp_path, home, {})
    assert code == 1
    assert b"configuration_invalid" in out and b"settings.toml" in out
    assert b"the selected provider is not configured" in out
    assert b"Traceback" not in out


def test_a_provider_without_a_key_names_the_login_command(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.toml").write_text(
        'provider = "remote"\nmodel = "m1"\n[providers.remote]\nwire_api = "openai-chat"\n'
        'base_url = "https://example.invalid/v1"\napi_key_env = "MAGI_TEST_UNSET_KEY"\n'
        'models = ["m1"]\n'
    )
    code, out = run_in_pty([], tmp_path, home, {})
    assert code == 1 and b"Traceback" not in out
    assert b"provider_unavailable" in out
    assert b"magi-code login remote" in out and b"MAGI_TEST_UNSET_KEY" in out


def test_a_misspelled_model_setting_is_a_startup_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.toml").write_text('model = "fixture-modle"\n')
    code, out = run_in_pty([], tmp_path, home, {})
    assert code == 1 and b"Traceback" not in out
    assert b"model_unknown" in out and b"magi-code models" in out
