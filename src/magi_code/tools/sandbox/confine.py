"""The child's side of the sandbox: what runs between fork and exec, and nothing else.

`Confinement.apply` is the `preexec_fn` of a sandboxed spawn. Everything it needs was made in
the parent (the Landlock ruleset descriptor, the seccomp filter's bytes, the capability
structs, the mount flags), so the child only makes system calls, in this order:
1. where `.git`-like folders must stay read-only in a writable root: a private mount
   namespace (a user namespace too when we are not root) and a read-only bind mount of each;
2. `no_new_privs`, so no exec can gain a privilege (setuid, file capabilities);
3. every capability dropped, bounding and ambient sets included, so a root child is an
   ordinary process: it cannot read another process's `/proc/<pid>/environ` or override a
   file's mode;
4. `landlock_restrict_self`, then the seccomp filter.
A failure raises, and the spawn fails in the parent: nothing runs unconfined.
"""

import ctypes
import os

from magi_code.records import field, record
from magi_code.tools.sandbox.landlock import RESTRICT_SELF

_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT = 38, 24, 47
_PR_CAP_AMBIENT_CLEAR_ALL, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 4, 22, 2
_PR_SET_DUMPABLE = 4
_CAPABILITY_VERSION_3 = 0x20080522
_CLONE_NEWNS, _CLONE_NEWUSER = 0x00020000, 0x10000000
_MS_RDONLY, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
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
    user_namespace: bool = False  # we are not root: the mounts need a user namespace
    _buffers: list[object] = field(default_factory=list)

    @classmethod
    def make(
        cls, ruleset_fd: int, seccomp: bytes, read_only: tuple[str, ...] = ()
    ) -> "Confinement":
        mounts = tuple(
            (os.fsencode(p), os.statvfs(p).f_flag & _KEPT_MOUNT_FLAGS) for p in read_only
        )
        return cls(ruleset_fd, seccomp, mounts, os.geteuid() != 0)

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
        _, program, header, data, ids, last_cap = self._buffers
        if self.read_only:
            self._mount_read_only(ids)  # type: ignore[arg-type]
        _check(_prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        for capability in range(int(last_cap) + 1):  # type: ignore[call-overload]
            _prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)  # EPERM without CAP_SETPCAP: none held
        _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        _check(_capset(ctypes.byref(header), ctypes.byref(data)))  # type: ignore[arg-type]
        _check(_syscall(RESTRICT_SELF, self.ruleset_fd, 0))
        _check(_prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0))  # type: ignore[arg-type]

    def _mount_read_only(self, ids: tuple[bytes, bytes]) -> None:
        if self.user_namespace:
            _check(_unshare(_CLONE_NEWUSER | _CLONE_NEWNS))
            for name, line in (("setgroups", b"deny"), ("uid_map", ids[0]), ("gid_map", ids[1])):
                fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
        else:
            _check(_unshare(_CLONE_NEWNS))
        _check(_mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None))
        for path, kept in self.read_only:
            _check(_mount(path, path, None, _MS_BIND, None))
            _check(_mount(None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | kept, None))


def can_bind_read_only() -> bool:
    """Whether a child of this process can do step 1 (a private mount namespace and a
    read-only bind mount), tried in a throwaway child on a throwaway folder."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="magi-code-probe-")
    try:
        probe = Confinement.make(-1, b"", (folder,))
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                probe._mount_read_only(probe._buffers[4])  # type: ignore[arg-type]
                os._exit(0)
            except BaseException:  # noqa: BLE001 - any failure is a no
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _check(result: int) -> None:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
