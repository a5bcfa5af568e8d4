"""Subagents through the real `magi-code serve --stdio` parent on the fixture provider: each
child a separate `magi-code serve --stdio` with its own `melchior serve`.

Prints: the median time from the parent's `agent` tool call to the child's first run event
(target, issue 16: < 300 ms), over ROUNDS children; the wall time for 4 concurrent background
children against 1, from `turn.start` until every child's run is finished; and the resident
memory of the parent session's whole process tree (its `melchior serve` included), idle and
with 4 children running.
"""

import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from magi_code.client import LocalAgentClient, environment
from magi_code.limits import SUBAGENTS_CONCURRENT

ROUNDS = 10


def script(*rounds: dict[str, object]) -> str:
    return "fixture:" + json.dumps(list(rounds))


def agent(prompt: str, background: bool = False) -> dict[str, object]:
    return {"name": "agent", "arguments": {"prompt": prompt, "background": background}}


def finish(client: LocalAgentClient) -> dict[str, object]:
    while True:
        event = client.next_event(60)
        if event.name == "run.finished":
            return event.data


def records(home: Path, session_id: str) -> list[dict[str, object]]:
    path = home / "sessions" / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


def agent_results(home: Path, session_id: str) -> list[dict[str, object]]:
    return [
        json.loads(str(r["result"]))
        for r in records(home, session_id)
        if r["type"] == "tool" and r["name"] == "agent" and r["state"] != "started"
    ]


def tree_rss_kib(pid: int) -> int:
    """Resident memory of `pid` and every descendant, in KiB."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            total += int(
                next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmRSS"))
            )
            for task in os.listdir(f"/proc/{current}/task"):
                todo += [
                    int(p)
                    for p in Path(f"/proc/{current}/task/{task}/children").read_text().split()
                ]
        except (FileNotFoundError, StopIteration):
            continue
    return total


def all_finished(home: Path, sessions: list[str]) -> bool:
    try:
        return all(any(r["type"] == "run_finished" for r in records(home, s)) for s in sessions)
    except FileNotFoundError:
        return False


def concurrent(client: LocalAgentClient, home: Path, sid: str, count: int) -> float:
    """Seconds from turn.start until `count` background children have all finished a run."""
    before = len(agent_results(home, sid))
    child = script({"text": "child done", "deltas": 20})
    t0 = time.perf_counter()
    client.request(
        "turn.start", {"session_id": sid, "prompt": script({"tools": [agent(child, True)] * count})}
    )
    finish(client)
    sessions = [str(r["session"]) for r in agent_results(home, sid)[before:]]
    while not all_finished(home, sessions):
        time.sleep(0.005)
    return time.perf_counter() - t0


def bare_start(workspace: Path, env: dict[str, str]) -> float:
    """Seconds from spawning a plain `serve --stdio` (its own melchior included) to its first
    run event: the floor under a child's start, measured on the same machine in the same run."""
    t0 = time.perf_counter()
    with LocalAgentClient.spawn(cwd=workspace, env=env) as client:
        client.request("initialize", {"required_capabilities": ["turn.start"]})
        sid = client.request("session.create")["session_id"]
        client.request("turn.start", {"session_id": sid, "prompt": "hi"})
        client.next_event(60)
        return time.perf_counter() - t0


def main() -> None:
    short = Path(tempfile.mkdtemp(prefix="mb", dir="/tmp"))  # socket paths must fit sun_path
    try:
        for name in ("run", "state"):
            (short / name).mkdir(mode=0o700)
        workspace, home = short / "w", short / "h"
        workspace.mkdir()
        env = environment(
            home, XDG_RUNTIME_DIR=str(short / "run"), XDG_STATE_HOME=str(short / "state")
        )
        with LocalAgentClient.spawn(cwd=workspace, env=env) as client:
            client.request("initialize", {"required_capabilities": ["turn.start"]})
            sid = client.request("session.create")["session_id"]
            client.request("turn.start", {"session_id": sid, "prompt": "warm up"})
            finish(client)
            idle = tree_rss_kib(client.process.pid)

            for _ in range(ROUNDS):
                prompt = script({"tools": [agent(script({"text": "hi"}))]}, {"text": "ok"})
                client.request("turn.start", {"session_id": sid, "prompt": prompt})
                finish(client)
            firsts = [int(str(r["first_event_ms"])) for r in agent_results(home, sid)[-ROUNDS:]]
            bare = statistics.median(bare_start(workspace, env) for _ in range(5)) * 1000
            print(
                f"agent tool call -> child's first event: median {statistics.median(firsts)} ms, "
                f"max {max(firsts)} ms over {ROUNDS} children (target < 300 ms); a plain serve "
                f"from spawn to first event: {bare:.0f} ms; ratio "
                f"{statistics.median(firsts) / bare:.2f}"
            )

            one = concurrent(client, home, sid, 1)
            four = concurrent(client, home, sid, SUBAGENTS_CONCURRENT)
            print(
                f"{SUBAGENTS_CONCURRENT} concurrent background children: {four * 1000:.0f} ms "
                f"to all finished; 1 child: {one * 1000:.0f} ms; ratio {four / one:.2f}"
            )

            hang = script({"hang": True})
            client.request(
                "turn.start",
                {
                    "session_id": sid,
                    "prompt": script({"tools": [agent(hang, True)] * SUBAGENTS_CONCURRENT}),
                },
            )
            finish(client)
            busy = tree_rss_kib(client.process.pid)
            print(
                f"session process tree RSS (parent + its melchior serve + children): idle "
                f"{idle / 1024:.1f} MiB; with {SUBAGENTS_CONCURRENT} children running "
                f"{busy / 1024:.1f} MiB "
                f"({(busy - idle) / SUBAGENTS_CONCURRENT / 1024:.1f} MiB a child)"
            )
    finally:
        shutil.rmtree(short, ignore_errors=True)


if __name__ == "__main__":
    main()
