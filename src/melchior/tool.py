"""`melchior tool`: the vocabulary a model calls, one exec per request (the argv transport).

The caller is whoever the MAGI_MELCHIOR_* environment proves it to be. The walls are checked
here first, so that a session this caller may not reach looks exactly like one that does not
exist, and then again by the callee. This path must start fast: no asyncio, no threads.
"""

from __future__ import annotations

import os
import sys

from melchior import names, policy, registry, wire
from melchior.client import CallError, Connection, open_as
from melchior.identity import Identity, from_env
from melchior.limits import MAX_REPORT, MAX_TEXT, REPORT_CHUNK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, BinaryIO, TypeAlias

    from melchior.reports import Report

    # One call on a session, answered by its socket or, once it has ended, by its stored report.
    Call: TypeAlias = Callable[[str, list[Any]], wire.Message]

OPTIONS = ("verb", "who", "message", "about", "sort", "page")
VERBS = (
    "list",
    "status",
    "tell",
    "ask",
    "task",
    "cancel",
    "report",
    "end",
)  # vocabulary.TOOL's verbs


class Usage(Exception):
    """A bad command line (exit 2)."""


def parse(argv: list[str]) -> dict[str, str]:
    """`--key=value` or `--key value`, each known key at most once."""
    out: dict[str, str] = {}
    items = iter(argv)
    for arg in items:
        if not arg.startswith("--"):
            raise Usage
        key, eq, value = arg[2:].partition("=")
        if not eq:
            value = next(items, None) or ""
            if not value:
                raise Usage
        if key not in OPTIONS or key in out:
            raise Usage
        out[key] = value
    return out


