"""The start-path rule (DESIGN rule 8): the import-speed tricks, a module-level
`TYPE_CHECKING = False` (so that `typing` is not imported) and an import inside a function (so
that a module loads only when that function runs), belong to the modules that
`magi-code serve --stdio`, `magi-code exec` and `melchior tool` load on their way to their first
answer, and to no other. START_PATH lists those modules. One test reads every module of src/
and finds the tricks only there, or on the short list of lazy imports kept elsewhere for a
reason given; the other runs those processes and finds every listed module loaded, so that the
list cannot rot. Everything else is ordinary Python with its imports at the top."""

import ast
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from magi_code.client import LocalAgentClient, environment

SRC = Path(__file__).resolve().parents[1] / "src"
MAGI_CODE = str(Path(sys.executable).with_name("magi-code"))
MELCHIOR = str(Path(sys.executable).with_name("melchior"))

# What the measured processes load of magi_code and melchior (`test_start_path_is_loaded`, whose
# output under `pytest -s` is the list to paste should a path change): serve --stdio through one
# turn with a tool call, exec of the same prompt, and `melchior tool`.
START_PATH = [
    "magi_code",
    "magi_code.arguments",
    "magi_code.cache",
    "magi_code.cli",
    "magi_code.config",
    "magi_code.config.credentials",
    "magi_code.config.paths",
    "magi_code.config.schema",
    "magi_code.config.settings",
    "magi_code.config.trust",
    "magi_code.context",
    "magi_code.context.confined",
    "magi_code.context.frontmatter",
    "magi_code.context.instructions",
    "magi_code.context.loader",
    "magi_code.context.profiles",
    "magi_code.context.skills",
    "magi_code.debug",
    "magi_code.errors",
    "magi_code.exec",
    "magi_code.ids",
    "magi_code.limits",
    "magi_code.local_agent",
    "magi_code.local_agent.channel",
    "magi_code.local_agent.envelope",
    "magi_code.local_agent.errors",
    "magi_code.local_agent.framing",
    "magi_code.local_agent.main",
    "magi_code.local_agent.output",
    "magi_code.local_agent.params",
    "magi_code.local_agent.runtime",
    "magi_code.local_agent.server",
    "magi_code.local_agent.sides",
    "magi_code.local_agent.wiring",
    "magi_code.prefixes",
    "magi_code.providers",
    "magi_code.providers.base",
    "magi_code.providers.client",
    "magi_code.providers.failures",
    "magi_code.providers.fixture",
    "magi_code.providers.http1",
    "magi_code.providers.images",
    "magi_code.providers.known_models",
    "magi_code.providers.limits",
    "magi_code.providers.network",
    "magi_code.providers.origins",
    "magi_code.providers.pool",
    "magi_code.providers.registry",
    "magi_code.providers.tool_arguments",
    "magi_code.records",
    "magi_code.redact",
    "magi_code.runner",
    "magi_code.runner.agents",
    "magi_code.runner.checkpointing",
    "magi_code.runner.compaction",
    "magi_code.runner.delegation",
    "magi_code.runner.entry",
    "magi_code.runner.environment",
    "magi_code.runner.event_data",
    "magi_code.runner.events",
    "magi_code.runner.journal",
    "magi_code.runner.melchior_tools",
    "magi_code.runner.peers",
    "magi_code.runner.replay",
    "magi_code.runner.setup",
    "magi_code.runner.startup",
    "magi_code.runner.subagents",
    "magi_code.runner.text",
    "magi_code.runner.turn",
    "magi_code.sessions",
    "magi_code.sessions.chunking",
    "magi_code.sessions.errors",
    "magi_code.sessions.ids",
    "magi_code.sessions.leases",
    "magi_code.sessions.projection",
    "magi_code.sessions.reader",
    "magi_code.sessions.records",
    "magi_code.sessions.snapshot",
    "magi_code.sessions.store",
    "magi_code.stdio",
    "magi_code.tools",
    "magi_code.tools.approval_modes",
    "magi_code.tools.approvals",
    "magi_code.tools.args",
    "magi_code.tools.base",
    "magi_code.tools.builtin",
    "magi_code.tools.files",
    "magi_code.tools.globs",
    "magi_code.tools.grep",
    "magi_code.tools.host_io",
    "magi_code.tools.ignore",
    "magi_code.tools.images",
    "magi_code.tools.limits",
    "magi_code.tools.listing",
    "magi_code.tools.live_output",
    "magi_code.tools.narrowing",
    "magi_code.tools.paths",
    "magi_code.tools.plan",
    "magi_code.tools.policy",
    "magi_code.tools.processes",
    "magi_code.tools.progress",
    "magi_code.tools.rg",
    "magi_code.tools.sandbox",
    "magi_code.tools.sandbox.confine",
    "magi_code.tools.sandbox.landlock",
    "magi_code.tools.sandbox.modes",
    "magi_code.tools.sandbox.plan",
    "magi_code.tools.sandbox.seccomp",
    "magi_code.tools.sandbox.settings",
    "magi_code.tools.sandbox.spawn",
    "magi_code.tools.search",
    "magi_code.tools.shell",
    "magi_code.tools.skill",
    "magi_code.tools.summaries",
    "magi_code.tools.text",
    "magi_code.tools.walk",
    "magi_code.tools.web_fetch",
    "magi_code.untrusted_json",
    "melchior",
    "melchior.cli",
    "melchior.client",
    "melchior.digests",
    "melchior.identity",
    "melchior.limits",
    "melchior.names",
    "melchior.policy",
    "melchior.registry",
    "melchior.reports",
    "melchior.strict_json",
    "melchior.tool",
    "melchior.vocabulary",
    "melchior.wire",
]

