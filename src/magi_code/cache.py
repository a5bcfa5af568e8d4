"""Derived files under MC_HOME/cache: a value kept with the key it was derived from.

A cache file is JSON, `{"key": ..., "value": ...}`, replaced whole (written beside, then
renamed; 0600). `kept` gives the value only while the stored key equals the caller's; any
unreadable, foreign or mismatched file is a miss. Best effort both ways: a cache that cannot be
read or written only makes the caller slower, never wrong.
"""

from __future__ import annotations

import contextlib
import json
import os

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any


def named(home: str, name: str) -> str:
    """The cache file `name` of MC_HOME `home`."""
    return os.path.join(home, "cache", name)


def kept(path: str, key: object) -> Any:
    """The value cached in `path` for exactly `key` (compared as JSON), else None."""
    try:
        with open(path, "rb") as cached:
            stored = json.load(cached)
        if stored["key"] == json.loads(json.dumps(key)):
            return stored["value"]
    except (OSError, ValueError, TypeError, KeyError):
        pass
    return None


def keep(path: str, key: object, value: object) -> None:
    """Replace the cache file `path` with `value` for `key`, or leave it (a value JSON cannot
    hold exactly, as a date, is not cached)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        text = json.dumps({"key": key, "value": value})
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
