"""What tests script and read of a session: the built-in fixture provider's script (one dict
per model round; `call` makes a round that calls one tool), a session file's records as
stored, and `hold_open`: another process holding a session open."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def script(*rounds: dict[str, Any]) -> str:
    """A `fixture:` model whose rounds answer in order (providers/fixture.py reads it)."""
    return "fixture:" + json.dumps(list(rounds), ensure_ascii=False)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A round in which the model calls the tool `name` with `arguments`."""
    return {"tools": [{"name": name, "arguments": arguments}]}


def records(home: Path, session_id: str) -> list[dict[str, Any]]:
    """The stored records of `session_id` under MC_HOME `home`, in order."""
    raw = (home / "sessions" / f"{session_id}.jsonl").read_bytes()
    return [json.loads(line) for line in raw.split(b"\n") if line]


HOLDER = """
import sys
from pathlib import Path
from magi_code.sessions import SessionError, SessionStore
store = SessionStore(Path(sys.argv[1]))
try:
    attachment, _ = store.open(sys.argv[2], sys.argv[3])
except SessionError as err:
    print(err.code, flush=True)
    raise SystemExit(0)
print("held", flush=True)
sys.stdin.read()  # hold the session until the parent closes our stdin
attachment.close()
print("released", flush=True)
"""


def hold_open(home: Path, session_id: str, cwd: Path) -> subprocess.Popen[str]:
    """Another process with the session `session_id` of MC_HOME `home` open in `cwd`, its lease
    held until its stdin is closed (it then says "released" on stdout)."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home), session_id, str(cwd)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "held\n"
    return child
