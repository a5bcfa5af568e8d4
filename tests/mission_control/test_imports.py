"""The terminal UI stays off every other path: `serve --stdio` (a whole turn included),
`melchior`, and the CLI's own commands never import Textual or Rich."""

import json
import subprocess
import sys
from pathlib import Path

from magi_code.client import LocalAgentClient, environment
from source_imports import top_level

UI = ("textual", "rich", "pyte")
REPORT = (
    "import os, sys\n"
    "real_exit = os._exit\n"
    "def report(code):\n"
    "    ui = sorted(m for m in sys.modules if m.split('.')[0] in {ui!r})\n"
    "    open(os.environ['IMPORTS_OUT'], 'w').write(repr(ui))\n"
    "    real_exit(code)\n"
    "os._exit = report\n"
    "from magi_code.cli import main\n"
    "main(['serve', '--stdio'])\n"
)


def test_serve_stdio_through_a_turn_never_imports_the_ui(tmp_path: Path) -> None:
    out = tmp_path / "imports.txt"
    command = [sys.executable, "-c", REPORT.format(ui=UI)]
    env = environment(tmp_path / "home", IMPORTS_OUT=str(out))
    with LocalAgentClient.spawn(cwd=tmp_path, env=env, command=command) as child:
        child.request("initialize", {"required_capabilities": ["session.create", "turn.start"]})
        session = child.request("session.create")["session_id"]
        child.request("turn.start", {"session_id": session, "prompt": "hello"})
        while child.next_event().name != "run.finished":
            pass
        child.request("shutdown")
        assert child.finish() == 0
    assert out.read_text() == "[]"


def test_melchior_and_plain_commands_never_import_the_ui(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import melchior.cli, melchior.server, melchior.client, melchior.serve\n"
        "from magi_code.cli import main\n"
        "main(['sessions', 'list'])\n"
        f"print(repr(sorted(m for m in sys.modules if m.split('.')[0] in {UI!r})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environment(tmp_path / "home"),
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_no_module_outside_mission_control_imports_the_ui() -> None:
    src = Path(__file__).resolve().parents[2] / "src"
    offenders = []
    for path in src.rglob("*.py"):
        if "mission_control" in path.parts:
            continue
        if top_level(path) & set(UI):
            offenders.append(str(path.relative_to(src)))
    assert offenders == [], json.dumps(offenders)


def test_mission_control_launch_leaves_the_http_stack_for_the_first_turn(tmp_path: Path) -> None:
    code = (
        "import os, sys\n"
        "from magi_code.mission_control.console import prepare\n"
        "from magi_code.mission_control.driver import Launch\n"
        "driver = prepare(Launch(), dict(os.environ))\n"
        "import magi_code.mission_control.app\n"
        "driver.close()\n"
        "heavy = ('httpx2', 'httpcore2', 'h11', 'mcp', 'openai', 'magi_code.providers.client',\n"
        "         'magi_code.providers.http1')\n"
        "print(repr(sorted(m for m in sys.modules if m in heavy or m.split('.')[0] in heavy)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environment(tmp_path / "home"),
        cwd=tmp_path,
        check=True,
    )
    assert done.stdout.strip() == "[]"
