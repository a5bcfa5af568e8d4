"""The server/runtime line of `serve --stdio`: what each side may ask of the other.

The protocol loop (server.py's Server) is the `Host`; what an admitted child attaches for
sessions and turns (runtime.py's LocalRuntime) is the `Runtime`. Each side holds the other
only as one of these, and calls methods, never reads a field. They are abstract classes, real
at run time (a side that lacks a method cannot be made), and cost the initialize path
nothing: `abc` is loaded by the interpreter itself, where `typing` would cost milliseconds.
"""

from __future__ import annotations

import abc

TYPE_CHECKING = False  # `typing` costs milliseconds on the way to the initialize result
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from magi_code.local_agent.envelope import Request


class Host(abc.ABC):
    """What the runtime may ask of the protocol loop. `wake` and `post` are thread-safe; the
    rest run on the protocol loop only."""

    @abc.abstractmethod
    def reply(self, request_id: str | None, result: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    def fail(self, request_id: str | None, code: str) -> None: ...

    @abc.abstractmethod
    def event(self, name: str, data: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    def takes_events(self) -> bool: ...  # the output queue has room for run events

    @abc.abstractmethod
    def wake(self) -> None: ...

    @abc.abstractmethod
    def post(self, callback: Callable[[], None]) -> None: ...

    @abc.abstractmethod
    def start_worker(
        self, work: Callable[[], Any], done: Callable[[Any, BaseException | None], None]
    ) -> None: ...


class Runtime(abc.ABC):
    """What the protocol loop may ask of the runtime it attached once initialized. All on
    the protocol loop."""

    @abc.abstractmethod
    def warm(self) -> None: ...  # load what the first session and turn need, off the loop

    @abc.abstractmethod
    def handle(self, request: Request) -> None: ...  # a method beyond the lifecycle

    @abc.abstractmethod
    def status(self) -> dict[str, str | None]: ...  # provider, model, session_id, run_id

    @abc.abstractmethod
    def pump(self) -> None: ...  # move run events into the output queue while it has room

    @abc.abstractmethod
    def cancel_all(self) -> None: ...

    @abc.abstractmethod
    def idle(self) -> bool: ...  # no run still owes its terminal event

    @abc.abstractmethod
    def close(self, timeout: float) -> None: ...
