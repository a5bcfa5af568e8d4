"""The A2A server's web app and its life: the SDK's routes behind the walls (walls.py), the
task store loaded before the first request, everything closed after the last.

The card names the URL the server listens on (or `--public-url`); uvicorn serves the socket
serve.py bound, with TLS when `[a2a]` names a certificate pair, and without access logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import AsyncIterator, Iterator

import uvicorn
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from starlette.applications import Starlette

from magi_code.a2a.card import REST_PREFIX, agent_card
from magi_code.a2a.gate import Gate
from magi_code.a2a.handler import CallContexts, GatedHandler
from magi_code.a2a.limits import INPUT_WAIT_RELEASE_S
from magi_code.a2a.options import Options, say
from magi_code.a2a.serving import Serving
from magi_code.a2a.task_store import DurableTaskStore
from magi_code.a2a.turns import Turns
from magi_code.a2a.walls import Walls
from magi_code.limits import CLEANUP_WAIT_MS
from magi_code.providers.client import close_clients
from magi_code.runner.setup import parts
from magi_code.runner.startup import Admitted
from magi_code.tools.approval_modes import Mode

STOPS = (signal.SIGINT, signal.SIGTERM)


def base_url(listening: socket.socket, host: str, tls: bool) -> str:
    port = listening.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}/"


async def serve_forever(
    admitted: Admitted, options: Options, chosen: Serving, listening: socket.socket
) -> int:
    mode: Mode = options.mode or ("auto" if parts(admitted).sandbox.auto else "ask")
    url = base_url(listening, options.host, chosen.tls is not None)
    card = agent_card(admitted.context, options.public_url or url, secured=bool(chosen.tokens))
    gate = Gate(chosen.tasks_per_token)
    turns = Turns(admitted, mode, gate)
    store = DurableTaskStore(admitted.paths.home)
    handler = GatedHandler(
        gate,
        store,
        agent_executor=turns,
        agent_card=card,
        interrupted_task_timeout=INPUT_WAIT_RELEASE_S,
    )
    contexts = CallContexts()
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/", context_builder=contexts),
        *create_rest_routes(handler, context_builder=contexts, path_prefix=REST_PREFIX),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await store.load()
        walls = "bearer tokens" if chosen.tokens else "no tokens configured: this machine only"
        say(f"serving {admitted.cwd} at {url} ({walls}; approvals: --approval-mode {mode})")
        try:
            yield
        finally:
            await turns.stop()
            await handler.aclose()
            await close_clients()  # the providers' pooled connections, if any

    app = Walls(
        Starlette(routes=routes, lifespan=lifespan), chosen.tokens, (AGENT_CARD_WELL_KNOWN_PATH,)
    )
    cert, key = chosen.tls or (None, None)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        ssl_certfile=cert,
        ssl_keyfile=key,
        timeout_graceful_shutdown=CLEANUP_WAIT_MS // 1000,
        lifespan="on",
    )
    await Stoppable(config).serve(sockets=[listening])
    return 0


class Stoppable(uvicorn.Server):
    """uvicorn, but a SIGINT or SIGTERM is a stop (exit 0 once everything closed), not raised
    again at the end."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for number in STOPS:
            loop.add_signal_handler(number, self.handle_exit, number, None)
        try:
            yield
        finally:
            for number in STOPS:
                loop.remove_signal_handler(number)
