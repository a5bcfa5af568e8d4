"""The child's side of the sandbox: what runs between fork and exec, and nothing else.

`Confinement.apply` is the `preexec_fn` of a sandboxed spawn. Everything it needs was made in
the parent (the Landlock ruleset descriptor, the seccomp filter's bytes, the capability
structs, the mount flags), so the child only makes system calls, in this order:
1. namespaces: where `.git`-like folders must stay read-only in a writable root, a private
   mount namespace and a read-only bind mount of each; for a shell command (`contain`), a PID
   namespace for its children and, with `own_proc`, a private mount namespace too; a user
   namespace for them when we are not root;
2. with `contain`, the split into the tracked process, the namespace's init and the command
   (contain.py); init first mounts a /proc of its namespace on /proc (`own_proc`), so the
   command sees only its own processes, not the agent, its ancestors or the user's others,
   and adds a rule granting it (read and execute, as the machine's /proc had) to the ruleset;
3. in init (and so the command it forks; or in the one child without `contain`):
   `no_new_privs`, so no exec can gain a privilege (setuid, file capabilities);
4. every capability dropped, bounding and ambient sets included, so a root child is an
   ordinary process: it cannot read another process's `/proc/<pid>/environ` or override a
   file's mode;
5. `landlock_restrict_self`, then the seccomp filter (after every mount: Landlock refuses a
   mount to a confined process).
A failure raises, and the spawn fails in the parent: nothing runs unconfined.
"""

import ctypes
import os

from magi_code.records import field, record
from magi_code.tools.sandbox.contain import supervise
from magi_code.tools.sandbox.landlock import RESTRICT_SELF, grant_beneath
from magi_code.tools.sandbox.plan import RUN

_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT = 38, 24, 47
_PR_CAP_AMBIENT_CLEAR_ALL, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 4, 22, 2
_PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 3, 4
_CAPABILITY_VERSION_3 = 0x20080522
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
_MS_RDONLY, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8
_KEPT_MOUNT_FLAGS = 2 | 4 | 8 | 1024 | 2048 | (1 << 21)  # nosuid nodev noexec atime flags

_libc = ctypes.CDLL(None, use_errno=True)
_prctl, _syscall, _unshare, _mount, _capset = (
    _libc.prctl,
    _libc.syscall,
    _libc.unshare,
    _libc.mount,
    _libc.capset,
)
for _fn in (_prctl, _syscall, _unshare, _mount, _capset):
    _fn.restype = ctypes.c_long
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


