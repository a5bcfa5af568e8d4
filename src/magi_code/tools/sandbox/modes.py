"""One session's sandbox: which confinement a spawn gets, and whether the kernel offers one.

The settings are checked in settings.py (light, for startup); here they become paths.
`Sandbox.shell()` and `Sandbox.code_mode()` give the `Confinement` of a spawn; it is made
again only when what it was planned from changed (a folder listed to plan around a secret
place gained or lost an entry, `.git` appeared, the mode changed), so a command costs a few
`stat` calls, not a plan. Where the kernel offers no sandbox, `support()` says why once per
process, `shell()` gives None (commands run as the user, as the faces say at start) and
`code_mode()` raises: a program never runs unconfined. MC_NO_LANDLOCK=1 makes this process
behave as on such a kernel (for tests and for trying it).

A shell command also gets a PID namespace of its own (contain.py), so that nothing it starts
outlives it; where the kernel refuses one (no user namespaces for us), `containment()` says
why, commands run confined but uncontained (as before: what leaves their process group may
outlive them), and `describe()` and the first turn's notice say so. MC_NO_PID_NAMESPACE=1
makes this process behave as where the kernel refuses it. A contained command's /proc shows
its own namespace only; where the kernel refuses that mount (`own_proc()`), it shows the
machine's processes (their command lines; never their environment or memory, which Landlock
and the dropped capabilities keep), and `describe()` says so.
"""

import atexit
import os
import shutil
import struct
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from magi_code.records import record, replace
from magi_code.tools import ToolsError
from magi_code.tools.limits import SANDBOX_RULESET_SPAWNS
from magi_code.tools.paths import USER_CREDENTIALS, inside
from magi_code.tools.sandbox import plan
from magi_code.tools.sandbox.settings import DEFAULT_MODE, checked

TYPE_CHECKING = False
if TYPE_CHECKING:
    from magi_code.tools.base import Access
    from magi_code.tools.paths import Protected
    from magi_code.tools.sandbox import seccomp
    from magi_code.tools.sandbox.confine import Confinement
    from magi_code.tools.sandbox.settings import Mode

# Never readable inside the sandbox (under the user's home), besides MC_HOME and `deny_read`.
SECRET_PLACES = tuple(
    dict.fromkeys(
        (
            ".ssh", ".gnupg", ".aws", ".config/gcloud", ".kube", ".docker/config.json",
            ".netrc", ".git-credentials", *USER_CREDENTIALS,
        )
    )
)  # fmt: skip


class SandboxUnavailable(ToolsError):
    """No OS sandbox here: what must run confined does not run."""

    code: Literal["sandbox_unavailable"] = "sandbox_unavailable"


@record
class SandboxSettings:
    mode: "Mode" = DEFAULT_MODE
    network: bool = False
    writable_roots: tuple[Path, ...] = ()
    deny_read: tuple[Path, ...] = ()

    @classmethod
    def from_settings(cls, table: object, mode: str | None = None) -> "SandboxSettings":
        """The `[sandbox]` table (settings.py checks it; SandboxError); `mode`
        (MAGI_SANDBOX_MODE) overrides its mode."""
        chosen, network, roots, denied = checked(table, mode)
        return cls(chosen, network, _paths(roots), _paths(denied))


def _paths(values: list[str]) -> tuple[Path, ...]:
    return tuple(Path(os.path.expanduser(p)).resolve() for p in values)


def _account_home() -> str | None:
    """The home /etc/passwd gives this user (the secret places are there whatever $HOME says)."""
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def keep_secrets() -> None:
    """No other process of the user (sandboxed or not) reads this one's environment or memory
    through /proc (Linux: not dumpable)."""
    if sys.platform.startswith("linux"):
        from magi_code.tools.sandbox.confine import mark_undumpable

        mark_undumpable()


_support: tuple[int, str | None] | None = None


def support() -> tuple[int, str | None]:
    """(Landlock ABI, None) when this process can sandbox; (0, why not) otherwise."""
    global _support
    if _support is None:
        _support = _probe()
    return _support


