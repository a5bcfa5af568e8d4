"""A sandboxed command's own PID namespace: nothing the command starts outlives it.

A process group is no boundary: a command can leave a process in a new session (`setsid`, a
double fork) that no signal to its group reaches. A PID namespace is one: when its first
process (its init) dies, the kernel kills every process in it, however it detached. So
`supervise` runs in `Confinement.apply`, in the child `Popen` tracks (already in a fresh PID
namespace for its children: `unshare(CLONE_NEWPID)` in confine.py), and splits it in three.
Init confines itself once forked (after mounting its namespace's /proc, which a confined
process may not do), and the command it forks is confined with it:

    tracked (the pid Popen has; outside)  waits for the command's status, exits with it
      └─ init (PID 1 inside)              reaps, reports the command's status, ends the rest
           └─ the command                 returns from `preexec_fn` and is exec'd

Rules:
- Only the command returns (to be exec'd); the tracked process and init end in `os._exit`.
  They run a few system calls and no import (init is confined: a lazy import could be
  refused), and close every descriptor but their status pipe (and init the agent's pidfd)
  as soon as they have forked: neither holds the command's output pipe (EOF reaches the
  reader as before) nor subprocess's error pipe (the spawn returns once the command is
  exec'd, as before).
- The tracked process stays outside the sandbox: it runs none of the command's code, only
  waits, and Landlock would refuse the parent-death SIGKILL it sends init from a domain of
  its own (a sibling of init's, not an ancestor: signals are scoped to a domain's own).
- The tracked process blocks every signal: the group signals `kill_group` sends reach the
  command and init directly (all three share one process group), and a command that traps a
  signal sent to its group keeps running, as before. It exits as the command did: the same
  code, or killed by the same signal, so `returncode` is unchanged.
  It dies with the thread that spawned it (PR_SET_PDEATHSIG), and init with it, so a command
  dies with the agent. Both are copies of the agent, its memory and environment: neither is
  dumpable (the command cannot read them through /proc; and no core dump is made of them).
- Init does not die with the tracked process once it has reported: the command's group may
  still hold the output pipe (the shell tool drains it, then ends the group). So after the
  command ends, init reaps what is left, passes on a SIGTERM, SIGINT, SIGHUP or SIGQUIT to
  everything in the namespace (the group's own members get it from the group too), and exits
  when nothing is left, when SIGKILLed (the group's, after the grace), when the agent has
  ended (a pidfd of it, opened by the tracked process), when the tracked process was gone
  before hearing the status, or at the latest SANDBOX_LEFTOVER_S after the command ended.
  As PID 1 it ignores every other signal, as the kernel has it.

What it costs: two more forks of the agent per command (bench_sandbox times it), and while a
command runs, the agent's memory as it was at the spawn, kept by these two copies (copy on
write: what the agent changes meanwhile is copied once).
"""

import contextlib
import ctypes
import gc
import os
import select
import signal
import time
from collections.abc import Callable

from magi_code.tools.limits import SANDBOX_LEFTOVER_S

_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE = 1, 4
_CLOSE_RANGE = 436  # the same number on x86_64 and aarch64
_SFD_CLOEXEC = 0o2000000
_SIGINFO_BYTES = 128  # struct signalfd_siginfo; its ssi_signo (u32) comes first
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
_REPORT_BYTES = 5  # init to the tracked process: the command's wait status, then 1 if init ends

