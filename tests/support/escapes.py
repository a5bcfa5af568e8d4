"""A shell command that leaves processes behind every way a command can, for the tests of the
sandbox's containment (a PID namespace per command).

`arm(folder)` writes the attack's scripts into the folder it runs in; `ATTACK` then starts one
process per way out of its process group (`ESCAPES`: a new session, a group of its own, a
double-forked daemon, nohup, bash's disown, and one in a new session that also ignores SIGTERM
and holds no descriptor of the command's), waits until each has written its pid and PID
namespace (`mark`: inside a contained command both are its namespace's, /proc included) and
become `sleep 60`, touches `pids/ready` and says `escaped`. `marks(folder)` reads what they
wrote; `running(marked)` says whether one still runs (or is a zombie of this process's), found
by its namespace and its pid there (`machine_pid`).
"""

import os
import signal
import sys
from pathlib import Path

PYTHON = sys.executable


# The shell words that write this process's pid and PID namespace (as it sees them) to FILE.
def mark(file: str) -> str:
    return (
        f'read -r pid rest < /proc/self/stat; echo "$pid $(readlink /proc/self/ns/pid)" '
        f'> "{file}.tmp" && mv "{file}.tmp" "{file}"'
    )


# mark.sh FILE: mark FILE, then become `sleep 60` (the same pid).
MARK = f"""\
{mark("$1")}
exec sleep 60
"""
# marked.sh NAME...: wait until each has written its pid and become `sleep 60`.
MARKED = """\
for name in "$@"; do
  until [ -s "pids/$name" ] && read -r pid rest < "pids/$name" &&
    [ "$(tr '\\0' ' ' < "/proc/$pid/cmdline")" = "sleep 60 " ]; do
    sleep 0.02
  done
done 2> /dev/null
"""
# daemon.py FILE: the classic double fork, detached from everything, then mark.sh.
DAEMON = """\
import os, sys
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
null = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
os.execvp("sh", ["sh", "mark.sh", sys.argv[1]])
"""
ESCAPES = {
    "setsid": "setsid sh mark.sh pids/setsid &",
    "setpgid": f"{PYTHON} -c 'import os; os.setpgid(0, 0); "
    'os.execvp("sh", ["sh", "mark.sh", "pids/setpgid"])\' &',
    "daemon": f"{PYTHON} daemon.py pids/daemon",
    "nohup": "nohup sh mark.sh pids/nohup > /dev/null 2>&1 &",
    "disown": "bash -c 'sh mark.sh pids/disown & disown'",
    "stubborn": "setsid sh -c \"trap '' TERM HUP INT; exec sh mark.sh pids/stubborn\" "
    "> /dev/null 2>&1 < /dev/null &",
}
ATTACK = "\n".join(
    [*ESCAPES.values(), f"sh marked.sh {' '.join(ESCAPES)}", ": > pids/ready", "echo escaped"]
)


def arm(folder: Path) -> None:
    """The attack's scripts, in the folder it will run in."""
    (folder / "mark.sh").write_text(MARK)
    (folder / "marked.sh").write_text(MARKED)
    (folder / "daemon.py").write_text(DAEMON)
    (folder / "pids").mkdir()


def ready(folder: Path) -> bool:
    """Whether every escape has started and become `sleep 60`."""
    return (folder / "pids" / "ready").exists()


def marks(folder: Path) -> dict[str, str]:
    """What each escape marked (each must have: else the attack did not run)."""
    return {name: (folder / "pids" / name).read_text() for name in ESCAPES}


def machine_pid(marked: str) -> int | None:
    """The pid the machine knows a process by, from what `mark` wrote (its pid as its PID
    namespace has it, and that namespace): None once nothing so marked is left."""
    pid, namespace = marked.split()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/ns/pid") != namespace:
                continue
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("NSpid:") and line.split()[-1] == pid:
                return int(entry)
    return None


def running(marked: str) -> bool:
    """Whether the process `marked` is one of the attack's `sleep 60` and still runs, or a
    zombie of ours."""
    pid = machine_pid(marked)
    if pid is None:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    state, parent = stat[stat.rfind(b")") + 2 :].split()[:2]
    if state in (b"Z", b"X"):
        return int(parent) == os.getpid()
    return cmdline == b"sleep\x0060\x00"


def end(marked: str) -> None:
    """SIGKILL the process `marked` if it still runs (a test's clean-up)."""
    pid = machine_pid(marked)
    if pid is not None and running(marked):
        os.kill(pid, signal.SIGKILL)


def survivors(found: dict[str, str]) -> list[str]:
    """The escapes still running."""
    return [name for name, marked in found.items() if running(marked)]
