"""magi-code beside the Codex app-server on one local mock Responses provider (`make bench-peer`).

Both systems run interleaved, measurement by measurement, against the same mock provider,
and the table prints each median and the ratio magi-code/Codex:

- spawn -> `initialize` result, with the (real, loopback) provider configured;
- spawn -> first reply text (initialize, a session/thread, one prompt);
- a one-line turn in a warm process (turn start -> terminal event);
- deltas/s on a 10,000-delta reply, counting the delivered text (not frames);
- CPU per one-line turn, and RSS after 20 turns, of the whole process tree.

Codex is the native binary npm installed under .cache/peer (CODEX_BIN overrides it). Not part
of `make bench`, which keeps the project's own figures.
"""

import compileall
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.mock_responses import MockResponses

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "peer"
SPAWNS = int(os.environ.get("PEER_SPAWNS", "10"))  # spawn measurements per system
TURNS = 20  # one-line turns per system, in one process
BIG = 10_000  # deltas in the long reply
BIG_RUNS = 3
DEADLINE_S = 120.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


def codex_binary() -> str:
    if os.environ.get("CODEX_BIN"):
        return os.environ["CODEX_BIN"]
    native = sorted(CACHE.glob("node_modules/@openai/codex-linux-*/vendor/*/bin/codex"))
    if native:
        return str(native[0])
    wrapper = CACHE / "node_modules" / ".bin" / "codex"
    if wrapper.exists():
        return str(wrapper)
    sys.exit("Codex is not installed: run `make bench-peer`")


def magi_binary() -> list[str]:
    script = Path(sys.executable).with_name("magi-code")
    return [str(script)] if script.exists() else [sys.executable, "-m", "magi_code.cli"]


# ---- the process tree ----------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(entry))
    return kids