def _probe() -> tuple[int, str | None]:
    if not sys.platform.startswith("linux"):
        return 0, f"no OS sandbox on {sys.platform} yet"
    from magi_code.tools.sandbox import landlock, seccomp

    if os.environ.get("MC_NO_LANDLOCK") == "1":
        return 0, "Landlock is turned off (MC_NO_LANDLOCK=1)"
    if seccomp.machine() is None:
        return 0, "seccomp filters are not built for this processor"
    version = landlock.abi()
    if version < 1:
        return 0, "this kernel offers no Landlock"
    return version, None


_mounts: bool | None = None


def _can_mount() -> bool:
    """Whether a child may bind a folder read-only in a private mount namespace (as root, or
    in a user namespace): tried once per process, in a throwaway child."""
    global _mounts
    if _mounts is None:
        from magi_code.tools.sandbox.confine import can_bind_read_only

        _mounts = can_bind_read_only()
    return _mounts


_contained: tuple[str | None, bool] | None = None  # (why not contained, own /proc)


def containment() -> str | None:
    """None when a shell command's processes can be contained (a PID namespace of its own);
    else why not. Tried once per process, in a throwaway child."""
    return _containment()[0]


def own_proc() -> bool:
    """Whether a contained command's /proc can show its own PID namespace only (a mount of
    proc in a private mount namespace: refused in some containers, whose /proc is partly
    masked). Tried with `containment()`."""
    return _containment()[1]


def _containment() -> tuple[str | None, bool]:
    """Tried once: the whole containment first (one throwaway child, where it works), then
    the PID namespace alone."""
    global _contained
    if _contained is None:
        from magi_code.tools.sandbox.confine import can_contain

        if os.environ.get("MC_NO_PID_NAMESPACE") == "1":
            _contained = ("MC_NO_PID_NAMESPACE=1 turns PID namespaces off", False)
        elif can_contain(own_proc=True):
            _contained = (None, True)
        elif can_contain():
            _contained = (None, False)
        elif os.geteuid() != 0:
            _contained = ("the kernel refuses us a user namespace with a PID namespace", False)
        else:
            _contained = ("the kernel refuses us a PID namespace", False)
    return _contained


