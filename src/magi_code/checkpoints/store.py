"""The checkpoints of one session on disk: taking them, putting a checkpoint's files back,
and giving them to a forked session.

Layout: the session's manifests beside its file in MC_HOME (`sessions/<id>.checkpoints/`,
which pruning the session removes with it), the content in the folder every session of the
same workspace shares (shared.py: `checkpoints/<key>/objects/`, collected once no manifest
names an object). Folders 0700, files 0600, each written whole and renamed in place:

    sessions/<id>.checkpoints/manifests/<seq>-<phase>-<ns>-<kind>.json
                                one per checkpoint: its number in the order taken, its
                                phase, when its walk began, and whether it is whole or what
                                changed (manifest.py)
    checkpoints/<key>/objects/<sha256>   each content once: a file's bytes, a link's target

A store from before the objects were shared has its own `objects/` beside its manifests: its
content is read from there until its next checkpoint moves it into the shared folder.

A checkpoint walks the workspace as the search tools do (tools/walk.py: `.git` skipped, the
ignore files obeyed, no symlinked folder entered, at most WALK_ENTRIES entries) and `lstat`s
what it meets; it reads only files that are new or changed since the previous checkpoint
(manifest.py says when a digest is reused), and stores what is not stored yet. The previous
checkpoint is the session's own, else (a session's first) the newest of any session of the
workspace (shared.py's `last`): so a new session in a workspace seen before reads only what
changed since, not every file. It holds the workspace's lock shared throughout (shared.py's
rule). A file over CHECKPOINT_FILE_BYTES, or one that would take what the session added to the
objects past CHECKPOINT_STORE_BYTES, is named without content: not restorable. So a turn costs
a stat walk and what it changed.

A rewind (`restore`) is a checkpointed change of its own: a `before` checkpoint (what the
workspace held, so nothing is lost), the plan applied, an `after` one; what it changed is
then magi-code's own, not a change made outside. Paths are written only below the
workspace's real folder, never through a link that leads elsewhere.
"""

import contextlib
import hashlib
import os
import stat
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from magi_code.checkpoints.limits import (
    CHECKPOINT_FILE_BYTES,
    CHECKPOINT_STORE_BYTES,
    CHECKPOINT_WHOLE_EVERY,
)
from magi_code.checkpoints.manifest import (
    PHASES,
    Manifest,
    State,
    decode,
    encode,
    unchanged,
)
from magi_code.checkpoints.plan import RewindPlan
from magi_code.checkpoints.shared import (
    MANIFESTS,
    Shared,
    private_dir,
    workspace_folder,
    write_all,
    write_private,
)
from magi_code.debug import absorbed
from magi_code.tools.walk import GIT_ENV, Walk

OBJECTS = "objects"  # of a store from before the objects were shared
SEQ_DIGITS = 6
WHOLE, CHANGES = "whole", "changes"
DIGEST_CHARS, HEX = 64, "0123456789abcdef"
KINDS = (WHOLE, CHANGES)


class Listed(NamedTuple):
    """A manifest as its file name tells it, without reading it."""

    seq: int
    phase: str
    started_ns: int
    whole: bool  # written whole, else what changed since the one before it
    name: str


# The last manifest each store folder wrote or read in this process, so that the next
# checkpoint need not read it back.
_latest: dict[Path, tuple[Listed, Manifest]] = {}
# A checkpoint each store folder is taking in a thread of its own (`take_later`): whatever
# reads or writes that store next waits for it (`settle`), and so does the process's exit.
_pending: dict[Path, threading.Thread] = {}
_pending_lock = threading.Lock()