class Tool:
    def __init__(self, me: Identity, directory: str, env: Mapping[str, str]) -> None:
        self.me, self.directory, self.env = me, directory, env
        self._nodes: dict[str, policy.Node | None] = {}
        self._entries: set[str] | None = None  # when known, spares opening absent notes

    def lookup(self, session_id: str) -> policy.Node | None:
        if session_id not in self._nodes:
            self._nodes[session_id] = registry.node(self.directory, session_id, self._entries)
        return self._nodes[session_id]

    def reach(self, target: str) -> Connection:
        """Open a proven connection to a session we may reach; others do not exist for us."""
        if not names.valid_id(target):
            raise CallError("unknown_session")
        if not policy.reachable(self.lookup, self.me.id, target, self.me.talk):
            raise CallError("unknown_session")
        return open_as(self.me, self.directory, target)

    def one(self, target: str, name: str, args: list[Any]) -> wire.Message:
        with self.reach(target) as conn:
            return conn.call(name, args)

    # ------------------------------------------------------------ verbs

    def list(self, opts: dict[str, str]) -> wire.Message:
        seen = []
        entries = os.listdir(self.directory)
        self._entries = set(entries)
        for sid in registry.session_ids(self.directory, entries):
            if not policy.reachable(self.lookup, self.me.id, sid, self.me.talk):
                continue
            alive = registry.probe(registry.join(self.directory, sid))
            if alive == "dead":
                registry.reap(self.directory, sid)
            node = self.lookup(sid)
            if alive != "live" or node is None:
                continue
            who = names.label(self.me.project, node.role, sid)
            seen.append({"id": sid, "who": who, "role": node.role, "parent": node.parent})
        return wire.reply(seen)

    def status(self, opts: dict[str, str]) -> wire.Message:
        return self.one(opts.get("who", self.me.id), "status", [])

    def tell(self, opts: dict[str, str]) -> wire.Message:
        sort = opts.get("sort", "note")
        if "who" not in opts or sort not in ("note", "attention"):
            raise Usage
        return self.one(opts["who"], "tell", [_text(opts), sort])

    def ask(self, opts: dict[str, str]) -> wire.Message:
        if "who" not in opts:
            raise Usage
        return self.one(opts["who"], "ask", [_text(opts)])

    def task(self, opts: dict[str, str]) -> wire.Message:
        about = opts.get("about", "")
        target, at, _ = about.rpartition("@")
        if not at:  # a bare id: allowed for a session we started, and means its status
            node = self.lookup(about) if names.valid_id(about) else None
            if node is None or node.parent != self.me.id or opts.get("who", about) != about:
                return wire.refusal("bad_args")
            return self.one(about, "status", [])
        if opts.get("who", target) != target:
            raise Usage
        return self.one(target, "task", [about])

    def cancel(self, opts: dict[str, str]) -> wire.Message:
        target, at, _ = opts.get("about", "").rpartition("@")
        if not at or opts.get("who", target) != target:
            raise Usage
        return self.one(target, "cancel", [opts["about"]])

    def end(self, opts: dict[str, str]) -> wire.Message:
        if "who" not in opts:
            raise Usage
        return self.one(opts["who"], "end", [])

    def report(self, opts: dict[str, str], stdin: BinaryIO) -> wire.Message:
        about = opts.get("about")
        if "message" in opts or about == "-":
            if "who" in opts or ("message" in opts and about == "-"):
                raise Usage
            return self.store(_text(opts, MAX_REPORT) if about != "-" else _read_body(stdin))
        if about not in (None, "json") or not opts.get("page", "0").isdigit():
            raise Usage
        target, index = opts.get("who", self.me.id), int(opts.get("page", "0"))
        try:
            with self.reach(target) as conn:
                return self.read(conn.call, about, index)
        except CallError as err:
            if err.code not in ("unknown_session", "gone"):
                raise
            finished = self.finished(target)
            if finished is None:
                raise  # nothing we may read: it looks exactly like no session at all
        from melchior import reports

        return self.read(lambda _name, args: reports.read(finished, args), about, index)

    def finished(self, target: str) -> Report | None:
        """The stored report of a session that has ended, if this caller may read it: its
        parent or itself, proved by the secret digests the report recorded (reports.may_read)."""
        from melchior import reports

        if not names.valid_id(target):
            return None
        try:
            path = registry.join(registry.state_dir(self.directory, self.env), target)
            with open(path + ".report", "rb") as f:
                stored = reports.decode_stored(f.read())
        except (OSError, registry.RegistryError):
            return None
        key = registry.digest(self.me.token)
        return stored if reports.may_read(stored, self.me.id, key) else None

    def read(self, call: Call, about: str | None, index: int) -> wire.Message:
        """One page, or with `--about=json` the whole body of one revision."""
        if about is None:
            return call("report", [index])
        return self.whole(call)

    def store(self, body: str) -> wire.Message:
        data = body.encode("utf-8")
        if len(data) > MAX_REPORT:
            return wire.refusal("report_too_large")
        from melchior import reports  # only the report verb needs it

        edges = reports.cut(data, REPORT_CHUNK)
        with self.reach(self.me.id) as conn:
            for i in range(len(edges) - 1):
                chunk = data[edges[i] : edges[i + 1]].decode("utf-8")
                answer = conn.call("report_put", [chunk, i == len(edges) - 2])
                if not answer["ok"]:
                    return answer
        return answer

    def whole(self, call: Call) -> wire.Message:
        """Every page of one revision; if it moves mid-read, start over once."""
        from melchior import reports

        for _attempt in range(2):
            first = call("report", [0])
            if not first["ok"]:
                return first
            head = first["result"][0]
            parts = [head["text"]]
            for index in range(1, head["pages"]):
                answer = call("report", [index, head["revision"]])
                if not answer["ok"] and answer["code"] != "changed":
                    return answer
                if not answer["ok"]:
                    break  # a new revision landed mid-read: start over
                parts.append(answer["result"][0]["text"])
            else:
                body = "".join(parts)
                whole = reports.Report(body.encode(), head["revision"])
                if whole.sha256 != head["sha256"]:
                    return wire.refusal("changed")
                return wire.reply(
                    [{"body": body, "revision": whole.revision, "sha256": whole.sha256}]
                )
        return wire.refusal("changed")


def _text(opts: dict[str, str], limit: int = MAX_TEXT) -> str:
    text = opts.get("message")
    if text is None or not wire.text_ok(text, limit):
        raise Usage
    return text


def _read_body(stdin: BinaryIO) -> str:
    data = stdin.read(MAX_REPORT + 1)
    if len(data) > MAX_REPORT:
        raise CallError("report_too_large")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CallError("bad_args") from None


def run(argv: list[str], env: Mapping[str, str], stdin: BinaryIO) -> tuple[wire.Message, int]:
    try:
        opts = parse(argv)
        verb = opts.get("verb", "")
        if verb not in VERBS:
            raise Usage
        me = from_env(env)
        if me is None:
            return wire.refusal("no_identity"), 1
        tool = Tool(me, registry.project_dir(me.project, env), env)
        answer = tool.report(opts, stdin) if verb == "report" else getattr(tool, verb)(opts)
    except Usage:
        return wire.refusal("usage"), 2
    except CallError as err:
        answer = wire.refusal(err.code if err.code in wire.CODES else "broken")
    except registry.RegistryError as err:
        answer = wire.refusal(err.code)
    return answer, 0 if answer["ok"] else 1


def main(argv: list[str], env: Mapping[str, str]) -> int:
    if argv == ["--describe"]:
        from melchior import vocabulary

        answer, code = wire.reply([vocabulary.TOOL]), 0
    else:
        answer, code = run(argv, env, sys.stdin.buffer)
    sys.stdout.buffer.write(wire.encode_argv(answer))
    sys.stdout.buffer.flush()
    return code
