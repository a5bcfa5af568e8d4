"""`magi-code` argv -> one face. Launch validation happens here, before any side effect:
an invalid launch exits 2 having created nothing and written nothing but a line to stderr.

Imports stay minimal on the `serve --stdio` path; each face imports its own modules.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from pathlib import Path

    from magi_code.config.trust import Dropped
    from magi_code.mission_control.driver import Launch

USAGE = """usage:
  magi-code [OPTIONS]            Mission Control (needs a terminal)
  magi-code resume [ID] [OPTIONS]  continue a stored session (a picker without ID)
  magi-code --prompt TEXT        run one prompt in Mission Control and exit with its outcome
  options: --continue (the latest session of this workspace), --model NAME, --provider NAME,
           --agent NAME (agent profile), --approval-mode ask|edits|full|auto,
           --sandbox read-only|workspace-write|full-access, --version, -h/--help
  magi-code context [--agent NAME]         what the model is told, redacted, with sources
  magi-code serve --stdio        the local-agent protocol over inherited pipes
  magi-code exec [--json] [PROMPT | -]   one prompt for scripts and CI (exec --help)
  magi-code acp                  an Agent Client Protocol agent over stdio, for editors
  magi-code login | logout | models [--refresh] [--json]
  magi-code trust [PATH] | untrust [PATH]   (un)list a folder in the global trusted_projects
  magi-code mcp list [--probe] | add | remove | approve | digest | login | logout
                                 MCP servers (magi-code mcp -h)
  magi-code sandbox [--mode MODE] [--network] -- CMD [ARGS...]
                                 run a command in this folder's OS sandbox (sandbox -h)
  magi-code sessions list [--json]
  magi-code sessions prune [--older-than DAYS] [--dry-run]