class Sandbox:
    """One session's sandbox: its settings, workspace, secret places and private temp folder."""

    def __init__(
        self, settings: SandboxSettings, workspace: Path, mc_home: str, user_home: str | None
    ) -> None:
        self.settings = settings
        self.mode: Mode = settings.mode  # a face may switch it (Mission Control's /permissions)
        self.workspace = workspace.resolve()
        places = [Path(mc_home)]
        for home in dict.fromkeys(h for h in (user_home, _account_home()) if h):
            places += [Path(home, name) for name in SECRET_PLACES]
        secrets = [p.resolve() for p in (*places, *settings.deny_read)]
        self.secret_places = tuple(dict.fromkeys(secrets))
        self._temp: Path | None = None
        self.auto = False  # approval mode `auto`: what the sandbox contains runs unasked
        self._told = False
        # The last confinement made for shell commands (True) and Code Mode (False), and the
        # ruleset it replaced: a spawn that took the old one may not have forked yet (a
        # spawn yields before it forks), so that one is closed at the next replacement.
        self._made: dict[bool, _Made] = {}
        self._retired: dict[bool, int] = {}

    @property
    def secrets(self) -> tuple[Path, ...]:
        """The secret places that exist now (one made later is hidden from then on)."""
        return tuple(p for p in self.secret_places if os.path.lexists(p))

    def confines_shell(self) -> bool:
        """Whether shell commands run confined (a mode other than full-access, and support)."""
        return self.mode != "full-access" and support()[1] is None

    def contains(self, tool: str, access: "Access", protected: "Protected") -> bool:
        """Whether a call that the rules would ask about may run unasked in `auto`: a shell
        command run in the sandbox (read-only or workspace-write), or, in workspace-write, an
        edit whose every path lies in the workspace, off protected paths and off `.git` and
        `.magi-code`. Never where the sandbox is off or unavailable."""
        if not self.auto or not self.confines_shell():
            return False
        if access.kind == "shell":
            return tool == "shell"
        if access.kind != "write" or self.mode != "workspace-write" or not access.paths:
            return False
        return all(
            inside(path, self.workspace)
            and protected.floor("write", path) == "allow"
            and not set(path.relative_to(self.workspace).parts[:1]) & set(plan.READ_ONLY_NAMES)
            for path in access.paths
        )

    def unavailable_notice(self) -> str | None:
        """Once per session, where a sandbox was asked for and the kernel offers none, or
        offers one that cannot contain a command's processes."""
        if self._told or self.mode == "full-access":
            return None
        why = support()[1]
        if why is None:
            uncontained = containment()
            if uncontained is None:
                return None
            self._told = True
            return (
                f"The OS sandbox cannot contain a command's processes here ({uncontained}): "
                "one a command leaves in a new session (setsid, a daemon) may outlive it."
            )
        self._told = True
        return (
            f"No OS sandbox here ({why}): shell commands run with your rights, `auto` asks as "
            "`ask` does, and Code Mode programs do not run."
        )

    def temp(self) -> Path:
        """The private temporary folder (0700), made at the first sandboxed spawn and removed
        at exit; one a process left behind (it ended without running its exit handlers) is
        removed when the next one is made."""
        if self._temp is None:
            sweep_temp_folders()
            prefix = f"{TEMP_PREFIX}{os.getpid()}-"
            self._temp = Path(tempfile.mkdtemp(prefix=prefix))
            atexit.register(shutil.rmtree, self._temp, True)
        return self._temp

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """A confined command's environment: TMPDIR is the private temporary folder."""
        return {**env, "TMPDIR": str(self.temp())}

    def describe(self) -> str:
        """The mode as the faces and the model see it."""
        if self.mode == "full-access":
            return "full-access (no sandbox)"
        if support()[1] is not None:
            return f"{self.mode} requested, but unavailable: {support()[1]}"
        said = f"{self.mode}, network {'on' if self.settings.network else 'off'}"
        uncontained = containment()
        if uncontained is not None:
            said += f", processes not contained ({uncontained})"
        elif not own_proc():
            said += ", other processes visible in /proc"
        return said

    def shell(self) -> "Confinement | None":
        """The confinement of a shell command; None when commands run unconfined."""
        if not self.confines_shell():
            return None
        writable = [self.temp()]
        if self.mode == "workspace-write":
            writable += [self.workspace, *self.settings.writable_roots]
            writable += [Path(p).resolve() for p in plan.SHARED_TEMP if os.path.isdir(p)]
        protected = tuple(
            root / name
            for root in (self.workspace, *self.settings.writable_roots)
            for name in plan.READ_ONLY_NAMES
            if os.path.lexists(root / name) and not (root / name).is_symlink()
        )  # a folder, or a worktree's or submodule's `.git` file
        mount = bool(protected) and self.mode == "workspace-write" and _can_mount()
        hidden = [(p, plan.EVERYTHING) for p in (*self.secrets, *plan.TERMINALS)]
        if not mount:
            hidden += [(p, plan.WRITE) for p in protected]
        grants = [(Path("/"), plan.RUN)]
        grants += [(Path(p), plan.READ_FILE | plan.WRITE_FILE) for p in plan.DEVICES]
        grants += [(p, plan.RUN | plan.WRITE) for p in writable]
        read_only = tuple(str(p) for p in protected) if mount else ()
        return self._confinement(grants, hidden, read_only, self.settings.network, True)

    def code_mode(self, child_script: Path) -> "Confinement":
        """The confinement of a Code Mode interpreter, in every mode: read the workspace and
        Python's own files, execute only the interpreter, write nothing, no network, no
        processes. Raises SandboxUnavailable where there is no sandbox."""
        why = support()[1]
        if why is not None:
            raise SandboxUnavailable(why)
        executable = Path(os.path.realpath(sys.executable))
        readable = [self.workspace, child_script.resolve().parent, *_python_roots()]
        readable += [Path(p) for p in plan.SYSTEM_LIBRARIES if os.path.exists(p)]
        grants = [(p, plan.READ) for p in readable]
        runnable = (executable, *_interpreter(executable))
        grants += [(p, plan.READ_FILE | plan.EXECUTE) for p in runnable]
        hidden = [(p, plan.EVERYTHING) for p in self.secrets]
        return self._confinement(grants, hidden, (), False, False)

    def _confinement(
        self,
        grants: list[tuple[Path, int]],
        hidden: list[tuple[Path, int]],
        read_only: tuple[str, ...],
        network: bool,
        processes: bool,
    ) -> "Confinement":
        """The confinement of these grants; the last one made for the same inputs while none
        of the folders its plan listed has changed (a new or removed entry changes a
        folder's modification time), else a new one (its ruleset replacing the old). A
        ruleset the commands' inits add their /proc to is made anew from the same rules
        every SANDBOX_RULESET_SPAWNS."""
        from magi_code.tools.sandbox import landlock, seccomp
        from magi_code.tools.sandbox.confine import Confinement

        contain = processes and containment() is None  # a shell command: its PID namespace
        key = (tuple(grants), tuple(hidden), read_only, network, processes, contain)
        kept = self._made.get(processes)
        if kept is not None and kept.key == key and all(_mtime(f) == t for f, t in kept.listed):
            kept.given += 1
            made = kept.confinement
            if not made.own_proc or kept.given % SANDBOX_RULESET_SPAWNS:
                return made
            fd = landlock.ruleset(support()[0], kept.rules, network=network)
            self._retire(processes, made.ruleset_fd)
            kept.confinement = replace(made, ruleset_fd=fd, _buffers=[])  # made again
            return kept.confinement
        listed: list[tuple[Path, int]] = []

        def children(folder: Path) -> Iterable[Path]:
            listed.append((folder, _mtime(folder)))
            return _children(folder)

        rules = plan.rules(grants, hidden, children)
        fd = landlock.ruleset(support()[0], rules, network=network)
        program = seccomp.program(_arch(), network=network, processes=processes)
        made = Confinement.make(fd, program, read_only, contain, contain and own_proc())
        if kept is not None:
            self._retire(processes, kept.confinement.ruleset_fd)
        self._made[processes] = _Made(key, tuple(listed), rules, made)
        return made

    def _retire(self, processes: bool, ruleset_fd: int) -> None:
        """Keep a replaced ruleset open until the next replacement; close the one before."""
        older = self._retired.get(processes)
        if older is not None:
            os.close(older)
        self._retired[processes] = ruleset_fd


