"""Workspace checkpoints (issue 29, item 9: rewind): a turn that changes files waits for one
checkpoint, taken before its first change; on a 10,000-file workspace it must cost under
300 ms a turn. (A second one, once the turn is over, runs in a thread the turn does not
wait for; it is timed too.)

The files have sizes spread from 1 KiB to 64 KiB (log-uniform: most are small, as in a real
repository) and each its own content, so the first copy is not flattered by files alike.
Timed: the first checkpoint of a workspace never seen (it stores every file), the first
checkpoint of a second session in the same workspace, then turns that each change three files
(medians of RUNS), against the bare walk of the same tree (tools/walk.py, which a checkpoint
uses) as the floor. A rewind's planning is timed too, and the disk that two sessions'
checkpoints take against one's.
"""

import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from magi_code.checkpoints.plan import plan_rewind
from magi_code.checkpoints.store import CheckpointStore
from magi_code.tools.walk import Walk

RUNS = 15
FOLDERS, PER_FOLDER = 100, 100  # 10,000 files
SMALLEST, LARGEST = 1024, 64 * 1024
TARGET_MS = 300.0
CODE = "".join(f"def function_{i}(x):\n    return x * {i}  # some code\n" for i in range(40))


def build(root: Path) -> int:
    """The workspace; its files' bytes."""
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("__pycache__/\n")
    sizes = random.Random(29)
    total = 0
    for f in range(FOLDERS):
        folder = root / "src" / f"pkg{f:03d}"
        folder.mkdir(parents=True)
        for i in range(PER_FOLDER):
            size = int(SMALLEST * (LARGEST / SMALLEST) ** sizes.random())
            head = f"# pkg{f:03d}/mod{i:03d}\n"
            body = (head + CODE * (size // len(CODE) + 1))[:size]
            (folder / f"mod{i:03d}.py").write_text(body)
            total += size
    return total


def store_of(home: Path, session: str, root: Path, tmp: str) -> CheckpointStore:
    return CheckpointStore(home / "sessions" / f"{session}.checkpoints", root, {"HOME": tmp})


def disk(*folders: Path) -> int:
    """Bytes the folders take on disk (each inode once)."""
    seen: set[int] = set()
    total = 0
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            info = path.lstat()
            if info.st_ino not in seen:
                seen.add(info.st_ino)
                total += info.st_blocks * 512
    return total


def walk_all(walk: Walk) -> int:
    return sum(1 for _ in walk.entries())


def timed(action: Callable[[], object], cpu: list[float] | None = None) -> float:
    """Wall milliseconds of `action`; its thread's CPU milliseconds go to `cpu` (what it
    costs whatever else the machine runs)."""
    started, started_cpu = time.perf_counter(), time.thread_time()
    action()
    if cpu is not None:
        cpu.append((time.thread_time() - started_cpu) * 1000)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "ws", Path(tmp) / "home"
        root.mkdir()
        size = build(root)
        (home / "sessions").mkdir(parents=True)
        files = walk_all(Walk(root, ignores={"HOME": tmp})) - FOLDERS - 2  # less src/, .gitignore
        store = store_of(home, "s1", root, tmp)
        first_cpu: list[float] = []
        first = timed(lambda: store.take("r0", "before"), first_cpu)
        store.take("r0", "after")
        one = disk(home)
        time.sleep(0.2)  # sessions and turns come seconds apart: past the clock tick
        second_store = store_of(home, "s2", root, tmp)
        second_cpu: list[float] = []
        second = timed(lambda: second_store.take("r0", "before"), second_cpu)
        two = disk(home)
        befores: list[float] = []
        afters: list[float] = []
        walks: list[float] = []
        cpu: list[float] = []
        walk_cpu: list[float] = []
        for run in range(1, RUNS + 1):
            walks.append(timed(partial(walk_all, Walk(root, ignores={"HOME": tmp})), walk_cpu))
            before = timed(partial(store.take, f"r{run}", "before"), cpu)
            for i in range(3):  # what the turn changes
                path = root / "src" / f"pkg{(run * 7 + i) % FOLDERS:03d}" / "mod000.py"
                path.write_text(path.read_text() + f"# turn {run}\n")
            afters.append(timed(partial(store.take, f"r{run}", "after")))
            befores.append(before)
        listed = store.listed()
        target, *since = store.load(listed[2:])
        planned = timed(lambda: plan_rewind(target, since, store.current()))
        turn, walk = statistics.median(befores), statistics.median(walks)
        verdict = "under" if turn < TARGET_MS else "OVER"
        print(
            f"workspace: {files:,} files in {FOLDERS} folders (a git repository), "
            f"{size / 2**20:.0f} MiB, {SMALLEST // 1024}-{LARGEST // 1024} KiB each"
        )
        print(
            f"first checkpoint of a workspace never seen (stores every file): {first:.0f} ms "
            f"({first_cpu[0]:.0f} ms of CPU)"
        )
        print(
            f"first checkpoint of a second session in the same workspace: {second:.0f} ms "
            f"({second_cpu[0]:.0f} ms of CPU)"
        )
        print(
            f"checkpoint a turn waits for (before its first change): {turn:.0f} ms median "
            f"of {RUNS} ({statistics.median(cpu):.0f} ms of CPU); {verdict} the "
            f"{TARGET_MS:.0f} ms target"
        )
        after = statistics.median(afters)
        print(f"checkpoint after the turn (3 files changed; not waited for): {after:.0f} ms")
        cpu_ms, walk_cpu_ms = statistics.median(cpu), statistics.median(walk_cpu)
        print(
            f"bare walk of the same tree (the floor): {walk:.0f} ms ({walk_cpu_ms:.0f} ms of "
            f"CPU); the checkpoint: {turn / walk:.1f}x ({cpu_ms / walk_cpu_ms:.1f}x in CPU)"
        )
        print(
            f"disk of the checkpoints: one session {one / 2**20:.1f} MiB, two sessions "
            f"{two / 2**20:.1f} MiB ({two / one:.2f}x)"
        )
        print(f"(load average over the last minute: {os.getloadavg()[0]:.1f})")
        print(f"planning a rewind over {len(since)} later checkpoints: {planned:.0f} ms")


if __name__ == "__main__":
    main()
