"""`magi-code a2a serve`: this workspace's agent as an A2A server (JSON-RPC with streaming over
SSE at `/`, HTTP+JSON under `/rest`, the agent card at `/.well-known/agent-card.json`).

The workspace is admitted once at start, as every face admits it (settings, folder trust,
instructions, skills, the `--agent` profile, MCP); the `[a2a]` settings are read then
(serving.py). Without tokens the server binds loopback only and says so. Once listening, one
line on stderr names the URL (a `--port 0` server's real port too); nothing else is printed
but warnings and errors. SIGINT and SIGTERM stop it: running turns are cancelled (each
records its cancel), then sessions, melchiors and MCP servers close.

Exit codes: 0 after a stop, 2 for a bad command line or a failed start (what is wrong and
what to do on stderr).
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from argparse import ArgumentTypeError

from magi_code.a2a.app import serve_forever
from magi_code.a2a.limits import DEFAULT_PORT
from magi_code.a2a.options import PROG, Options, say
from magi_code.a2a.serving import ServeSettingsError, bind_refusal, is_loopback, serving
from magi_code.arguments import Parser, UsageError, refused
from magi_code.config.settings import SettingsError
from magi_code.limits import CLEANUP_WAIT_MS
from magi_code.runner.startup import StartupError, admit
from magi_code.tools.approval_modes import MODES

PLAIN_HTTP = (
    "warning: plain HTTP beyond this machine: tokens and messages travel readable; set "
    "[a2a] tls_cert and tls_key, or serve behind a TLS proxy"
)
DESCRIPTION = """\
Serve this workspace's agent over A2A (Agent2Agent) to agents on other machines: each A2A
context is one magi-code session, each task one turn. Approvals are answered by this
server's --approval-mode, never by a caller. Bearer tokens come from the global settings
(`[a2a] tokens = ["env:VARIABLE"]`); without any, only this machine may connect."""
EPILOG = """\
approval modes (a caller can never answer an approval):
  ask    refuse what needs approval; the task ends input-required saying what (default)
  edits  allow file edits inside the workspace
  full   allow everything the permission rules would ask about
  auto   allow what the OS sandbox contains; refuse the rest
without --approval-mode, the `approval_mode` setting (ask or auto) decides."""


def parse(args: list[str]) -> Options | None:
    parsing = Parser(
        PROG,
        usage=f"{PROG} [OPTIONS] [WORKSPACE]",
        description=DESCRIPTION,
        epilog=EPILOG,
        stray="give one WORKSPACE",
    )
    parsing.add_argument(
        "workspace", nargs="?", metavar="WORKSPACE", help="the folder the agent works in"
    )
    parsing.add_argument(
        "--cwd", metavar="DIR", help="the same, as an option (default: this folder)"
    )
    parsing.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (127.0.0.1; another needs [a2a] tokens)",
    )
    parsing.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help=f"0 picks a free one ({DEFAULT_PORT})"
    )
    parsing.add_argument("--agent", metavar="PROFILE", help="the agent profile to serve")
    parsing.add_argument(
        "--approval-mode",
        dest="mode",
        choices=MODES,
        metavar="MODE",
        help="ask, edits, full or auto: how approvals are answered (below)",
    )
    parsing.add_argument(
        "--public-url", metavar="URL", help="the URL the agent card names (behind a proxy)"
    )
    parsed = parsing.parse(args)
    if parsed is None:
        return None
    if parsed.workspace is not None and parsed.cwd is not None:
        raise UsageError("give the workspace once: WORKSPACE or --cwd", PROG)
    workspace = os.path.realpath(parsed.workspace or parsed.cwd or os.getcwd())
    if not os.path.isdir(workspace):
        raise UsageError("the workspace is not a folder", PROG)
    return Options(
        workspace, parsed.host, parsed.port, parsed.agent, parsed.mode, parsed.public_url
    )


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65_535:
        raise ArgumentTypeError("needs a port number, 0 to 65535")
    return int(text)


def main(args: list[str]) -> int:
    try:
        options = parse(args)
    except UsageError as bad:
        return refused(bad)
    if options is None:
        return 0

    env = dict(os.environ)
    try:
        admitted = admit(options.workspace, env, agent=options.agent)
    except StartupError as failed:
        return _startup_failed(failed)
    try:
        for dropped in admitted.dropped:
            say(dropped.warning())
        try:
            chosen = serving(admitted.settings, env)
        except ServeSettingsError as bad:
            say(str(bad))
            return 2
        refusal = bind_refusal(options.host, chosen)
        if refusal is not None:
            say(refusal)
            return 2
        if chosen.tls is None and not is_loopback(options.host):
            say(PLAIN_HTTP)
        if chosen.tls is not None and not _usable_pair(*chosen.tls):
            return 2
        try:
            listening = socket.create_server(
                (options.host, options.port),
                family=socket.AF_INET6 if ":" in options.host else socket.AF_INET,
            )
        except OSError as failed:
            say(f"cannot listen on {options.host}:{options.port}: {failed.strerror}")
            return 2

        with listening:
            return asyncio.run(serve_forever(admitted, options, chosen, listening))
    except KeyboardInterrupt:
        return 130
    finally:
        if admitted.mcp is not None:
            admitted.mcp.close(CLEANUP_WAIT_MS / 1000)


def _usable_pair(cert: str, key: str) -> bool:
    """Whether the certificate and key load together (said on stderr when not)."""
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as failed:
        why = failed.strerror if isinstance(failed, OSError) and failed.strerror else failed
        say(f"[a2a] tls_cert and tls_key cannot be used ({why}): give PEM files that match")
        return False
    return True


def _startup_failed(failed: StartupError) -> int:
    """The code, and the settings key at fault (SettingsError's sentence) or the detail."""
    cause = failed.__cause__
    detail = failed.detail or (str(cause) if isinstance(cause, SettingsError) else None)
    say(f"startup failed: {failed.code}: {detail or 'check the settings and this workspace'}")
    return 2
