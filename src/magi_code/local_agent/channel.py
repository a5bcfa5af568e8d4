"""The bounded worker-event channel between a run (in the runtime's event loop thread) and
the protocol loop. At most WORKER_EVENTS events wait here.

Best-effort deltas never wait: when the channel is full a delta is merged into a queued
delta of the same message if the merge stays within LIVE_CHUNK_BYTES, else dropped (its
part number is then missing, which tells a client to wait for reconciliation). Critical
events wait at most CRITICAL_EVENT_WAIT_MS for room, then the run is told the output is
unavailable. The protocol loop takes events only while its own output queue has room.
"""

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from magi_code import limits

Item = tuple[str, dict[str, Any]]  # (event name, data)


class ChannelFull(Exception):
    pass


class EventChannel:
    def __init__(
        self,
        wake: Callable[[], None],
        capacity: int = limits.WORKER_EVENTS,
        wait_s: float = limits.CRITICAL_EVENT_WAIT_MS / 1000,
    ) -> None:
        self._wake = wake
        self._capacity = capacity
        self._wait_s = wait_s
        self._items: deque[Item] = deque()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def try_put(self, item: Item) -> bool:
        with self._lock:
            if len(self._items) >= self._capacity:
                return False
            self._items.append(item)
            was_empty = len(self._items) == 1
        if was_empty:  # the loop drains whatever it can each time it runs
            self._wake()
        return True

    def offer_delta(self, item: Item) -> bool:
        """Queue, merge or drop a delta; True when its text will reach the client."""
        if self.try_put(item):
            return True
        name, data = item
        with self._lock:
            if self._items:
                last_name, last = self._items[-1]
                merged = last.get("text", "") + data["text"]
                if (
                    last_name == name
                    and last.get("message_id") == data["message_id"]
                    and len(merged.encode()) <= limits.LIVE_CHUNK_BYTES
                ):
                    last["text"] = merged
                    return True
        return False

    async def put(self, item: Item) -> None:
        """Wait for room (polling: this only runs while the client is slow); ChannelFull
        when the bound passes."""
        import anyio

        deadline = time.monotonic() + self._wait_s
        while not self.try_put(item):
            if time.monotonic() >= deadline:
                raise ChannelFull
            await anyio.sleep(0.002)

    def take(self) -> Item | None:
        with self._lock:
            return self._items.popleft() if self._items else None
