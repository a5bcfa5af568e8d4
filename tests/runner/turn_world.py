"""A workspace, an MC_HOME with settings, and in-process turns on real session files: what the
hook and Code Mode tests drive. Turns use the fixture provider unless a test swaps it. A turn's
events go to a `Recorder`, or to `Quiet` where a test looks only at the session file."""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magi_code.providers.base import Provider
from magi_code.runner.events import Activity, Diagnostic, MessageDelta, RunEvent, RunFinished
from magi_code.runner.journal import SessionJournal
from magi_code.runner.setup import turn_setup
from magi_code.runner.startup import Admitted, admit
from magi_code.runner.turn import TurnControl, run_turn
from magi_code.sessions import Attachment, Selection, SessionStore
from magi_code.tools.approvals import ApprovalBroker


class Quiet:
    def delta(self, event: MessageDelta) -> None:
        pass

    async def critical(self, event: RunEvent) -> None:
        pass

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        raise AssertionError("no approval expected")


@dataclass
class Recorder:
    """Every critical event; approvals answered with `allow` and their summaries kept."""

    allow: bool = False
    events: list[RunEvent] = field(default_factory=list)
    approvals: list[str] = field(default_factory=list)
    broker: ApprovalBroker | None = None

    def delta(self, event: MessageDelta) -> None:
        pass

    async def critical(self, event: RunEvent) -> None:
        self.events.append(event)

    async def announce(self, approval_id: str, summary: str, expires_in_ms: int) -> None:
        self.approvals.append(summary)
        assert self.broker is not None
        self.broker.answer(approval_id, self.allow)

    def activities(self, prefix: str = "") -> list[Activity]:
        return [e for e in self.events if isinstance(e, Activity) and e.name.startswith(prefix)]

    def diagnostics(self) -> list[Diagnostic]:
        return [e for e in self.events if isinstance(e, Diagnostic)]


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.home, self.workspace = tmp_path / "home", tmp_path / "ws"
        self.home.mkdir()
        self.workspace.mkdir()
        self.env = {"MC_HOME": str(self.home), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        self._admitted: Admitted | None = None
        self._attachment: Attachment | None = None
        self._store: SessionStore | None = None

    def settings(self, text: str) -> None:
        (self.home / "settings.toml").write_text(text)

    def project_settings(self, text: str) -> None:
        (self.workspace / ".magi-code").mkdir(exist_ok=True)
        (self.workspace / ".magi-code" / "settings.toml").write_text(text)

    def trust(self, text: str = "") -> None:
        listed = json.dumps(str(self.workspace))
        self.settings(f"{text}\n[permissions]\ntrusted_projects = [{listed}]\n")

    @property
    def admitted(self) -> Admitted:
        if self._admitted is None:
            self._admitted = admit(str(self.workspace), self.env)
        return self._admitted

    @property
    def attachment(self) -> Attachment:
        if self._attachment is None:
            self._store = SessionStore(Path(self.admitted.paths.home))
            selection = Selection("fixture", "fixture-model", None)
            self._attachment = self._store.create(self.admitted.cwd, selection)
        return self._attachment

    def reopen(self) -> Attachment:
        """A new attachment of the same session (as `session.open` makes)."""
        assert self._store is not None and self._attachment is not None
        session_id = self._attachment.session_id
        self._attachment.close()
        self._attachment, _ = self._store.open(session_id, self.admitted.cwd, lambda p, m: True)
        return self._attachment

    async def turn(
        self,
        prompt: str,
        emit: Recorder | None = None,
        provider: Provider | None = None,
        control: TurnControl | None = None,
    ) -> tuple[RunFinished, Recorder]:
        emit = emit or Recorder()
        attachment = self.attachment
        broker = emit.broker = ApprovalBroker(emit.announce)
        selection = ("fixture", None, None)
        setup = turn_setup(self.admitted, selection, attachment.session_id, "r", broker)
        if provider is not None:
            setup.provider = provider
        assert self._store is not None
        journal = SessionJournal(attachment)
        finished = await run_turn(setup, journal, emit, control or TurnControl(), prompt)
        return finished, emit

    def records(self) -> list[dict[str, Any]]:
        assert self._store is not None and self._attachment is not None
        path = self._store.path_of(self._attachment.session_id)
        return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]

    def tool_results(self) -> list[str]:
        """What the model was given for each of its tool calls, as stored for replay."""
        return [
            r.get("result", "")
            for r in self.records()
            if r["type"] == "tool" and r["state"] != "started"
        ]

    def history(self) -> list[dict[str, Any]]:
        """The projected history entries of a fresh snapshot (what a face pages through)."""
        attachment = self.attachment
        snapshot = attachment.snapshot()
        page = attachment.page(attachment.session_id, snapshot.revision, None).result()
        entries: list[dict[str, Any]] = page["entries"]
        return entries
