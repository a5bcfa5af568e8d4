"""Who may hold a connection to a session: the admission policy of its server, apart from I/O.

    unproven   a connection not yet proven by `hello`. At most MAX_UNPROVEN; when all are held,
               a new one takes the oldest one's place (the server closes that one). An honest
               caller says `hello` as soon as it connects, so a flood of half-open connections
               delays it at worst; the server's hello deadline frees the rest.
    proven     a connection whose caller proved its identity. MAX_CONNECTIONS + RESERVED_SELF
               in all; the session itself (its own tool) may take any of them, and peers never
               take the last RESERVED_SELF that the session is not already using.

Connections are opaque hashable tokens here (the server passes its sockets). Thread-safe:
the accept thread admits, each connection's thread proves and releases.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable

from melchior.limits import MAX_CONNECTIONS, MAX_UNPROVEN, RESERVED_SELF


class Slots:
    def __init__(
        self,
        unproven: int = MAX_UNPROVEN,
        peers: int = MAX_CONNECTIONS,
        reserved: int = RESERVED_SELF,
    ) -> None:
        self._lock = threading.Lock()
        self._max_unproven, self._peers, self._reserved = unproven, peers, reserved
        self._unproven: dict[Hashable, None] = {}  # insertion order: the oldest first
        self._peers_in: set[Hashable] = set()
        self._self_in: set[Hashable] = set()

    def admit(self, conn: Hashable) -> Hashable | None:
        """Take an unproven slot for a new connection. When every unproven slot is held, the
        oldest holder gives its up: it is returned, for the caller to close."""
        with self._lock:
            evicted = None
            if len(self._unproven) >= self._max_unproven:
                evicted = next(iter(self._unproven))
                del self._unproven[evicted]
            self._unproven[conn] = None
            return evicted

    def prove(self, conn: Hashable, is_self: bool) -> bool:
        """Move a connection whose caller just proved itself to a proven slot. False when there
        is no room for it (or it already lost its unproven slot): the caller closes it."""
        with self._lock:
            peers, own = len(self._peers_in), len(self._self_in)
            held = peers + (own if is_self else max(own, self._reserved))
            if conn not in self._unproven or held >= self._peers + self._reserved:
                return False
            del self._unproven[conn]
            (self._self_in if is_self else self._peers_in).add(conn)
            return True

    def release(self, conn: Hashable) -> None:
        """The connection closed: its slot, whichever it held, is free."""
        with self._lock:
            self._unproven.pop(conn, None)
            self._peers_in.discard(conn)
            self._self_in.discard(conn)
