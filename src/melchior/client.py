"""Calling a session over its socket: connect (removing a dead socket found on the way), say
hello with a proven identity, then make calls. Blocking sockets with a deadline and no asyncio,
so that one `melchior tool` exec starts and finishes fast.
"""

from __future__ import annotations

import _socket  # not `socket`: see registry.probe
import os

from melchior import registry, wire
from melchior.identity import Identity
from melchior.limits import CALL_TIMEOUT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class CallError(Exception):
    """A call that got no reply to read, carrying one of the wire's closed codes."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class Connection:
    def __init__(self, sock: _socket.socket) -> None:
        self._sock = sock
        self._decoder = wire.SocketDecoder()
        self._ready: list[wire.Item] = []

    def call(self, name: str, args: list[Any] | None = None) -> wire.Message:
        """One call, one reply (which may be a refusal: `ok` false and a `code`)."""
        try:
            self._sock.sendall(wire.encode_socket(wire.call(name, args)))
            while not self._ready:
                data = self._sock.recv(1 << 16)
                if not data:
                    raise CallError("broken")
                self._ready += self._decoder.feed(data)
        except TimeoutError:
            raise CallError("timeout") from None
        except OSError:
            raise CallError("broken") from None
        item = self._ready.pop(0)
        if isinstance(item, wire.Refusal):
            raise CallError(item.code)  # e.g. a reply in a family newer than ours
        if "ok" not in item:
            raise CallError("broken")
        return item

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def connect(directory: str, target: str, timeout: float = CALL_TIMEOUT) -> Connection:
    """Dial a session. A socket nobody answers is removed here, on this first call."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(os.fsencode(registry.join(directory, target)))
    except FileNotFoundError:
        sock.close()
        raise CallError("unknown_session") from None
    except (ConnectionRefusedError, NotADirectoryError):
        sock.close()
        registry.reap(directory, target)
        raise CallError("gone") from None
    except TimeoutError:
        sock.close()
        raise CallError("timeout") from None
    return Connection(sock)


def hello_args(me: Identity) -> list[Any]:
    return [{"id": me.id, "token": me.token, "talk": me.talk}]


def open_as(me: Identity, directory: str, target: str) -> Connection:
    """Dial `target` and prove who we are; raise the callee's refusal code if it refuses."""
    conn = connect(directory, target)
    answer = conn.call("hello", hello_args(me))
    if not answer["ok"]:
        conn.close()
        raise CallError(str(answer["code"]))
    return conn
