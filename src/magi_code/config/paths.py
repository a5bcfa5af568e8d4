"""Where magi-code keeps its state: MC_HOME (default ~/.magi-code) and what lies beneath.

Paths are plain strings here: this module is on the path to the initialize result, and
pathlib costs milliseconds to import. Resolving a path has no side effect;
`ensure_runtime_dirs` is the one place that creates directories (mode 0700), and only
admitted startup calls it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from magi_code.records import record


@record
class Paths:
    home: str  # MC_HOME, canonical once created

    @property
    def settings(self) -> str:
        return os.path.join(self.home, "settings.toml")

    @property
    def sessions(self) -> str:
        return os.path.join(self.home, "sessions")


def project_settings(cwd: str) -> str:
    """Project settings apply to their exact directory only, never to its children."""
    return os.path.join(cwd, ".magi-code", "settings.toml")


def resolve_home(env: Mapping[str, str]) -> str:
    configured = env.get("MC_HOME")
    if configured:
        return os.path.expanduser(configured)
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".magi-code")


def ensure_runtime_dirs(home: str) -> Paths:
    for directory in (home, os.path.join(home, "sessions"), os.path.join(home, "cache")):
        os.makedirs(directory, mode=0o700, exist_ok=True)
    return Paths(os.path.realpath(home))
