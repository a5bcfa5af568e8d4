"""`magi-code exec --json` on the real binary: a running command's output comes as
`tool.output.delta` lines before its `tool.output`, with the call's activity id."""

import json
import subprocess
import sys
from pathlib import Path

from magi_code.client import environment

EXEC = [str(Path(sys.executable).with_name("magi-code")), "exec"]


def test_a_commands_output_is_told_while_it_runs_then_whole(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    shell = {"name": "shell", "arguments": {"command": "echo early; sleep 0.3; echo late"}}
    done = subprocess.run(
        [*EXEC, "--json", "--approval-mode", "full", "fixture:" + json.dumps([{"tools": [shell]}])],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=workspace,
        env=environment(tmp_path / "home"),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(raw) for raw in done.stdout.split(b"\n") if raw]
    names = [line["event"] for line in lines]
    deltas = [line["data"] for line in lines if line["event"] == "tool.output.delta"]
    [output] = [line["data"] for line in lines if line["event"] == "tool.output"]
    assert "".join(d["text"] for d in deltas) == "early\nlate\n"
    assert len(deltas) >= 2  # `early` was told before `late` was printed
    assert {d["activity_id"] for d in deltas} == {output["activity_id"]}
    assert max(i for i, n in enumerate(names) if n == "tool.output.delta") < names.index(
        "tool.output"
    )
