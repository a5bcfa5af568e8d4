"""`magi-code` argv -> one face. Launch validation happens here, before any side effect:
an invalid launch exits 2 having created nothing and written nothing but a line to stderr.

Imports stay minimal on the `serve --stdio` path; each face imports its own modules.
"""

import os
import stat
import sys

USAGE = """usage:
  magi-code                      Mission Control (needs a terminal)
  magi-code --prompt TEXT        run one prompt (needs a terminal)
  magi-code serve --stdio        the local-agent protocol over inherited pipes
  magi-code login | logout | models [--refresh] [--json]
  magi-code mcp digest NAME      the digest to add to the global mcp.approved list
"""


def refuse(message: str) -> int:
    sys.stderr.write(f"magi-code: {message}\n{USAGE}")
    return 2


def is_pipe(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--app" in args or args[:1] == ["daemon"]:
        return refuse("the --app and daemon forms are no longer supported")
    if args[:1] == ["serve"]:
        return serve(args[1:])
    if args[:1] in (["login"], ["logout"], ["models"]):
        return provider_command(args[0], args[1:])
    if len(args) == 3 and args[:2] == ["mcp", "digest"]:
        return mcp_digest(args[2])
    if args == [] or (len(args) == 2 and args[0] == "--prompt"):
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            return refuse("Mission Control and --prompt need a terminal; use serve --stdio")
        from magi_code.mission_control.console import run

        return run(args[1] if args else None)
    return refuse("unknown arguments")


def serve(rest: list[str]) -> int:
    if sys.platform == "win32":
        return refuse("serve is not supported on Windows")
    if rest != ["--stdio"]:
        return refuse("serve takes exactly --stdio and no other flag")
    if not (is_pipe(0) and is_pipe(1)):
        return refuse("serve --stdio needs pipes on stdin and stdout")
    from magi_code.local_agent.main import run

    return run()


def mcp_digest(name: str) -> int:
    """Print the canonical digest of MCP server NAME as the merged settings define it."""
    from magi_code.config import paths, settings
    from magi_code.mcp.definitions import canonical_digest

    home = paths.resolve_home(os.environ)
    try:
        conf = settings.load(paths.Paths(home).settings, paths.project_settings(os.getcwd()))
    except settings.SettingsError:
        return refuse("the settings are not valid")
    servers = conf.get("mcp", {}).get("servers", {})
    if not isinstance(servers, dict) or not isinstance(servers.get(name), dict):
        return refuse("no MCP server of that name in the settings")
    print(canonical_digest(name, servers[name]))
    return 0


def provider_command(name: str, rest: list[str]) -> int:
    """login, logout and models: they read MC_HOME and settings, never serve a protocol."""
    from pathlib import Path

    from magi_code.config import paths, settings
    from magi_code.providers import commands

    home = paths.resolve_home(os.environ)
    if name == "login":
        return commands.login(rest, Path(home))
    if name == "logout":
        return commands.logout(rest, Path(home))
    try:
        conf = settings.load(paths.Paths(home).settings, paths.project_settings(os.getcwd()))
    except settings.SettingsError:
        return refuse("the settings are not valid")
    return commands.models(rest, Path(home), conf)


if __name__ == "__main__":
    raise SystemExit(main())
