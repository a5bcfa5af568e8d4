"""The model's `a2a_NAME` tools: one remote A2A agent each (`[a2a.agents.NAME]`, a2a/agents.py),
a prompt in, the remote's streamed reply out, on the a2a-sdk client (JSON-RPC, SSE).

Rules:
- The a2a-sdk (and httpx) load on a tool's first call, never on the way to a session's start.
- The remote's agent card is fetched once per process (per tool) and kept; every call after
  uses it.
- The bearer token (the variable `token` names, read at each call) goes only to the exact
  origin of the url it was defined with: one request hook is the gate for every request, a
  redirect's hops too, so neither a card naming another URL nor a redirect elsewhere gets it.
  An unset or empty variable fails the call before anything is sent.
- Requests go the way the provider client's do (providers/network.py: the proxy of the
  environment or `[network]`, its certificate authorities and client certificate).
- A call is a `subagent` activity (started, completed, failed) with a safe summary: the
  agent's name and host, never the prompt or the reply. The reply's text is shown live as
  it arrives (tools/live_output.py) to a face that takes detail events.
- Cancelling the turn sends `tasks/cancel` for the remote task (A2A_CANCEL_S at most).
- The model gets the remote's final text, cut at A2A_REPLY_BYTES with a note saying so; or a
  sentence saying what went wrong and what to do: unreachable, the token refused (401/403),
  the remote failed, rejected or cancelled the task, or it needs input (with what it asked).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal
from uuid import uuid4

import anyio

from magi_code import limits
from magi_code.a2a.agents import RemoteAgentDef
from magi_code.records import record
from magi_code.runner.events import Activity
from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.summaries import safe_summary

if TYPE_CHECKING:
    from magi_code.a2a.remote_call import Caller

CUT_NOTE = "\n[cut: the remote's reply was {total} bytes; the first {shown} are shown]"


@record
class PromptArgs:
    prompt: str


class RemoteAgentTool:
    """The `a2a_NAME` tool of one configured remote agent."""

    def __init__(self, definition: RemoteAgentDef, env: Mapping[str, str]) -> None:
        self.definition, self.env = definition, env
        self.name = definition.tool_name
        self.description = (
            f"Delegate a task to the remote agent `{definition.name}` "
            f"({definition.host}) over A2A: it works on its own machine with its own tools and "
            "returns its final text. The prompt must be self-contained."
        )
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "the task"}},
            "required": ["prompt"],
            "additionalProperties": False,
        }
        self.caller: Caller | None = None  # made by the first call, which keeps the card

    def parse(self, arguments: str) -> PromptArgs:
        fields = A.load_object(arguments, {"prompt"}, set())
        prompt = A.text(fields, "prompt")
        if len(prompt.encode("utf-8", "surrogatepass")) > limits.PROMPT_BYTES:
            raise ToolInputError("arguments_too_large")
        return PromptArgs(prompt)

    def access(self, args: PromptArgs, ctx: ToolContext) -> Access:
        # What goes out is the prompt, to this host: a network access (asks by default).
        return Access("network", host=self.definition.host)

    def describe(self, args: PromptArgs, ctx: ToolContext) -> str:
        return safe_summary(f"a2a {self.definition.name} ({self.definition.host})")

    async def run(self, args: PromptArgs, ctx: ToolContext) -> ToolOutcome:
        summary = self.describe(args, ctx)
        token = None
        if self.definition.token_env is not None:
            token = self.env.get(self.definition.token_env) or None
            if token is None:
                return _failed(
                    summary,
                    "unset_token",
                    f"the variable {self.definition.token_env} that [a2a.agents."
                    f"{self.definition.name}] token names is unset or empty: nothing was sent. "
                    "Set it in the environment magi-code starts in.",
                )
        # The a2a-sdk and httpx load here, on the first call (the rules above).
        from magi_code.a2a.remote_call import Caller, RemoteFailure

        if self.caller is None:
            self.caller = Caller(self.definition, self.name)
        activity = uuid4().hex
        await _emit(ctx, Activity(activity, "subagent", "started", self.name, summary))
        try:
            reply = await self.caller.call(args.prompt, token, ctx)
        except RemoteFailure as failure:
            await _emit(ctx, Activity(activity, "subagent", "failed", self.name, summary))
            return _failed(summary, failure.word, failure.sentence)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await _emit(ctx, Activity(activity, "subagent", "failed", self.name, summary))
            raise
        ok = reply.state == "completed"
        state: Literal["completed", "failed"] = "completed" if ok else "failed"
        await _emit(ctx, Activity(activity, "subagent", state, self.name, f"{summary} {state}"))
        if ok:
            return ToolOutcome(True, _bounded(reply.text), f"{summary} completed")
        return _failed(summary, reply.state, self.caller.ended(reply))


def _bounded(text: str) -> str:
    """The reply for the model: at most A2A_REPLY_BYTES of it, a note saying what was cut."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limits.A2A_REPLY_BYTES:
        return text
    shown = data[: limits.A2A_REPLY_BYTES].decode("utf-8", "ignore")
    return shown + CUT_NOTE.format(total=len(data), shown=len(shown.encode("utf-8")))


def _failed(summary: str, word: str, sentence: str) -> ToolOutcome:
    return ToolOutcome(False, f"error: {sentence}", f"{summary}: {word}")


async def _emit(ctx: ToolContext, event: Activity) -> None:
    if ctx.emit is not None:
        await ctx.emit(event)


def remote_agent_tools(
    definitions: list[RemoteAgentDef], env: Mapping[str, str]
) -> dict[str, RemoteAgentTool]:
    return {d.tool_name: RemoteAgentTool(d, env) for d in definitions}
