"""Which methods beyond the lifecycle an admitted child serves, and what it attaches.

The lifecycle (initialize, status, shutdown) lives in server.py; sessions, history and
turns live in runtime.py. The server serves these methods only after a successful
initialization; it attaches the runtime once the initialize result is written (and the
runtime warms what the first session and turn need, runtime.py), so none of it is on the path
to that result.
"""

from __future__ import annotations

from magi_code.local_agent.sides import Host, Runtime

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from typing import Any

RUNTIME_METHODS = (
    "session.create",
    "session.open",
    "history.page",
    "turn.start",
    "turn.cancel",
    "approval.answer",
)


def attach(host: Host, admitted: Any) -> Runtime:
    from magi_code.debug import note
    from magi_code.local_agent.runtime import LocalRuntime

    note("warming")  # with MC_DEBUG_STDERR=1: what loads later is not on the initialize path
    return LocalRuntime(host, admitted)
