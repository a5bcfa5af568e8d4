"""Mission Control's folder-trust question on a real pseudo-terminal: asked once before startup
in an untrusted folder with project definitions; `--prompt` never asks, and warns instead."""

import json
import tomllib
from pathlib import Path

from mission_control.terminal import prompt, run_in_pty

QUESTION = b"choice [t/c/Q]: "
READY = b"idle"  # the status line once Mission Control is up
SHELL = {"name": "shell", "arguments": {"command": "echo ran > ran.txt"}}


def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    work, home = tmp_path / "work", tmp_path / "home"
    project = work / ".magi-code" / "settings.toml"
    project.parent.mkdir(parents=True)
    project.write_text('[permissions]\ndefault_shell = "allow"\n')
    return work, home, project


def trusted(home: Path) -> list[str]:
    try:
        conf = tomllib.loads((home / "settings.toml").read_text())
    except FileNotFoundError:
        return []
    listed: list[str] = conf.get("permissions", {}).get("trusted_projects", [])
    return listed


def test_trust_is_asked_and_recorded(tmp_path: Path) -> None:
    work, home, _ = folders(tmp_path)
    code, out = run_in_pty([], work, home, {QUESTION: b"t\n", READY: b"\x04"})
    assert code == 0, out
    assert out.count(QUESTION) == 1 and b"ignored" not in out
    assert trusted(home) == [str(work)]
    code, out = run_in_pty([], work, home, {READY: b"\x04"})  # asked once: not again
    assert code == 0 and QUESTION not in out


def test_quit_starts_nothing_and_records_nothing(tmp_path: Path) -> None:
    work, home, _ = folders(tmp_path)
    code, out = run_in_pty([], work, home, {QUESTION: b"q\n"})
    assert code == 1, out
    assert not home.exists()  # not even MC_HOME: startup never ran


def test_continue_without_them_warns_and_keeps_asking(tmp_path: Path) -> None:
    work, home, project = folders(tmp_path)
    code, out = run_in_pty(
        [], work, home, {QUESTION: b"c\n", READY: b'fixture:[{"text": "hi"}]\r', b" hi": b"\x04"}
    )
    assert code == 0, out
    warning = f"ignored permissions.default_shell from {project}".encode()
    assert out.count(warning) == 1
    assert trusted(home) == []


def test_one_shot_never_asks_and_keeps_the_shell_asking(tmp_path: Path) -> None:
    work, home, project = folders(tmp_path)
    script = prompt({"tools": [SHELL]}, {"text": "done"})
    code, out = run_in_pty(["--prompt", script], work, home, {b"Allow: run a command?": b"n"})
    assert code == 0, out
    assert QUESTION not in out and b"Allow: run a command?" in out
    assert out.count(f"ignored permissions.default_shell from {project}".encode()) == 1
    assert not (work / "ran.txt").exists()


def test_one_shot_in_a_trusted_folder_runs_the_shell_unasked(tmp_path: Path) -> None:
    work, home, _ = folders(tmp_path)
    home.mkdir()
    (home / "settings.toml").write_text(
        f"[permissions]\ntrusted_projects = [{json.dumps(str(work))}]\n"
    )
    script = prompt({"tools": [SHELL]}, {"text": "done"})
    code, out = run_in_pty(["--prompt", script], work, home, {})
    assert code == 0, out
    assert b"Allow:" not in out and b"ignored" not in out
    assert (work / "ran.txt").read_text() == "ran\n"
