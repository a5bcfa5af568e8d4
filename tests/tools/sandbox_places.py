"""Places for the real-process sandbox tests: a fake HOME holding an SSH key, a fake MC_HOME
holding credentials, and a workspace with `.git` and `.magi-code` folders.

They lie in pytest's cache folder (in the repository; else in its `.cache`, else in the
user's `~/.cache`), never under /tmp, /var/tmp or /dev/shm: those are writable roots in
workspace-write, and Landlock cannot take a folder out of a grant, so a secret place under
one of them splits that root into per-entry rules and new entries directly in it could not be
made (the tests write new files straight into /tmp). Each test gets its own folder, removed
afterwards. The secrets are fresh per test, so finding one in an output can only mean it was
read.
"""

import os
import shutil
import stat
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from magi_code.records import record
from magi_code.tools.sandbox.modes import support
from magi_code.tools.sandbox.plan import SHARED_TEMP


@record
class Places:
    root: Path
    home: Path  # HOME: .ssh/id_ed25519
    mc_home: Path  # MC_HOME: credentials.json
    workspace: Path  # .git/config, .magi-code/, notes.txt
    ssh_key: Path
    credentials: Path
    ssh_secret: str
    credentials_secret: str

    def env(self, **extra: str) -> dict[str, str]:
        """A small environment for a `magi-code` process: nothing of the test's own but PATH."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "MC_HOME": str(self.mc_home),
            "LANG": "C.UTF-8",
        }
        env.update(extra)
        return env

    def secrets(self) -> tuple[str, str]:
        return self.ssh_secret, self.credentials_secret

    def snapshot(self) -> dict[str, bytes | None]:
        """Every entry under the places' root with its content (None for a folder)."""
        seen: dict[str, bytes | None] = {}
        for folder, names, files in os.walk(self.root):
            for name in names:
                seen[os.path.join(folder, name)] = None
            for name in files:
                path = os.path.join(folder, name)
                regular = stat.S_ISREG(os.lstat(path).st_mode)
                seen[path] = Path(path).read_bytes() if regular else b"(not a regular file)"
        return seen


def make_places(base: Path) -> Places:
    root = Path(tempfile.mkdtemp(prefix="places-", dir=base)).resolve()
    home, mc_home, workspace = root / "home", root / "mc-home", root / "workspace"
    (home / ".ssh").mkdir(parents=True)
    mc_home.mkdir()
    (workspace / ".git").mkdir(parents=True)
    (workspace / ".magi-code").mkdir()
    (workspace / "src").mkdir()
    ssh_secret = f"ssh-private-{uuid.uuid4().hex}"
    credentials_secret = f"api-key-{uuid.uuid4().hex}"
    ssh_key, credentials = home / ".ssh" / "id_ed25519", mc_home / "credentials.json"
    ssh_key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{ssh_secret}\n")
    credentials.write_text(f'{{"token": "{credentials_secret}"}}\n')
    (workspace / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (workspace / "notes.txt").write_text("n0tes\n")
    return Places(
        root, home, mc_home, workspace, ssh_key, credentials, ssh_secret, credentials_secret
    )


def outside_shared_temp(request: pytest.FixtureRequest) -> Path:
    """A folder for the places outside /tmp, /var/tmp and /dev/shm: pytest's cache folder, the
    repository's `.cache` (git ignores both), or a folder in the user's own `~/.cache` when the
    repository itself lies in a shared temporary folder (as a fresh clone may)."""
    cache = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    candidates = [request.config.rootpath / ".cache" / "sandbox-places"]
    if cache is not None:
        candidates.insert(0, Path(cache.mkdir("sandbox-places")))
    candidates.append(Path.home() / ".cache" / "magi-code-sandbox-tests")
    shared = [Path(p).resolve() for p in SHARED_TEMP if os.path.isdir(p)]
    for base in candidates:
        resolved = base.resolve()
        if not any(resolved == p or p in resolved.parents for p in shared):
            resolved.mkdir(parents=True, exist_ok=True)
            return resolved
    pytest.fail(f"the sandbox tests need a folder outside {SHARED_TEMP}: {candidates}")


def require_sandbox() -> None:
    """Skip (naming why) only where this kernel truly offers no sandbox."""
    why = support()[1]
    if why is not None:
        pytest.skip(f"no OS sandbox on this machine: {why}")


@pytest.fixture
def places(request: pytest.FixtureRequest) -> Iterator[Places]:
    require_sandbox()
    made = make_places(outside_shared_temp(request))
    try:
        yield made
    finally:
        shutil.rmtree(made.root, ignore_errors=True)