# Imports kept inside a function outside START_PATH, each for the reason given (mostly a heavy
# dependency that one branch needs, in a module loaded without it): (the module, the module it
# imports there) -> why. Keep it short: everything else imports at the top.
MCP_SDK = "the MCP SDK (about half a second) loads for the `mcp` subcommands that connect"
LAZY_ELSEWHERE: dict[tuple[str, str], str] = {
    ("magi_code.a2a.remote", "magi_code.a2a.remote_call"): (
        "the a2a-sdk and httpx load on a remote agent tool's first call, not when a session"
        " offers the tool (tests/a2a/test_remote_agents.py)"
    ),
    ("magi_code.acp.client_mcp", "magi_code.mcp.manager"): (
        "the MCP SDK (about half a second) loads for an editor that hands a session MCP servers"
    ),
    ("magi_code.acp.main", "magi_code.acp.connection"): (
        "stdout is moved aside first: no print of the ACP SDK or the agent as they load can"
        " reach the wire (DESIGN rule 6)"
    ),
    ("magi_code.mcp.commands", "magi_code.mcp.manager"): MCP_SDK,
    ("magi_code.mcp.commands", "magi_code.mcp.login"): MCP_SDK,
    ("magi_code.mcp.mentions", "magi_code.mcp.results"): (
        "the SDK's types (pydantic, a quarter of a second) load when a prompt mentions an MCP"
        " resource, not with Mission Control's prompt box nor exec's prompts holding an `@`"
    ),
    ("magi_code.mission_control.driver", "magi_code.mcp.prompts"): (
        "the MCP SDK's types (a third of a second) load only when MCP servers are connected:"
        " Mission Control's launch aims at 400 ms (bench_mission_control)"
    ),
    ("magi_code.mission_control.first_run", "magi_code.providers.client"): (
        "Mission Control's launch leaves the HTTP stack for the first turn"
        " (tests/mission_control/test_imports.py): only a server asked for its models needs it"
    ),
    ("magi_code.providers.requests", "magi_code.providers.client"): (
        "the HTTP stack loads with the first request, never with the provider modules that"
        " Mission Control and the catalog import (tests/providers/test_imports.py)"
    ),
    ("magi_code.tools.code_child", "traceback"): (
        "the Code Mode child is a process of its own, started for every program: traceback"
        " (about 9 ms there) loads only when the program fails"
    ),
}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")


def fakes_type_checking(tree: ast.Module) -> bool:
    """`TYPE_CHECKING = False` among the module's own statements (no `typing` import)."""
    return any(
        isinstance(target, ast.Name) and target.id == "TYPE_CHECKING"
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
    )


def imports_in_functions(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, module imported) of every import statement inside a function or method."""
    seen: set[int] = set()
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if id(node) in seen:
                continue  # in a nested function, met through its outer one already
            seen.add(id(node))
            if isinstance(node, ast.Import):
                yield from ((node.lineno, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                yield node.lineno, "." * node.level + (node.module or "")


def test_the_tricks_stay_on_the_start_path() -> None:
    assert sorted(set(START_PATH)) == START_PATH, "START_PATH is kept sorted, each once"
    on_path = set(START_PATH)
    offenders, used = [], set()
    for path in sorted(SRC.rglob("*.py")):
        name, tree = module_name(path), ast.parse(path.read_bytes())
        if name in on_path:
            continue
        where = path.relative_to(SRC)
        if fakes_type_checking(tree):
            offenders.append(f"{where}: `TYPE_CHECKING = False` (import it from typing)")
        for line, imported in imports_in_functions(tree):
            if (name, imported) in LAZY_ELSEWHERE:
                used.add((name, imported))
            else:
                offenders.append(f"{where}:{line}: imports {imported} inside a function")
    assert offenders == [], "off the start path, imports go at the top:\n" + "\n".join(offenders)
    assert set(LAZY_ELSEWHERE) == used, "an allowed lazy import no longer exists"


# A first turn as a user meets it: the model calls a tool, then answers (the fixture's script).
TURN = 'fixture:[{"tools":[{"name":"read_file","arguments":{"path":"notes.txt"}}]}]'

# The real console scripts' entry (`main()` on the real argv), which writes the names of the
# magi_code and melchior modules loaded, one a line and a blank line after, on the descriptor
# SNAPSHOT_FD names: as it exits, or when it gets SIGUSR1. (`-X importtime` would miss what
# `importlib.import_module` loads, as the provider registry loads a provider's module.)
ENTRY = """\
import atexit, os, signal, sys
def report(*_):
    own = sorted(m for m in list(sys.modules) if m.split('.')[0] in ('magi_code', 'melchior'))
    os.write(int(os.environ['SNAPSHOT_FD']), ('\\n'.join(own) + '\\n\\n').encode())
