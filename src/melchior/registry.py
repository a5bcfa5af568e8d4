"""The registry is a directory: `<base>/melchior/<project>/<id>` sockets and their notes.

    <id>          the session's socket; liveness is a successful connect, never a file test
    <id>.key      0600 JSON {"sha256", "role", "minter", "minter_key"}: written once by `fork`
                  (O_EXCL, which is what makes an id unique); holds digests of the secret and of
                  the minter's secret, never a secret
    <id>.parent   the note naming who started it, written by the session when it comes up
    <id>.report   an older session's report (read, and removed with its session)
    .lock         flock'd while a socket is bound or a dead one is removed

Reports live apart, in a per-user state directory that a logout does not remove:
`$XDG_STATE_HOME/melchior/<project>/<id>.report` (default `~/.local/state/melchior/...`), the
project under the same directory name as here.

This module owns paths, permissions and the lock. It never speaks the wire beyond a bare
connect, and it never removes a socket without first finding, under the lock, that nobody
answers it.
"""

from __future__ import annotations

import _socket  # not `socket`: its enums cost a fast-starting tool more than it gives
import errno
import fcntl
import os
import stat

from melchior import names, policy, strict_json
from melchior.limits import ID_MAX, PROJECT_DIGEST, SUN_PATH_MAX

SUFFIXES = (".parent", ".key", ".report")
_EXCLUSIVE = os.O_WRONLY | os.O_CREAT | os.O_EXCL
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType
    from typing import Literal, TypeAlias

    Liveness: TypeAlias = Literal["live", "dead", "absent"]


class RegistryError(Exception):
    """A registry failure, carrying one of the wire's closed codes."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class Key:
    """What a key file says: the secret's digest, the role, who minted it, and the digest of
    the minter's secret. An id is reused once its session is gone; the digest is not, so the
    fork link is bound to it (`linked`), never to the id alone."""

    __slots__ = ("minter", "minter_key", "role", "sha256")

    def __init__(
        self, sha256: str, role: str, minter: str | None, minter_key: str | None = None
    ) -> None:
        self.sha256, self.role, self.minter, self.minter_key = sha256, role, minter, minter_key


def join(directory: str, name: str) -> str:
    return os.path.join(directory, name)


def _safe_dir(path: str) -> str:
    """Create (0700) or accept a directory only if it is ours, not a link, and closed to others."""
    try:  # noqa: SIM105 - contextlib stays off the fast tool path
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise RegistryError("unsafe_dir")
    return path


def base_dir(env: Mapping[str, str]) -> str:
    """`$XDG_RUNTIME_DIR/melchior`, or a per-user 0700 directory in the temp dir."""
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        try:
            info = os.stat(runtime)
        except OSError:
            raise RegistryError("unsafe_dir") from None
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise RegistryError("unsafe_dir")
        return _safe_dir(join(runtime, "melchior"))
    # The temp dir as `tempfile.gettempdir` names it (without importing tempfile: its shutil
    # brings the compression modules): $TMPDIR, $TEMP or $TMP if absolute, else /tmp.
    named = (env.get(name, "") for name in ("TMPDIR", "TEMP", "TMP"))
    temp = next((path for path in named if os.path.isabs(path)), "/tmp")
    return _safe_dir(join(temp, f"melchior-{os.getuid()}"))


def _state_path(env: Mapping[str, str]) -> str:
    """`$XDG_STATE_HOME` when set and absolute, else `~/.local/state`."""
    home = env.get("XDG_STATE_HOME", "")
    if home and os.path.isabs(home):
        return home
    user = env.get("HOME", "")
    return join(user if os.path.isabs(user) else os.path.expanduser("~"), ".local/state")


def _state_home(env: Mapping[str, str]) -> str:
    """The state home, created 0700 if absent, and checked."""
    home = _state_path(env)
    try:
        os.makedirs(home, 0o700, exist_ok=True)
        info = os.stat(home)
    except OSError:
        raise RegistryError("unsafe_dir") from None
    # Not 0700 like the runtime dir (the user's ~/.local/state is often 0755), but nobody else
    # may write in it, or they could swap our directory for theirs.
    if info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise RegistryError("unsafe_dir")
    return home


def state_dir(directory: str, env: Mapping[str, str]) -> str:
    """Where the project whose runtime directory is `directory` keeps its reports: the same
    directory name under `<state home>/melchior`, each level 0700, ours, not a link."""
    base = _safe_dir(join(_state_home(env), "melchior"))
    return _safe_dir(join(base, os.path.basename(directory)))


def reported(directory: str, env: Mapping[str, str]) -> set[str]:
    """Ids with a stored report in the project's state directory (none if it cannot be read):
    `mint` skips them, so a finished session's report is never taken over by a new one."""
    path = os.path.join(_state_path(env), "melchior", os.path.basename(directory))
    try:  # read only: minting creates nothing here
        entries = os.listdir(path)
    except OSError:
        return set()
    return {e[: -len(".report")] for e in entries if e.endswith(".report")}


def project_dir(project: str, env: Mapping[str, str]) -> str:
    """The project's directory, created if needed, with room for any id under sun_path."""
    if not names.valid_project(project):
        raise RegistryError("usage")
    base = base_dir(env)
    budget = SUN_PATH_MAX - len(os.fsencode(base)) - 2 - ID_MAX
    if budget < PROJECT_DIGEST + 2:
        raise RegistryError("path_too_long")
    return _safe_dir(join(base, names.project_dirname(project, budget)))


# ---------------------------------------------------------------- keys and notes


