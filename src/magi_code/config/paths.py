"""Where magi-code keeps its state: MC_HOME (default ~/.magi-code) and what lies beneath.

Resolving a path has no side effect; `ensure_runtime_dirs` is the one place that creates
directories (mode 0700), and only admitted startup calls it.
"""

import os
from pathlib import Path
from typing import NamedTuple


class Paths(NamedTuple):
    home: Path  # MC_HOME, canonical once created

    @property
    def settings(self) -> Path:
        return self.home / "settings.toml"

    @property
    def instructions(self) -> Path:
        return self.home / "AGENTS.md"

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"

    @property
    def cache(self) -> Path:
        return self.home / "cache"

    @property
    def agents(self) -> Path:
        return self.home / "agents"


def project_settings(cwd: Path) -> Path:
    """Project settings apply to their exact directory only, never to its children."""
    return cwd / ".magi-code" / "settings.toml"


def resolve_home(env: dict[str, str] | os._Environ[str]) -> Path:
    configured = env.get("MC_HOME")
    if configured:
        return Path(configured).expanduser()
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".magi-code"


def ensure_runtime_dirs(home: Path) -> Paths:
    for directory in (home, home / "sessions", home / "cache"):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return Paths(Path(os.path.realpath(home)))