exit_now = os._exit
def leave(code):
    report()
    exit_now(code)
os._exit = leave
atexit.register(report)
signal.signal(signal.SIGUSR1, report)
from {module} import main
sys.exit(main())
"""


def entry(module: str, *args: str) -> list[str]:
    return [sys.executable, "-c", ENTRY.format(module=module), *args]


def snapshot(pipe: io.BufferedReader) -> set[str]:
    """The modules named by the next snapshot on the pipe."""
    data = b""
    while not data.endswith(b"\n\n"):
        chunk = pipe.read1(65536)
        assert chunk, "the process ended without its snapshot"
        data += chunk
    return set(data.decode().split())


def run_loaded(command: list[str], env: dict[str, str], **how: Any) -> tuple[bytes, set[str]]:
    """Run a one-answer process to its exit: its stdout, and the modules it loaded."""
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as pipe:
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                env={**env, "SNAPSHOT_FD": str(write_end)},
                pass_fds=(write_end,),
                timeout=60,
                **how,
            )
        finally:
            os.close(write_end)
        assert done.returncode in (0, 1), done.stderr[-2000:]
        return done.stdout, snapshot(pipe)


def serve_loads(workspace: Path, home: Path) -> set[str]:
    """`serve --stdio` through initialize, session.create and one turn to its run.finished."""
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as pipe:
        try:
            process = subprocess.Popen(
                entry("magi_code.cli", "serve", "--stdio"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=workspace,
                env=environment(home, SNAPSHOT_FD=str(write_end)),
                pass_fds=(write_end,),
            )
        finally:
            os.close(write_end)
        with LocalAgentClient(process) as child:
            child.request("initialize", {"required_capabilities": ["session.create", "turn.start"]})
            session = child.request("session.create")["session_id"]
            child.request("turn.start", {"session_id": session, "prompt": TURN})
            kinds = []
            while (event := child.next_event()).name != "run.finished":
                kinds.append(event.data.get("kind"))
            assert event.data["outcome"] == "completed", event.data
            assert "tool" in kinds, kinds
            process.send_signal(signal.SIGUSR1)
            loaded = snapshot(pipe)  # at the run's end, not the shutdown's
            child.request("shutdown")
            assert child.finish() == 0
    return loaded


def exec_loads(workspace: Path, home: Path) -> set[str]:
    """`magi-code exec` of the same turn, to its exit."""
    out, loaded = run_loaded(
        entry("magi_code.cli", "exec", TURN),
        environment(home),
        stdin=subprocess.DEVNULL,
        cwd=workspace,
    )
    assert out == b"done.\n", out
    return loaded


def melchior_tool(args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], set[str]]:
    out, loaded = run_loaded(entry("melchior.cli", "tool", *args), env)
    answer: dict[str, Any] = json.loads(out)
    return answer, loaded


def melchior_tool_loads(tmp: Path) -> set[str]:
    """`melchior tool`: `--describe` (what a session reads before its first turn), a verb
    without an identity, and the report verb of a session: stored while its `melchior serve`
    listens, then read from its file once the session has ended."""
    run = Path(tempfile.mkdtemp(prefix="mel-", dir="/tmp"))  # short enough for sun_path
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAGI_MELCHIOR_", "XDG_"))}
    env.update(XDG_RUNTIME_DIR=str(run), HOME=str(tmp), TMPDIR=str(tmp))
    try:
        described, loaded = melchior_tool(["--describe"], env)
        assert described["ok"], described
        refused, more = melchior_tool(["--verb=status"], env)
        assert refused["code"] == "no_identity", refused
        loaded |= more
        forked = subprocess.run(
            [MELCHIOR, "fork", "--project=start"], capture_output=True, env=env, check=True
        )
        env.update(json.loads(forked.stdout)["environment"])
        with subprocess.Popen(
            [MELCHIOR, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        ) as session:
            assert session.stdout is not None and session.stdin is not None
            assert json.loads(session.stdout.readline())["event"] == "listening"
            reported, more = melchior_tool(["--verb=report", "--message=done"], env)
            session.stdin.close()
        assert reported["ok"], reported
        stored, most = melchior_tool(["--verb=report"], env)  # the session has ended
        assert stored["result"][0]["text"] == "done", stored
        return loaded | more | most
    finally:
        shutil.rmtree(run, ignore_errors=True)


@pytest.mark.slow("runs serve --stdio and exec through a turn, and melchior tool four times")
def test_start_path_is_loaded(tmp_path: Path) -> None:
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("a note\n")
    loaded = serve_loads(workspace, home) | exec_loads(workspace, home)
    loaded |= melchior_tool_loads(tmp_path)
    assert sorted(set(START_PATH) - loaded) == [], "listed in START_PATH, loaded by none"
    print(json.dumps(sorted(loaded)))  # what to list (pytest -s), should the paths change
