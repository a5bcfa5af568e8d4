"""Which turns may start: at most TASKS_PER_CONTEXT per context (a context is one session) and
`tasks_per_token` per caller, counted from the request that asks until its turn ends
(sans-I/O).

A request claims its place before the SDK creates or resumes a task, keyed by its message id;
the turn takes the claim over when it starts and releases it when it ends. A request that
ends without a turn starting (a refused task id, a client gone) drops its claim. Claims are
made and checked without an await between, so two requests cannot both pass.
"""

from __future__ import annotations

from collections import Counter

from magi_code.a2a import limits
from magi_code.records import field, record


class Refused(Exception):
    """A turn that may not start now: `why` says what to do, `code` names it."""

    def __init__(self, code: str, why: str) -> None:
        super().__init__(why)
        self.code, self.why = code, why


@record(frozen=False)
class Claim:
    owner: str
    context: str | None  # None: a new context, which nothing else can hold yet
    message_id: str
    taken: bool = False


@record(frozen=False)
class Gate:
    per_owner: int = limits.TASKS_PER_TOKEN
    owners: Counter[str] = field(default_factory=Counter)
    contexts: Counter[tuple[str, str]] = field(default_factory=Counter)
    claims: dict[tuple[str, str], Claim] = field(default_factory=dict)

    def claim(self, owner: str, context: str | None, message_id: str) -> Claim:
        """Hold a place for one turn; raises Refused."""
        if (owner, message_id) in self.claims:
            raise Refused("message_busy", "a message with this messageId is already being run")
        if context is not None and self.contexts[owner, context] >= limits.TASKS_PER_CONTEXT:
            raise Refused(
                "context_busy",
                "this context is running a turn: wait for its task to end, or cancel it, "
                "then send again",
            )
        if self.owners[owner] >= self.per_owner:
            raise Refused(
                "too_many_tasks",
                f"this caller runs {self.per_owner} tasks already, the most it may: wait for "
                "one to end, or cancel one, then send again",
            )
        claim = self.claims[owner, message_id] = Claim(owner, context, message_id)
        self.owners[owner] += 1
        if context is not None:
            self.contexts[owner, context] += 1
        return claim

    def take(self, owner: str, message_id: str, context: str) -> Claim:
        """The turn starting for this message takes its claim over (or claims now: a turn the
        SDK started on its own, such as a resumed task's)."""
        claim = self.claims.get((owner, message_id))
        if claim is None:
            claim = self.claim(owner, context, message_id)
        elif claim.context is None:  # the context the SDK gave the new one
            claim.context = context
            self.contexts[owner, context] += 1
        claim.taken = True
        return claim

    def release(self, claim: Claim) -> None:
        if self.claims.pop((claim.owner, claim.message_id), None) is not claim:
            return
        self.owners[claim.owner] -= 1
        if claim.context is not None:
            self.contexts[claim.owner, claim.context] -= 1
        # Drop the zero counts: a long-running server meets many callers and contexts.
        self.owners, self.contexts = +self.owners, +self.contexts

    def drop_unless_taken(self, claim: Claim) -> None:
        if not claim.taken:
            self.release(claim)
