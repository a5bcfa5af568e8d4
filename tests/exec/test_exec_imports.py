"""`magi-code exec` stays fast: a fixture turn loads no terminal UI, no MCP SDK (no server
is enabled), no HTTP stack, no ACP SDK and no A2A server stack. (`ssl` comes with anyio's
asyncio backend.)"""

import json
import subprocess
import sys
from pathlib import Path

from magi_code.client import environment

HTTP = ("magi_code.providers.client", "magi_code.providers.http1", "h11", "httpx2", "httpcore2")
A2A_SERVER = ("a2a", "uvicorn", "starlette", "sse_starlette")  # `magi-code a2a serve` only
HEAVY = ("textual", "mcp", *HTTP, "pydantic", "acp", "magi_code.acp", *A2A_SERVER)
LOADED = (
    "import json, sys\n"
    "from magi_code.exec import main\n"
    "code = main(['hi'])\n"
    "heavy = {heavy!r}\n"
    "found = sorted(m for m in sys.modules if m in heavy or m.split('.')[0] in heavy\n"
    "               or m == 'magi_code.providers.requests')\n"
    "sys.stderr.write('LOADED ' + json.dumps([code, found]) + '\\n')\n"
)


def test_a_fixture_turn_loads_nothing_heavy(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOADED.format(heavy=HEAVY)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=tmp_path,
        env=environment(tmp_path / "home"),
        check=True,
        timeout=60,
    )
    assert done.stdout == b"Hello from the fixture model.\n"
    (report,) = [line for line in done.stderr.split(b"\n") if line.startswith(b"LOADED ")]
    assert json.loads(report[len(b"LOADED ") :]) == [0, []]
