"""The model's melchior tools: one `melchior_<verb>` tool per verb that `melchior tool
--describe` publishes (the vocabulary as data, never a hand copy), each running `melchior tool`
once per call as the session's own identity.

Rules:
- The verbs, their summaries and options come from the description; `end` is not offered (the
  harness ends the children it started), nor reading a report from stdin (`--about=-`).
- Permissions go through the normal policy: `tell` and `ask` to a session outside this
  session's own instance (itself, its parent, the children it started) are writes, so they
  ask by default; everything else is a read.
- The answer is melchior's one JSON reply, bounded like any tool output; a refusal is a
  failed outcome carrying melchior's code. Nothing else of the exec reaches the model.
- A call made while the session's melchior still boots waits for it; without melchior it
  fails with `melchior_unavailable`.
- The description is kept in MC_HOME/cache (`described`), keyed by the magi-code version and
  the `melchior` command file (its path, size and modification time: an install or upgrade
  rewrites it), so a session does not run `melchior tool --describe` beside every boot. An
  editable install that changes melchior's vocabulary without reinstalling keeps the old
  description until that file is deleted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from magi_code import limits
from magi_code.records import record
from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.summaries import safe_summary

VOCABULARY_CACHE = "melchior-vocabulary.json"  # in MC_HOME/cache
PREFIX = "melchior_"
NOT_OFFERED = frozenset({"end"})
WRITES = frozenset({"tell", "ask"})  # outside the instance, these ask by default


def describe(command: list[str], env: Mapping[str, str]) -> dict[str, Any] | None:
    """The published tool vocabulary (`melchior tool --describe`), or None."""
    from magi_code.runner.peers import exec_json

    try:
        vocabulary = exec_json(command, ["tool", "--describe"], env)["result"][0]
    except (KeyError, IndexError, TypeError):
        return None
    return vocabulary if isinstance(vocabulary, dict) else None


def described(command: list[str], env: Mapping[str, str], home: str) -> dict[str, Any] | None:
    """The vocabulary from the cache when it was described by this melchior, else described
    now and cached (magi_code/cache.py)."""
    from magi_code import __version__, cache

    try:
        info = os.stat(command[0])
        key = [__version__, command, info.st_size, info.st_mtime_ns]
    except OSError:
        return describe(command, env)
    path = cache.named(home, VOCABULARY_CACHE)
    vocabulary = cache.kept(path, key)
    if isinstance(vocabulary, dict):
        return vocabulary
    vocabulary = describe(command, env)
    if vocabulary is not None:
        cache.keep(path, key, vocabulary)
    return vocabulary


@record
class VerbArgs:
    options: dict[str, str]


class MelchiorTool:
    """One verb of `melchior tool`, run as this session."""

    def __init__(
        self,
        verb: str,
        spec: Mapping[str, Any],
        command: list[str],
        env: Callable[[], dict[str, str] | None],
        instance: Callable[[], set[str]],
    ) -> None:
        self.verb, self.command, self.env, self.instance = verb, command, env, instance
        self.name = PREFIX + verb
        self.description = f"melchior: {spec.get('summary', verb)}"
        self.options: dict[str, Mapping[str, Any]] = {}
        properties: dict[str, object] = {}
        for option, shape in dict(spec.get("options", {})).items():
            schema = _schema(shape)
            if schema is not None:
                self.options[option] = shape
                properties[option] = schema
        required = [r for r in spec.get("required", []) if r in properties]
        self.required = set(required)
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> VerbArgs:
        fields = A.load_object(arguments, self.required, set(self.options) - self.required)
        options = {}
        for key, _value in fields.items():
            schema = _schema(self.options[key]) or {}
            if schema.get("type") == "integer":
                options[key] = str(A.whole(fields, key, 0, 0, 2**31))
            else:
                text = A.text(fields, key)
                if "enum" in schema and text not in schema["enum"]:  # type: ignore[operator]
                    raise ToolInputError("invalid_arguments")
                options[key] = text
        return VerbArgs(options)

    def access(self, args: VerbArgs, ctx: ToolContext) -> Access:
        who = args.options.get("who")
        outside = who is not None and who not in self.instance()
        command = f"melchior {self.verb} {who or ''}".strip()
        if self.verb in WRITES and outside:
            return Access("write", (), command)
        return Access("read", (ctx.workspace,), command)  # a read the policy allows in here

    def describe(self, args: VerbArgs, ctx: ToolContext) -> str:
        who = args.options.get("who")
        return safe_summary(f"melchior {self.verb}" + (f" {who}" if who else ""))

    async def run(self, args: VerbArgs, ctx: ToolContext) -> ToolOutcome:
        argv = [*self.command, "tool", f"--verb={self.verb}"]
        argv += [f"--{key}={value}" for key, value in args.options.items()]
        summary = self.describe(args, ctx)
        env = await anyio.to_thread.run_sync(self.env)  # waits while melchior boots
        if env is None:
            unavailable = json.dumps({"error": "melchior_unavailable"})
            return ToolOutcome(False, unavailable, f"{summary}: melchior_unavailable")
        with anyio.move_on_after(limits.MELCHIOR_TOOL_MS / 1000):
            done = await anyio.run_process(argv, env=env, check=False)
            try:
                reply = json.loads(done.stdout)
            except ValueError:
                reply = None
            if not isinstance(reply, dict):
                return ToolOutcome(False, json.dumps({"error": "melchior_failed"}), summary)
            if reply.get("ok") is True:
                return ToolOutcome(True, json.dumps(reply), summary)
            code = str(reply.get("code", "refused"))
            return ToolOutcome(False, json.dumps(reply), f"{summary}: {code}")
        return ToolOutcome(False, json.dumps({"error": "timeout"}), f"{summary}: timeout")


def _schema(shape: object) -> dict[str, object] | None:
    """The JSON schema of one published option; None for what the tool does not offer."""
    if not isinstance(shape, Mapping):
        return None
    if "enum" in shape:
        values = [v for v in shape["enum"] if isinstance(v, str) and v != "-"]
        return {"type": "string", "enum": values} if values else None
    if shape.get("value") == "integer":
        return {"type": "integer", "minimum": 0}
    schema: dict[str, object] = {"type": "string"}
    if isinstance(shape.get("description"), str):
        schema["description"] = shape["description"]
    return schema


def melchior_tools(
    vocabulary: Mapping[str, Any],
    command: list[str],
    env: Callable[[], dict[str, str] | None],
    instance: Callable[[], set[str]],
) -> dict[str, MelchiorTool]:
    verbs = vocabulary.get("verbs")
    if not isinstance(verbs, Mapping):
        return {}
    tools = {}
    for verb, spec in verbs.items():
        if verb not in NOT_OFFERED and isinstance(spec, Mapping):
            tool = MelchiorTool(verb, spec, command, env, instance)
            tools[tool.name] = tool
    return tools
