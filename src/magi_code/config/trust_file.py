"""Recording folder trust in the GLOBAL settings file: `[permissions] trusted_projects`.

Only that array changes, through the one safe TOML writer (config/settings_file.py): every
other byte of the user's file is kept, each edit is checked by parsing it before it is kept,
and the write is atomic, 0600.
"""

import os

from magi_code.config import settings_file
from magi_code.config.settings_file import SettingsFileError as TrustFileError
from magi_code.config.trust import trusted_paths

__all__ = ["KEY", "TrustFileError", "trust", "trusted_through", "untrust"]

KEY = "trusted_projects"


def trust(settings_path: str, folder: str) -> bool:
    """List the canonical `folder`; False when it was already listed (nothing written)."""
    canonical = os.path.realpath(folder)
    listed = _read_list(settings_path)
    if canonical in [os.path.realpath(os.path.expanduser(p)) for p in listed]:
        return False
    settings_file.set_array(settings_path, "permissions", KEY, [*listed, canonical])
    return True


def untrust(settings_path: str, folder: str) -> bool:
    """Remove every entry naming the canonical `folder`; False when none did."""
    canonical = os.path.realpath(folder)
    listed = _read_list(settings_path)
    kept = [p for p in listed if os.path.realpath(os.path.expanduser(p)) != canonical]
    if len(kept) == len(listed):
        return False
    settings_file.set_array(settings_path, "permissions", KEY, kept)
    return True


def trusted_through(settings_path: str, folder: str) -> str | None:
    """The listed ancestor (or the folder itself) that makes `folder` trusted, if any."""
    here = os.path.realpath(folder)
    for root in trusted_paths({"permissions": {KEY: _read_list(settings_path)}}):
        if here == root or here.startswith(root.rstrip("/") + "/"):
            return root
    return None


def _read_list(settings_path: str) -> list[str]:
    table = settings_file.read(settings_path).get("permissions", {})
    listed = table.get(KEY, []) if isinstance(table, dict) else []
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise TrustFileError("permissions.trusted_projects is not a list of paths")
    return listed
