"""Ending a child's whole process group: SIGTERM, a bounded grace, SIGKILL.

The child must have been started with `start_new_session=True`, so its pid is its group id.
Callers run `kill_group` in a shielded scope; it never raises for a group that is already gone.
"""

import os
import signal

import anyio
import anyio.abc

_GROUP_POLL_S = 0.02
_KILL_WAIT_S = 2.0


async def kill_group(process: anyio.abc.Process, grace_s: float) -> None:
    """SIGTERM the child's group, wait up to `grace_s` for it to empty, then SIGKILL it."""
    group = process.pid  # a session leader's pgid is its pid
    if not _signal_group(group, signal.SIGTERM):
        return
    with anyio.move_on_after(grace_s):
        await process.wait()
        while _group_alive(group):
            await anyio.sleep(_GROUP_POLL_S)
        return
    _signal_group(group, signal.SIGKILL)
    # SIGKILL is delivered asynchronously: wait (bounded) until the group is really gone.
    with anyio.move_on_after(_KILL_WAIT_S):
        while _group_alive(group):
            await anyio.sleep(_GROUP_POLL_S)


def _group_alive(group: int) -> bool:
    """Whether a non-zombie process remains in the group.

    Orphans are reaped by init, which may be slow (some container inits reap every second),
    and a zombie still answers `killpg(group, 0)`; on Linux, /proc tells them apart.
    """
    if not _signal_group(group, 0):
        return False
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return True
    return any(_live_member(pid, group) for pid in pids)


def _live_member(pid: str, group: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    fields = stat[stat.rfind(b")") + 2 :].split()
    return len(fields) > 2 and fields[2] == str(group).encode() and fields[0] not in (b"Z", b"X")


def _signal_group(group: int, signum: int) -> bool:
    """Send `signum` to the group; False once no process is left in it."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        # A member we may not signal (it changed credentials): nothing more we can do.
        return False
    return True
