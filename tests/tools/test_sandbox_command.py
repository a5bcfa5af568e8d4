"""`magi-code sandbox -- CMD` over the real console script: the sandbox a shell command gets,
seen from inside by a real process, with a fake HOME and MC_HOME holding secrets.

Each refusal is paired, where it says something, with the same command under
`--mode full-access` (no sandbox), so that a test fails if the sandbox were off and not only
if the command were wrong.
"""

import errno
import fcntl
import os
import select
import socket
import subprocess
import sys
import termios
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_places import Places, places

from magi_code.tools.limits import SANDBOX_RULESET_SPAWNS
from magi_code.tools.sandbox import modes
from magi_code.tools.sandbox.modes import Sandbox, SandboxSettings, support
from support.exec import MAGI_CODE

__all__ = ["places"]  # the fixture

PYTHON = sys.executable


def sandbox(
    where: Places,
    command: list[str],
    *options: str,
    env: dict[str, str] | None = None,
    **popen: object,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [MAGI_CODE, "sandbox", *options, "--", *command],
        cwd=where.workspace,
        env=env if env is not None else where.env(),
        capture_output=True,
        text=True,
        timeout=30,
        **popen,
    )


def sh(where: Places, script: str, *options: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return sandbox(where, ["sh", "-c", script], *options, **kw)  # type: ignore[arg-type]


def lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return done.stdout.splitlines()


def no_secret(where: Places, done: subprocess.CompletedProcess[str]) -> None:
    for secret in where.secrets():
        assert secret not in done.stdout + done.stderr


def confined(sandbox: Sandbox, where: Places, script: str) -> subprocess.CompletedProcess[str]:
    """`script` in a shell inside `sandbox.shell()`, spawned here (the confinement, and its
    ruleset descriptor, stay the sandbox's: it keeps them for the next command)."""
    confinement = sandbox.shell()
    assert confinement is not None
    return subprocess.run(
        ["sh", "-c", script],
        cwd=where.workspace,
        env=sandbox.env(where.env()),
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=confinement.apply,
    )


@pytest.fixture
def tmp_name() -> Iterator[Path]:
    """A fresh name straight in /tmp, removed afterwards."""
    path = Path("/tmp", f"magi-sandbox-test-{uuid.uuid4().hex}")
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


# --- files ---------------------------------------------------------------------------------

WRITES = """
echo w > made-in-workspace && echo workspace-ok
echo s > src/made-in-src && echo src-ok
echo t > {tmp} && echo tmp-ok
echo p > "$TMPDIR/private" && cat "$TMPDIR/private" && echo "tmpdir=$TMPDIR"
echo h > "$HOME/made-in-home" || echo home-refused
echo g > .git/made || echo git-refused
echo c >> .git/config || echo git-config-refused
echo m > .magi-code/settings.toml || echo magi-code-refused
"""


def test_workspace_write_writes_the_workspace_and_tmp_only(places: Places, tmp_name: Path) -> None:
    done = sh(places, WRITES.format(tmp=tmp_name))
    said = [line for line in lines(done) if line.startswith("tmpdir=")]
    private = said[0].removeprefix("tmpdir=") if said else "(no TMPDIR)"
    assert lines(done) == [
        "workspace-ok",
        "src-ok",
        "tmp-ok",
        "p",
        f"tmpdir={private}",
        "home-refused",
        "git-refused",
        "git-config-refused",
        "magi-code-refused",
    ], done.stderr
    # TMPDIR: the sandbox's private folder in the system's temporary folder, gone at exit.
    assert private.startswith("/tmp/magi-code-sandbox-")
    assert not os.path.exists(private)
    assert (places.workspace / "made-in-workspace").read_text() == "w\n"
    assert tmp_name.read_text() == "t\n"
    assert not (places.home / "made-in-home").exists()
    assert sorted(p.name for p in (places.workspace / ".git").iterdir()) == ["config"]
    assert (places.workspace / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert list((places.workspace / ".magi-code").iterdir()) == []
    assert "Read-only file system" in done.stderr  # .git and .magi-code: a read-only bind


def test_without_the_sandbox_the_same_writes_succeed(places: Places) -> None:
    script = "\n".join(WRITES.strip().splitlines()[4:])  # home, .git, .magi-code
    done = sh(places, script, "--mode", "full-access")
    assert lines(done) == [], done.stderr
    assert (places.home / "made-in-home").exists()
    assert (places.workspace / ".git" / "made").exists()
    assert (places.workspace / ".magi-code" / "settings.toml").exists()


def test_the_protected_folders_cannot_be_moved_removed_or_unmounted(places: Places) -> None:
    script = (
        "mv .git moved || echo move-refused\n"
        "rm -rf .git || echo remove-refused\n"
        "rmdir .magi-code || echo rmdir-refused\n"
        "umount .git 2>/dev/null || echo umount-refused\n"
    )
    done = sh(places, script)
    assert lines(done) == ["move-refused", "remove-refused", "rmdir-refused", "umount-refused"]
    assert (places.workspace / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert (places.workspace / ".magi-code").is_dir()
    assert not (places.workspace / "moved").exists()


def test_read_only_writes_nothing_but_its_private_temp(places: Places, tmp_name: Path) -> None:
    script = (
        "echo w > made || echo workspace-refused\n"
        "echo s > src/made || echo src-refused\n"
        "rm notes.txt || echo remove-refused\n"
        f"echo t > {tmp_name} || echo tmp-refused\n"
        'echo p > "$TMPDIR/private" && cat "$TMPDIR/private"\n'
        "cat notes.txt\n"
    )
    for options in (["--mode", "read-only"], ["--mode=read-only"]):
        done = sh(places, script, *options)
        assert lines(done) == [
            "workspace-refused",
            "src-refused",
            "remove-refused",
            "tmp-refused",
            "p",
            "n0tes",
        ], done.stderr
    assert not (places.workspace / "made").exists()
    assert not (places.workspace / "src" / "made").exists()
    assert not tmp_name.exists()
    # The global setting chooses the same without --mode.
    (places.mc_home / "settings.toml").write_text('[sandbox]\nmode = "read-only"\n')
    assert lines(sh(places, script))[0] == "workspace-refused"


SECRET_READS = """
cat "$HOME/.ssh/id_ed25519" || echo ssh-refused
cat "$MC_HOME/credentials.json" || echo credentials-refused
cp -r "$HOME/.ssh" copied || echo copy-refused
ln -s "$HOME/.ssh/id_ed25519" link && { cat link || echo symlink-refused; }
ln "$HOME/.ssh/id_ed25519" hardlink || echo hardlink-refused
mv "$MC_HOME/credentials.json" src/ || echo move-refused
cat "/proc/self/root$HOME/.ssh/id_ed25519" || echo proc-root-refused
@MAGI_CODE@ sandbox --mode full-access -- cat "$HOME/.ssh/id_ed25519" || echo nested-refused
MAGI_SANDBOX_MODE=full-access @MAGI_CODE@ sandbox -- cat "$MC_HOME/credentials.json" \
  || echo nested-env-refused
"""
REFUSED_READS = [
    "ssh-refused",
    "credentials-refused",
    "copy-refused",
    "symlink-refused",
    "hardlink-refused",
    "move-refused",
    "proc-root-refused",
    "nested-refused",
    "nested-env-refused",
]


@pytest.mark.parametrize("mode", ["workspace-write", "read-only"])
def test_the_secret_places_are_unreadable(places: Places, mode: str) -> None:
    done = sh(places, SECRET_READS.replace("@MAGI_CODE@", MAGI_CODE), "--mode", mode)
    # read-only makes no link to read through; the rest is refused the same.
    expected = [w for w in REFUSED_READS if mode == "workspace-write" or w != "symlink-refused"]
    for word in expected:
        assert word in lines(done), (word, done.stdout, done.stderr)
    no_secret(places, done)
    assert places.credentials.exists()
    assert not (places.workspace / "hardlink").exists()
    assert not (places.workspace / "src" / "credentials.json").exists()


def test_full_access_reads_the_secrets(places: Places) -> None:
    script = 'cat "$HOME/.ssh/id_ed25519" "$MC_HOME/credentials.json"'
    done = sh(places, script, "--mode", "full-access")
    assert done.returncode == 0
    assert all(secret in done.stdout for secret in places.secrets())


def test_the_global_deny_read_and_writable_roots_apply(places: Places) -> None:
    private, extra = places.workspace / "private", places.root / "extra"
    private.mkdir()
    (private / "key").write_text(places.ssh_secret)
    (extra / ".git").mkdir(parents=True)
    (places.mc_home / "settings.toml").write_text(
        f'[sandbox]\ndeny_read = ["{private}"]\nwritable_roots = ["{extra}"]\n'
    )
    script = (
        "cat private/key || echo deny-read-refused\n"
        "cat notes.txt\n"
        "echo s > src/made && echo src-ok\n"
        f"echo e > {extra}/made && echo extra-ok\n"
        f"echo g > {extra}/.git/made || echo extra-git-refused\n"
    )
    done = sh(places, script)
    assert lines(done) == ["deny-read-refused", "n0tes", "src-ok", "extra-ok", "extra-git-refused"]
    no_secret(places, done)
    assert (extra / "made").exists()
    assert not (extra / ".git" / "made").exists()


@pytest.mark.parametrize("trusted", [False, True])
def test_a_project_file_cannot_widen_the_sandbox(places: Places, trusted: bool) -> None:
    (places.workspace / ".magi-code" / "settings.toml").write_text(
        f'[sandbox]\nmode = "full-access"\nnetwork = true\nwritable_roots = ["{places.home}"]\n'
    )
    if trusted:
        (places.mc_home / "settings.toml").write_text(
            f'[permissions]\ntrusted_projects = ["{places.workspace}"]\n'
        )
    script = (
        'cat "$HOME/.ssh/id_ed25519" || echo ssh-refused\n'
        'echo h > "$HOME/made" || echo home-refused\n'
    )
    done = sh(places, script)
    assert lines(done) == ["ssh-refused", "home-refused"], done.stderr
    no_secret(places, done)
    assert not (places.home / "made").exists()


def test_a_project_file_may_narrow_the_sandbox(places: Places) -> None:
    (places.workspace / ".magi-code" / "settings.toml").write_text(
        '[sandbox]\nmode = "read-only"\n'
    )
    done = sh(places, "echo w > made || echo workspace-refused")
    assert lines(done) == ["workspace-refused"]
    assert not (places.workspace / "made").exists()


# --- processes -----------------------------------------------------------------------------


# Every ancestor of the command up to `magi-code sandbox` itself (whose parent is this test):
# with a PID namespace, its init and the tracked process too, both copies of magi-code. /proc
# is the outer namespace's, so pids are read from it, never from getpid().
ANCESTORS = r"""
import os
test = int(os.environ["MAGI_TEST_PID"])

def parent(pid):
    stat = open(f"/proc/{pid}/stat", "rb").read()
    return int(stat[stat.rfind(b")") + 2 :].split()[1])

pid = int(os.readlink("/proc/self"))
while True:
    pid = parent(pid)
    if pid in (0, 1, test):
        break
    said = []
    for name in ("environ", "maps"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                said.append(name + ":" + handle.read(4096).decode("latin-1"))
        except OSError:
            said.append(name + "-refused")
    try:
        os.close(os.open(f"/proc/{pid}/mem", os.O_RDONLY))  # the right is checked here
        said.append("mem-opened")
    except OSError:
        said.append("mem-refused")
    try:
        said.append("fd:" + os.readlink(f"/proc/{pid}/fd/0"))
    except OSError:
        said.append("fd-refused")
    try:
        os.kill(pid, 0)
        said.append("signalled")
    except OSError:
        said.append("signal-refused")
    print(" ".join(said).replace("\n", " "))
"""
REFUSED = "environ-refused maps-refused mem-refused fd-refused signal-refused"


def test_the_parent_process_is_out_of_reach(places: Places) -> None:
    marker = f"parent-marker-{uuid.uuid4().hex}"
    env = places.env(MAGI_TEST_PARENT_MARKER=marker, MAGI_TEST_PID=str(os.getpid()))
    done = sandbox(places, [PYTHON, "-c", ANCESTORS], env=env)
    # magi-code, and with a PID namespace the tracked process and the namespace's init; with
    # the namespace's own /proc none of them (the walk ends at init, PID 1: the next test).
    shown = 0 if modes.own_proc() else 3 if modes.containment() is None else 1
    assert len(lines(done)) == shown, done.stderr
    assert set(lines(done)) <= {REFUSED}, done.stdout
    assert marker not in done.stdout + done.stderr
    # The sandbox is what refuses: without it, the same attempts reach the parent.
    unconfined = sandbox(places, [PYTHON, "-c", ANCESTORS], "--mode", "full-access", env=env)
    assert marker in unconfined.stdout
    assert len(lines(unconfined)) == 1
    assert not set(REFUSED.split()) & set(unconfined.stdout.split()), unconfined.stderr


SEEN = "ls /proc | grep -c '^[0-9]'; cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo"


def test_a_contained_command_sees_its_own_processes_only(places: Places) -> None:
    """The command's /proc is its PID namespace's: the agent, its ancestors and the user's
    other processes (command lines that may hold a secret) are not there, while /proc/self
    and the command's own processes are; the machine's /proc is as it was."""
    if not modes.own_proc():
        pytest.skip(f"no /proc of its own here: {modes.containment() or 'the mount is refused'}")
    marker = f"argv-secret-{uuid.uuid4().hex}"
    mounts = Path("/proc/self/mountinfo").read_text().count(" - proc ")
    outside = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(60)", marker])
    try:
        done = sh(places, f"{SEEN}; cat /proc/self/status | grep -c '^Pid'; ls /proc/{outside.pid}")
        unconfined = sh(places, SEEN, "--mode", "full-access")
    finally:
        outside.kill()
        outside.wait()
    count, seen, has_status = lines(done)[:3]
    assert int(count) <= 6, done.stdout  # init, sh, ls, grep, cat, tr
    assert marker not in done.stdout + done.stderr
    assert "sh -c" in seen and "magi-code" in seen  # the command's, and init's (the agent's copy)
    assert has_status == "1" and "No such file or directory" in done.stderr
    assert marker in unconfined.stdout and int(lines(unconfined)[0]) > 6  # the test can fail
    assert Path("/proc/self/mountinfo").read_text().count(" - proc ") == mounts
    assert Path(f"/proc/{os.getpid()}").exists()


def test_the_ruleset_the_inits_add_their_proc_to_is_made_anew_at_its_bound(
    places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each command's init adds a rule for its /proc to the kept ruleset: the ruleset is
    given SANDBOX_RULESET_SPAWNS times after it was made, then made anew from the same rules,
    and the commands after it see their /proc as before."""
    if not modes.own_proc():
        pytest.skip(f"no /proc of its own here: {modes.containment() or 'the mount is refused'}")
    # The folders the plan listed stand still here (other tests add places beside ours, which
    # would make the confinement anew, rightly, and hide the count this test is about).
    monkeypatch.setattr(modes, "_mtime", lambda folder: 0)
    sandbox = Sandbox(SandboxSettings(), places.workspace, str(places.mc_home), str(places.home))
    first = sandbox.shell()
    assert first is not None and first.own_proc
    for _ in range(SANDBOX_RULESET_SPAWNS - 1):
        assert sandbox.shell() is first
    renewed = sandbox.shell()  # the SANDBOX_RULESET_SPAWNS-th time it is given again
    assert renewed is not None and renewed is not first and renewed.own_proc
    assert renewed.ruleset_fd != first.ruleset_fd and renewed.seccomp == first.seccomp
    # A spawn that took `first` and has not forked yet still can: its ruleset stays open
    # until the next replacement.
    assert subprocess.run(["true"], preexec_fn=first.apply, timeout=30).returncode == 0
    assert lines(confined(sandbox, places, "cat /proc/self/stat | wc -l")) == ["1"]
    assert sandbox.shell() is renewed  # the spawn took it, and so does the next
    for _ in range(SANDBOX_RULESET_SPAWNS - 3):  # it too is given SANDBOX_RULESET_SPAWNS times
        assert sandbox.shell() is renewed
    assert sandbox.shell() is not renewed
    with pytest.raises(OSError):
        os.fstat(first.ruleset_fd)  # closed at the replacement after its own


def test_the_exit_status_is_passed_through(places: Places) -> None:
    assert sh(places, "exit 7").returncode == 7
    assert sh(places, "exit 0").returncode == 0
    assert sh(places, "kill -9 $$").returncode == 128 + 9
    assert sh(places, "kill -TERM $$").returncode == 128 + 15
    assert sandbox(places, ["false"], "--mode", "read-only").returncode == 1


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["touch", "ran"], "put -- before the command"),
        (["--"], "name a command after --"),
        (["--mode", "everything", "--", "touch", "ran"], "--mode takes read-only"),
        (["--mode", "--", "touch", "ran"], "--mode needs a value"),
        (["--bogus", "--", "touch", "ran"], "unknown option --bogus"),
        (["--network", "--network", "--", "touch", "ran"], "--network is given twice"),
        (["--mode", "read-only", "--mode=full-access", "--", "touch", "ran"], "--mode is given"),
    ],
)
def test_bad_usage_exits_2_and_runs_nothing(places: Places, args: list[str], said: str) -> None:
    done = subprocess.run(
        [MAGI_CODE, "sandbox", *args],
        cwd=places.workspace,
        env=places.env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"magi-code sandbox: {said}")
    assert not (places.workspace / "ran").exists()


def test_bad_global_settings_exit_2_and_run_nothing(places: Places) -> None:
    (places.mc_home / "settings.toml").write_text('[sandbox]\nmode = "everything"\n')
    done = sandbox(places, ["touch", "ran"])
    assert done.returncode == 2
    assert not (places.workspace / "ran").exists()


def test_help_names_the_modes(places: Places) -> None:
    done = subprocess.run(
        [MAGI_CODE, "sandbox", "--help"],
        env=places.env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0
    assert "read-only, workspace-write or full-access" in done.stdout


def test_without_a_pid_namespace_it_runs_and_says_so(places: Places) -> None:
    done = sandbox(places, ["touch", "ran"], env=places.env(MC_NO_PID_NAMESPACE="1"))
    assert done.returncode == 0 and (places.workspace / "ran").exists()
    assert done.stderr == (
        "magi-code sandbox: processes not contained here (MC_NO_PID_NAMESPACE=1 turns PID "
        "namespaces off): what the command leaves in a new session may outlive it\n"
    )
    assert sandbox(places, ["true"]).stderr == ""  # contained: nothing said


def test_without_landlock_nothing_runs(places: Places) -> None:
    env = places.env(MC_NO_LANDLOCK="1")
    done = sandbox(places, ["touch", "ran"], env=env)
    assert done.returncode == 2
    assert done.stderr.startswith("magi-code sandbox: no OS sandbox here")
    assert "MC_NO_LANDLOCK=1" in done.stderr
    assert "nothing ran" in done.stderr
    assert not (places.workspace / "ran").exists()
    # full-access asks for no sandbox, so it runs there too.
    assert sandbox(places, ["touch", "ran"], "--mode", "full-access", env=env).returncode == 0
    assert (places.workspace / "ran").exists()


# --- the network ---------------------------------------------------------------------------

CONNECT = """
import socket, sys
tcp_port, udp_port, abstract = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def attempt(name, action):
    try:
        action()
        print(name, "sent")
    except OSError as refused:
        print(name, "refused", refused.errno)
def tcp():
    socket.create_connection(("127.0.0.1", tcp_port), 2).sendall(b"tcp")
def udp():
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"udp", ("127.0.0.1", udp_port))
def unix():
    s = socket.socket(socket.AF_UNIX)
    s.connect("\\0" + abstract)
    s.sendall(b"abstract")
attempt("tcp", tcp)
attempt("udp", udp)
attempt("abstract", unix)
"""


@pytest.mark.parametrize("network", [False, True])
def test_the_network_is_off_unless_asked_for(places: Places, network: bool) -> None:
    abstract = f"magi-sandbox-test-{uuid.uuid4().hex}"
    with (
        socket.create_server(("127.0.0.1", 0)) as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
        socket.socket(socket.AF_UNIX) as unix,
    ):
        udp.bind(("127.0.0.1", 0))
        unix.bind("\0" + abstract)
        unix.listen()
        listeners = {"tcp": tcp, "udp": udp, "abstract": unix}
        for listener in listeners.values():
            listener.setblocking(False)
        ports = [str(tcp.getsockname()[1]), str(udp.getsockname()[1]), abstract]
        options = ["--network"] if network else []
        done = sandbox(places, [PYTHON, "-c", CONNECT, *ports], *options)
        # Scoping abstract Unix sockets came with Landlock ABI 6.
        checked = ["tcp", "udp"] + (["abstract"] if support()[0] >= 6 else [])
        seen = set(select.select(list(listeners.values()), [], [], 0.5 if network else 0.3)[0])
        for name in checked:
            reached = listeners[name] in seen
            assert reached is network, (name, done.stdout, done.stderr)
            said = "sent" if network else "refused"
            assert f"{name} {said}" in done.stdout, (name, done.stdout, done.stderr)
        if not network:
            assert f"tcp refused {errno.EPERM}" in done.stdout


# --- what the fallbacks still hold ---------------------------------------------------------


def test_without_a_mount_namespace_git_stays_read_only(
    places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the child may not have its own mounts, `.git` and `.magi-code` are planned as
    hidden from writes instead of bound read-only."""
    monkeypatch.setattr(modes, "_mounts", False)
    without_mounts = Sandbox(
        SandboxSettings(), places.workspace, str(places.mc_home), str(places.home)
    )
    confinement = without_mounts.shell()
    assert confinement is not None
    assert confinement.read_only == ()
    script = (
        "echo g > .git/made || echo git-refused\n"
        "echo m > .magi-code/made || echo magi-code-refused\n"
        "echo s > src/made && echo src-ok\n"
        'cat "$HOME/.ssh/id_ed25519" || echo ssh-refused\n'
    )
    done = confined(without_mounts, places, script)
    assert lines(done) == ["git-refused", "magi-code-refused", "src-ok", "ssh-refused"]
    assert "Permission denied" in done.stderr  # Landlock's refusal, not a read-only mount
    assert not (places.workspace / ".git" / "made").exists()
    no_secret(places, done)


# --- holes an attacker found, now closed ------------------------------------------------------


def confined_run(sandbox: Sandbox, where: Places, script: str) -> list[str]:
    return lines(confined(sandbox, where, script))


def test_a_secret_place_made_during_the_session_is_hidden_too(places: Places) -> None:
    confined = Sandbox(SandboxSettings(), places.workspace, str(places.mc_home), str(places.home))
    aws = places.home / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(places.credentials_secret)
    said = confined_run(confined, places, 'cat "$HOME/.aws/credentials" || echo aws-refused')
    assert said == ["aws-refused"]


def test_a_git_file_stays_read_only(places: Places) -> None:
    (places.workspace / ".git" / "config").unlink()
    (places.workspace / ".git").rmdir()
    (places.workspace / ".git").write_text("gitdir: /elsewhere/.git/worktrees/w\n")
    done = sh(places, "echo 'gitdir: /tmp/evil' > .git || echo git-refused")
    assert lines(done) == ["git-refused"]
    assert (places.workspace / ".git").read_text() == "gitdir: /elsewhere/.git/worktrees/w\n"


def test_a_confined_command_cannot_read_another_terminal(places: Places) -> None:
    master, slave = os.openpty()
    try:
        typed = f"typed-{uuid.uuid4().hex}"
        os.write(master, typed.encode() + b"\n")  # waits in the terminal's input queue
        reader = f"print(open({os.ttyname(slave)!r}).readline())"
        done = sandbox(
            places,
            [PYTHON, "-c", reader],
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # as the shell tool runs it: no controlling terminal
        )
    finally:
        os.close(master)
        os.close(slave)
    assert typed not in done.stdout


def _legacy_tiocsti() -> bool:
    try:
        return Path("/proc/sys/dev/tty/legacy_tiocsti").read_text().strip() == "1"
    except OSError:
        return True  # kernels before 6.2 always allowed it


@pytest.mark.skipif(not _legacy_tiocsti(), reason="this kernel refuses TIOCSTI (legacy off)")
def test_a_confined_command_cannot_type_into_its_terminal(places: Places) -> None:
    master, slave = os.openpty()
    try:
        injected = f"echo injected-{uuid.uuid4().hex}\n"
        typer = f"import fcntl, termios\nfor c in {injected.encode()!r}:\n"
        typer += "    fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))\n"
        done = sandbox(
            places,
            [PYTHON, "-c", typer],
            stdin=slave,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # the user's terminal
        )
        assert done.returncode in (0, 1), done.stderr
        os.set_blocking(slave, False)
        try:
            queued = os.read(slave, 4096)
        except BlockingIOError:
            queued = b""
    finally:
        os.close(master)
        os.close(slave)
    assert injected.encode() not in queued
