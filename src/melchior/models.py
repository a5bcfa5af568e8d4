"""`melchior models [--refresh] [--json]`: the model catalog as melchior's argv reply.

It asks the harness through its command line (`magi-code models --json [--refresh]`, the
binary from MAGI_CODE_BIN or `magi-code` on PATH) and imports nothing of magi_code. Listing
only: it never runs inference.
"""

import json
import os
import shutil
import subprocess
import sys

from melchior import wire
from melchior.limits import HARNESS_TIMEOUT_S


def _reply(value: dict[str, object]) -> None:
    sys.stdout.buffer.write(wire.encode_argv(value))
    sys.stdout.flush()


def _refuse(code: str) -> int:
    _reply(wire.refusal(code))
    return 1


def main(argv: list[str]) -> int:
    unknown = [a for a in argv if a not in ("--refresh", "--json")]
    if unknown:
        return _refuse("usage")
    binary = os.environ.get("MAGI_CODE_BIN") or shutil.which("magi-code")
    if not binary:
        return _refuse("harness_unavailable")
    command = [binary, "models", "--json", *(["--refresh"] if "--refresh" in argv else [])]
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=HARNESS_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return _refuse("harness_unavailable")
    try:
        listing = json.loads(done.stdout)
    except (ValueError, RecursionError):
        listing = None
    if done.returncode != 0 or not isinstance(listing, dict):
        return _refuse("harness_failed")
    cards = listing.get("models")
    failed = listing.get("failed")
    if not isinstance(cards, list) or not isinstance(failed, list):
        return _refuse("harness_failed")
    _reply(wire.reply(cards) | {"refreshed": bool(listing.get("refreshed")), "failed": failed})
    return 0
