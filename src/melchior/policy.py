"""The walls: who may reach whom inside one project. (The project wall is structural: another
project is another directory, which nothing here ever opens.)

    instance   a main and the subs started behind it. Inside an instance, everyone talks.
    front door a main is reachable from the rest of the project; subs are private, both ways:
               they are not reached from outside their instance and do not reach out of it.
    fork link  a session and the one that started it always reach each other (a parent polls,
               tells and ends its child; the child reports to its parent).
    talk       "instance" (default) keeps the wall; "run" opens it to every session under the
               same root; "project" to the whole project. Nothing opens it further.

Both sides' settings count, and the narrower wins; a project setting may narrow a session's
setting, never widen it. Pure: the tree is passed in as a lookup, no files are read here.
"""

from __future__ import annotations

TALK = ("instance", "run", "project")
DEFAULT_TALK = "instance"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    # A lookup from an id to its (role, parent), or None for an unknown id.
    Lookup: TypeAlias = Callable[[str], "Node | None"]


class Node:
    __slots__ = ("parent", "role")

    def __init__(self, role: str, parent: str | None) -> None:
        self.role, self.parent = role, parent


def narrowest(*settings: str | None) -> str:
    """The narrowest of the given settings; unknown or missing ones count as the default."""
    ranks = [TALK.index(s) if s in TALK else 0 for s in settings if s is not None]
    return TALK[min(ranks)] if ranks else DEFAULT_TALK


def effective_talk(user: str | None, project: str | None) -> str:
    """A session's setting after its project's: the project may only narrow it."""
    if project is None:
        return narrowest(user or DEFAULT_TALK)
    return narrowest(user or DEFAULT_TALK, project)


def _ancestry(lookup: Lookup, session_id: str) -> list[tuple[str, Node]]:
    chain: list[tuple[str, Node]] = []
    seen: set[str] = set()
    current: str | None = session_id
    while current is not None and current not in seen:
        seen.add(current)
        node = lookup(current)
        if node is None:
            break
        chain.append((current, node))
        current = node.parent
    return chain


def instance_of(lookup: Lookup, session_id: str) -> str:
    """The main an id stands behind (itself if it is a main, or a sub with no main above)."""
    chain = _ancestry(lookup, session_id)
    for member, node in chain:
        if node.role == "main":
            return member
    return chain[-1][0] if chain else session_id


def root_of(lookup: Lookup, session_id: str) -> str:
    chain = _ancestry(lookup, session_id)
    return chain[-1][0] if chain else session_id


def reachable(lookup: Lookup, caller: str, target: str, talk: str) -> bool:
    """May `caller` reach `target` under the (already narrowed) `talk` setting?"""
    if caller == target:
        return True
    a, b = lookup(caller), lookup(target)
    if a is None or b is None:
        return False
    if a.parent == target or b.parent == caller:
        return True
    if instance_of(lookup, caller) == instance_of(lookup, target):
        return True
    if talk == "project":
        return True
    same_run = talk == "run" and root_of(lookup, caller) == root_of(lookup, target)
    return (a.role == "main" or same_run) and (b.role == "main" or same_run)
