"""`magi-code mcp ...`: the commands that manage MCP servers. A face of its own, for a terminal.

- `list [--probe]`, `add`, `remove`, `approve`, `digest`, `login`, `logout`; each has -h.
- Definitions are read from the merged settings (global, then what folder trust admits of the
  project file); `add`, `remove` and `approve` write the GLOBAL file only, through the one safe
  TOML writer (config/settings_file.py). A project file cannot approve: `mcp.approved` is
  global-only, and `approve` is a command the user runs.
- `approve` prints exactly what the digest covers before it writes it.
- Nothing printed carries a header value, a token or a server's error text; failures are a
  fixed line on stderr and exit 1; bad usage exits 2. No traceback.
"""

import argparse
import json
import os
import sys
from collections.abc import Mapping
from typing import Any

import anyio

from magi_code.arguments import Parser, UsageError, refused
from magi_code.config import paths, settings, settings_file
from magi_code.config.credentials import CredentialsError, CredentialStore
from magi_code.mcp.definitions import (
    approved_digests,
    canonical,
    canonical_digest,
    parse_server,
    server_tables,
)
from magi_code.mcp.errors import DefinitionError, McpLoginRequired, McpStartupError

PROG = "magi-code mcp"


class CommandError(Exception):
    """A fixed line for stderr, and the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def main(argv: list[str]) -> int:
    try:
        return _dispatch(argv)
    except UsageError as bad:
        return refused(bad)
    except CommandError as failed:
        print(f"magi-code: {failed}", file=sys.stderr)
        return failed.status
    except (settings_file.SettingsFileError, CredentialsError) as failed:
        print(f"magi-code: {failed}", file=sys.stderr)
        return 1


def _parser() -> Parser:
    parser = Parser(PROG, description="Manage MCP servers.")
    sub = parser.add_subparsers(
        dest="verb", metavar="COMMAND", required=True, parser_class=Parser, prog=PROG
    )
    listing = sub.add_parser("list", help="the servers of the settings here")
    listing.add_argument("--probe", action="store_true", help="connect each approved server")
    add = sub.add_parser(
        "add",
        help="define a server in the global settings",
        usage=f"{PROG} add NAME -- COMMAND [ARGS...]\n"
        f"       {PROG} add NAME --url URL [--header K=V]... [--bearer-token-env VAR]",
        epilog="A header value may be env:VAR, read from the environment at startup.",
    )
    add.add_argument("name", metavar="NAME")
    add.add_argument("--url")
    add.add_argument("--header", action="append", default=[], metavar="K=V")
    add.add_argument("--bearer-token-env", metavar="VAR")
    add.add_argument("--env", action="append", default=[], metavar="K=V", help="stdio only")
    add.add_argument("--disabled", action="store_true", help="define it, but not enabled")
    for verb, what in (
        ("remove", "remove a server, its approval and its sign-in"),
        ("approve", "approve a server's definition, in the global settings"),
        ("digest", "print the digest that approval records"),
        ("login", "sign in to an HTTP server (OAuth, in a browser)"),
        ("logout", "forget the stored sign-in of a server"),
    ):
        sub.add_parser(verb, help=what, description=what[0].upper() + what[1:] + ".").add_argument(
            "name", metavar="NAME"
        )
    return parser


def _dispatch(argv: list[str]) -> int:
    command: list[str] = []
    if "--" in argv:  # everything after `--` is the server's command line, never our options
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    args = _parser().parse(argv)
    if args is None:  # -h printed the help
        return 0
    if command and args.verb != "add":
        raise CommandError("only `add` takes -- COMMAND", 2)
    verb: str = args.verb
    if verb == "list":
        return list_servers(args.probe)
    if verb == "add":
        return add(args, command)
    if verb == "remove":
        return remove(args.name)
    if verb == "approve":
        return approve(args.name)
    if verb == "digest":
        print(canonical_digest(args.name, _definition(args.name)))
        return 0
    if verb == "login":
        return login(args.name)
    return logout(args.name)


# ---- settings ---------------------------------------------------------------------------------


def _home() -> str:
    return paths.resolve_home(os.environ)


def _global_file() -> str:
    return paths.Paths(_home()).settings


def _merged() -> dict[str, Any]:
    try:
        loaded = settings.load_layers(_global_file(), paths.project_settings(os.getcwd()))
    except settings.SettingsError:
        raise CommandError("the settings are not valid", 2) from None
    for dropped in loaded.dropped:
        print(f"magi-code: {dropped.warning()}", file=sys.stderr)
    return loaded.settings


def _servers(conf: Mapping[str, Any]) -> Mapping[str, Any]:
    try:
        return server_tables(conf)
    except DefinitionError:
        raise CommandError("mcp.servers is not a table of servers") from None


def _definition(name: str, conf: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    """The merged definition of `name`, checked for shape."""
    raw = _servers(_merged() if conf is None else conf).get(name)
    if not isinstance(raw, Mapping):
        raise CommandError("no MCP server of that name in the settings", 2)
    try:
        parse_server(name, raw)
    except DefinitionError:
        raise CommandError(f"the definition of {name!r} is not valid") from None
    return raw


def _approved(conf: Mapping[str, Any]) -> frozenset[str]:
    try:
        return approved_digests(conf)
    except DefinitionError:
        raise CommandError("mcp.approved is not a list of digests") from None


# ---- the commands -----------------------------------------------------------------------------


def list_servers(probe: bool) -> int:
    conf = _merged()
    approved = _approved(conf)
    rows: list[tuple[str, ...]] = [
        ("NAME", "TRANSPORT", "ENABLED", "APPROVED", *(("TOOLS",) if probe else ()))
    ]
    for name, raw in _servers(conf).items():
        try:
            server = parse_server(name, raw)
        except DefinitionError:
            rows.append((name, "invalid", "-", "-", *(("-",) if probe else ())))
            continue
        enabled = raw.get("enabled", False)
        is_approved = server.digest in approved
        row: tuple[str, ...] = (name, server.transport, _yes(enabled), _yes(is_approved))
        if probe:
            row = (*row, _probe(name, raw) if is_approved else "not approved")
        rows.append(row)
    if len(rows) == 1:
        print("no MCP servers are defined", file=sys.stderr)
        return 0
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = (str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())
    return 0


def _yes(value: object) -> str:
    return "yes" if value is True else "no"


def _probe(name: str, raw: Mapping[str, Any]) -> str:
    """Connect the one server (enabled for the probe), count its tools, close it."""
    from magi_code.mcp.manager import McpManager  # the MCP SDK, for the commands that connect

    definition = {**raw, "enabled": True}
    try:
        manager = McpManager.start(
            {name: definition},
            approved=[canonical_digest(name, definition)],
            cwd=os.getcwd(),
            home=_home(),
        )
    except McpLoginRequired:
        return f"login needed: magi-code mcp login {name}"
    except McpStartupError:
        return "unavailable"
    try:
        return str(len(manager.connections[name].tools))
    finally:
        manager.close()


def add(args: argparse.Namespace, command: list[str]) -> int:
    name: str = args.name
    if bool(command) == bool(args.url):
        raise CommandError("add takes either -- COMMAND [ARGS...] or --url URL", 2)
    table: dict[str, Any]
    if command:
        if args.header or args.bearer_token_env:
            raise CommandError("--header and --bearer-token-env are for --url servers", 2)
        table = {"command": command[0], "args": command[1:]}
        if args.env:
            table["env"] = _pairs(args.env, "--env")
    else:
        if args.env:
            raise CommandError("--env is for command servers", 2)
        table = {"url": args.url}
        if args.header:
            table["headers"] = _pairs(args.header, "--header")
        if args.bearer_token_env:
            table["bearer_token_env"] = args.bearer_token_env
    table["enabled"] = not args.disabled
    try:
        parse_server(name, table)
    except DefinitionError:
        raise CommandError(
            "that is not a valid server (a URL must be https, or http to 127.0.0.1/localhost)", 2
        ) from None
    if isinstance(_servers(settings_file.read(_global_file())).get(name), Mapping):
        raise CommandError(f"{name!r} is already defined; remove it first")
    settings_file.add_table(_global_file(), ["mcp", "servers", name], table)
    print(f"Added MCP server {name!r} to {_global_file()}", file=sys.stderr)
    print(f"Approve it to use it: magi-code mcp approve {name}", file=sys.stderr)
    return 0


def _pairs(items: list[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CommandError(f"{option} takes KEY=VALUE", 2)
        out[key] = value
    return out


def remove(name: str) -> int:
    global_file = _global_file()
    current = settings_file.read(global_file)
    raw = _servers(current).get(name)
    if not isinstance(raw, Mapping):
        raise CommandError(f"{name!r} is not defined in the global settings {global_file}")
    digest = canonical_digest(name, raw)
    _approved(current)  # checks its shape
    approved: list[str] = current.get("mcp", {}).get("approved", [])
    if digest in approved:  # a later definition of that name needs its own approval
        kept = [d for d in approved if d != digest]
        settings_file.set_array(global_file, "mcp", "approved", kept)
    settings_file.remove_table(global_file, ["mcp", "servers", name])
    signed_out = CredentialStore(_home()).remove_mcp_oauth(name)
    also = " and its stored sign-in" if signed_out else ""
    print(f"Removed MCP server {name!r}{also} from {global_file}", file=sys.stderr)
    return 0


def approve(name: str) -> int:
    conf = _merged()
    raw = _definition(name, conf)
    digest = canonical_digest(name, raw)
    covered = json.dumps(canonical(name, raw), indent=2, sort_keys=True, ensure_ascii=False)
    print(f"Approving this definition of MCP server {name!r}:\n{covered}", file=sys.stderr)
    if digest in _approved(conf):
        print(f"Already approved: {digest}", file=sys.stderr)
        return 0
    global_file = _global_file()
    listed = settings_file.read(global_file).get("mcp", {}).get("approved", [])
    if not isinstance(listed, list):
        raise CommandError("mcp.approved is not a list of digests")
    settings_file.set_array(global_file, "mcp", "approved", [*listed, digest])
    print(f"Approved: {digest} (in {global_file})", file=sys.stderr)
    return 0


def login(name: str) -> int:
    from magi_code.mcp.login import LoginFailed, run_login  # the MCP SDK's OAuth, for login only

    conf = _merged()
    raw = _definition(name, conf)
    server = parse_server(name, raw)
    if server.url is None:
        raise CommandError(f"{name!r} is not an HTTP server; there is nothing to sign in to")
    if server.digest not in _approved(conf):
        raise CommandError(f"{name!r} is not approved; run: magi-code mcp approve {name}")
    store = CredentialStore(_home())

    def show(url: str) -> None:
        print(f"Open this URL to sign in to {name!r}:\n{url}", file=sys.stderr, flush=True)

    try:
        tools = anyio.run(run_login, server, store, show)
    except LoginFailed as failed:
        raise CommandError(f"login to {name!r} failed: {failed}") from None
    if tools is None:
        print(f"{name!r} did not ask for a sign-in; nothing was stored", file=sys.stderr)
    else:
        print(f"Signed in to {name!r} ({tools} tools)", file=sys.stderr)
    return 0


def logout(name: str) -> int:
    removed = CredentialStore(_home()).remove_mcp_oauth(name)
    print(f"{'Signed out of' if removed else 'No sign-in stored for'} {name!r}", file=sys.stderr)
    return 0
