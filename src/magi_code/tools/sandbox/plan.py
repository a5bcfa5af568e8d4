"""What a sandboxed process may touch, as Landlock rules. Sans-I/O (the lister is passed in).

Landlock only grants: a right given on a folder holds for everything beneath it, and nothing
can be taken back below. So "read everything but the secret places" is planned as a cover:
a grant whose root holds a hidden place is split into rules on the root's entries (and on
theirs, down to the hidden place), while the root itself keeps only READ_DIR (its names stay
listable, and so do the hidden folder's, never their contents). `rules` does that for any
grants and hidden places.

What each sandbox grants (`Sandbox` in policy.py chooses):
- every command: read and execute everywhere, write `/dev/null` and its own terminal
  (`/dev/tty`), write its private temporary folder; the secret places and the other
  terminals (`/dev/pts`) neither read nor written;
- `workspace-write`: write the workspace, `writable_roots`, `/tmp` and `/dev/shm` too, but not
  the `.git` and `.magi-code` folders in them (made read-only by a bind mount where the child
  may have a mount namespace, else planned as hidden from writes);
- Code Mode: read the workspace and what Python needs (its prefixes, the system's libraries),
  execute only the interpreter, write nothing.
"""

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from magi_code.records import record

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MAKE_SYM, REFER, TRUNCATE = 1 << 12, 1 << 13, 1 << 14

READ = READ_FILE | READ_DIR
RUN = READ | EXECUTE
WRITE = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO
WRITE |= MAKE_SYM | REFER | TRUNCATE
EVERYTHING = RUN | WRITE | MAKE_CHAR | MAKE_BLOCK

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
# Other terminals of the user: a command that could open them could read what is typed there.
TERMINALS = (Path("/dev/pts"), Path("/dev/ptmx"))
SHARED_TEMP = ("/tmp", "/var/tmp", "/dev/shm")
READ_ONLY_NAMES = (".git", ".magi-code")  # in a writable root
# What a Python interpreter reads besides its prefixes: the loader's and C libraries, locale
# and time-zone data.
SYSTEM_LIBRARIES = (
    "/lib", "/lib32", "/lib64", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/local/lib",
    "/usr/share/zoneinfo", "/usr/share/locale", "/etc/ld.so.cache", "/etc/localtime",
    "/dev/null", "/dev/urandom",
)  # fmt: skip

Lister = Callable[[Path], Iterable[Path]]


@record
class Rule:
    path: Path
    rights: int


def rules(
    grants: Sequence[tuple[Path, int]], hidden: Sequence[tuple[Path, int]], children: Lister
) -> tuple[Rule, ...]:
    """Rules granting each (root, rights) in `grants` except, under each hidden (path,
    rights), those rights (a root inside a hidden place included). `children(folder)` lists
    a folder's entries (full paths)."""
    out: list[Rule] = []
    for root, rights in grants:
        _cover(root, rights, hidden, children, out)
    return tuple(out)


def _cover(
    path: Path, rights: int, hidden: Sequence[tuple[Path, int]], children: Lister, out: list[Rule]
) -> None:
    for h, r in hidden:  # a grant inside a hidden place gets none of its hidden rights
        if _below(path, h):
            rights &= ~r
    if not rights:
        return
    inner = [(h, r) for h, r in hidden if r & rights and (h == path or _below(h, path))]
    if not inner:
        out.append(Rule(path, rights))
        return
    removed = 0
    for h, r in inner:
        if h == path:
            removed |= r
    if removed:
        rest = [(h, r) for h, r in inner if h != path]
        if rights & ~removed:
            _cover(path, rights & ~removed, rest, children, out)
        return
    if rights & READ_DIR:
        out.append(Rule(path, READ_DIR))
    for child in children(path):
        _cover(child, rights, inner, children, out)


def _below(path: Path, folder: Path) -> bool:
    """Whether `path` lies strictly under `folder` (absolute, normalised paths; as text:
    pathlib's `parents` costs a plan ten times more)."""
    inner, outer = str(path), str(folder)
    return inner.startswith(outer if outer.endswith("/") else outer + "/") and inner != outer
