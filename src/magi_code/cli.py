"""`magi-code` argv -> one face or command. Launch validation happens here, before any side
effect: a bad command line exits 2 having created nothing and written nothing but a line to
stderr.

The command line: a first word that names a command (`COMMANDS`) runs it, and each command
has its own `--help`; otherwise the words are Mission Control's: its options and at most one
PROMPT, sent as the first message. A single word close to a command's name is refused as a
typo of it (`magi-code -- WORD` sends it). Every command but `serve --stdio` parses with
magi_code.arguments (argparse); `serve` is checked by hand, as the spec's launch, and its path
imports neither.

Ctrl-C or Ctrl-D at any prompt of a command (a key, a browser sign-in, the trust question, a
startup) ends it without a traceback: 130 for Ctrl-C, as a shell reports SIGINT; a reader of
stdout that leaves early ends it with 141, as SIGPIPE would.

Imports stay minimal on the `serve --stdio` path; each face imports its own modules.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable
    from pathlib import Path

    from magi_code.arguments import Parser
    from magi_code.config.trust import Dropped
    from magi_code.mission_control.driver import Launch

COMMANDS = {
    "exec": "run one prompt without a terminal and exit: for scripts and CI",
    "resume": "continue a stored session in Mission Control (a picker without ID)",
    "login": "store an API key or sign in; without NAME, list the providers",
    "logout": "forget the stored credentials of a provider",
    "models": "list the models of the configured providers",
    "context": "print what the model is told in this folder, with its sources",
    "trust": "trust a folder's project settings and definitions (untrust: stop)",
    "untrust": "stop trusting a folder",
    "sessions": "list or prune the stored sessions",
    "mcp": "manage MCP servers",
    "sandbox": "run a command in this folder's OS sandbox",
    "acp": "serve the Agent Client Protocol to an editor, on pipes",
    "a2a": "serve this workspace's agent to agents on other machines (a2a serve)",
    "serve": "serve the local-agent protocol to a frontend (serve --stdio), on pipes",
    "help": "show the help of a command",
}
USAGE = "magi-code [OPTIONS] [PROMPT]\n       magi-code COMMAND [ARGS]"
DESCRIPTION = (
    "A coding agent for the terminal. Without a command it opens Mission Control (a terminal\n"
    "is needed); a PROMPT is sent as the first message, and the session stays open.\n\ncommands:\n"
    + "".join(f"  {name:<10}{what}\n" for name, what in COMMANDS.items() if name != "untrust")
)
EPILOG = """\
A first word that names a command runs it; any other word is the PROMPT. A single word close
to a command's name is taken for a typo of it: `magi-code -- WORD` sends it as a prompt.
`magi-code COMMAND --help` shows the options of a command.

First steps: `magi-code login` lists the providers; `magi-code login openai` stores an API
key; a local OpenAI-compatible server needs none (README: Quick start)."""
SERVE_HELP = """\
usage: magi-code serve --stdio

