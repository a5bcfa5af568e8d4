"""What the sessions of one workspace share of their checkpoints, the lock that keeps it
whole, and collecting the objects that no session names any more.

Layout (MC_HOME/checkpoints/<key>/, the key: the first 32 hex digits of the SHA-256 of the
workspace's real path; folders 0700, files 0600):

    objects/<sha256>     each content once, for every session of the workspace
    sessions/<name>      an empty file for each session's store (`MC_HOME/sessions/<name>`,
                         store.py) whose manifests may name these objects
    last                 `<name>/<manifest file>`: the newest checkpoint of any session, whose
                         digests a new session's first checkpoint reuses (store.py)
    lock                 the rule below

The rule (`flock` on `lock`): whatever writes objects, or a manifest naming them (a
checkpoint, a rewind, a fork's copy, moving an old store's own objects here), holds the lock
shared from before it looks at which objects exist until that manifest is written, and its
store is registered first. Collection holds it exclusive and never waits for it (a busy lock
leaves the collection to the next one). So a collection sees each checkpoint whole or not at
all, and an object a checkpoint found there (and did not write again), or whose digest it
reused from `last`, is never removed under it: once the lock is free, its manifest names it.

Collection, once a session is deleted (sessions/retention.py): every manifest of every
registered store still there is read, and an object that none of them names is removed; so
are the registrations of stores that are gone, and temporary files (under the exclusive lock
no one is writing). The manifests are read first without the lock (a manifest never changes
once written under its name), then, under it, those written since: a checkpoint waits for a
collection only that long. A manifest that cannot be read stops the collection: nothing is
removed. The workspace's folder itself stays (emptied of objects): removing it could race a
session that is about to take the lock in it.

What it must never do: remove an object while the lock is held shared, or follow a link.
"""

import contextlib
import fcntl
import hashlib
import itertools
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from magi_code.checkpoints.limits import LAST_NOTE_BYTES
from magi_code.checkpoints.manifest import named_digests

FOLDER = "checkpoints"  # under MC_HOME
OBJECTS, SESSIONS, LAST, LOCK = "objects", "sessions", "last", "lock"
MANIFESTS = "manifests"  # in a session's store
KEY_DIGITS = 32


def workspace_folder(home: Path, workspace: Path) -> Path:
    """Where the sessions of `workspace` (any path to it) under MC_HOME `home` share objects."""
    real = os.fsencode(os.path.realpath(workspace))
    return home / FOLDER / hashlib.sha256(real).hexdigest()[:KEY_DIGITS]


class Shared:
    """One workspace's shared folder (module doc)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.objects = folder / OBJECTS

    @contextlib.contextmanager
    def using(self, *stores: str) -> Iterator[None]:
        """Hold the lock shared, the folders made and `stores` (session store folder names)
        registered, while the caller writes objects and the manifests naming them."""
        private_dir(self.folder.parent)
        private_dir(self.folder)
        fd = self._lock()
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            private_dir(self.objects)
            private_dir(self.folder / SESSIONS)
            for name in stores:
                _touch(self.folder / SESSIONS / name)
            yield
        finally:
            os.close(fd)  # closing it releases the flock

    def last(self) -> tuple[str, str] | None:
        """The store and manifest file of the newest checkpoint of any session, as `note_last`
        said; None when none is known or the note is not one."""
        try:
            fd = os.open(self.folder / LAST, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as note:
                text = note.read(LAST_NOTE_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        store, _, manifest = text.partition("/")
        if not all(_plain(name) for name in (store, manifest)):
            return None
        return store, manifest

    def note_last(self, store: str, manifest: str) -> None:
        write_private(self.folder / LAST, f"{store}/{manifest}".encode())

    def owes(self, sessions: Path) -> bool:
        """Whether a store registered here is gone from `sessions` (a collection is owed)."""
        return any(not os.path.lexists(sessions / name) for name in self._registered())

    def collect(self, sessions: Path) -> bool:
        """Remove the objects no registered store in `sessions` names (module doc). False when
        the lock is held (a checkpoint is being taken) or a manifest could not be read:
        nothing was removed. The manifests there are read first without the lock, then those
        written since under it, so a checkpoint waits for a collection only that long."""
        named = _Named(sessions)
        if not named.read(self._registered()):
            return False
        try:
            fd = self._lock()
        except OSError:
            return False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            registered = self._registered()
            if not named.read(registered) or os.path.islink(self.objects):
                return False  # an objects folder that is a link is not the one `using` made
            for name in _names(self.objects):
                if name not in named.digests:
                    _unlink(self.objects / name)
            for name in registered:
                if not os.path.lexists(sessions / name):
                    _unlink(self.folder / SESSIONS / name)
            return True
        finally:
            os.close(fd)

    def _registered(self) -> list[str]:
        return [name for name in _names(self.folder / SESSIONS) if _plain(name)]

    def _lock(self) -> int:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        return os.open(self.folder / LOCK, flags, 0o600)


def collect(home: Path) -> list[Path]:
    """Collect each workspace's shared folder under MC_HOME `home` that a deleted session's
    store was registered in; the folders collected (a busy one waits for the next time)."""
    root, sessions = home / FOLDER, home / "sessions"
    collected = []
    for key in sorted(_names(root)):
        shared = Shared(root / key)
        try:
            if not _key(key) or not stat.S_ISDIR(os.lstat(shared.folder).st_mode):
                continue  # not a folder this module made: never followed
            if shared.owes(sessions) and shared.collect(sessions):
                collected.append(shared.folder)
        except OSError:
            continue  # left for the next time
    return collected


def _key(name: str) -> bool:
    return len(name) == KEY_DIGITS and not name.strip("0123456789abcdef")


class _Named:
    """The digests that the manifests of registered stores name, each manifest file read once:
    one never changes once written under its name (a temporary name is skipped: its writer
    holds the lock, or crashed)."""

    def __init__(self, sessions: Path) -> None:
        self.sessions = sessions
        self.digests: set[str] = set()
        self.seen: set[tuple[str, str]] = set()

    def read(self, stores: list[str]) -> bool:
        """Read the manifests of `stores` not read yet; False when one cannot be read."""
        for store in stores:
            manifests = self.sessions / store / MANIFESTS
            for name in _names(manifests):
                if name.startswith(".") or not name.endswith(".json") or (store, name) in self.seen:
                    continue
                try:
                    self.digests |= named_digests((manifests / name).read_bytes())
                except FileNotFoundError:
                    continue  # its session is being deleted right now
                except (OSError, ValueError):
                    return False
                self.seen.add((store, name))
        return True


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _plain(name: str) -> bool:
    """A name of a file in a folder, and nothing that would lead out of it."""
    return bool(name) and "/" not in name and "\0" not in name and not name.startswith(".")


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _touch(path: Path) -> None:
    if not os.path.lexists(path):
        flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        os.close(os.open(path, flags, 0o600))


def private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, exist_ok=True)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to `fd` (a write may take fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


_serial = itertools.count()  # `next` on it is atomic: each temporary name is this process's once


def write_private(path: str | Path, data: bytes) -> None:
    """Write `path` whole (0600) under a temporary name of its own, then rename it into place
    (two writers of the same path, in threads or processes, never share a temporary file)."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}-{next(_serial)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o600)
    try:
        write_all(fd, data)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    os.close(fd)
    os.replace(temporary, path)
