"""Which methods beyond the lifecycle an admitted child serves, and what it attaches.

The lifecycle (initialize, status, shutdown) lives in server.py; sessions, history and
turns are added here as each becomes real, so a capability is advertised only once it works.
"""

from magi_code.local_agent.server import Server


def install(server: Server) -> None:
    del server  # nothing beyond the lifecycle yet