@record(frozen=False)
class _Made:
    """A confinement kept for the next spawns: what it was made of, the folders its plan
    listed (tools/sandbox/plan.py), its rules, and how often it was given since."""

    key: object
    listed: tuple[tuple[Path, int], ...]
    rules: tuple[plan.Rule, ...]
    confinement: "Confinement"
    given: int = 0


TEMP_PREFIX = "magi-code-sandbox-"  # then the owning process's id, a dash and a random part


def sweep_temp_folders() -> None:
    """Remove the private temporary folders of this user's processes that are gone."""
    base = tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(base) if n.startswith(TEMP_PREFIX)]
    except OSError:
        return
    for name in names:
        owner = name[len(TEMP_PREFIX) :].split("-", 1)[0]
        folder = os.path.join(base, name)
        try:
            mine = os.lstat(folder).st_uid == os.getuid()
        except OSError:
            continue
        if mine and owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mtime(folder: Path) -> int:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return -1


def _arch() -> "seccomp.Arch":
    from magi_code.tools.sandbox import seccomp

    arch = seccomp.machine()
    assert arch is not None  # support() checked it
    return arch


def _children(folder: Path) -> Iterable[Path]:
    try:
        with os.scandir(folder) as entries:
            return [Path(entry.path) for entry in entries]
    except OSError:
        return []


def _python_roots() -> list[Path]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found = {Path(os.path.realpath(p)) for p in roots if p}
    return sorted(p for p in found if p != Path("/"))


def _interpreter(executable: Path) -> list[Path]:
    """The ELF program interpreter (dynamic loader) `executable` names, if any: exec opens it
    too, so it needs the same right."""
    try:
        with open(executable, "rb") as elf:
            head = elf.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit little-endian only
                return []
            phoff, phentsize, phnum = (
                struct.unpack_from("<Q", head, 32)[0],
                *struct.unpack_from("<HH", head, 54),
            )
            elf.seek(phoff)
            table = elf.read(phentsize * phnum)
            for i in range(phnum):
                kind, _, offset, _, _, size = struct.unpack_from("<IIQQQQ", table, i * phentsize)
                if kind == 3:  # PT_INTERP
                    elf.seek(offset)
                    name = elf.read(size).rstrip(b"\0").decode()
                    return [Path(os.path.realpath(name))]
    except (OSError, struct.error, UnicodeDecodeError):
        pass
    return []
