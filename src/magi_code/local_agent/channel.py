"""The bounded worker-event channel between a run (in the runtime's event loop thread) and
the protocol loop. At most WORKER_EVENTS events wait here.

Best-effort deltas never wait, and never take the room critical events need: a delta is
queued only while the channel is under half full; otherwise it is merged into a queued
delta of the same message if the merge stays within LIVE_CHUNK_BYTES, else dropped.
The channel numbers delta parts as they enter (per message, from 0): a merged delta spends
no number and a dropped one spends its own, so a client sees a gap exactly when text was
lost. Critical events wait at most CRITICAL_EVENT_WAIT_MS for room, then the run is told
the output is unavailable. The protocol loop takes events only while its own output queue
has room for them (see `OutputQueue.takes_events`).
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
        self._message: object = None  # the message whose delta parts are being numbered
        self._next_part = 0

    def __len__(self) -> int:
        return len(self._items)

    def try_put(self, item: Item) -> bool:
        with self._lock:
            return self._append(item, self._capacity)

    def _append(self, item: Item, bound: int) -> bool:
        """Append while fewer than `bound` items wait; call with the lock held."""
        if len(self._items) >= bound:
            return False
        self._items.append(item)
        if len(self._items) == 1:  # the loop drains whatever it can each time it runs
            self._wake()
        return True

    def offer_delta(self, item: Item) -> bool:
        """Queue, merge or drop a delta (its `part` is set here); True when its text will
        reach the client."""
        name, data = item
        with self._lock:
            if data["message_id"] != self._message:
                self._message, self._next_part = data["message_id"], 0
            if self._merge(name, data):
                return True
            part, self._next_part = self._next_part, self._next_part + 1
            return self._append((name, data | {"part": part}), self._capacity // 2)

    def _merge(self, name: str, data: dict[str, Any]) -> bool:
        """Under pressure, append the text to the last queued delta of the same message."""
        if len(self._items) < self._capacity // 2:
            return False
        last_name, last = self._items[-1]
        if last_name != name or last["message_id"] != data["message_id"]:
            return False
        merged = last["text"] + data["text"]
        if len(merged.encode("utf-8", "surrogatepass")) > limits.LIVE_CHUNK_BYTES:
            return False
        last["text"] = merged
        return True

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
