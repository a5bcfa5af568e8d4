"""seccomp: the classic-BPF filter that covers what Landlock does not. Sans-I/O.

`program(...)` returns the filter's bytes (struct sock_filter[]) for the machine's
architecture; `confine.py` loads it in the child just before `exec`. The filter:
- kills the process for a foreign architecture or the x32 ABI (no syscall-number games);
- always refuses (EPERM) what reaches other processes or the kernel: ptrace,
  process_vm_readv/writev, keyctl and the key syscalls, perf_event_open, bpf, userfaultfd,
  mount and the new mount API, namespaces (unshare, setns, a clone that asks for one),
  module and kexec loading, io_uring (whose requests would bypass this filter);
- always refuses the terminal ioctls that type into or drive a terminal (TIOCSTI,
  TIOCLINUX), which a command sharing the user's terminal could use to run what it typed;
- without the network, refuses socket() for every family but AF_UNIX;
- for Code Mode (`processes=False`), refuses every socket and socket pair, fork and vfork,
  and a clone that is not a thread; clone3 answers ENOSYS, so the C library falls back to
  clone, whose flags a filter can read.
"""

import errno
import platform
import struct
from typing import Literal

Arch = Literal["x86_64", "aarch64"]

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000

# Syscall numbers by architecture (asm/unistd.h).
_NUMBERS: dict[Arch, dict[str, int]] = {
    "x86_64": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "keyctl": 250,
        "add_key": 248, "request_key": 249, "perf_event_open": 298, "bpf": 321,
        "userfaultfd": 323, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175,
        "finit_module": 313, "delete_module": 176, "mount": 165, "umount2": 166,
        "pivot_root": 155, "swapon": 167, "swapoff": 168, "reboot": 169, "setns": 308,
        "unshare": 272, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_by_handle_at": 304, "open_tree": 428,
        "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "acct": 163, "quotactl": 179, "iopl": 172, "ioperm": 173,
        "socket": 41, "socketpair": 53, "clone": 56, "clone3": 435, "fork": 57, "vfork": 58,
        "ioctl": 16,
    },
    "aarch64": {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "keyctl": 219,
        "add_key": 217, "request_key": 218, "perf_event_open": 241, "bpf": 280,
        "userfaultfd": 282, "kexec_load": 104, "kexec_file_load": 294, "init_module": 105,
        "finit_module": 273, "delete_module": 106, "mount": 40, "umount2": 39,
        "pivot_root": 41, "swapon": 224, "swapoff": 225, "reboot": 142, "setns": 268,
        "unshare": 97, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_by_handle_at": 265, "open_tree": 428,
        "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "acct": 89, "quotactl": 60,
        "socket": 198, "socketpair": 199, "clone": 220, "clone3": 435, "ioctl": 29,
    },
}  # fmt: skip

ALWAYS_REFUSED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "keyctl", "add_key", "request_key",
    "perf_event_open", "bpf", "userfaultfd", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "mount", "umount2", "pivot_root", "swapon", "swapoff",
    "reboot", "setns", "unshare", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "open_by_handle_at", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "acct", "quotactl", "iopl", "ioperm",
)  # fmt: skip

AF_UNIX = 1
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
CLONE_THREAD = 0x00010000
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000
CLONE_NAMESPACES |= 0x20000000 | 0x40000000  # NEWNS NEWCGROUP NEWUTS NEWIPC NEWUSER NEWPID NEWNET

# BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
ALLOW = 0x7FFF0000
KILL_PROCESS = 0x80000000
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24  # offsets in struct seccomp_data (arguments' low
# words: little-endian)


def errno_action(code: int) -> int:
    return 0x00050000 | code


EPERM = errno_action(errno.EPERM)


def machine() -> Arch | None:
    """This machine's architecture, when the filter knows it."""
    name = platform.machine()
    return {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(
        name.lower()
    )  # type: ignore[return-value]


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(arch: Arch, *, network: bool, processes: bool = True) -> bytes:
    """The filter's instructions (8 bytes each) for `arch`."""
    numbers = _NUMBERS[arch]
    ops = [_op(_LD_ABS, _ARCH), _op(_JEQ, _AUDIT_ARCH[arch], 1, 0), _op(_RET, KILL_PROCESS)]
    ops.append(_op(_LD_ABS, _NR))
    if arch == "x86_64":
        ops += [_op(_JGE, _X32_BIT, 0, 1), _op(_RET, KILL_PROCESS)]
    refused = [n for n in ALWAYS_REFUSED if n in numbers]
    if not processes:
        refused += [n for n in ("fork", "vfork", "socketpair") if n in numbers]
    for name in refused:
        ops += [_op(_JEQ, numbers[name], 0, 1), _op(_RET, EPERM)]
    ops += [_op(_JEQ, numbers["clone3"], 0, 1), _op(_RET, errno_action(errno.ENOSYS))]
    # ioctl: the request number is the second argument (its low word: the request is 32 bits).
    ops += [
        _op(_JEQ, numbers["ioctl"], 0, 5),
        _op(_LD_ABS, _ARG1),
        _op(_JEQ, TIOCSTI, 2, 0),
        _op(_JEQ, TIOCLINUX, 1, 0),
        _op(_RET, ALLOW),
        _op(_RET, EPERM),
    ]
    # clone: a thread always; a process only when `processes`, and never in a new namespace.
    if processes:
        ops += _on_arg0(numbers["clone"], _JSET, CLONE_NAMESPACES, EPERM, ALLOW)
    else:
        ops += _on_arg0(numbers["clone"], _JSET, CLONE_THREAD, ALLOW, EPERM)
    if not processes:
        ops += [_op(_JEQ, numbers["socket"], 0, 1), _op(_RET, EPERM)]
    elif not network:
        ops += _on_arg0(numbers["socket"], _JEQ, AF_UNIX, ALLOW, EPERM)
    ops.append(_op(_RET, ALLOW))
    return b"".join(ops)


def _on_arg0(number: int, test: int, k: int, if_true: int, if_false: int) -> list[bytes]:
    """For syscall `number`: load its first argument, return `if_true` when `test` with `k`
    holds, else `if_false`. Any other syscall skips the block with the number still loaded."""
    return [
        _op(_JEQ, number, 0, 4),
        _op(_LD_ABS, _ARG0),
        _op(test, k, 0, 1),
        _op(_RET, if_true),
        _op(_RET, if_false),
    ]
