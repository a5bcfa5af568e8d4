"""Failures that a worker path absorbs, made visible on request.

A run that crashes still ends in `run.finished`, and a tool that raises fails only its call:
the exception is absorbed by design. With MC_DEBUG_STDERR=1 each absorbed exception is written
to stderr with its traceback, so a developer sees what happened; otherwise nothing is written
(stderr of `serve --stdio` is /dev/null then). Never on a protocol wire.
"""

import os
import sys


def absorbed(where: str) -> None:
    """Call from inside an `except` block that absorbs the exception being handled."""
    if os.environ.get("MC_DEBUG_STDERR") != "1":
        return
    import traceback

    print(f"magi-code: absorbed in {where}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)


def note(what: str) -> None:
    """A one-line milestone for a developer (and the import-pinning tests) to read in order."""
    if os.environ.get("MC_DEBUG_STDERR") == "1":
        print(f"magi-code: {what}", file=sys.stderr, flush=True)
