"""One call of an `a2a_NAME` tool (a2a/remote.py, where its rules are): the remote's agent
card, fetched once and kept; the HTTP client of the call, with the token for the defined origin
only; the streamed events read into a `Reply`; and the sentence for the model when it failed.
It is the part that holds the a2a-sdk and httpx, imported by a tool's first call.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any
from uuid import uuid4

import anyio
import httpx
from a2a.client import (
    A2ACardResolver,
    A2AClientError,
    Client,
    ClientConfig,
    ClientFactory,
)
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from a2a.utils.errors import A2AError

from magi_code import limits
from magi_code.a2a.agents import RemoteAgentDef, origin_of
from magi_code.providers.network import NetworkFailure
from magi_code.providers.pool import outbound
from magi_code.records import field, record
from magi_code.tools.base import ToolContext
from magi_code.tools.live_output import LiveFeed
from magi_code.tools.summaries import clip_utf8


class RemoteFailure(Exception):
    """The call failed before a task ended: the sentence for the model, and a short word."""

    def __init__(self, word: str, sentence: str) -> None:
        super().__init__(word)
        self.word, self.sentence = word, sentence


@record(frozen=False)
class Reply:
    """What the remote's stream said so far: its task, its state, its text."""

    task_id: str = ""
    state: str = "working"  # working | completed | failed | rejected | canceled | input-required
    artifacts: dict[str, str] = field(default_factory=dict)  # artifact id -> its text so far
    message: str = ""  # the latest status or reply message's text

    @property
    def text(self) -> str:
        return "".join(self.artifacts.values()) or self.message


class Caller:
    """The calls of one remote agent's tool: its card, kept once the first call fetched it."""

    def __init__(self, definition: RemoteAgentDef, tool_name: str) -> None:
        self.definition, self.tool_name = definition, tool_name
        self.card: AgentCard | None = None
        self.card_lock = anyio.Lock()

    async def call(self, prompt: str, token: str | None, ctx: ToolContext) -> Reply:
        """The remote's reply to `prompt`, its text shown live as it arrives; RemoteFailure
        when the call failed before a task ended."""
        reply, statuses = Reply(), _Statuses()
        live = _live(ctx, self.tool_name)
        async with self._http(token, statuses) as http:
            client: Client | None = None
            try:
                card = await self._card(http)
                try:
                    client = ClientFactory(ClientConfig(httpx_client=http)).create(card)
                except ValueError:
                    raise RemoteFailure(
                        "no_interface",
                        f"the remote agent {self.definition.name}'s card offers no JSON-RPC "
                        "interface this client speaks.",
                    ) from None
                message = Message(
                    role=Role.ROLE_USER, message_id=uuid4().hex, parts=[Part(text=prompt)]
                )
                failed: BaseException | None = None
                async with anyio.create_task_group() as showing:
                    if live is not None:
                        showing.start_soon(live.report)
                    try:
                        async for event in client.send_message(SendMessageRequest(message=message)):
                            _take(event, reply, live)
                    except (A2AError, OSError) as exc:
                        failed = exc  # raised below: out of the group, not in an ExceptionGroup
                    showing.cancel_scope.cancel()
                if failed is not None:
                    raise failed
                if live is not None:
                    await live.end()
            except anyio.get_cancelled_exc_class():
                if client is not None and reply.task_id:
                    cancel = CancelTaskRequest(id=reply.task_id)
                    with (
                        anyio.CancelScope(shield=True),
                        anyio.move_on_after(limits.A2A_CANCEL_S),
                        contextlib.suppress(A2AError, OSError),
                    ):
                        await client.cancel_task(cancel)
                raise
            except (A2AError, OSError) as exc:
                raise self._failure(exc, statuses) from None
        return reply

    def ended(self, reply: Reply) -> str:
        """The sentence for a task that ended other than completed."""
        name, said = self.definition.name, _quoted(reply.message)
        if reply.state == "input-required":
            return (
                f"the remote agent {name} needs input to go on{said}. It was not answered: "
                "call the tool again with a prompt that gives what it asks."
            )
        if reply.state == "auth-required":
            return f"the remote agent {name} needs authentication it was not given{said}."
        if reply.state == "canceled":
            return f"the remote agent {name} cancelled the task{said}."
        if reply.state == "rejected":
            return f"the remote agent {name} rejected the task{said}."
        if reply.state == "failed":
            return f"the remote agent {name} failed the task{said}."
        return f"the remote agent {name} ended its reply without finishing the task{said}."

    async def _card(self, http: httpx.AsyncClient) -> AgentCard:
        """The remote's agent card, fetched by the first call of this process."""
        async with self.card_lock:
            if self.card is None:
                self.card = await A2ACardResolver(http, self.definition.url).get_agent_card()
            return self.card

    def _http(self, token: str | None, statuses: _Statuses) -> httpx.AsyncClient:
        """The HTTP client of one call: the token for the defined origin only, the process's
        proxy and certificates."""
        origin = self.definition.origin

        async def credential(request: httpx.Request) -> None:
            if token is not None and origin_of(str(request.url)) == origin:
                request.headers["Authorization"] = f"Bearer {token}"
            else:
                request.headers.pop("Authorization", None)

        async def heard(response: httpx.Response) -> None:
            if response.status_code >= 400:
                statuses.last = response.status_code

        try:
            proxy, tls = outbound(self.definition.url)
        except (NetworkFailure, ValueError):
            raise RemoteFailure(
                "network_settings",
                "the [network] settings (proxy, certificates) for this agent cannot be used: "
                "correct them in the global settings.",
            ) from None
        over_tls = proxy is not None and proxy.startswith("https:")
        return httpx.AsyncClient(
            verify=tls,
            proxy=httpx.Proxy(proxy, ssl_context=tls if over_tls else None) if proxy else None,
            trust_env=False,  # the proxy and certificates are providers/network.py's choice
            follow_redirects=True,
            timeout=httpx.Timeout(limits.A2A_QUIET_S, connect=limits.A2A_CONNECT_S),
            event_hooks={"request": [credential], "response": [heard]},
        )

    def _failure(self, exc: BaseException, statuses: _Statuses) -> RemoteFailure:
        name, url = self.definition.name, self.definition.url
        where = f"[a2a.agents.{name}]"
        causes = _causes(exc)
        if statuses.last in (401, 403):
            return RemoteFailure(
                "unauthorized",
                f"the remote agent {name} refused the credentials (HTTP {statuses.last}): "
                f"check the token that {where} names, and that the remote accepts it.",
            )
        if any(isinstance(c, httpx.TimeoutException) for c in causes):
            return RemoteFailure(
                "timeout",
                f"the remote agent {name} did not answer in time (connect "
                f"{limits.A2A_CONNECT_S:g} s, silence {limits.A2A_QUIET_S:g} s).",
            )
        if any(isinstance(c, httpx.TransportError) for c in causes):
            return RemoteFailure(
                "unreachable",
                f"the remote agent {name} could not be reached at {url}: check that it runs "
                f"and that {where} url is right.",
            )
        if isinstance(exc, A2AError) and not isinstance(exc, A2AClientError):
            return RemoteFailure(  # the remote's own A2A error: its words say why
                "refused",
                f"the remote agent {name} refused the request{_quoted(str(exc.message))}.",
            )
        if statuses.last is not None:
            return RemoteFailure(
                "http_error",
                f"the remote agent {name} answered HTTP {statuses.last}: check {where} url "
                "and the remote's logs.",
            )
        return RemoteFailure(
            "protocol_error",
            f"the remote agent {name} answered with an A2A error or something that is not "
            "A2A: check the remote's logs.",
        )


