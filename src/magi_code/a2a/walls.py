"""Who may call `magi-code a2a serve`, and how much one request may carry (pure ASGI).

Rules:
- With tokens configured, every path but the agent card needs `Authorization: Bearer TOKEN`;
  the token is compared with each configured one in constant time (`hmac.compare_digest`,
  every token compared whatever matched). A missing or wrong token is answered 401 with
  `WWW-Authenticate: Bearer` and a sentence; the token given is never echoed nor logged.
- The caller's identity (serving.py: a digest prefix, never the token) becomes the request's
  user, so the SDK scopes tasks by it and the server counts its turns by it. Without tokens
  (loopback only) every caller is `serving.ANONYMOUS`.
- A request body is read whole before the app sees it, at most REQUEST_BODY_BYTES: a larger
  one is answered 413 before any of it reaches the app (its declared length is trusted only
  to refuse early).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.authentication import AuthCredentials, SimpleUser

from magi_code.a2a import limits
from magi_code.a2a.serving import ANONYMOUS, Token

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

NO_TOKEN = "this agent needs a bearer token: send `Authorization: Bearer TOKEN`"
WRONG_TOKEN = "the bearer token is not one this agent accepts: check the token you were given"
TOO_LARGE = f"the request is over {limits.REQUEST_BODY_BYTES:,} bytes: send a smaller message"


def caller(authorization: bytes | None, tokens: tuple[Token, ...]) -> str | None:
    """The identity of the token in an Authorization header, or None (sans-I/O)."""
    if not tokens:
        return ANONYMOUS
    scheme, _, given = (authorization or b"").strip().partition(b" ")
    if scheme.lower() != b"bearer" or not given.strip():
        return None
    found = None
    for token in tokens:  # all compared, so the time says nothing about which matched
        if hmac.compare_digest(given.strip(), token.secret):
            found = token.identity
    return found


class Walls:
    def __init__(self, app: App, tokens: tuple[Token, ...], public: tuple[str, ...]) -> None:
        self.app, self.tokens, self.public = app, tokens, public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if scope.get("path") not in self.public:
            identity = caller(headers.get(b"authorization"), self.tokens)
            if identity is None:
                said = WRONG_TOKEN if b"authorization" in headers else NO_TOKEN
                await _answer(send, 401, said, [(b"www-authenticate", b"Bearer")])
                return
            scope["user"] = SimpleUser(identity)
            scope["auth"] = AuthCredentials(["authenticated"])
        body = await _body(headers.get(b"content-length"), receive)
        if body is None:
            await _answer(send, 413, TOO_LARGE)
            return
        await self.app(scope, _replay(body, receive), send)


async def _body(declared: bytes | None, receive: Receive) -> bytes | None:
    """The whole body, or None once it is past the bound."""
    if declared is not None and declared.isdigit() and int(declared) > limits.REQUEST_BODY_BYTES:
        return None
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limits.REQUEST_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body once, then what the connection says (a disconnect ends a stream)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


async def _answer(
    send: Send, status: int, said: str, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps({"error": said}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": body})
