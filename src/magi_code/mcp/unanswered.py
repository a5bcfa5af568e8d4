"""Unanswered: the requests we wrote to one stdio server that it has not answered yet, so that
a JSON-RPC error with a null id fails them at once rather than after CALL_TIMEOUT_S.

A server that could not parse a request answers an error with `id: null` (JSON-RPC 2.0): it
cannot say which request it means, and over stdio every request shares one pipe. So the error
answers every request still unanswered: failing only the oldest would leave the unreadable one
waiting whenever it is not the oldest; the others fail with it, and the model may ask again.
(Over HTTP the answer comes on the request's own POST: http_answers.py gives it that id.)
A request we cancelled is no longer waited for. Ids are compared as the SDK compares them
(`"7"` answers `7`).
"""

import mcp_types
from mcp.shared.message import SessionMessage

Incoming = SessionMessage | Exception


class Unanswered:
    def __init__(self) -> None:
        self._ids: dict[str, mcp_types.RequestId] = {}

    def sent(self, message: mcp_types.JSONRPCMessage) -> None:
        if isinstance(message, mcp_types.JSONRPCRequest):
            self._ids[str(message.id)] = message.id
        elif (
            isinstance(message, mcp_types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and isinstance(message.params, dict)
        ):
            self._ids.pop(str(message.params.get("requestId")), None)

    def received(self, incoming: Incoming) -> list[Incoming]:
        """What the session is to see for `incoming`: itself, or for an error with a null id,
        that error once for each request unanswered (none if there is none)."""
        if isinstance(incoming, Exception):
            return [incoming]
        message = incoming.message
        if not isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            return [incoming]
        if message.id is not None:
            self._ids.pop(str(message.id), None)
            return [incoming]
        answers: list[Incoming] = [
            SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=each, error=message.error))
            for each in self._ids.values()
        ]
        self._ids.clear()
        return answers
