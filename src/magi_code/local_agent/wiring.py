"""Which methods beyond the lifecycle an admitted child serves, and what it attaches.

The lifecycle (initialize, status, shutdown) lives in server.py; sessions, history and
turns live in runtime.py. The server dispatches these methods only after a successful
initialization; the runtime (and its imports) is created by the first of them, so none of
it is on the path to the initialize result.
"""

from magi_code.local_agent.envelope import Request
from magi_code.local_agent.server import Handler, Server

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


def _through_runtime(name: str) -> Handler:
    def call(server: Server, request: Request) -> None:
        from magi_code.local_agent.runtime import METHODS, LocalRuntime

        if server.runtime is None:
            server.runtime = LocalRuntime(server, server.admitted)
        METHODS[name](server.runtime, request)  # type: ignore[arg-type]

    return call