@record(frozen=False)
class _Statuses:
    last: int | None = None  # the last HTTP status of 400 or more this call heard


def _take(event: StreamResponse, reply: Reply, live: LiveFeed | None) -> None:
    """One stream event into `reply` (and the new text shown live)."""
    if event.HasField("message"):
        reply.message, reply.state = _text(event.message.parts), "completed"
        _show(live, reply.message)
        return
    if event.HasField("task"):
        task = event.task
        reply.task_id = task.id or reply.task_id
        for artifact in task.artifacts:
            reply.artifacts[artifact.artifact_id] = _text(artifact.parts)
        _status(reply, task.status.state, _text(task.status.message.parts))
    elif event.HasField("status_update"):
        update = event.status_update
        reply.task_id = update.task_id or reply.task_id
        said = _text(update.status.message.parts)
        _status(reply, update.status.state, said)
        _show(live, said + "\n" if said else "")
    elif event.HasField("artifact_update"):
        chunk = event.artifact_update
        reply.task_id = chunk.task_id or reply.task_id
        key, text = chunk.artifact.artifact_id, _text(chunk.artifact.parts)
        reply.artifacts[key] = (reply.artifacts.get(key, "") if chunk.append else "") + text
        _show(live, text)


_STATES = {
    "TASK_STATE_COMPLETED": "completed",
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_CANCELED": "canceled",
    "TASK_STATE_REJECTED": "rejected",
    "TASK_STATE_INPUT_REQUIRED": "input-required",
    "TASK_STATE_AUTH_REQUIRED": "auth-required",
}


def _status(reply: Reply, state: int, text: str) -> None:
    reply.state = _STATES.get(TaskState.Name(state), "working")
    if text:
        reply.message = text


def _text(parts: Any) -> str:
    chosen: list[Part] = [p for p in parts if p.HasField("text")]
    return "".join(p.text for p in chosen)


def _show(live: LiveFeed | None, text: str) -> None:
    if live is not None and text:
        live.add(text.encode("utf-8", "replace"))


def _live(ctx: ToolContext, name: str) -> LiveFeed | None:
    if ctx.detail is None:
        return None
    return LiveFeed(ctx.detail, ctx.activity_id, name)


def _quoted(said: str) -> str:
    shown = clip_utf8(said, limits.A2A_SAID_BYTES)
    return f"; it said: {json.dumps(shown, ensure_ascii=False)}" if said else ""


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it, in order."""
    found: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in found:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found