def digest(token: str) -> str:
    from melchior.digests import sha256_hex  # not on the path of a plain tool call

    # surrogatepass: any text digests (a token from a badly encoded environment included), and
    # a text that is not a real secret simply matches nothing.
    return sha256_hex(token.encode("utf-8", "surrogatepass"))


def mint(
    directory: str,
    role: str,
    minter: str | None,
    token: str,
    avoid: set[str] | None = None,
    minter_key: str | None = None,
) -> str:
    """Reserve a fresh id in `directory` by creating its key file exclusively; ids in `avoid`
    (those with a stored report) are not handed out again. `minter_key`, the digest of the
    minter's secret, is recorded beside its id."""
    fields = {"sha256": digest(token), "role": role, "minter": minter, "minter_key": minter_key}
    body = strict_json.dumps(fields).encode()
    taken = {entry.partition(".")[0] for entry in os.listdir(directory)} | (avoid or set())
    for attempt in range(64):
        session_id = names.candidate(attempt, taken)
        if session_id in taken:
            continue
        taken.add(session_id)
        try:
            fd = os.open(join(directory, f"{session_id}.key"), _EXCLUSIVE, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as out:
            out.write(body)
        return session_id
    raise RegistryError("too_busy")


def _read_small(path: str) -> bytes | None:
    """A note's bytes (notes are tiny), or None if it is not there. Plain fds: this runs once
    per session when a project is listed."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 1 << 16)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_key(directory: str, session_id: str) -> Key | None:
    raw = _read_small(join(directory, f"{session_id}.key"))
    try:
        data = strict_json.loads(raw.decode("utf-8")) if raw is not None else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    sha, role, minter = data.get("sha256"), data.get("role"), data.get("minter")
    minter_key = data.get("minter_key")
    if not isinstance(sha, str) or role not in names.ROLES:
        return None
    return Key(
        sha,
        str(role),
        minter if isinstance(minter, str) else None,
        minter_key if isinstance(minter_key, str) else None,
    )


def linked(directory: str, key: Key, entries: set[str] | None = None) -> str | None:
    """The session's parent, if its minter still holds the secret that minted it: a session
    later given the same id is no parent of its predecessor's children. (A key minted with
    no recorded digest has no link.)"""
    minter, expected = key.minter, key.minter_key
    if minter is None or expected is None:
        return None
    if entries is not None and f"{minter}.key" not in entries:
        return None
    parent = read_key(directory, minter)
    from melchior.digests import same

    return minter if parent and same(parent.sha256, expected) else None


def verify(directory: str, session_id: str, token: str) -> Key | None:
    """The session's key if `token` is its secret; reading the digest alone proves nothing."""
    if not names.valid_id(session_id):
        return None
    key = read_key(directory, session_id)
    from melchior.digests import same

    if key is None or not same(key.sha256, digest(token)):
        return None
    return key


def read_parent(directory: str, session_id: str) -> str | None:
    raw = _read_small(join(directory, f"{session_id}.parent"))
    try:
        text = raw.decode("ascii").strip() if raw is not None else ""
    except UnicodeDecodeError:
        return None
    return text if names.valid_id(text) else None


def node(directory: str, session_id: str, entries: set[str] | None = None) -> policy.Node | None:
    """A session as the walls see it: its role, and its parent (its minter, while the minter's
    secret is the one recorded: `linked`). `entries`, when the caller has listed the
    directory, spares opening keys not there."""
    key = read_key(directory, session_id)
    if key is None:
        return None
    return policy.Node(key.role, linked(directory, key, entries))


def write_atomic(path: str, data: bytes) -> None:
    """Replace `path` whole (0600): a reader sees the old bytes or the new, never a mix, and
    after a crash the file is one or the other (the data and the rename are both synced)."""
    head, tail = os.path.split(path)
    tmp = os.path.join(head, f".{tail}.{os.urandom(6).hex()}")  # as mkstemp, without tempfile
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        dirfd = os.open(head, os.O_RDONLY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)
    except BaseException:
        try:  # noqa: SIM105
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------- liveness


def probe(path: str) -> Liveness:
    """Connect once: "live" if someone listens, "dead" if a file nobody answers, "absent"."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        sock.connect(os.fsencode(path))
    except BlockingIOError:
        return "live"  # listening, its backlog full: busy is not dead
    except FileNotFoundError:
        return "absent"
    except OSError as err:
        if err.errno in (errno.ECONNREFUSED, errno.ENOTSOCK):
            return "dead"
        raise
    finally:
        sock.close()
    return "live"


class locked:
    """The project directory's flock, held for a bind or a reap."""

    def __init__(self, directory: str) -> None:
        self._path = join(directory, ".lock")
        self._fd = -1

    def __enter__(self) -> None:
        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(self._fd)
            raise

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        os.close(self._fd)  # closing the descriptor releases the lock


def remove(directory: str, session_id: str) -> None:
    """Remove a session's socket and notes (its own exit, or a reaped corpse)."""
    for name in (session_id, *(session_id + s for s in SUFFIXES)):
        try:  # noqa: SIM105
            os.unlink(join(directory, name))
        except FileNotFoundError:
            pass


def reap(directory: str, session_id: str) -> bool:
    """Remove a socket nobody answers: under the lock, dial once more, then unlink."""
    path = join(directory, session_id)
    with locked(directory):
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                return False
        except FileNotFoundError:
            return False
        if probe(path) != "dead":
            return False
        remove(directory, session_id)
    return True


def session_ids(directory: str, entries: list[str] | None = None) -> list[str]:
    """Entries that could be sessions (their liveness is still unknown)."""
    listed = os.listdir(directory) if entries is None else entries
    return sorted(n for n in listed if "." not in n and names.valid_id(n))
