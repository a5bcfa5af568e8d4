"""The approval broker: one run's pending approvals, each decided exactly once.

Lives in one anyio event loop; `answer` and `deny_all` are plain synchronous calls that must be
made from that loop (the protocol thread marshals into it, e.g. `from_thread.run_sync`), so
there is no lock: the first `answer` for a live id wins and every later one loses.

Rules:
- Only an explicit allow authorizes. A denial may carry the person's note (what to do
  instead), which `decide` returns for the model to read. Expiry, `deny_all` (disconnect,
  cancel) and cancellation of the waiting task all deny.
- An id is live from just before its announcement until its waiter returns; it is never live
  again (ids are fresh UUIDs), so a wrong, expired, answered or cancelled id gets False, which
  the protocol reports as `stale_approval`.
- Cancellation of `request` is never swallowed: the id dies and the cancellation propagates.
- `expiry_ms=None` (Mission Control: a person at the screen) never expires; its announcement
  says 0 ms left. The local agent keeps APPROVAL_EXPIRY_MS.
- What a live approval is for (`asked`: the tool, what it would touch, its arguments) is there
  for a face that answers by rule (`exec --approval-mode`) or shows a diff (ACP); the
  announcement itself carries only the safe summary.
"""

import math
from collections.abc import Awaitable, Callable

import anyio

from magi_code.ids import uuid4
from magi_code.limits import APPROVAL_EXPIRY_MS
from magi_code.records import field, record
from magi_code.tools.base import Access
from magi_code.tools.limits import APPROVAL_NOTE_CHARS
from magi_code.tools.summaries import safe_summary

Announce = Callable[[str, str, int], Awaitable[None]]  # (approval_id, summary, expires_in_ms)


def _new_id() -> str:
    return uuid4()


@record
class Asked:
    """What an approval is for. `arguments` is the model's JSON: never put it on a wire as is."""

    tool: str
    access: Access
    arguments: str
    outside_sandbox: bool = False  # to run again, outside the sandbox, what it refused


@record
class Decision:
    allow: bool
    note: str = ""  # the person's word with a denial: what to do instead


@record(frozen=False)
class _Pending:
    deadline: float  # anyio clock
    asked: Asked | None = None
    decided: anyio.Event = field(default_factory=anyio.Event)
    allow: bool = False
    note: str = ""


class ApprovalBroker:
    def __init__(
        self,
        announce: Announce,
        *,
        expiry_ms: int | None = APPROVAL_EXPIRY_MS,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        self._announce = announce
        self._expiry_ms = expiry_ms
        self._new_id = new_id
        self._pending: dict[str, _Pending] = {}
        self._closed = False

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def request(self, summary: str, asked: Asked | None = None) -> bool:
        """Announce an approval and wait for its answer; True only for an explicit allow."""
        return (await self.decide(summary, asked)).allow

    async def decide(self, summary: str, asked: Asked | None = None) -> Decision:
        """`request`, with the note a denial may carry."""
        if self._closed:
            return Decision(False)
        approval_id = self._new_id()
        expiry = math.inf if self._expiry_ms is None else self._expiry_ms / 1000
        pending = _Pending(anyio.current_time() + expiry, asked)
        self._pending[approval_id] = pending
        try:
            remaining = pending.deadline - anyio.current_time()
            remaining_ms = 0 if math.isinf(remaining) else max(0, math.ceil(remaining * 1000))
            await self._announce(approval_id, safe_summary(summary), remaining_ms)
            with anyio.CancelScope(deadline=pending.deadline):
                await pending.decided.wait()
            return Decision(pending.allow, "" if pending.allow else pending.note)
        finally:
            del self._pending[approval_id]

    def asked(self, approval_id: str) -> Asked | None:
        """What the live approval `approval_id` is for; None when unknown or not live."""
        pending = self._pending.get(approval_id)
        return None if pending is None else pending.asked

    def answer(self, approval_id: str, allow: bool, note: str = "") -> bool:
        """Record a reply (a denial's `note`, cut to APPROVAL_NOTE_CHARS); True only for the
        one reply that decides a live approval."""
        pending = self._pending.get(approval_id)
        if pending is None or pending.decided.is_set():
            return False
        if anyio.current_time() >= pending.deadline:
            return False
        pending.allow, pending.note = allow, note.strip()[:APPROVAL_NOTE_CHARS]
        pending.decided.set()
        return True

    def deny_all(self) -> None:
        """Deny every pending approval and every later request (disconnect, cancel, end)."""
        self._closed = True
        for pending in self._pending.values():
            if not pending.decided.is_set():
                pending.decided.set()