"""
DAYS_DIGITS = 9  # --older-than: a day count, not a number to make int() work hard


def refuse(message: str) -> int:
    sys.stderr.write(f"magi-code: {message}\n{USAGE}")
    return 2


def is_pipe(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


def wants_help(args: list[str]) -> bool:
    """-h/--help anywhere but as the text of --prompt; `serve` takes it only alone, and `mcp`
    answers it itself."""
    if args[:1] == ["serve"]:
        return args[1:] in (["-h"], ["--help"])
    if args[:1] in (["mcp"], ["sandbox"]):
        return False  # these answer -h/--help with their own usage
    words = [w for i, w in enumerate(args) if i == 0 or args[i - 1] != "--prompt"]
    return "-h" in words or "--help" in words


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if wants_help(args):
        sys.stdout.write(USAGE)
        return 0
    if args == ["--version"]:
        from importlib.metadata import version

        print(f"magi-code {version('magi-code')}")
        return 0
    if "--app" in args or args[:1] == ["daemon"]:
        return refuse("the --app and daemon forms are no longer supported")
    if args[:1] == ["serve"]:
        return serve(args[1:])  # marks itself undumpable while it warms
    from magi_code.tools.sandbox.modes import keep_secrets

    keep_secrets()
    if args[:1] == ["exec"]:
        from magi_code.exec import run_and_exit

        run_and_exit(args[1:])
    if args == ["acp"]:
        from magi_code.acp.main import run as acp_run

        return acp_run()
    if args[:1] in (["login"], ["logout"], ["models"]):
        return provider_command(args[0], args[1:])
    if args[:1] == ["sessions"]:
        return sessions_command(args[1:])
    if args[:1] in (["trust"], ["untrust"]) and len(args) <= 2:
        return trust_command(args[0], args[1] if len(args) == 2 else os.getcwd())
    if args[:1] == ["sandbox"]:
        from magi_code.tools.sandbox.command import main as sandbox_command

        return sandbox_command(args[1:])
    if args[:1] == ["mcp"]:
        from magi_code.mcp.commands import main as mcp_command

        return mcp_command(args[1:])
    agent, rest = agent_option(args)
    if agent == "":
        return refuse("--agent needs a profile name")
    if rest == ["context"]:
        return context_command(agent)
    launch = mission_control_options(args)
    if isinstance(launch, str):
        return refuse(launch)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return refuse(
            "Mission Control and --prompt need a terminal: for scripts and pipes run "
            "`magi-code exec PROMPT`; a frontend runs `magi-code serve --stdio`"
        )
    from magi_code.mission_control.console import run

    return run(launch)


VALUED = {"--prompt": "prompt", "--model": "model", "--provider": "provider", "--agent": "agent"}
APPROVAL_MODES = ("ask", "edits", "full", "auto")


def mission_control_options(args: list[str]) -> Launch | str:
    """Mission Control's argv -> a Launch, or what is wrong with it (each option at most
    once; an unknown word is named only when it looks like an option: odd input is never
    echoed)."""
    from magi_code.mission_control.driver import Launch

    fields: dict[str, object] = {}
    words = iter(args)
    if args[:1] == ["resume"]:
        next(words)
        fields["resume"] = ""
        if len(args) > 1 and not args[1].startswith("-"):
            fields["resume"] = next(words)
    for word in words:
        name, equals, inline = word.partition("=")
        if word == "--continue" and "continue_latest" not in fields:
            fields["continue_latest"] = True
        elif name in VALUED and VALUED[name] not in fields:
            value = inline if equals else next(words, None)
            if value is None or (name != "--prompt" and not value):
                return f"{name} needs a value"
            fields[VALUED[name]] = value
        elif name == "--approval-mode" and "approval_mode" not in fields:
            value = inline if equals else next(words, None)
            if value not in APPROVAL_MODES:
                return "--approval-mode takes ask, edits, full or auto"
            fields["approval_mode"] = value
        elif name == "--sandbox" and "sandbox" not in fields:
            value = inline if equals else next(words, None)
            from magi_code.tools.sandbox.settings import MODES

            if value not in MODES:
                return "--sandbox takes read-only, workspace-write or full-access"
            fields["sandbox"] = value
        elif name in (*VALUED, "--approval-mode", "--sandbox", "--continue"):
            return f"{name} is given twice"
        else:
            import re

            shown = f" {name}" if re.fullmatch(r"--?[a-z][a-z-]{0,31}", name) else ""
            return f"unknown argument{shown}"
    if "resume" in fields and "continue_latest" in fields:
        return "resume and --continue exclude each other"
    return Launch(**fields)  # type: ignore[arg-type]


def agent_option(args: list[str]) -> tuple[str | None, list[str]]:
    """`--agent NAME` (or `--agent=NAME`) taken out of `args`, once; its name checked later.
    The text after `--prompt` is the prompt, never an option."""
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--agent" and index + 1 < len(args):
            return args[index + 1], args[:index] + args[index + 2 :]
        if word.startswith("--agent="):
            return word.partition("=")[2], args[:index] + args[index + 1 :]
        index += 2 if word == "--prompt" else 1
    return None, args


def serve(rest: list[str]) -> int:
    if sys.platform == "win32":
        return refuse("serve is not supported on Windows")
    if rest != ["--stdio"]:
        return refuse("serve takes exactly --stdio and no other flag")
    if not (is_pipe(0) and is_pipe(1)):
        return refuse("serve --stdio needs pipes on stdin and stdout")
    from magi_code.local_agent.main import run

    return run()


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
    print(render(context, trusted=loaded.trusted, tools=tools))
    return 0


def provider_command(name: str, rest: list[str]) -> int:
    """login, logout and models: they read MC_HOME and settings, never serve a protocol."""
    from pathlib import Path

    from magi_code.config import paths, settings
    from magi_code.providers import commands

    home = paths.resolve_home(os.environ)
    if name == "logout":
        return commands.logout(rest, Path(home))
    try:
        if name == "login":  # a credential only for what the global settings or presets define
            known = settings.base_layers(settings.read_toml(paths.Paths(home).settings))
            return commands.login(rest, Path(home), known["providers"])
        loaded = settings.load_layers(
            paths.Paths(home).settings, paths.project_settings(os.getcwd())
        )
    except settings.SettingsError:
        return refuse("the settings are not valid")
    warn_dropped(loaded.dropped)
    return commands.models(rest, Path(home), loaded.settings, loaded.base["providers"])


def warn_dropped(dropped: list[Dropped]) -> None:
    for key in dropped:
        print(f"magi-code: {key.warning()}", file=sys.stderr)


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


def sessions_command(rest: list[str]) -> int:
    """`sessions list` and `sessions prune`: plain commands over MC_HOME/sessions, no terminal
    needed; they never create MC_HOME."""
    from pathlib import Path

    from magi_code.config import paths

    home = paths.resolve_home(os.environ)
    directory = Path(paths.Paths(home).sessions)
    if rest in (["list"], ["list", "--json"]):
        return list_sessions(directory, as_json=rest == ["list", "--json"])
    if rest[:1] != ["prune"]:
        return refuse("sessions takes list [--json] or prune [--older-than DAYS] [--dry-run]")
    options = prune_options(rest[1:])
    if options is None:
        return refuse("sessions prune takes [--older-than DAYS] [--dry-run]")
    days, dry_run = options
    if days is None:
        days = configured_retention(home)
        if days is None:
            return refuse("the settings are not valid")
        if days == 0:  # retention disabled: only an explicit --older-than prunes
            print("sessions.retention_days is 0: pass --older-than DAYS", file=sys.stderr)
            print("0 sessions removed")
            return 0
    return prune_sessions(directory, days, dry_run)


def prune_options(rest: list[str]) -> tuple[int | None, bool] | None:
    """(days or None, dry_run) from `[--older-than DAYS] [--dry-run]`; None when malformed."""
    days: int | None = None
    dry_run = False
    words = iter(rest)
    for word in words:
        if word == "--dry-run" and not dry_run:
            dry_run = True
        elif word.partition("=")[0] == "--older-than" and days is None:
            value = word.partition("=")[2] if "=" in word else next(words, "")
            if not (value.isascii() and value.isdigit() and len(value) <= DAYS_DIGITS):
                return None
            days = int(value)
        else:
            return None
    return days, dry_run


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


if __name__ == "__main__":
    raise SystemExit(main())
