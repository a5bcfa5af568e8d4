"""The melchior vocabulary a session offers as tools: described by `melchior tool --describe`
once per melchior install and kept in MC_HOME/cache, described again when the command file
changes or the cache is unreadable."""

import json
import os
import stat
import sys
from pathlib import Path

from magi_code.runner import peers
from magi_code.runner.melchior_tools import VOCABULARY_CACHE, described


def counting_melchior(tmp: Path) -> tuple[list[str], Path]:
    """A `melchior` command that answers `tool --describe` as the real one does, and counts
    how often it ran."""
    real = peers.melchior_command()
    count = tmp / "runs"
    script = tmp / "melchior"
    script.write_text(
        f"#!{sys.executable}\n"
        "import subprocess, sys\n"
        f"open({str(count)!r}, 'a').write('x')\n"
        f"sys.stdout.buffer.write(subprocess.run({real!r} + sys.argv[1:], "
        "capture_output=True).stdout)\n"
    )
    script.chmod(0o700)
    return [str(script)], count


def runs(count: Path) -> int:
    return len(count.read_text()) if count.exists() else 0


def test_the_vocabulary_is_described_once_per_install_and_kept_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "cache").mkdir(parents=True)
    command, count = counting_melchior(tmp_path)
    first = described(command, os.environ, str(home))
    assert first is not None and "list" in first["verbs"] and runs(count) == 1
    cache = home / "cache" / VOCABULARY_CACHE
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert described(command, os.environ, str(home)) == first and runs(count) == 1
    # Reinstalled (the command file rewritten): described again.
    os.utime(command[0], ns=(0, cache.stat().st_mtime_ns + 1_000_000_000))
    assert described(command, os.environ, str(home)) == first and runs(count) == 2
    # A cache that is not ours to read is described over.
    cache.write_text("[1, 2")
    assert described(command, os.environ, str(home)) == first and runs(count) == 3
    assert json.loads(cache.read_text())["value"] == first


def test_without_a_cache_folder_the_vocabulary_is_still_described(tmp_path: Path) -> None:
    command, count = counting_melchior(tmp_path)
    home = tmp_path / "no-such-home"
    assert described(command, os.environ, str(home)) is not None
    assert described(command, os.environ, str(home)) is not None and runs(count) == 2
