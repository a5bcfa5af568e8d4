"""Mission Control on a real pseudo-terminal: `--agent` selects the profile, a bad one fails
with a precise message, and startup notices are shown."""

from pathlib import Path

from mission_control.test_console import prompt, run_in_pty

from .files import profile


def test_agent_flag_fails_precisely_and_notices_are_shown(tmp_path: Path) -> None:
    home = tmp_path / "home"
    profile(home, "helper", "mode: subagent")
    code, out = run_in_pty(["--agent", "helper", "--prompt", "hi"], tmp_path, home, {})
    assert code == 1
    assert b"startup failed: profile_invalid (agent profile 'helper' is a subagent only)" in out
    profile(home, "lead", "mode: primary")
    (home / "skills" / "bad").mkdir(parents=True)
    (home / "skills" / "bad" / "SKILL.md").write_text("no front matter\n")
    code, out = run_in_pty(
        ["--agent", "lead", "--prompt", prompt({"text": "done"})], tmp_path, home, {}
    )
    assert code == 0 and b"done" in out
    assert b"SKILL.md: skill skipped: no front matter" in out