_libc = ctypes.CDLL(None, use_errno=True)
_prctl, _syscall, _fork, _signal = _libc.prctl, _libc.syscall, _libc.fork, _libc.signal
_signalfd, _sigmask = _libc.signalfd, _libc.pthread_sigmask
_prctl.restype = _syscall.restype = ctypes.c_long
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_fork.restype = _signalfd.restype = ctypes.c_int
_signal.restype = ctypes.c_void_p
_signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
_signalfd.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_sigmask.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
# sigset_t buffers (glibc's 1024 bits; 64-bit machines only, as seccomp.py), made here so that
# the child only makes system calls.
_EVERY_SIGNAL = (ctypes.c_uint64 * 16)(*[2**64 - 1] * 16)
_MASK = (ctypes.c_uint64 * 16)()  # the spawning thread's mask, restored for the command
_WAITED = (ctypes.c_uint64 * 16)()  # SIGCHLD and the forwarded signals
for _signum in (signal.SIGCHLD, *_FORWARDED):
    _WAITED[(_signum - 1) // 64] |= 1 << ((_signum - 1) % 64)


def supervise(parent: int, confine: Callable[[], None]) -> None:
    """In the tracked child, in `preexec_fn`, its PID namespace unshared: fork init, which
    calls `confine` (its /proc mounted first), then forks the command, confined with it.
    Returns only in the command. Raises OSError if a fork or the confinement fails (in the
    tracked child or in init, both still holding subprocess's error pipe)."""
    _prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # before the command exists; init inherits it
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)  # the agent is already gone
    try:
        agent = os.pidfd_open(parent)  # close-on-exec
    except OSError:  # before Linux 5.3: init still ends SANDBOX_LEFTOVER_S after the command
        agent = -1
    gc.disable()  # no finaliser of the agent's objects runs in these copies of it
    _sigmask(signal.SIG_SETMASK, ctypes.addressof(_EVERY_SIGNAL), ctypes.addressof(_MASK))
    status_read, status_write = os.pipe()  # close-on-exec: the command never holds it
    init = _forked()
    if init:
        os.close(status_write)
        _tracked(init, status_read)
    os.close(status_read)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    watch = select.poll()
    watch.register(status_write, select.POLLOUT)
    if any(events & select.POLLERR for _, events in watch.poll(0)):
        os._exit(1)  # no reader left: the tracked child died before PR_SET_PDEATHSIG held
    confine()
    command = _forked()
    if command == 0:
        os.close(status_write)
        if agent >= 0:
            os.close(agent)
        _sigmask(signal.SIG_SETMASK, ctypes.addressof(_MASK), None)
        return
    _keep_only(status_write, agent)
    _init(command, status_write, agent)


def _forked() -> int:
    pid = int(_fork())
    if pid < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return pid


def _keep_only(*kept: int) -> None:
    """Close every descriptor but those `kept` (-1 for none)."""
    first = 0
    for fd in sorted({*kept, 0xFFFFFFFF + 1} - {-1}):
        last = fd - 1
        if first <= last and _syscall(_CLOSE_RANGE, first, last, 0) < 0:
            os.closerange(first, min(last + 1, os.sysconf("SC_OPEN_MAX")))  # before Linux 5.9
        first = fd + 1


def _tracked(init: int, status_read: int) -> None:
    """The process Popen tracks: the command's status from init, or init's own if it died
    first (SIGKILLed with the group), mirrored. When init said that nothing else was left,
    it is waited for first, so that the group is empty once this process has exited."""
    _keep_only(status_read)
    reported = b""
    while len(reported) < _REPORT_BYTES:
        chunk = os.read(status_read, _REPORT_BYTES - len(reported))  # signals blocked: no EINTR
        if not chunk:
            break
        reported += chunk
    if len(reported) == _REPORT_BYTES:
        if reported[4]:
            os.waitpid(init, 0)
        _end_as(int.from_bytes(reported[:4], "little"))
    _end_as(os.waitpid(init, 0)[1])


def _end_as(status: int) -> None:
    """Exit as a process with this wait status did."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        _signal(signum, None)  # SIG_DFL
        os.kill(os.getpid(), signum)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os._exit(128 + signum)  # a signal that does not end a process (it cannot have)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _init(command: int, status_write: int, agent: int) -> None:
    """PID 1 of the namespace, every signal blocked. Until the command ends it reaps whatever
    ends (orphans come to init); then it reports, and stays while anything is left."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == command:
            break
    alone = _reap()
    _prctl(_PR_SET_PDEATHSIG, 0, 0, 0, 0)  # the tracked child now exits: init stays
    try:
        os.write(status_write, status.to_bytes(4, "little") + bytes([alone]))
    except OSError:  # EPIPE: the tracked child was SIGKILLed (with the group, or the agent)
        os._exit(0)
    if alone:
        os._exit(0)
    os.close(status_write)
    deadline = time.monotonic() + SANDBOX_LEFTOVER_S
    signals = _signalfd(-1, ctypes.addressof(_WAITED), _SFD_CLOEXEC)
    watch = select.poll()
    for fd in (signals, agent):
        if fd >= 0:
            watch.register(fd, select.POLLIN)
    while not _reap() and (left := deadline - time.monotonic()) > 0:
        for fd, _ in watch.poll(left * 1000):
            if fd == agent:
                os._exit(0)  # the agent has ended: so does all the command left
            if fd == signals:
                _forward(os.read(signals, 16 * _SIGINFO_BYTES))
    os._exit(0)  # the kernel kills what is left


def _forward(infos: bytes) -> None:
    for at in range(0, len(infos), _SIGINFO_BYTES):
        signum = int.from_bytes(infos[at : at + 4], "little")
        if signum != signal.SIGCHLD:
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signum)  # everything in the namespace but init


def _reap() -> bool:
    """Reap every child that has ended; True when none is left (the namespace is empty)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        return True
    return False
