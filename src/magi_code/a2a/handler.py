"""The SDK's request handler, with magi-code's walls checked before a task is made or resumed:
a message is text only, at most MESSAGE_BYTES of UTF-8, with a messageId; its turn must get a
place at the gate (gate.py). A refusal is an A2A error that says what to do, with a `code` in
its data; nothing was run.

The call context keeps no Authorization header: the SDK hands the request's headers to the
agent and its logs, and a token must never reach either.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from a2a.server.owner_resolver import resolve_user_scope
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.server.tasks import TaskStore
from a2a.types.a2a_pb2 import Message, SendMessageRequest, Task
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError

from magi_code.a2a import limits
from magi_code.a2a.gate import Claim, Gate, Refused

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.server.events import Event
    from starlette.requests import Request

TOO_LARGE = (
    f"the message is over {limits.MESSAGE_BYTES:,} bytes of text: shorten it (nothing was run)"
)
NOT_TEXT = "this agent takes text parts only: send the content as text (nothing was run)"
EMPTY = "the message has no text: say what to do (nothing was run)"
NO_MESSAGE_ID = "the message has no messageId: give each message a unique one"


class CallContexts(DefaultServerCallContextBuilder):
    def build(self, request: Request) -> ServerCallContext:
        built = super().build(request)
        headers = built.state.get("headers")
        if isinstance(headers, dict):
            headers.pop("authorization", None)
        return built


def message_refusal(message: Message) -> str | None:
    """Why a message cannot be run (sans-I/O), or None."""
    if not message.message_id:
        return NO_MESSAGE_ID
    if any(part.WhichOneof("content") != "text" for part in message.parts):
        return NOT_TEXT
    try:
        size = sum(len(part.text.encode("utf-8")) for part in message.parts)
    except UnicodeEncodeError:
        return "the message is not valid UTF-8 (nothing was run)"
    if size > limits.MESSAGE_BYTES:
        return TOO_LARGE
    if not any(part.text.strip() for part in message.parts):
        return EMPTY
    return None


class GatedHandler(DefaultRequestHandlerV2):
    def __init__(self, gate: Gate, tasks: TaskStore, **handler: Any) -> None:
        super().__init__(task_store=tasks, **handler)
        self.gate, self.tasks = gate, tasks

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        claim = await self._claim(params, context)
        try:
            answer: Message | Task = await super().on_message_send(params, context)
            return answer
        finally:
            self.gate.drop_unless_taken(claim)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        claim = await self._claim(params, context)
        try:
            async for event in super().on_message_send_stream(params, context):
                yield event
        finally:
            self.gate.drop_unless_taken(claim)

    async def _claim(self, params: SendMessageRequest, context: ServerCallContext) -> Claim:
        message = params.message
        refusal = message_refusal(message)
        if refusal is not None:
            raise InvalidParamsError(message=refusal, data={"code": "message_refused"})
        context_id = message.context_id or None
        if context_id is None and message.task_id:
            task = await self.tasks.get(message.task_id, context)
            context_id = task.context_id if task is not None else None
        try:
            return self.gate.claim(resolve_user_scope(context), context_id, message.message_id)
        except Refused as refused:
            raise UnsupportedOperationError(
                message=refused.why, data={"code": refused.code}
            ) from None
