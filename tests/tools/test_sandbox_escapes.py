"""Code Mode escapes from our security issue, each run as a real `code` tool program.

The in-process audit hook is gone; the OS sandbox holds instead. Each program first tries
one of the one-line escapes that undid the hook (they now simply run: there is nothing left
to undo), then tries everything the hook was there to stop: reading the secret places and the
parent's environment, running a command, writing outside the workspace, starting processes
(one that would outlive the call among them), sockets, ptrace. Every attempt must fail with
the kernel's refusal (not a slip in the attempt's own code), no secret may appear in the
outcome, nothing may change on disk, and no process may be left behind.
"""

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_places import Places, places

from magi_code.tools.base import Bridge, ToolContext, ToolOutcome
from magi_code.tools.code_mode import CodeTool
from magi_code.tools.sandbox import modes
from magi_code.tools.sandbox.modes import Sandbox, SandboxSettings

__all__ = ["places"]  # the fixture

pytestmark = pytest.mark.anyio


class Calls:
    """The bridge: every call is recorded and answered."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def __call__(self, name: str, arguments: str) -> ToolOutcome:
        self.seen.append((name, arguments))
        return ToolOutcome(True, "ok", name)


def context(where: Places, calls: Calls, settings: SandboxSettings | None = None) -> ToolContext:
    sandbox = Sandbox(
        settings or SandboxSettings(), where.workspace, str(where.mc_home), str(where.home)
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(where.home), "LANG": "C.UTF-8"}
    return ToolContext(where.workspace, env, bridge=Bridge(("echo",), calls), sandbox=sandbox)


async def run_code(
    where: Places, program: str, calls: Calls | None = None, **settings: object
) -> ToolOutcome:
    tool = CodeTool(("echo",))
    chosen = SandboxSettings(**settings) if settings else None  # type: ignore[arg-type]
    ctx = context(where, calls or Calls(), chosen)
    return await tool.run(tool.parse(json.dumps({"program": program, "timeout": 20})), ctx)


def result_of(outcome: ToolOutcome) -> object:
    assert "[result]\n" in outcome.output, outcome.output
    return json.loads(outcome.output.split("[result]\n", 1)[1].split("\n[stdout]", 1)[0])


# The old escapes: each undid the audit hook of the interpreter (tools/code_child.py) in one
# line. `wrap` is what the attempts below pass their paths through.
ESCAPES = {
    "refused_events": "sys.modules['__main__']._REFUSED_EVENTS = frozenset()\n",
    "str_subclass": """
class Inside(str):
    def startswith(self, *prefixes):
        return True
    def __add__(self, other):
        return Inside(str.__add__(self, other))
    def __fspath__(self):
        return str(self)
os.path.realpath(Inside(P['ssh_key']))
wrap = Inside
""",
    "closure_cells": """
import gc, types
for obj in gc.get_objects():
    if isinstance(obj, types.FunctionType) and obj.__closure__:
        if obj.__name__ in ('refuse', 'pythons_own'):
            for cell in obj.__closure__:
                cell.cell_contents = ('/',) if isinstance(cell.cell_contents, tuple) else None
""",
}

# What each program then tries. An attempt that raises records the exception's class and
# errno (so a slip in the attempt's own code, a NameError say, cannot pass for a refusal);
# one that returns is a success, its value kept (so a secret it read would show).
ATTEMPTS = r"""
class Refused(Exception):
    pass

attempts = {}

def attempt(name, action):
    if ONLY and name not in ONLY:
        return
    try:
        value = action()
    except BaseException as refused:
        attempts[name] = [type(refused).__name__, getattr(refused, 'errno', None)]
    else:
        attempts[name] = ['succeeded', repr(value)[:300]]

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def raw(number, *args):
    done = libc.syscall(number, *args)
    if done < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return done

def read(path):
    with open(wrap(path), 'rb') as handle:
        return handle.read()

def sleeper():
    # Becomes a process whose command line names the marker, then sleeps; never returns.
    try:
        os.setsid()
    except OSError:
        pass
    try:
        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(30)', P['marker']])
    finally:
        os._exit(0)

def system():
    status = os.system('id')
    if status != 0:
        raise Refused(status)
    return status

def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid

def daemon():
    try:
        os.setsid()
    except OSError:
        pass
    pid = os.fork()
    if pid == 0:
        sleeper()
    time.sleep(0.3)
    return pid

def spawn():
    pid = os.posix_spawn(
        sys.executable,
        [sys.executable, '-c', 'import time; time.sleep(30)', P['marker']],
        dict(os.environ),
        setsid=True,
    )
    time.sleep(0.3)
    return pid

