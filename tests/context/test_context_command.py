"""`magi-code context` (the real console script): what the model is told, redacted, with its
sources, the tools offered and every notice; `--agent` selects the profile; startup notices
are on the admitted snapshot for faces."""

import subprocess
from pathlib import Path

from magi_code.runner.startup import admit
from support.exec import run_magi_code

from .files import profile, skill


def context(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_magi_code(list(args), cwd, home, text=True, timeout=30)


def test_prints_sources_in_order_redacted_with_notices(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "ws"
    cwd.mkdir()
    home.mkdir()
    (home / "AGENTS.md").write_text("GLOBAL RULES\n")
    (cwd / "AGENTS.md").write_text("deploy with token=sk-abcdefghijklmnopqrstuvwxyz0123\n")
    (home / "settings.toml").write_text('instructions = ["missing.md"]\n')
    skill(home, "pdf", "Work with PDF files", body="NEVER SHOWN HERE")
    done = context(cwd, home, "context")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    headers = [line for line in out.splitlines() if line.startswith("== ")]
    assert headers[0].startswith("== profile: built-in")
    assert headers[1].startswith(f"== global: {home / 'AGENTS.md'}")
    assert headers[2].startswith(f"== workspace: {cwd / 'AGENTS.md'}")
    assert headers[3].startswith("== skills: skill listing")
    assert "sk-abcdefghijklmnopqrstuvwxyz0123" not in out and "[REDACTED]" in out
    assert "- pdf: Work with PDF files" in out and "NEVER SHOWN HERE" not in out
    offered = (
        "read_file, write_file, edit_file, list_dir, glob, grep, shell, web_fetch, update_plan, "
        "skill"
    )
    assert f"tools offered: {offered}" in out
    assert f"- {home / 'missing.md'}: instructions file not found" in out
    assert not (home / "sessions").exists()  # it only reads


def test_agent_flag_and_precise_profile_message(tmp_path: Path) -> None:
    home = tmp_path / "home"
    profile(home, "reader", "mode: primary\ntools: [read_file]", "READER BODY")
    profile(home, "helper", "mode: subagent")
    done = context(tmp_path, home, "context", "--agent", "reader")
    assert done.returncode == 0 and "READER BODY" in done.stdout
    assert "tools offered: read_file\n" in done.stdout
    refused = context(tmp_path, home, "context", "--agent=helper")
    assert refused.returncode == 1
    assert (
        refused.stderr == "magi-code: profile_invalid: agent profile 'helper' is a subagent only\n"
    )
    assert context(tmp_path, home, "--agent", "reader", "serve", "--stdio").returncode == 2
    assert context(tmp_path, home, "context", "--agent=").returncode == 2
    moved = context(tmp_path, home, "--agent", "reader", "context")  # a command comes first
    assert moved.returncode == 2 and "`context` is a command: put it first" in moved.stderr


def test_admitted_snapshot_carries_the_notices(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "skills" / "bad").mkdir(parents=True)
    (home / "skills" / "bad" / "SKILL.md").write_text("no front matter\n")
    admitted = admit(str(tmp_path), {"MC_HOME": str(home), "PATH": "/usr/bin"})
    assert admitted.notices == [
        f"{home / 'skills' / 'bad' / 'SKILL.md'}: skill skipped: no front matter"
    ]