Serve the local-agent protocol (magi-code.local-agent, version 1) to the frontend that started
this process, over inherited pipes: stdin and stdout must both be pipes. Any other argument,
or a terminal or file on either end, exits 2 before anything else happens.
"""
ACP_NEEDS_PIPES = (
    "acp speaks the Agent Client Protocol on stdin and stdout, which must be pipes: an editor "
    "starts it (see `magi-code acp --help`); at a terminal, run `magi-code`"
)
NEEDS_A_TERMINAL = (
    "Mission Control and --prompt need a terminal: for scripts and pipes run "
    "`magi-code exec PROMPT`; a frontend runs `magi-code serve --stdio`"
)
APPROVAL_MODES = ("ask", "edits", "full", "auto")  # tools/approval_modes.py's, without its imports
DAYS_DIGITS = 9  # --older-than: a day count, not a number to make int() work hard
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped
EXIT_OUTPUT_GONE = 141  # 128 + SIGPIPE: stdout's reader closed it (`magi-code login | head -1`)


def refuse(message: str) -> int:
    sys.stderr.write(f"magi-code: {message}\n")
    return 2


def is_pipe(fd: int, *, or_socket: bool = False) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or (or_socket and stat.S_ISSOCK(mode))


def main(argv: list[str] | None = None) -> int:
    import _signal  # type: ignore[import-not-found]  # `signal` without its enums

    if _signal.getsignal(_signal.SIGINT) == _signal.SIG_DFL:  # as the package's import left it
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["serve"]:
        return serve(args[1:])  # marks itself undumpable while it warms
    if args[:1] in (["--app"], ["daemon"]):
        return refuse("the --app and daemon forms are no longer supported")
    try:
        from magi_code.arguments import UsageError, refused

        try:
            code = dispatch(args)
        except UsageError as bad:
            return refused(bad)
        if sys.stdout is not None:  # None: started with fd 1 closed
            sys.stdout.flush()  # a reader that left (`| head`) shows here, not at exit
        return code
    except KeyboardInterrupt:  # the command's edge: wherever Ctrl-C landed in it
        return interrupted()
    except BrokenPipeError:
        return output_gone()


def interrupted() -> int:
    """Ctrl-C: the command stops where it was, quietly; a second Ctrl-C cannot interrupt
    this."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        if sys.stderr.isatty():
            sys.stderr.write("\n")  # the shell's prompt starts on its own line
            sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # AttributeError: no stderr at all
        pass
    return EXIT_INTERRUPTED


