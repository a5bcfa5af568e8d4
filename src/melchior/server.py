"""`melchior serve`: one session's socket, answered for as long as its harness's pipe is open.

The harness is our parent. Its pipe is our life: stdin carries its `doing` status and its
answers to asks; stdout carries `listening`, peers' `message`s and refusals. When stdin closes
(or the minter ends us, or a signal comes), the socket and the notes go with us.

Threads, not asyncio: an accept thread, one thread per connection (bounded: slots.py), and the
main thread on the pipe. The low-level `_socket`, `select` and `_signal` serve: `socket`,
`selectors` and `signal` bring `enum`, which costs every session's melchior 0.65 MB and
milliseconds of its boot. Every caller proves its identity (`hello`) before any other call, and
within HELLO_TIMEOUT of connecting; every frame arrives whole within FRAME_TIMEOUT of its first
byte. The walls are checked here, by the callee, whatever the caller's own tool decided. A
peer's text reaches the harness only as a `message` event labelled with the peer's name, never
as anything else.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # `signal` without its enums (no stub)
import _socket
import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from melchior import client, identity, limits, names, policy, registry, reports, slots, tasks, wire
from melchior.digests import same
from melchior.limits import MAX_REPORT

SORTS = ("note", "attention", "report")


class Peer:
    """One connection's caller, once proven (its id, and its key: the digests that bind it to
    its fork link), and its report upload in progress."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.label = ""
        self.key: registry.Key | None = None
        self.upload = bytearray()


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class Server:
    def __init__(
        self,
        directory: str,
        project: str,
        me: str,
        role: str,
        token: str,
        talk: str,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.directory, self.project, self.me, self.role = directory, project, me, role
        self.token, self.talk, self.env = token, talk, env or {}
        self.parent = registry.read_parent(directory, me)
        # Our key records the digest of our minter's secret: it names our parent for as long as
        # we live, even after the parent's id has gone to another session, and a report written
        # after the parent has gone still records who may read it.
        own = registry.read_key(directory, me)
        self.parent_key = own.minter_key if own and self.parent else None
        self.owner = {
            "project": project,
            "id": me,
            "role": role,
            "parent": self.parent,
            "key": registry.digest(token),
            "parent_key": self.parent_key,
        }
        self.label = names.label(project, role, me)
        self.tasks = tasks.Tasks()
        self.doing: dict[str, Any] = {"busy": False, "working_for": 0, "waiting": 0}
        self.report: reports.Report | None = None
        self._out: BinaryIO | None = None
        self._out_lock = threading.Lock()
        self._report_lock = threading.Lock()
        self._slots = slots.Slots()
        self._wake_r, self._wake_w = os.pipe()
        self.ended_by: str | None = None
        self.verbs: dict[str, Callable[[Peer, list[Any]], wire.Message]] = {
            "status": self.status,
            "tell": self.tell,
            "ask": self.ask,
            "task": self.task,
            "cancel": self.cancel,
            "report": self.read_report,
            "report_put": self.put_report,
            "end": self.end,
        }

    # ------------------------------------------------------------ the pipe

    def emit(self, message: wire.Message) -> None:
        with self._out_lock:
            if self._out is None:
                return
            try:
                self._out.write(wire.encode_pipe(message))
                self._out.flush()
            except OSError:
                self._out = None  # the harness is gone; its closed stdin will end us
                self.stop()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def run(self, listener: _socket.socket, stdin: int, stdout: BinaryIO, **listening: Any) -> None:
        """Serve until the pipe closes, the minter ends us, or SIGTERM/SIGINT; then clean up."""
        self._out = stdout
        for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
            _signal.signal(sig, lambda *_: self.stop())
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        at = registry.join(self.directory, self.me)
        self.emit(wire.event("listening", at=at, who=self.label, **listening))
        try:
            self._pipe_loop(stdin)
        finally:
            listener.close()
            if self.ended_by is not None:
                self.emit(wire.event("ended", by=self.ended_by))
            self.cleanup()

    def _pipe_loop(self, stdin: int) -> None:
        decoder = wire.PipeDecoder()
        while True:
            ready, _, _ = select.select([stdin, self._wake_r], [], [])
            if self._wake_r in ready:
                return
            data = os.read(stdin, 1 << 16)
            items = decoder.feed(data) if data else decoder.close()
            for item in items:
                self.on_pipe(item)
            if not data:
                return

    def on_pipe(self, item: wire.Item) -> None:
        """The harness's own events: its status, and its answers to asks."""
        if isinstance(item, wire.Refusal):
            self.emit(wire.event("refused", code=item.code))
            return
        name = item.get(wire.TAG)
        if name == "doing":
            fields = {k: item.get(k) for k in ("busy", "working_for", "waiting")}
            if isinstance(fields["busy"], bool) and all(
                _is_count(fields[k]) for k in ("working_for", "waiting")
            ):
                self.doing = fields
                return
            self.emit(wire.event("refused", code="bad_args"))
        elif name in ("answer", "task"):
            code = self.on_task(item, "completed" if name == "answer" else item.get("state"))
            if code:
                self.emit(wire.event("refused", code=code))
        else:
            self.emit(wire.event("refused", code="bad_shape"))

    def on_task(self, item: wire.Message, state: object) -> str:
        """The harness moves one of our tasks: `answer` {task, text} completes it, and `task`
        {task, state[, text]} sets any state but `canceled` (the asker's). "" or a code."""
        handle, text = item.get("task"), item.get("text")
        if state not in tasks.BY_HARNESS or not isinstance(handle, str):
            return "bad_args"
        if not (wire.text_ok(text) or (text is None and item.get(wire.TAG) == "task")):
            return "bad_args"
        owner, _, message_id = handle.rpartition("@")
        if owner not in ("", self.me):
            return "unknown_task"
        return self.tasks.move(message_id, str(state), text if isinstance(text, str) else None)

    def cleanup(self) -> None:
        registry.remove(self.directory, self.me)
        self._forget_unstarted_children()

    def _forget_unstarted_children(self) -> None:
        """Keys we minted for sessions that never came up would otherwise be stranded."""
        for entry in os.listdir(self.directory):
            if not entry.endswith(".key"):
                continue
            child = entry[: -len(".key")]
            key = registry.read_key(self.directory, child)
            mine = key is not None and key.minter == self.me and self._minted_by_me(key)
            if mine and registry.probe(registry.join(self.directory, child)) == "absent":
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(registry.join(self.directory, entry))

    def _minted_by_me(self, key: registry.Key) -> bool:
        """Did we (our secret, not merely our id) mint the session whose key this is?"""
        mine = str(self.owner["key"])
        return key.minter_key is not None and same(key.minter_key, mine)

    # ------------------------------------------------------------ the socket

    def _accept(self, listener: _socket.socket) -> None:
        while True:
            try:
                fd, _ = listener._accept()  # type: ignore[attr-defined]  # `accept` unwrapped
            except OSError:
                return  # the listener was closed: we are stopping
            conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fd)
            evicted = self._slots.admit(conn)
            if isinstance(evicted, _socket.socket):
                # Its own thread sees the end of input and lets its slot go.
                with contextlib.suppress(OSError):
                    evicted.shutdown(_socket.SHUT_RDWR)
            threading.Thread(target=self._serve_connection, args=(conn,), daemon=True).start()

    def _serve_connection(self, conn: _socket.socket) -> None:
        decoder, peer = wire.SocketDecoder(), Peer()
        proven = False
        now = time.monotonic()
        hello_by, last, frame_from = now + limits.HELLO_TIMEOUT, now, 0.0
        try:
            while True:
                if not proven:
                    deadline = hello_by
                elif decoder.pending:
                    deadline = frame_from + limits.FRAME_TIMEOUT
                else:
                    deadline = last + limits.IDLE_TIMEOUT
                left = deadline - time.monotonic()
                if left <= 0:
                    return  # too slow to prove itself, to finish a frame, or to say anything
                conn.settimeout(left)
                data = conn.recv(1 << 16)
                if not data:
                    return
                last = time.monotonic()
                started = decoder.pending
                items = decoder.feed(data)
                if items or not started:
                    frame_from = last  # a frame began in these bytes
                conn.settimeout(limits.FRAME_TIMEOUT)
                for item in items:
                    if isinstance(item, wire.Refusal):
                        answer = wire.refusal(item.code)
                    else:
                        answer = self.dispatch(peer, item)
                    if peer.id is not None and not proven:
                        proven = self._slots.prove(conn, peer.id == self.me)
                        if not proven:  # no room for one more proven caller
                            conn.sendall(wire.encode_socket(wire.refusal("too_busy")))
                            return
                    conn.sendall(wire.encode_socket(answer))
                    if self.ended_by is not None:
                        self.stop()
                        return
        except OSError:
            return  # the caller went away or ran out of time: not our failure
        finally:
            self._slots.release(conn)
            conn.close()

    def dispatch(self, peer: Peer, message: wire.Message) -> wire.Message:
        name = message.get("call")
        if not isinstance(name, str):
            return wire.refusal("bad_shape")  # only calls are answered on a session's socket
        args = message["args"]
        if name == "hello":
            return self.hello(peer, args)
        verb = self.verbs.get(name)
        if verb is None:
            return wire.refusal("unknown_call")
        if peer.id is None:
            return wire.refusal("unauthenticated")
        return verb(peer, args)

    # ------------------------------------------------------------ the walls

    def lookup(self, session_id: str) -> policy.Node | None:
        return registry.node(self.directory, session_id)

    def hello(self, peer: Peer, args: list[Any]) -> wire.Message:
        peer.id, peer.label, peer.key = None, "", None  # a failed hello leaves nobody proven
        if len(args) != 1 or not isinstance(args[0], dict):
            return wire.refusal("bad_args")
        caller, token = args[0].get("id"), args[0].get("token")
        if not isinstance(caller, str) or not isinstance(token, str):
            return wire.refusal("bad_args")
        key = registry.verify(self.directory, caller, token)
        if key is None:
            return wire.refusal("unauthenticated")
        claimed = args[0].get("talk")
        talk = policy.narrowest(self.talk, claimed if isinstance(claimed, str) else None)
        if not policy.reachable(self.lookup, caller, self.me, talk):
            return wire.refusal("forbidden")
        peer.id, peer.label, peer.key = caller, names.label(self.project, key.role, caller), key
        return wire.reply([{"id": self.me, "role": self.role, "who": self.label}])

    # ------------------------------------------------------------ verbs

    def status(self, peer: Peer, args: list[Any]) -> wire.Message:
        if args:
            return wire.refusal("bad_args")
        # The parent while the link holds: once it has ended, its id may name someone else.
        own = registry.read_key(self.directory, self.me)
        parent = registry.linked(self.directory, own) if own else None
        state = {"id": self.me, "role": self.role, "parent": parent, **self.doing}
        return wire.reply([state])

    def tell(self, peer: Peer, args: list[Any]) -> wire.Message:
        if not 1 <= len(args) <= 3 or not wire.text_ok(args[0]):
            return wire.refusal("bad_args")
        sort = args[1] if len(args) > 1 else "note"
        if sort not in SORTS or (len(args) == 3 and not isinstance(args[2], dict)):
            return wire.refusal("bad_args")
        extra: dict[str, Any] = {}
        if sort == "report":
            fields = reports.note_fields(args[2] if len(args) == 3 else {})
            if fields is None:
                return wire.refusal("bad_args")
            if not self._is_child(peer):
                return wire.refusal("forbidden")  # a report note comes only from our child
            extra = fields
        self.emit(wire.event("message", who=peer.label, sort=sort, text=args[0], **extra))
        return wire.reply([{"delivered": True}])

    def ask(self, peer: Peer, args: list[Any]) -> wire.Message:
        if len(args) != 1 or not wire.text_ok(args[0]):
            return wire.refusal("bad_args")
        assert peer.id is not None
        message_id = self.tasks.open(peer.id)
        if message_id is None:  # full of live asks: answered, as a task that was not taken
            return wire.reply([{"task": None, "state": "rejected", "code": "too_busy"}])
        task = f"{self.me}@{message_id}"
        self.emit(wire.event("message", who=peer.label, sort="question", text=args[0], task=task))
        return wire.reply([{"task": task, "state": "submitted"}])

    def task(self, peer: Peer, args: list[Any]) -> wire.Message:
        if len(args) != 1 or not isinstance(args[0], str):
            return wire.refusal("bad_args")
        owner, _, message_id = args[0].rpartition("@")
        assert peer.id is not None
        view = self.tasks.view(message_id, peer.id, self.me) if owner in ("", self.me) else None
        if view is None:
            return wire.refusal("unknown_task")
        return wire.reply([{"task": f"{self.me}@{message_id}", **view}])

    def cancel(self, peer: Peer, args: list[Any]) -> wire.Message:
        """The asker withdraws its ask; the harness hears of it as a `task` event."""
        if len(args) != 1 or not isinstance(args[0], str):
            return wire.refusal("bad_args")
        owner, _, message_id = args[0].rpartition("@")
        assert peer.id is not None
        code = "unknown_task"
        if owner in ("", self.me):
            code = self.tasks.move(message_id, "canceled", None, by=peer.id)
        if code:
            return wire.refusal(code)
        handle = f"{self.me}@{message_id}"
        self.emit(wire.event("task", task=handle, state="canceled", who=peer.label))
        view = self.tasks.view(message_id, peer.id, self.me)
        return wire.reply([{"task": handle, **(view or {})}])

    def _is_child(self, peer: Peer) -> bool:
        """Is the caller a session we minted (by our secret's digest, not our id alone)?"""
        key = peer.key
        return key is not None and key.minter == self.me and self._minted_by_me(key)

    def end(self, peer: Peer, args: list[Any]) -> wire.Message:
        key = registry.read_key(self.directory, self.me)
        if args or key is None:
            return wire.refusal("bad_args")
        # The minter is the secret that minted us: a later session given its id is not it.
        caller = peer.key.sha256 if peer.key else ""
        recorded = key.minter_key or ""
        if key.minter != peer.id or not recorded or not same(recorded, caller):
            return wire.refusal("not_minter")
        self.ended_by = peer.label
        return wire.reply([{"ending": self.label}])

    # ------------------------------------------------------------ reports

    def put_report(self, peer: Peer, args: list[Any]) -> wire.Message:
        """A chunk of our own report; the final chunk stores it whole and tells our parent."""
        if peer.id != self.me:
            return wire.refusal("forbidden")
        if len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], bool):
            return wire.refusal("bad_args")
        try:
            peer.upload += args[0].encode("utf-8")
        except UnicodeEncodeError:
            peer.upload.clear()
            return wire.refusal("bad_args")
        if len(peer.upload) > MAX_REPORT:
            peer.upload.clear()
            return wire.refusal("report_too_large")
        if not args[1]:
            return wire.reply([{"bytes": len(peer.upload)}])
        with self._report_lock:
            previous = self.report or self._stored_report()
            revision = (previous.revision if previous else 0) + 1
            stored = reports.Report(bytes(peer.upload), revision, self.owner)
            peer.upload.clear()
            try:
                path = registry.join(registry.state_dir(self.directory, self.env), self.me)
            except registry.RegistryError as err:
                return wire.refusal(err.code)
            registry.write_atomic(path + ".report", reports.encode_stored(stored))
            self.report = stored
        summary = stored.summary()
        threading.Thread(target=self._notify_parent, args=(summary,), daemon=True).start()
        return wire.reply([summary])

    def _notify_parent(self, summary: dict[str, Any]) -> None:
        """A non-interrupting note to our parent that a new revision is stored."""
        if self.parent is None or self.parent_key is None:
            return
        parent = registry.read_key(self.directory, self.parent)
        if parent is None or parent.sha256 != self.parent_key:
            return  # our parent has ended: its id, if taken again, is someone else's
        me = identity.Identity(self.project, self.me, self.token, self.parent, self.talk)
        text = f"report revision {summary['revision']} ({summary['bytes']} bytes)"
        with (
            contextlib.suppress(client.CallError),
            client.open_as(me, self.directory, self.parent) as conn,
        ):
            conn.call("tell", [text, "report", summary])

    def read_report(self, peer: Peer, args: list[Any]) -> wire.Message:
        return reports.read(self.report or self._stored_report(), args)

    def _stored_report(self) -> reports.Report | None:
        """Ours from the state directory, else an older one in the runtime directory."""
        with contextlib.suppress(registry.RegistryError):
            found = _read_report(registry.state_dir(self.directory, self.env), self.me)
            if found is not None and reports.owned_by(found, str(self.owner["key"])):
                return found
        return _read_report(self.directory, self.me)


def _read_report(directory: str, session_id: str) -> reports.Report | None:
    try:
        with open(registry.join(directory, f"{session_id}.report"), "rb") as f:
            return reports.decode_stored(f.read())
    except OSError:
        return None


def bind(directory: str, me: str) -> _socket.socket:
    """Bind the session's socket under the registry lock; a live one means the id is in use."""
    path = registry.join(directory, me)
    with registry.locked(directory):
        if os.path.lexists(path):
            if registry.probe(path) == "live":
                raise registry.RegistryError("in_use")
            os.unlink(path)
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(os.fsencode(path))
        finally:
            os.umask(old)
        sock.listen(128)
    return sock
