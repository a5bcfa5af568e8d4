"""Which methods beyond the lifecycle an admitted child serves, and what it attaches.

The lifecycle (initialize, status, shutdown) lives in server.py; sessions, history and
turns live in runtime.py. The server dispatches these methods only after a successful
initialization; the runtime is created once the initialize result is written (and warms
what the first session and turn need, runtime.py), so none of it is on the path to that
result.
"""

from __future__ import annotations

from magi_code.local_agent.envelope import Request
from magi_code.local_agent.server import Handler, Server

TYPE_CHECKING = False
if TYPE_CHECKING:
    from magi_code.local_agent.runtime import LocalRuntime

RUNTIME_METHODS = (
    "session.create",
    "session.open",
    "history.page",
    "turn.start",
    "turn.cancel",
    "approval.answer",
)


def install(server: Server) -> None:
    for name in RUNTIME_METHODS:
        server.methods[name] = _through_runtime(name)
    server.on_ready = lambda: _warm(server)


def _warm(server: Server) -> None:
    from magi_code.debug import note

    note("warming")  # with MC_DEBUG_STDERR=1: what loads later is not on the initialize path
    _runtime(server).warm()


def _runtime(server: Server) -> LocalRuntime:
    """The server's runtime, made on first need (the protocol loop)."""
    from magi_code.local_agent.runtime import LocalRuntime

    if server.runtime is None:
        server.runtime = LocalRuntime(server, server.admitted)
    return server.runtime  # type: ignore[return-value]


def _through_runtime(name: str) -> Handler:
    def call(server: Server, request: Request) -> None:
        from magi_code.local_agent.runtime import METHODS

        METHODS[name](_runtime(server), request)

    return call