def clone():
    pid = raw(P['nr_clone'], signal.SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        sleeper()
    time.sleep(0.3)
    return pid

def ptrace():
    return raw(P['nr_ptrace'], 16, P['traced'], 0, 0)  # PTRACE_ATTACH

def inet():
    return socket.create_connection(('127.0.0.1', P['port']), 1)

def unix():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(P['unix'])
    return sock

def authorized_keys():
    with open(wrap(P['authorized_keys']), 'a') as keys:
        return keys.write('ssh-ed25519 AAAAC3Nza attacker\n')

def write(path):
    with open(path, 'w') as made:
        return made.write('x')

def shell():
    os.execv('/bin/sh', ['sh', '-c', 'cat ' + P['ssh_key'] + ' ' + P['credentials']])

attempt('read_ssh_key', lambda: read(P['ssh_key']))
attempt('read_credentials', lambda: read(P['credentials']))
attempt('parent_environ', lambda: read('/proc/%d/environ' % os.getppid()))
attempt('signal_parent', lambda: os.kill(os.getppid(), 0))
attempt('os_system', system)
attempt('subprocess', lambda: subprocess.run(['id'], check=True))
attempt('append_authorized_keys', authorized_keys)
attempt('write_tmp', lambda: write(P['tmp_file']))
attempt('write_workspace', lambda: write('made.txt'))
attempt('fork', fork)
attempt('setsid_fork_sleeper', daemon)
attempt('posix_spawn_setsid', spawn)
attempt('raw_clone', clone)
attempt('ptrace_attach', ptrace)
attempt('socket_inet', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
attempt('connect_inet', inet)
attempt('socket_unix', lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
attempt('connect_unix', unix)
result = attempts
attempt('exec_shell', shell)  # last: were it to work, the program would be gone
"""
PREAMBLE = "import ctypes, json, os, signal, socket, subprocess, sys, time\n"
PREAMBLE += "P = json.loads({params!r})\nONLY = {only!r}\nwrap = str\n"
EXPECTED = [
    "read_ssh_key",
    "read_credentials",
    "parent_environ",
    "signal_parent",
    "os_system",
    "subprocess",
    "append_authorized_keys",
    "write_tmp",
    "write_workspace",
    "fork",
    "setsid_fork_sleeper",
    "posix_spawn_setsid",
    "raw_clone",
    "ptrace_attach",
    "socket_inet",
    "connect_inet",
    "socket_unix",
    "connect_unix",
    "exec_shell",
]
LANDLOCK_FILES = [
    "read_ssh_key",
    "read_credentials",
    "parent_environ",
    "append_authorized_keys",
    "write_tmp",
    "write_workspace",
    "exec_shell",
]
SYSCALLS = {"x86_64": {"clone": 56, "ptrace": 101}, "aarch64": {"clone": 220, "ptrace": 117}}


def program(escape: str, params: dict[str, object], only: list[str] | None = None) -> str:
    return PREAMBLE.format(params=json.dumps(params), only=only) + ESCAPES[escape] + ATTEMPTS


def marked(marker: str) -> list[int]:
    """Processes whose command line holds `marker`."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path("/proc", name, "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(name))
    return found


def tracer_of(pid: int) -> int:
    for line in Path("/proc", str(pid), "status").read_text().splitlines():
        if line.startswith("TracerPid:"):
            return int(line.split()[1])
    raise AssertionError("no TracerPid")


@pytest.fixture
def targets(places: Places) -> Iterator[dict[str, object]]:
    """What the attempts aim at: a TCP and a Unix listener, a process to trace, the paths."""
    machine = os.uname().machine
    if machine not in SYSCALLS:
        pytest.skip(f"no syscall numbers for {machine} in this test")
    marker = f"magi-escape-{uuid.uuid4().hex}"
    unix_path = places.root / "service.sock"
    with (
        socket.create_server(("127.0.0.1", 0)) as tcp,
        socket.socket(socket.AF_UNIX) as unix,
    ):
        unix.bind(str(unix_path))
        unix.listen()
        for listener in (tcp, unix):
            listener.setblocking(False)
        traced = subprocess.Popen(["sleep", "60"])
        params: dict[str, object] = {
            "ssh_key": str(places.ssh_key),
            "credentials": str(places.credentials),
            "authorized_keys": str(places.home / ".ssh" / "authorized_keys"),
            "tmp_file": f"/tmp/{marker}",
            "marker": marker,
            "port": tcp.getsockname()[1],
            "unix": str(unix_path),
            "traced": traced.pid,
            "nr_clone": SYSCALLS[machine]["clone"],
            "nr_ptrace": SYSCALLS[machine]["ptrace"],
            "listeners": [tcp, unix],
        }
        try:
            yield params
        finally:
            traced.kill()
            traced.wait()
            for pid in marked(marker):  # only if an escape worked
                os.kill(pid, signal.SIGKILL)
            Path(f"/tmp/{marker}").unlink(missing_ok=True)


def sent(params: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in params.items() if k != "listeners"}


@pytest.mark.parametrize("escape", list(ESCAPES))
async def test_the_old_escapes_reach_nothing(
    places: Places, targets: dict[str, object], escape: str
) -> None:
    before = places.snapshot()
    outcome = await run_code(places, program(escape, sent(targets)))
    assert outcome.ok, outcome.output
    attempts = result_of(outcome)
    assert isinstance(attempts, dict)
    assert sorted(attempts) == sorted(EXPECTED), outcome.output
    # EACCES: Landlock's files; EPERM: seccomp, or Landlock's scoping (the signal).
    expected = {name: ["PermissionError", errno.EPERM] for name in EXPECTED}
    expected.update({name: ["PermissionError", errno.EACCES] for name in LANDLOCK_FILES})
    expected["os_system"] = ["Refused", None]  # system() returned non-zero: nothing ran
    assert attempts == expected, outcome.output
    for secret in places.secrets():
        assert secret not in outcome.output
    # Nothing changed on disk, and nothing was left behind.
    assert places.snapshot() == before
    assert not (places.home / ".ssh" / "authorized_keys").exists()
    assert not Path(str(targets["tmp_file"])).exists()
    assert not (places.workspace / "made.txt").exists()
    assert marked(str(targets["marker"])) == []
    assert tracer_of(int(str(targets["traced"]))) == 0
    listeners = targets["listeners"]
    assert isinstance(listeners, list)
    for listener in listeners:
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_outside_the_sandbox_the_same_reads_succeed(
    places: Places, targets: dict[str, object]
) -> None:
    """The attempts are sound: unconfined, the harmless ones reach their targets."""
    harmless = ["read_ssh_key", "read_credentials", "signal_parent", "socket_inet", "connect_inet"]
    harmless += ["socket_unix", "connect_unix"]
    code = program("refused_events", sent(targets), harmless)
    code += "\nprint(json.dumps(attempts))\n"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=places.workspace,
        capture_output=True,
        text=True,
        timeout=30,
    )
    attempts = json.loads(done.stdout.splitlines()[-1])
    assert sorted(attempts) == sorted(harmless)
    assert all(kind == "succeeded" for kind, _ in attempts.values()), attempts
    assert places.ssh_secret in attempts["read_ssh_key"][1]


async def test_full_access_still_confines_code_mode(places: Places) -> None:
    program = (
        "import os\nout = []\n"
        f"for path in ({str(places.ssh_key)!r}, {str(places.credentials)!r}, 'x.txt'):\n"
        "    try:\n"
        "        open(path, 'a' if path == 'x.txt' else 'r').close()\n"
        "        out.append('opened')\n"
        "    except OSError as e:\n"
        "        out.append(e.errno)\n"
        "result = out\n"
    )
    outcome = await run_code(places, program, mode="full-access", network=True)
    assert outcome.ok, outcome.output
    assert result_of(outcome) == [13, 13, 13]
    assert not (places.workspace / "x.txt").exists()


async def test_without_landlock_code_mode_refuses_and_runs_nothing(
    places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(modes, "_support", (0, "no Landlock (test)"))
    calls = Calls()
    outcome = await run_code(places, "tools.echo(ran=True)\nresult = 'ran'", calls)
    assert not outcome.ok
    assert outcome.output.startswith("error: sandbox_unavailable: no Landlock (test)")
    assert outcome.summary == "code: sandbox unavailable"
    assert calls.seen == []
    assert "[result]" not in outcome.output


async def test_a_session_without_a_sandbox_runs_no_program(places: Places) -> None:
    calls = Calls()
    tool = CodeTool(("echo",))
    ctx = ToolContext(places.workspace, {}, bridge=Bridge(("echo",), calls))
    outcome = await tool.run(tool.parse(json.dumps({"program": "tools.echo()"})), ctx)
    assert outcome.output.startswith("error: sandbox_unavailable: this session has no sandbox")
    assert calls.seen == []


async def test_the_bridge_is_the_way_out(places: Places) -> None:
    """What the program may still do: call the session's tools through the bridge."""
    calls = Calls()
    outcome = await run_code(places, "result = tools.echo(path='notes.txt')", calls)
    assert outcome.ok, outcome.output
    assert result_of(outcome) == "ok"
    assert calls.seen == [("echo", '{"path": "notes.txt"}')]


async def test_code_mode_reaches_no_unix_datagram_socket(places: Places) -> None:
    path = places.root / "datagrams.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as service:
        service.bind(str(path))
        service.setblocking(False)
        program = (
            "import socket\n"
            "a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
            f"a.sendto(b'from code mode', {str(path)!r})\n"
        )
        outcome = await run_code(places, program)
        time.sleep(0.05)
        try:
            received = service.recv(100)
        except BlockingIOError:
            received = b""
    assert received == b"", outcome.output