def tree(pid: int) -> list[int]:
    kids, out, todo = _children(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def tree_cpu_s(pid: int) -> float:
    total = 0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / CLK_TCK


def tree_rss_mib(pid: int) -> float:
    kib = 0
    for p in tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().split("\n"):
                if line.startswith("VmRSS:"):
                    kib += int(line.split()[1])
        except OSError:
            continue
    return kib / 1024


# ---- one child speaking JSON lines ---------------------------------------------------------


class Child:
    """A spawned system; its stdout lines arrive, parsed and time-stamped, on a queue."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: str) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        self.lines: queue.Queue[tuple[float, dict[str, Any]] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.ids = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.perf_counter(), json.loads(line)))
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def next(self) -> tuple[float, dict[str, Any]]:
        item = self.lines.get(timeout=DEADLINE_S)
        if item is None:
            raise RuntimeError("the child closed its output")
        return item

    def until(self, match: Callable[[dict[str, Any]], bool]) -> tuple[float, dict[str, Any]]:
        while True:
            at, message = self.next()
            if match(message):
                return at, message

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Turn:
    def __init__(self) -> None:
        self.first: float | None = None  # when the first reply text arrived
        self.text: list[str] = []


class System:
    name = ""

    def __init__(self, mock: MockResponses, scratch: Path) -> None:
        self.mock, self.scratch = mock, scratch
        self.workspace = scratch / f"{self.name}-ws"
        self.workspace.mkdir()

    def spawn(self) -> Child:
        raise NotImplementedError

    def initialize(self, child: Child) -> float:
        raise NotImplementedError

    def open(self, child: Child) -> str:
        raise NotImplementedError

    def turn(self, child: Child, where: str, prompt: str) -> tuple[float, Turn, float]:
        """Start a turn; (sent at, the turn's text, ended at)."""
        raise NotImplementedError


class Magi(System):
    name = "magi-code"

    def __init__(self, mock: MockResponses, scratch: Path) -> None:
        super().__init__(mock, scratch)
        self.home = scratch / "mc-home"
        self.home.mkdir()
        (self.home / "settings.toml").write_text(
            'provider = "mock"\nmodel = "mock-model"\n[providers.mock]\n'
            f'wire_api = "openai-responses"\nbase_url = "{mock.url}"\nmodels = ["mock-model"]\n'
        )

    def spawn(self) -> Child:
        env = dict(os.environ, MC_HOME=str(self.home))
        return Child([*magi_binary(), "serve", "--stdio"], env, str(self.workspace))

    def request(self, child: Child, method: str, params: dict[str, Any]) -> tuple[float, Any]:
        child.ids += 1
        rid = f"r{child.ids}"
        child.send(
            {
                "protocol": "magi-code.local-agent",
                "version": 1,
                "id": rid,
                "method": method,
                "params": params,
            }
        )
        at, message = child.until(lambda m: m.get("type") == "response" and m.get("id") == rid)
        if "result" not in message:
            raise RuntimeError(f"{method}: {message.get('error')}")
        return at, message["result"]

    def initialize(self, child: Child) -> float:
        at, result = self.request(child, "initialize", {"required_capabilities": ["turn.start"]})
        assert result["status"]["readiness"] == "ready", result["status"]
        return at

    def open(self, child: Child) -> str:
        session: str = self.request(child, "session.create", {})[1]["session_id"]
        return session

    def turn(self, child: Child, where: str, prompt: str) -> tuple[float, Turn, float]:
        sent = time.perf_counter()
        self.request(child, "turn.start", {"session_id": where, "prompt": prompt})
        turn = Turn()
        while True:
            at, message = child.next()
            if message.get("type") != "event":
                continue
            if message["event"] == "message.delta":
                turn.first = turn.first or at
                turn.text.append(message["data"]["text"])
            elif message["event"] == "run.finished":
                assert message["data"]["outcome"] == "completed", message["data"]
                return sent, turn, at


class Codex(System):
    name = "codex"

    def __init__(self, mock: MockResponses, scratch: Path) -> None:
        super().__init__(mock, scratch)
        self.binary = codex_binary()
        self.home = scratch / "codex-home"
        self.home.mkdir()
        (self.home / "config.toml").write_text(
            'model = "mock-model"\nmodel_provider = "mock"\napproval_policy = "never"\n'
            'sandbox_mode = "read-only"\ncheck_for_update_on_startup = false\n'
            f'[model_providers.mock]\nname = "mock"\nbase_url = "{mock.url}"\n'
            'wire_api = "responses"\n'
        )

    def spawn(self) -> Child:
        env = dict(os.environ, CODEX_HOME=str(self.home))
        return Child([self.binary, "app-server"], env, str(self.workspace))

    def request(self, child: Child, method: str, params: dict[str, Any]) -> tuple[float, Any]:
        child.ids += 1
        rid = child.ids
        child.send({"method": method, "id": rid, "params": params})
        at, message = child.until(lambda m: m.get("id") == rid and "method" not in m)
        if "result" not in message:
            raise RuntimeError(f"{method}: {message.get('error')}")
        return at, message["result"]

    def initialize(self, child: Child) -> float:
        info = {"name": "magi_bench", "title": "magi-code peer bench", "version": "0"}
        at, _ = self.request(child, "initialize", {"clientInfo": info})
        child.send({"method": "initialized"})
        return at

    def open(self, child: Child) -> str:
        thread: str = self.request(child, "thread/start", {"cwd": str(self.workspace)})[1][
            "thread"
        ]["id"]
        return thread

    def turn(self, child: Child, where: str, prompt: str) -> tuple[float, Turn, float]:
        sent = time.perf_counter()
        params = {"threadId": where, "input": [{"type": "text", "text": prompt}]}
        self.request(child, "turn/start", params)
        turn = Turn()
        while True:
            at, message = child.next()
            method = message.get("method")
            if method == "item/agentMessage/delta":
                turn.first = turn.first or at
                turn.text.append(message["params"]["delta"])
            elif method == "turn/completed":
                status = message["params"]["turn"]["status"]
                assert status == "completed", message["params"]["turn"]
                return sent, turn, at


# ---- measurements --------------------------------------------------------------------------


def spawn_to_initialize(system: System) -> float:
    child = system.spawn()
    try:
        return system.initialize(child) - child.started
    finally:
        child.close()


def spawn_to_first_reply(system: System) -> float:
    child = system.spawn()
    try:
        system.initialize(child)
        where = system.open(child)
        _, turn, ended = system.turn(child, where, "Say hello.")
        return (turn.first or ended) - child.started
    finally:
        child.close()


def warm_turns(system: System) -> tuple[float, float, float]:
    """(median one-line turn s, CPU s per turn, RSS MiB after the turns) in one process."""
    child = system.spawn()
    try:
        system.initialize(child)
        where = system.open(child)
        system.turn(child, where, "Warm up.")
        cpu = tree_cpu_s(child.proc.pid)
        times = []
        for n in range(TURNS):
            sent, _, ended = system.turn(child, where, f"One line, please ({n}).")
            times.append(ended - sent)
        per_turn = (tree_cpu_s(child.proc.pid) - cpu) / TURNS
        return statistics.median(times), per_turn, tree_rss_mib(child.proc.pid)
    finally:
        child.close()


def delta_rate(system: System, deltas: list[str]) -> float:
    """Delivered deltas per second: delivered text over the reply's text, times its deltas,
    over the turn's duration."""
    whole = sum(map(len, deltas))
    child = system.spawn()
    try:
        system.initialize(child)
        where = system.open(child)
        sent, turn, ended = system.turn(child, where, "A long one.")
        delivered = sum(map(len, turn.text))
        return (min(delivered, whole) / whole) * len(deltas) / (ended - sent)
    finally:
        child.close()


def main() -> None:
    import magi_code
    import melchior

    for package in (magi_code, melchior):  # as an install would (bytecode may not be written)
        compileall.compile_dir(Path(package.__file__).parent, quiet=1)
    scratch = Path(tempfile.mkdtemp(prefix="run-", dir=CACHE))  # not /tmp: Codex refuses it
    figures: dict[str, dict[str, list[float]]] = {}

    def note(metric: str, system: System, value: float) -> None:
        figures.setdefault(metric, {}).setdefault(system.name, []).append(value)

    try:
        with MockResponses() as mock:
            systems: list[System] = [Magi(mock, scratch), Codex(mock, scratch)]
            mock.deltas = ["Hello."]
            for system in systems:  # warm caches and first-run set-up of both
                spawn_to_first_reply(system)
            for _ in range(SPAWNS):
                for system in systems:
                    note("spawn -> initialize (ms)", system, spawn_to_initialize(system) * 1e3)
                    note("spawn -> first reply (ms)", system, spawn_to_first_reply(system) * 1e3)
            for system in systems:
                turn_s, cpu_s, rss = warm_turns(system)
                note("one-line turn (ms)", system, turn_s * 1e3)
                note("CPU per turn (ms)", system, cpu_s * 1e3)
                note(f"RSS after {TURNS} turns (MiB)", system, rss)
            mock.deltas = [f"w{i} " for i in range(BIG)]
            for _ in range(BIG_RUNS):
                for system in systems:
                    note(f"deltas/s ({BIG:,}-delta reply)", system, delta_rate(system, mock.deltas))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{'metric':34} {'magi-code':>10} {'codex':>10} {'ratio':>7}   (medians)")
    for metric, by in figures.items():
        magi, codex = statistics.median(by["magi-code"]), statistics.median(by["codex"])
        print(f"{metric:34} {magi:10.1f} {codex:10.1f} {magi / codex:7.2f}")


if __name__ == "__main__":
    main()