class CheckpointStore:
    def __init__(
        self,
        directory: Path,
        workspace: Path,
        env: Mapping[str, str],
        *,
        file_bytes: int = CHECKPOINT_FILE_BYTES,
        store_bytes: int = CHECKPOINT_STORE_BYTES,
    ) -> None:
        self.directory, self.workspace = directory, workspace
        self.home = directory.parent.parent  # `directory` is MC_HOME/sessions/<id>.checkpoints
        self.shared = Shared(workspace_folder(self.home, workspace))
        self.ignores = {name: env[name] for name in GIT_ENV if name in env}
        self.file_bytes, self.store_bytes = file_bytes, store_bytes

    # ---- reading -------------------------------------------------------------------------

    def listed(self) -> list[Listed]:
        """The manifests, in the order they were taken (a file named otherwise is no one),
        once the checkpoint being taken in the background, if any, is done."""
        self.settle()
        try:
            found = os.listdir(self.directory / MANIFESTS)
        except FileNotFoundError:
            return []
        listed = []
        for name in found:
            seq, phase, started, kind = [*name.removesuffix(".json").split("-"), "", "", ""][:4]
            if (
                name.endswith(".json")
                and seq.isdigit()
                and phase in PHASES
                and started.isdigit()
                and kind in KINDS
            ):
                listed.append(Listed(int(seq), phase, int(started), kind == WHOLE, name))
        return sorted(listed)

    def load(self, wanted: Sequence[Listed]) -> list[Manifest]:
        """The manifests `wanted` (in the order taken), each read with those it builds on;
        ValueError or OSError when one cannot be read."""
        if not wanted:
            return []
        listed = self.listed()
        first, last = wanted[0].seq, wanted[-1].seq
        wholes = [i for i, m in enumerate(listed) if m.whole and m.seq <= first]
        if not wholes:
            raise ValueError("no whole manifest to read from")
        loaded: dict[int, Manifest] = {}
        manifest: Manifest | None = None
        for entry in listed[wholes[-1] :]:
            if entry.seq > last:
                break
            data = (self.directory / MANIFESTS / entry.name).read_bytes()
            manifest = loaded[entry.seq] = decode(data, None if entry.whole else manifest)
        return [loaded[entry.seq] for entry in wanted]

    def latest(self) -> Manifest | None:
        listed = self.listed()
        if not listed:
            return None
        cached = _latest.get(self.directory)
        if cached is not None and cached[0] == listed[-1]:
            return cached[1]
        [manifest] = self.load(listed[-1:])
        _latest[self.directory] = (listed[-1], manifest)
        return manifest

    def content(self, digest: str) -> bytes:
        try:
            return (self.shared.objects / digest).read_bytes()
        except FileNotFoundError:  # a store from before, not moved yet
            return (self.directory / OBJECTS / digest).read_bytes()

    def _workspace_latest(self) -> Manifest | None:
        """The newest checkpoint of another session of the workspace (shared.py's `last`),
        for a first checkpoint to reuse its digests; None when there is none to read."""
        named = self.shared.last()
        if named is None or named[0] == self.directory.name:
            return None
        other = CheckpointStore(self.directory.parent / named[0], self.workspace, {})
        try:
            listed = other.listed()
            wanted = [entry for entry in listed if entry.name == named[1]]
            if not wanted:
                return None
            return other.latest() if wanted[-1] == listed[-1] else other.load(wanted)[0]
        except (OSError, ValueError):
            return None

    # ---- taking --------------------------------------------------------------------------

    def take_later(self, run_id: str, phase: str) -> None:
        """`take` in a thread of its own, so the caller goes on (a failure is absorbed: the
        store then lacks that checkpoint). Whatever uses this store next waits for it."""
        self.settle()

        def taking() -> None:
            try:
                self.take(run_id, phase)
            except (OSError, ValueError):
                absorbed(f"the {phase} checkpoint")

        thread = threading.Thread(target=taking, name="checkpoint")
        with _pending_lock:  # started under the lock: no one joins it before it starts
            _pending[self.directory] = thread
            thread.start()

    def settle(self) -> None:
        """Wait for the checkpoint this store is taking in the background, if any."""
        with _pending_lock:
            thread = _pending.get(self.directory)
            if thread is None or thread is threading.current_thread():
                return
            del _pending[self.directory]
        thread.join()

    def take(self, run_id: str, phase: str) -> Manifest:
        """Checkpoint the workspace now, storing the content not stored yet."""
        with self.shared.using(self.directory.name):
            self._move_own_objects()
            return self._take(run_id, phase)

    def _take(self, run_id: str, phase: str) -> Manifest:
        listed = self.listed()
        try:
            previous = self.latest()
        except (OSError, ValueError):  # unreadable: this one is written whole, read afresh
            previous = None
        reference = previous if previous is not None else self._workspace_latest()
        private_dir(self.directory)
        private_dir(self.directory / MANIFESTS)
        total = 0 if previous is None else previous.stored_bytes
        manifest = self._walk(run_id, phase, reference, total, store=True)
        seq = listed[-1].seq + 1 if listed else 1
        last_whole = max((m.seq for m in listed if m.whole), default=None)
        whole = previous is None or last_whole is None or seq - last_whole >= CHECKPOINT_WHOLE_EVERY
        kind = WHOLE if whole else CHANGES
        name = f"{seq:0{SEQ_DIGITS}d}-{phase}-{manifest.started_ns}-{kind}.json"
        data = encode(manifest, None if whole else previous)
        write_private(self.directory / MANIFESTS / name, data)
        _latest[self.directory] = (Listed(seq, phase, manifest.started_ns, whole, name), manifest)
        self.shared.note_last(self.directory.name, name)
        return manifest

    def _move_own_objects(self) -> None:
        """Move the objects of a store from before (its own `objects/`) into the shared folder,
        under the lock (its manifests, which name them, are registered). A failure leaves the
        rest where they are, still read from there (`content`)."""
        legacy = self.directory / OBJECTS
        try:
            names = os.listdir(legacy)
        except (FileNotFoundError, NotADirectoryError):
            return
        try:
            for name in names:
                source = legacy / name
                if len(name) != DIGEST_CHARS or name.strip(HEX):
                    source.unlink()  # a temporary file a crash left
                    continue
                try:
                    os.replace(source, self.shared.objects / name)
                except OSError:  # another file system: copied, then removed
                    write_private(self.shared.objects / name, source.read_bytes())
                    source.unlink()
            legacy.rmdir()
        except OSError:
            absorbed("moving a checkpoint store's objects into the workspace's")

    def fork(self, directory: Path) -> None:
        """Give the store of a new session (`directory`, not there yet) this one's checkpoints,
        so that it can rewind to the turns before the fork too: its manifests (hard links
        where the file system allows, else copies), naming the same shared objects."""
        listed = self.listed()
        if not listed:
            return
        with self.shared.using(self.directory.name, directory.name):
            self._move_own_objects()
            private_dir(directory)
            private_dir(directory / MANIFESTS)
            for entry in listed:
                source, target = self.directory / MANIFESTS, directory / MANIFESTS
                try:
                    os.link(source / entry.name, target / entry.name, follow_symlinks=False)
                except OSError:
                    write_private(target / entry.name, (source / entry.name).read_bytes())

    def current(self) -> Manifest:
        """The workspace now, as a manifest of no run, storing nothing."""
        return self._walk("", "after", self.latest(), 0, store=False)

    def _walk(
        self, run_id: str, phase: str, previous: Manifest | None, total: int, store: bool
    ) -> Manifest:
        """The workspace now, reusing `previous`'s digests where the files are unchanged
        (manifest.py); with `store`, content not stored yet is, counted from `total`."""
        started = time.time_ns()
        stored = _Stored(self.shared.objects, total)
        own = self._own_prefix()
        walk = Walk(self.workspace, ignores=self.ignores)
        states: dict[str, State] = {}
        for rel, entry in walk.entries():
            if own is not None and (rel + "/").startswith(own):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # gone since it was listed
            mode = info.st_mode
            found = (mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
            if stat.S_ISDIR(mode):
                states[rel] = State(*found, None)
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                continue  # a socket, a pipe, a device: nothing a rewind puts back
            same = unchanged(previous, rel, found)
            if same is not None:
                states[rel] = same  # the common case: a stat, no read
                continue
            digest = None
            if info.st_size <= self.file_bytes:
                data = _read(entry.path, mode, info.st_size, self.file_bytes)
                if data is None:
                    continue
                digest = hashlib.sha256(data).hexdigest()
                if store and not stored.keep(digest, data, self.store_bytes):
                    digest = None  # named, not stored: the store is full
            states[rel] = State(*found, digest)
        return Manifest(run_id, phase, started, states, stored.total, walk.truncated)

    def _own_prefix(self) -> str | None:
        """This store's MC_HOME relative to the workspace, when it lies inside it."""
        home = os.path.realpath(self.home)
        root = os.path.realpath(self.workspace)
        if home == root or not home.startswith(root + os.sep):
            return None
        return Path(os.path.relpath(home, root)).as_posix() + "/"

    # ---- restoring -----------------------------------------------------------------------

    def restore(self, run_id: str, target: Manifest, plan: RewindPlan) -> list[str]:
        """Put the workspace back as `target` had it, following `plan`, as a checkpointed
        change of the rewind `run_id` (module doc). Returns the paths that could not be put
        back; the rest are."""
        self.take(run_id, "before")
        failed: list[str] = []
        root = os.path.realpath(self.workspace)
        for path in plan.delete:
            if not _inside(root, self.workspace / path) or not _removed(self.workspace / path):
                failed.append(path)
        for path in plan.remove_dirs:
            with contextlib.suppress(OSError):  # it holds what the walk does not see: it stays
                (self.workspace / path).rmdir()
        for path in plan.make_dirs:
            folder = self.workspace / path
            try:
                if not _inside(root, folder):
                    raise OSError("outside the workspace")
                folder.mkdir(parents=True, exist_ok=True)
                os.chmod(folder, stat.S_IMODE(target.states[path].mode), follow_symlinks=False)
            except OSError:
                failed.append(path)
        for path in plan.write:
            try:
                self._put(root, path, target.states[path])
            except OSError:
                failed.append(path)
        self.take(run_id, "after")
        return sorted(failed)

    def _put(self, root: str, path: str, state: State) -> None:
        assert state.digest is not None
        destination = self.workspace / path
        if not _inside(root, destination):
            raise OSError("outside the workspace")
        destination.parent.mkdir(parents=True, exist_ok=True)
        data = self.content(state.digest)
        temporary = destination.with_name(f".{destination.name}.magi-rewind-{os.getpid()}")
        if stat.S_ISLNK(state.mode):
            os.symlink(os.fsdecode(data), temporary)
        else:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temporary, flags, 0o600)
            try:
                write_all(fd, data)
                os.fchmod(fd, stat.S_IMODE(state.mode))
            finally:
                os.close(fd)
        try:
            os.replace(temporary, destination)
        except OSError:
            _removed(temporary)
            raise


