"""`magi-code sandbox [--mode MODE] [--network] -- CMD ARGS...`: any command in the sandbox.

The command runs as a shell tool call would here: under the `[sandbox]` settings of this
folder (the global ones, narrowed by the project's), with this folder as its workspace, its
stdin, stdout and stderr being ours. `--mode` and `--network` choose for this run. Exit
status: the command's own (128 + N after signal N); 2 for bad usage, or when there is no
sandbox here or the kernel refuses it (nothing ran).
"""

import os
import subprocess
import sys
from pathlib import Path

from magi_code.arguments import Parser, UsageError, refused
from magi_code.config import paths, settings
from magi_code.tools.sandbox.modes import Sandbox, SandboxSettings, containment
from magi_code.tools.sandbox.settings import MODE_ENV, MODES, SandboxError

PROG = "magi-code sandbox"


def parser() -> Parser:
    parsing = Parser(
        PROG,
        usage=f"{PROG} [--mode MODE] [--network] -- CMD [ARGS...]",
        description="Run CMD inside the OS sandbox that shell commands get in this folder, and "
        "exit with its\nstatus (2 when nothing could run).",
        stray="put -- before the command",
    )
    parsing.add_argument(
        "--mode",
        choices=MODES,
        metavar="MODE",
        help="read-only, workspace-write or full-access (default: [sandbox] mode, else "
        "workspace-write)",
    )
    parsing.add_argument("--network", action="store_true", help="let CMD reach the network")
    return parsing


def main(args: list[str]) -> int:
    options, command = args, []
    if "--" in args:
        options, command = args[: args.index("--")], args[args.index("--") + 1 :]
    try:
        parsed = parser().parse(options)
        if parsed is not None and "--" not in args:
            raise UsageError("put -- before the command", PROG)
        if parsed is not None and not command:
            raise UsageError("name a command after --", PROG)
    except UsageError as bad:
        return refused(bad)
    if parsed is None:
        return 0
    return _run(command, parsed.mode, parsed.network)


def _run(command: list[str], mode: str | None, network: bool) -> int:
    home = os.path.realpath(paths.resolve_home(os.environ))
    cwd = os.path.realpath(os.getcwd())
    try:
        loaded = settings.load_layers(paths.Paths(home).settings, paths.project_settings(cwd))
        table = dict(loaded.settings.get("sandbox") or {})
        if network:
            table["network"] = True
        chosen = SandboxSettings.from_settings(table, mode or os.environ.get(MODE_ENV))
    except settings.SettingsError:
        return _refuse(f"the settings in {paths.Paths(home).settings} are not valid")
    except SandboxError:
        return _refuse("--mode takes read-only, workspace-write or full-access")
    sandbox = Sandbox(chosen, Path(cwd), home, os.environ.get("HOME"))
    if chosen.mode != "full-access" and not sandbox.confines_shell():
        return _fail(f"no OS sandbox here: {sandbox.describe()}; nothing ran")
    try:
        confinement = sandbox.shell()
    except OSError as refused:
        return _fail(f"the kernel refused the sandbox ({refused.strerror}); nothing ran")
    env = sandbox.env(os.environ) if confinement is not None else dict(os.environ)
    if confinement is not None and (uncontained := containment()) is not None:
        sys.stderr.write(
            f"{PROG}: processes not contained here ({uncontained}): what the command leaves in "
            "a new session may outlive it\n"
        )
    try:
        child = subprocess.Popen(
            command, env=env, preexec_fn=confinement.apply if confinement else None
        )
    except subprocess.SubprocessError:
        return _fail("the sandbox could not be applied; nothing ran")
    except OSError as failed:
        return _fail(f"cannot run {command[0]!r}: {failed.strerror}")
    code = child.wait()
    return 128 - code if code < 0 else code


def _refuse(message: str) -> int:
    sys.stderr.write(f"{PROG}: {message}\n")
    return 2


def _fail(message: str) -> int:
    sys.stderr.write(f"magi-code sandbox: {message}\n")
    return 2