def output_gone() -> int:
    """stdout's reader left: stop quietly, as a command killed by SIGPIPE would (141), and
    leave nothing for the interpreter to flush into the broken pipe at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return EXIT_OUTPUT_GONE


def dispatch(args: list[str]) -> int:
    """The command the first word names, else Mission Control; raises UsageError."""
    command = args[0] if args else ""
    if command == "resume":
        return mission_control(args[1:], resume=True)
    handler = HANDLERS.get(command)
    if handler is None:
        return mission_control(args, resume=False)
    from magi_code.tools.sandbox.modes import keep_secrets

    keep_secrets()
    return handler(args[1:])


def help_command(rest: list[str]) -> int:
    parsed = parse_with(
        "magi-code help",
        rest,
        lambda p: p.add_argument("command", nargs="?", metavar="COMMAND"),
        description="Show the help of COMMAND, or magi-code's own.",
    )
    if parsed is None:
        return 0
    if parsed.command is None:
        return dispatch(["--help"])
    if parsed.command not in COMMANDS:
        from magi_code.arguments import UsageError, closest

        near = closest(parsed.command, list(COMMANDS))
        raise UsageError("unknown command" + (f": did you mean `{near}`?" if near else ""))
    return main([parsed.command, "--help"])


def parse_with(
    prog: str, rest: list[str], declare: Callable[[Parser], object], **described: str
) -> Namespace | None:
    """`rest` parsed by a Parser named `prog` that `declare` fills; None once -h printed the
    help."""
    from magi_code.arguments import Parser

    parser = Parser(prog, **described)
    declare(parser)
    return parser.parse(rest)


# ---- Mission Control --------------------------------------------------------------------------


def launch_parser(*, resume: bool) -> Parser:
    from argparse import SUPPRESS

    from magi_code.arguments import Parser
    from magi_code.tools.sandbox.settings import MODES as SANDBOX_MODES

    if resume:
        parser = Parser(
            "magi-code resume",
            usage="magi-code resume [ID] [OPTIONS]",
            description="Continue a stored session in Mission Control: session ID, or one "
            "picked from a list\nwithout ID (`magi-code sessions list` lists them).",
            stray="give one session ID",
        )
        parser.add_argument("id", nargs="?", metavar="ID", help="the session to continue")
    else:
        parser = Parser(
            "magi-code",
            usage=USAGE,
            description=DESCRIPTION,
            epilog=EPILOG,
            stray='give the PROMPT as one argument, quoted: magi-code "fix the bug"',
        )
        parser.add_argument("prompt", nargs="?", metavar="PROMPT", help="sent as the first message")
    parser.add_argument(
        "--prompt",
        dest="one_shot",
        metavar="TEXT",
        help="run TEXT as one turn, then exit with its outcome (0, 1, or 130 if cancelled)",
    )
    if not resume:
        parser.add_argument(
            "--continue",
            dest="continue_latest",
            action="store_true",
            help="continue the latest session of this folder",
        )
    parser.run_choices(APPROVAL_MODES, SANDBOX_MODES)
    if not resume:
        parser.add_argument("-V", "--version", action="store_true", help="print the version")
        parser.add_argument("-v", dest="version", action="store_true", help=SUPPRESS)
    return parser


def launch_options(args: list[str], *, resume: bool = False) -> Launch | None:
    """Mission Control's argv (after `resume`, when `resume`) -> a Launch; None once the
    help or the version is printed. Raises UsageError."""
    from magi_code.arguments import UsageError

    parsed = launch_parser(resume=resume).parse(args)
    if parsed is None:
        return None
    if getattr(parsed, "version", False):
        from magi_code import __version__

        print(f"magi-code {__version__}")
        return None
    first = getattr(parsed, "prompt", None)
    if first is not None:
        typo_of_command(first, explicit="--" in args)
        if parsed.one_shot is not None:
            raise UsageError(
                "--prompt TEXT runs one turn and exits; a PROMPT opens Mission Control with it "
                "sent: give one of them"
            )
    for text in (first, parsed.one_shot):
        if text is not None:
            check_prompt(text, "the PROMPT" if text is first else "--prompt")
    for name in ("model", "provider", "agent"):
        if getattr(parsed, name) == "":
            raise UsageError(f"--{name} needs a value")
    from magi_code.mission_control.driver import Launch

    return Launch(
        prompt=parsed.one_shot,
        first_prompt=first,
        resume=(parsed.id or "") if resume else None,
        continue_latest=getattr(parsed, "continue_latest", False),
        provider=parsed.provider,
        model=parsed.model,
        approval_mode=parsed.approval_mode,
        sandbox=parsed.sandbox,
        agent=parsed.agent,
    )


def typo_of_command(word: str, *, explicit: bool) -> None:
    """Refuse a PROMPT that is one word naming a command, or close to one (raises
    UsageError), unless it came after `--`."""
    import re

    from magi_code.arguments import UsageError, closest

    if explicit or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,31}", word):
        return
    if word in COMMANDS:
        raise UsageError(
            f"`{word}` is a command: put it first, or send it as a prompt with "
            f"`magi-code -- {word}`",
            pointer=False,
        )
    near = closest(word.lower(), list(COMMANDS))
    if near is not None:
        raise UsageError(
            f"unknown command `{word}`: did you mean `{near}`? (`magi-code -- {word}` sends it "
            "as a prompt)",
            pointer=False,
        )


def check_prompt(text: str, said: str) -> None:
    from magi_code.arguments import UsageError
    from magi_code.limits import FACE_PROMPT_BYTES

    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise UsageError(f"{said} is not valid UTF-8") from None
    if size > FACE_PROMPT_BYTES:
        raise UsageError(f"{said} is over {FACE_PROMPT_BYTES:,} bytes: shorten it")
    if not text.strip():
        raise UsageError(f"{said} is empty")


def mission_control(args: list[str], *, resume: bool) -> int:
    """Mission Control (`resume`: after the word `resume`), once its command line and the
    terminal are right."""
    launch = launch_options(args, resume=resume)
    if launch is None:
        return 0
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return refuse(NEEDS_A_TERMINAL)
    from magi_code.tools.sandbox.modes import keep_secrets

    keep_secrets()
    from magi_code.mission_control.console import run

    return run(launch)


# ---- the protocol faces -----------------------------------------------------------------------


def serve(rest: list[str]) -> int:
    if rest in (["-h"], ["--help"]):
        sys.stdout.write(SERVE_HELP)
        return 0
    if sys.platform == "win32":
        return refuse("serve is not supported on Windows")
    if rest != ["--stdio"]:
        return refuse("serve takes exactly --stdio and no other argument; see `magi-code serve -h`")
    if not (is_pipe(0) and is_pipe(1)):
        return refuse("serve --stdio needs pipes on stdin and stdout")
    from magi_code.local_agent.main import run

    return run()


def acp_command(rest: list[str]) -> int:
    described = (
        "Serve the Agent Client Protocol on stdin and stdout, which must be pipes: an editor\n"
        "(Zed, ...) starts it, one JSON-RPC message a line, until it closes stdin."
    )
    if parse_with("magi-code acp", rest, lambda p: None, description=described) is None:
        return 0
    if not (is_pipe(0, or_socket=True) and is_pipe(1, or_socket=True)):
        return refuse(ACP_NEEDS_PIPES)  # a terminal, a file or /dev/null: no ACP client there
    from magi_code.acp.main import run as acp_run

    return acp_run()


A2A_USAGE = "usage: magi-code a2a serve [OPTIONS] [WORKSPACE]\n"


def a2a_command(rest: list[str]) -> int:
    if rest[:1] == ["serve"]:
        from magi_code.a2a.serve import main as a2a_serve

        return a2a_serve(rest[1:])
    if rest in (["-h"], ["--help"]):
        sys.stdout.write(A2A_USAGE + "\n" + COMMANDS["a2a"] + "; see `magi-code a2a serve -h`\n")
        return 0
    return refuse("a2a takes a command: `magi-code a2a serve` (see `magi-code a2a serve -h`)")


def exec_command(rest: list[str]) -> int:
    from magi_code.exec import run_and_exit

    run_and_exit(rest)


# ---- plain commands ---------------------------------------------------------------------------


def context_parse(rest: list[str]) -> int:
    parsed = parse_with(
        "magi-code context",
        rest,
        lambda p: p.add_argument("--agent", metavar="NAME", help="the agent profile to show"),
        description="Print what the model would be told in this folder, redacted, with its "
        "sources.\nWrites nothing.",
    )
    if parsed is None:
        return 0
    if parsed.agent == "":
        return refuse("--agent needs a profile name")
    return context_command(parsed.agent)


def context_command(agent: str | None) -> int:
    """Print what the model would be told here, redacted, with its sources; writes nothing."""
    from magi_code.config import paths, settings
    from magi_code.context import loader, profiles
    from magi_code.context.show import render
    from magi_code.tools.builtin import builtin_tools

    home = os.path.realpath(paths.resolve_home(os.environ))
    cwd = os.path.realpath(os.getcwd())
    try:
        loaded = settings.load_layers(paths.Paths(home).settings, paths.project_settings(cwd))
        context = loader.load(home, cwd, loaded, agent=agent)
    except (settings.SettingsError, loader.ContextSettingsError):
        return refuse("the settings are not valid")
    except profiles.ProfileError as exc:
        print(f"magi-code: profile_invalid: {exc}", file=sys.stderr)
        return 1
    names = [*builtin_tools(), *([loader.SKILL_TOOL] if context.skills else [])]
    tools = [name for name in names if loader.offers(context.profile, name)]
    from magi_code.runner.startup import StartupError, project_defined, start_mcp

    try:  # the approved MCP servers, for their instructions and tools
        project = project_defined(loaded.project)
        mcp = start_mcp(loaded.settings, os.environ, cwd, None, home, project)
    except StartupError as failed:
        mcp = None
        context.notices.append(f"MCP servers not started ({failed.code}): not shown here")
    if mcp is not None:
        from magi_code.mcp.tool import mcp_tools

        context.add_servers(mcp.instructions())
        tools += [name for name in mcp_tools(mcp) if loader.offers(context.profile, name)]
        mcp.close()
    print(render(context, trusted=loaded.trusted, tools=tools))
    return 0


def provider_command(name: str, rest: list[str]) -> int:
    """login, logout and models: they read MC_HOME and settings, never serve a protocol."""
    from pathlib import Path

    from magi_code.config import paths, settings
    from magi_code.providers import commands, network

    home = paths.resolve_home(os.environ)
    if name == "logout":
        return commands.logout(rest, Path(home))
    try:
        if name == "login":  # a credential only for what the global settings or presets define
            known = settings.base_layers(settings.read_toml(paths.Paths(home).settings))
            network.configure(known.get("network"), os.environ)  # sign-in's proxy, certificates
            return commands.login(rest, Path(home), known["providers"])
        loaded = settings.load_layers(
            paths.Paths(home).settings, paths.project_settings(os.getcwd())
        )
        network.configure(loaded.base.get("network"), os.environ)  # discovery's
    except settings.SettingsError:
        return refuse("the settings are not valid")
    warn_dropped(loaded.dropped)
    return commands.models(rest, Path(home), loaded.settings, loaded.base["providers"])


def warn_dropped(dropped: list[Dropped]) -> None:
    for key in dropped:
        print(f"magi-code: {key.warning()}", file=sys.stderr)


def trust_parse(verb: str, rest: list[str]) -> int:
    what = "Add" if verb == "trust" else "Remove"
    parsed = parse_with(
        f"magi-code {verb}",
        rest,
        lambda p: p.add_argument("path", nargs="?", metavar="PATH", help="default: this folder"),
        description=f"{what} a folder (and what it holds) in the global "
        "permissions.trusted_projects: a trusted\nfolder's project settings and definitions "
        "apply. No question is asked.",
        stray="give one PATH",
    )
    if parsed is None:
        return 0
    return trust_command(verb, parsed.path or os.getcwd())


def trust_command(verb: str, folder: str) -> int:
    """`trust`/`untrust [PATH]`: edit the GLOBAL `permissions.trusted_projects`, no prompt."""
    from magi_code.config import paths, trust_file

    if not os.path.isdir(folder):
        return refuse("trust and untrust take an existing folder")
    settings_file = paths.Paths(paths.resolve_home(os.environ)).settings
    canonical = os.path.realpath(folder)
    try:
        if verb == "trust":
            changed = trust_file.trust(settings_file, canonical)
            print(f"{'Trusted' if changed else 'Already trusted'}: {canonical}", file=sys.stderr)
            return 0
        changed = trust_file.untrust(settings_file, canonical)
        through = trust_file.trusted_through(settings_file, canonical)
    except trust_file.TrustFileError as failed:
        print(f"magi-code {verb}: {failed}", file=sys.stderr)
        return 1
    if through is not None:
        print(f"Still trusted through {through}: untrust that folder", file=sys.stderr)
        return 1
    print(f"{'No longer trusted' if changed else 'Was not trusted'}: {canonical}", file=sys.stderr)
    return 0


def sessions_parser() -> Parser:
    from magi_code.arguments import Parser

    parser = Parser(
        "magi-code sessions",
        description="The stored sessions (MC_HOME/sessions). No terminal needed; these "
        "commands never create\nMC_HOME.",
    )
    verbs = parser.add_subparsers(
        dest="verb", metavar="COMMAND", required=True, parser_class=Parser, prog=parser.prog
    )
    listing = verbs.add_parser(
        "list",
        help="what is stored, newest activity first",
        description="What is stored, newest activity first: ID, last activity, size, state, "
        "whether a\nprocess has it open, folder, first prompt (redacted).",
    )
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    prune = verbs.add_parser(
        "prune",
        help="remove sessions older than the retention",
        description="Remove the sessions whose last activity is older than DAYS (default: the "
        "\nsessions.retention_days setting, 30); an open session is never removed.",
    )
    prune.add_argument("--older-than", metavar="DAYS", help="a whole number of days")
    prune.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    return parser


def sessions_command(rest: list[str]) -> int:
    """`sessions list` and `sessions prune`: plain commands over MC_HOME/sessions, no terminal
    needed; they never create MC_HOME."""
    from pathlib import Path

    from magi_code.arguments import UsageError
    from magi_code.config import paths

    parsed = sessions_parser().parse(rest)
    if parsed is None:
        return 0
    home = paths.resolve_home(os.environ)
    directory = Path(paths.Paths(home).sessions)
    if parsed.verb == "list":
        return list_sessions(directory, as_json=parsed.json)
    days: int | None = None
    if parsed.older_than is not None:
        value = parsed.older_than
        if not (value.isascii() and value.isdigit() and len(value) <= DAYS_DIGITS):
            raise UsageError(
                "--older-than takes a whole number of days", "magi-code sessions prune"
            )
        days = int(value)
    if days is None:
        days = configured_retention(home)
        if days is None:
            return refuse("the settings are not valid")
        if days == 0:  # retention disabled: only an explicit --older-than prunes
            print("sessions.retention_days is 0: pass --older-than DAYS", file=sys.stderr)
            print("0 sessions removed")
            return 0
    return prune_sessions(directory, days, parsed.dry_run)


def configured_retention(home: str) -> int | None:
    """`sessions.retention_days` of the merged settings; None when they are not valid."""
    from magi_code.config import paths, settings
    from magi_code.sessions.retention import retention_days

    try:
        conf = settings.load(paths.Paths(home).settings, paths.project_settings(os.getcwd()))
    except settings.SettingsError:
        return None
    return retention_days(conf)


def prune_sessions(directory: Path, days: int, dry_run: bool) -> int:
    """Print each removed ID (each that would be, with --dry-run) on its own line, then a count."""
    import time

    from magi_code.sessions.retention import prune

    removed = prune(directory, days, time.time_ns(), dry_run=dry_run)
    for session_id in removed:
        print(session_id)
    print(f"{len(removed)} sessions {'would be removed' if dry_run else 'removed'}")
    return 0


def list_sessions(directory: Path, *, as_json: bool) -> int:
    """What is stored, newest activity first; prompt text comes redacted from retention."""
    import json
    from datetime import UTC, datetime

    from magi_code.sessions.retention import scan

    rows = [
        {
            "session_id": stored.session_id,
            "last_activity": datetime.fromtimestamp(stored.mtime_ns / 1e9, UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            ),
            "size": stored.size,
            "state": "invalid" if stored.invalid else "durable" if stored.durable else "empty",
            "attached": stored.attached,
            "cwd": stored.cwd,
            "first_prompt": stored.first_prompt,
        }
        for stored in scan(directory)
    ]
    if as_json:
        print(json.dumps({"sessions": rows}))
        return 0
    for row in rows:
        attached = "attached" if row["attached"] else "detached"
        print(
            f"{row['session_id']}  {row['last_activity']}  {row['size']:>9} B  "
            f"{row['state']:<7}  {attached:<8}  {row['cwd'] or '-'}  {row['first_prompt'] or '-'}"
        )
    print(f"{len(rows)} sessions")
    return 0


def mcp_command(rest: list[str]) -> int:
    from magi_code.mcp.commands import main as mcp_main

    return mcp_main(rest)


def sandbox_command(rest: list[str]) -> int:
    from magi_code.tools.sandbox.command import main as sandbox_main

    return sandbox_main(rest)


HANDLERS: dict[str, Callable[[list[str]], int]] = {
    "exec": exec_command,
    "login": lambda rest: provider_command("login", rest),
    "logout": lambda rest: provider_command("logout", rest),
    "models": lambda rest: provider_command("models", rest),
    "context": context_parse,
    "trust": lambda rest: trust_parse("trust", rest),
    "untrust": lambda rest: trust_parse("untrust", rest),
    "sessions": sessions_command,
    "mcp": mcp_command,
    "sandbox": sandbox_command,
    "acp": acp_command,
    "a2a": a2a_command,
    "help": help_command,
}


if __name__ == "__main__":
    raise SystemExit(main())