class _Stored:
    """The shared objects as one checkpoint fills them, and how many bytes the session's
    checkpoints have added to them."""

    def __init__(self, folder: Path, total: int) -> None:
        self.folder, self.total = folder, total

    def keep(self, digest: str, data: bytes, bound: int) -> bool:
        """Store `data` unless it is stored already (by any session); False when that would
        take the session's bytes past `bound`."""
        path = os.path.join(self.folder, digest)  # a string: this runs once a file
        if os.path.lexists(path):
            return True
        if self.total + len(data) > bound:
            return False
        write_private(path, data)
        self.total += len(data)
        return True


def _read(path: str, mode: int, size: int, limit: int) -> bytes | None:
    """A file's bytes or a link's target, without following a link; None when it is gone or
    grew past `limit` since its `lstat` said `size` (what is read at once: a read of `limit`
    would allocate that much for every small file)."""
    try:
        if stat.S_ISLNK(mode):
            return os.fsencode(os.readlink(path))
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(size + 1)
            if len(data) > size:  # it grew since
                data += handle.read(limit + 1 - len(data))
    except OSError:
        return None
    return data if len(data) <= limit else None


def _inside(root: str, path: Path) -> bool:
    """Whether `path`'s folder really lies in the workspace (no link leads out of it)."""
    return (os.path.realpath(path.parent) + os.sep).startswith(root + os.sep)


def _removed(path: Path) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def settle_all(timeout: float | None) -> None:
    """Wait, at most `timeout` seconds in all (None: as long as it takes), for every checkpoint
    taken in the background: for a process about to end with os._exit, which waits for no
    thread."""
    with _pending_lock:
        threads = list(_pending.values())
        _pending.clear()
    end = None if timeout is None else time.monotonic() + timeout
    for thread in threads:
        thread.join(None if end is None else max(0.0, end - time.monotonic()))
