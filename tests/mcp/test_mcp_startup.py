"""MCP through admitted startup and `serve --stdio`: approval, tools in a run, lazy SDK."""

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp_harness import Definition, alive, gone_within, pid_of

from magi_code.client import ErrorResponse, LocalAgentClient, environment
from magi_code.mcp.definitions import canonical_digest
from magi_code.runner.setup import turn_setup
from magi_code.runner.startup import StartupError, admit
from magi_code.tools.approvals import ApprovalBroker

MakeDef = Callable[..., Definition]


def toml_server(name: str, definition: Definition) -> str:
    args = ", ".join(f'"{a}"' for a in definition["args"])
    return (
        f'[mcp.servers.{name}]\ncommand = "{definition["command"]}"\nargs = [{args}]\n'
        f"enabled = {str(definition['enabled']).lower()}\n"
    )


def write_settings(home: Path, name: str, definition: Definition, approve: bool) -> None:
    home.mkdir(exist_ok=True)
    approved = f'[mcp]\napproved = ["{canonical_digest(name, definition)}"]\n' if approve else ""
    (home / "settings.toml").write_text(approved + toml_server(name, definition))


async def no_announce(approval_id: str, summary: str, expires_in_ms: int) -> None:
    raise AssertionError("no approval expected")


def test_admit_connects_approved_servers_and_runs_offer_their_tools(
    tmp_path: Path, server_def: MakeDef
) -> None:
    definition = server_def("ok")
    write_settings(tmp_path / "home", "echo", definition, approve=True)
    admitted = admit(str(tmp_path), {"MC_HOME": str(tmp_path / "home"), "PATH": "/usr/bin"})
    assert admitted.mcp is not None
    try:
        setup = turn_setup(admitted, (None, None, None), "s1", "r1", ApprovalBroker(no_announce))
        assert {"mcp__echo__echo", "mcp__echo__fail", "shell"} <= set(setup.tools)
    finally:
        admitted.mcp.close()
    pid = pid_of(definition)
    assert pid is not None and gone_within(pid, 2.0)


def test_project_enabling_and_approving_itself_is_refused(
    tmp_path: Path, server_def: MakeDef
) -> None:
    definition = server_def("ok")
    write_settings(tmp_path / ".magi-code", "echo", definition, approve=True)  # project file
    env = {"MC_HOME": str(tmp_path / "home")}
    untrusted = admit(str(tmp_path), env)  # an untrusted folder's definitions are dropped
    assert untrusted.mcp is None and pid_of(definition) is None
    (tmp_path / "home" / "settings.toml").write_text(
        f'[permissions]\ntrusted_projects = ["{tmp_path}"]\n'
    )
    with pytest.raises(StartupError) as caught:  # trusted, it still cannot approve itself
        admit(str(tmp_path), env)
    assert caught.value.code == "mcp_unavailable"
    assert pid_of(definition) is None


def test_cancelled_admission_is_startup_cancelled(tmp_path: Path, server_def: MakeDef) -> None:
    definition = server_def("hang")
    write_settings(tmp_path / "home", "slow", definition, approve=True)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(StartupError) as caught:
        admit(str(tmp_path), {"MC_HOME": str(tmp_path / "home")}, cancel)
    assert caught.value.code == "startup_cancelled"
    pid = pid_of(definition)
    assert pid is None or gone_within(pid, 2.0)


def test_admission_without_servers_never_imports_the_sdk(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom magi_code.runner.startup import admit\n"
        f"admit({str(tmp_path)!r}, {{'MC_HOME': {str(tmp_path / 'home')!r}}})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def pipe_inodes(pid: int) -> set[str]:
    fds = Path(f"/proc/{pid}/fd")
    return {os.readlink(fd) for fd in fds.iterdir() if os.readlink(fd).startswith("pipe:")}


def test_serve_stdio_connects_an_approved_server_without_sharing_its_pipes(
    tmp_path: Path, server_def: MakeDef
) -> None:
    definition = server_def("ok")
    write_settings(tmp_path / "home", "echo", definition, approve=True)
    with LocalAgentClient.spawn(cwd=tmp_path, env=environment(tmp_path / "home")) as agent:
        result = agent.request("initialize", {"required_capabilities": ["status"]})
        assert result["status"]["readiness"] == "ready"
        pid = pid_of(definition)
        assert pid is not None and alive(pid)
        ours = {os.fstat(f.fileno()).st_ino for f in (agent.process.stdin, agent.process.stdout)}
        assert not {f"pipe:[{inode}]" for inode in ours} & pipe_inodes(pid)
        agent.request("shutdown")
        assert agent.finish() == 0
    assert gone_within(pid, 5.0)


def test_serve_stdio_refuses_an_unapproved_server(tmp_path: Path, server_def: MakeDef) -> None:
    definition = server_def("ok")
    write_settings(tmp_path / "home", "echo", definition, approve=False)
    with LocalAgentClient.spawn(cwd=tmp_path, env=environment(tmp_path / "home")) as agent:
        with pytest.raises(ErrorResponse) as caught:
            agent.request("initialize", {"required_capabilities": []})
        assert caught.value.code == "mcp_unavailable"
    assert pid_of(definition) is None


def test_serve_stdio_shutdown_ends_a_server_that_ignores_shutdown(
    tmp_path: Path, server_def: MakeDef
) -> None:
    definition = server_def("stubborn")
    write_settings(tmp_path / "home", "echo", definition, approve=True)
    with LocalAgentClient.spawn(cwd=tmp_path, env=environment(tmp_path / "home")) as agent:
        agent.request("initialize", {"required_capabilities": ["status"]})
        pid = pid_of(definition)
        assert pid is not None and alive(pid)
        agent.request("shutdown")
        assert agent.finish() == 0
    assert gone_within(pid, 5.0)


def test_serve_stdio_shutdown_during_mcp_startup_cancels_it(
    tmp_path: Path, server_def: MakeDef
) -> None:
    definition = server_def("hang")
    write_settings(tmp_path / "home", "echo", definition, approve=True)
    with LocalAgentClient.spawn(cwd=tmp_path, env=environment(tmp_path / "home")) as agent:
        init_id = agent.send("initialize", {"required_capabilities": ["status"]})
        deadline = time.monotonic() + 10
        while pid_of(definition) is None:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        pid = pid_of(definition)
        assert agent.request("status")["state"] == "starting"
        agent.request("shutdown")
        assert agent.wait(init_id)["error"] == {"code": "startup_cancelled"}
        assert agent.finish() == 0
    assert pid is not None and gone_within(pid, 5.0)


def test_cli_prints_the_digest_to_approve(tmp_path: Path, server_def: MakeDef) -> None:
    import subprocess
    import sys

    definition = server_def("ok")
    write_settings(tmp_path / "home", "echo", definition, approve=False)
    done = subprocess.run(
        [sys.executable, "-m", "magi_code.cli", "mcp", "digest", "echo"],
        capture_output=True,
        cwd=tmp_path,
        env=environment(tmp_path / "home"),
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.decode().strip() == canonical_digest("echo", definition)
    missing = subprocess.run(
        [sys.executable, "-m", "magi_code.cli", "mcp", "digest", "nope"],
        capture_output=True,
        cwd=tmp_path,
        env=environment(tmp_path / "home"),
        check=False,
    )
    assert missing.returncode == 2 and missing.stdout == b""
