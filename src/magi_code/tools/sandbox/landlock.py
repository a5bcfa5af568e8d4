"""Landlock: the kernel ABI, and a ruleset built in the parent for the child to enforce.

The ruleset is made here, before the fork: one `landlock_create_ruleset` handling every right
the kernel's ABI knows (so an unlisted right is denied), one `landlock_add_rule` per planned
path (opened O_PATH, never following a final symlink) and, from ABI 4, no TCP port rule when
the network is off. The child only calls `landlock_restrict_self` on the descriptor
(`confine.py`). From ABI 6 the domain is scoped: no signal reaches a process outside it, and
(without the network) no abstract Unix socket outside it is reachable.

Rights by ABI (linux/landlock.h): 1 the file-system basics, 2 REFER, 3 TRUNCATE, 4 TCP
bind/connect, 5 IOCTL_DEV (not handled here: device ioctls stay as the user's), 6 scoping.
"""

import ctypes
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from magi_code.tools.sandbox.plan import EXECUTE, READ_FILE, TRUNCATE, WRITE_FILE, Rule

_CREATE_RULESET, _ADD_RULE = 444, 445  # the same numbers on x86_64 and aarch64
RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE  # all a rule on a non-directory takes

_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1}  # ABI 3 and later: up to TRUNCATE
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi() -> int:
    """The Landlock ABI the kernel offers; 0 when it has none (or it is disabled)."""
    version = _syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(0, int(version))


def handled_fs(version: int) -> int:
    return _FS_BY_ABI.get(version, (1 << 15) - 1)


def ruleset(version: int, rules: Iterable[Rule], *, network: bool) -> int:
    """A ruleset descriptor (close-on-exec) granting `rules`; OSError when the kernel refuses."""
    handled = handled_fs(version)
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if version >= 4 and not network:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP
        size = 16
    if version >= 6:
        attr.scoped = _SCOPE_SIGNAL | (0 if network else _SCOPE_ABSTRACT_UNIX)
        size = 24
    fd = int(_syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0))
    if fd < 0:
        raise _error()
    try:
        for rule in rules:
            _add(fd, rule.path, rule.rights & handled)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _add(ruleset_fd: int, path: Path, rights: int) -> None:
    try:
        target = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return  # gone since it was planned: nothing to grant
    try:
        mode = os.fstat(target).st_mode
        if stat.S_ISLNK(mode):
            return  # a link's target is judged where it lies
        if not stat.S_ISDIR(mode):
            rights &= FILE_RIGHTS
        if not rights:
            return
        beneath = _PathBeneath(rights, target)
        done = _syscall(_ADD_RULE, ruleset_fd, _RULE_PATH_BENEATH, ctypes.byref(beneath), 0)
        if done < 0:
            raise _error()
    finally:
        os.close(target)


def grant_beneath(ruleset_fd: int, folder: bytes, rights: int) -> None:
    """Add a rule for `folder` (a directory, as it is now) to the ruleset; OSError when
    refused. For a child: system calls only, no Path."""
    target = os.open(folder, os.O_PATH | os.O_CLOEXEC | os.O_DIRECTORY)
    try:
        beneath = _PathBeneath(rights, target)
        if _syscall(_ADD_RULE, ruleset_fd, _RULE_PATH_BENEATH, ctypes.byref(beneath), 0) < 0:
            raise _error()
    finally:
        os.close(target)


def _error() -> OSError:
    code = ctypes.get_errno()
    return OSError(code, os.strerror(code))
