"""The user's own commands never start from an untrusted folder's code: a globally approved
MCP stdio server and a global hook start in a folder of their own under MC_HOME (or the one
their definition names), and a bare program name is never found in the workspace. Over the
real `magi-code exec`, in an untrusted clone that ships the code it hopes to run."""

import json
import stat
import subprocess
import sys
from pathlib import Path

from magi_code.mcp.definitions import canonical_digest
from support.exec import exec_run


def planted(folder: Path, name: str, marker: Path) -> Path:
    """A script that, if it ever runs, leaves `marker` behind."""
    script = folder / name
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!/bin/sh\necho ran > {marker}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def approve(home: Path, name: str, server: dict[str, object]) -> None:
    """The server enabled and approved in the GLOBAL settings (JSON strings and string lists
    are TOML values too)."""
    home.mkdir(exist_ok=True)
    lines = [f'[mcp]\napproved = ["{canonical_digest(name, server)}"]', f"[mcp.servers.{name}]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in server.items()]
    (home / "settings.toml").write_text("\n".join(lines) + "\n")


def run(workspace: Path, home: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return exec_run(["hi"], workspace, home, **env)


def test_python_dash_m_imports_nothing_from_the_clone(workspace: Path, home: Path) -> None:
    marker = workspace.parent / "clone-code-ran"
    (workspace / "files_server.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    server = {"command": sys.executable, "args": ["-m", "files_server"], "enabled": True}
    approve(home, "files", server)
    done = run(workspace, home)  # the server cannot start: no files_server where it starts
    assert b"mcp_unavailable" in done.stderr, done.stderr  # approved, started, and failed
    assert not marker.exists()
    assert (home / "run" / "mcp" / "files").is_dir()  # where it was started instead


def test_a_bare_program_name_is_never_found_in_the_workspace(workspace: Path, home: Path) -> None:
    marker = workspace.parent / "clone-program-ran"
    planted(workspace / "node_modules" / ".bin", "files-server", marker)
    planted(workspace, "files-server", marker)
    approve(home, "files", {"command": "files-server", "enabled": True})
    path = f"{workspace / 'node_modules' / '.bin'}:.:/usr/bin:/bin"
    done = run(workspace, home, PATH=path)
    assert b"configuration_invalid" not in done.stderr, done.stderr
    assert not marker.exists()


def test_a_global_hook_with_a_relative_command_runs_nothing_of_the_clone(
    workspace: Path, home: Path
) -> None:
    marker = workspace.parent / "clone-hook-ran"
    planted(workspace, "check.sh", marker)
    home.mkdir()
    (home / "settings.toml").write_text('[[hooks.user_prompt_submit]]\ncommand = ["./check.sh"]\n')
    done = run(workspace, home)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert b"hook_failed" in done.stderr  # it could not start where it was started


def test_a_hook_may_name_its_folder(workspace: Path, home: Path, tmp_path: Path) -> None:
    marker = tmp_path / "tools-hook-ran"
    tools = tmp_path / "my-tools"
    planted(tools, "check.sh", marker)
    home.mkdir()
    (home / "settings.toml").write_text(
        f'[[hooks.user_prompt_submit]]\ncommand = ["./check.sh"]\ncwd = "{tools}"\n'
    )
    done = run(workspace, home)
    assert done.returncode == 0, done.stderr
    assert marker.exists()