class _Filter(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _last_capability() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap", "rb") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return 63


def mark_undumpable() -> None:
    """No other process of the user may read this one's memory or environment via /proc."""
    _prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


@record
class Confinement:
    """Made in the parent for one spawn; `apply` runs in the child."""

    ruleset_fd: int
    seccomp: bytes
    read_only: tuple[tuple[bytes, int], ...] = ()  # (path, mount flags kept) to bind read-only
    user_namespace: bool = False  # we are not root: the namespaces need a user namespace
    contain: bool = False  # the command and all it starts live in a PID namespace of their own
    own_proc: bool = False  # with `contain`: /proc shows that namespace only
    parent: int = 0  # the spawning process (the child dies with it, when `contain`)
    _buffers: list[object] = field(default_factory=list)

    @classmethod
    def make(
        cls,
        ruleset_fd: int,
        seccomp: bytes,
        read_only: tuple[str, ...] = (),
        contain: bool = False,
        own_proc: bool = False,
    ) -> "Confinement":
        mounts = tuple(
            (os.fsencode(p), os.statvfs(p).f_flag & _KEPT_MOUNT_FLAGS) for p in read_only
        )
        own = contain and own_proc
        return cls(ruleset_fd, seccomp, mounts, os.geteuid() != 0, contain, own, os.getpid())

    def __post_init__(self) -> None:
        code = ctypes.create_string_buffer(self.seccomp, len(self.seccomp))
        program = _Filter(len(self.seccomp) // 8, ctypes.addressof(code))
        header = _CapHeader(_CAPABILITY_VERSION_3, 0)
        data = (_CapData * 2)()
        ids = (
            f"{os.geteuid()} {os.geteuid()} 1".encode(),
            f"{os.getegid()} {os.getegid()} 1".encode(),
        )
        self._buffers.extend([code, program, header, data, ids, _last_capability()])

    def apply(self) -> None:
        """In the child, after fork, before exec. Raises OSError on any refusal."""
        if self.read_only or self.contain:
            self._enter_namespaces(self._buffers[4])  # type: ignore[arg-type]
        if self.contain:
            supervise(self.parent, self._confine)  # returns in the command only
        else:
            self._confine()

    def _confine(self) -> None:
        """Steps 3 to 5 (in the namespace's init, with `contain`), its /proc first."""
        _, program, header, data, _, last_cap = self._buffers
        if self.own_proc:
            mount_proc()
            # Its entries are new inodes, and Landlock skips the folder a mount covers: no rule
            # made before names them. This rule goes into the ruleset the sandbox keeps for the
            # next commands too (inert once this namespace is gone; SANDBOX_RULESET_SPAWNS).
            grant_beneath(self.ruleset_fd, b"/proc", RUN)
        _check(_prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        for capability in range(int(last_cap) + 1):  # type: ignore[call-overload]
            _prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)  # EPERM without CAP_SETPCAP: none held
        _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        _check(_capset(ctypes.byref(header), ctypes.byref(data)))  # type: ignore[arg-type]
        _check(_syscall(RESTRICT_SELF, self.ruleset_fd, 0))
        _check(_prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0))  # type: ignore[arg-type]

    def _enter_namespaces(self, ids: tuple[bytes, bytes]) -> None:
        private_mounts = bool(self.read_only) or self.own_proc
        flags = (_CLONE_NEWNS if private_mounts else 0) | (_CLONE_NEWPID if self.contain else 0)
        if self.user_namespace:
            # The maps are written through /proc/self, whose files are root's while the process
            # is not dumpable (magi-code never is): dumpable for these three writes only.
            dumpable = _prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
            _prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
            try:
                _check(_unshare(_CLONE_NEWUSER | flags))
                for name, line in (
                    ("setgroups", b"deny"),
                    ("uid_map", ids[0]),
                    ("gid_map", ids[1]),
                ):
                    fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
                    try:
                        os.write(fd, line)
                    finally:
                        os.close(fd)
            finally:
                _prctl(_PR_SET_DUMPABLE, dumpable, 0, 0, 0)
        else:
            _check(_unshare(flags))
        if not private_mounts:
            return
        _check(_mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None))  # nothing propagates out
        for path, kept in self.read_only:
            _check(_mount(path, path, None, _MS_BIND, None))
            _check(_mount(None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | kept, None))


def mount_proc() -> None:
    """In a PID namespace's init, in a private mount namespace: a /proc of this namespace over
    the machine's (it goes with the mount namespace, when its last process ends)."""
    _check(_mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None))


def can_bind_read_only() -> bool:
    """Whether a child of this process can do step 1 for `.git` (a private mount namespace
    and a read-only bind mount), tried in a throwaway child on a throwaway folder."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="magi-code-probe-")
    try:
        return _tried(Confinement.make(-1, b"", (folder,)), fork=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def can_contain(own_proc: bool = False) -> bool:
    """Whether a child of this process can do step 1 for a shell command (a PID namespace for
    its children, and with `own_proc` a private mount namespace) and fork the namespace's
    init (which mounts its /proc, with `own_proc`), tried in a throwaway child."""
    return _tried(Confinement.make(-1, b"", contain=True, own_proc=own_proc), fork=True)


def _tried(probe: Confinement, fork: bool) -> bool:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            probe._enter_namespaces(probe._buffers[4])  # type: ignore[arg-type]
            if fork:
                init = os.fork()
                if init == 0:
                    try:
                        if probe.own_proc:
                            mount_proc()
                    except BaseException:  # noqa: BLE001 - any failure is a no
                        os._exit(1)
                    os._exit(0)
                os._exit(os.waitstatus_to_exitcode(os.waitpid(init, 0)[1]))
            os._exit(0)
        except BaseException:  # noqa: BLE001 - any failure is a no
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _check(result: int) -> None:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
