"""Fuzzy matching for the composer's lists (`/` commands, `@` files). Pure.

A candidate matches when every character of the query appears in it in order, case ignored.
Matches rank by points: a matched character that starts a word (at the start, or after `/`,
`_`, `-`, `.` or a space) or follows the previous matched one, and a match that lies wholly in
the last path segment. Equal points: the shorter candidate first, then the candidates' own
order; an empty query keeps that order.
"""

import heapq
from collections.abc import Sequence

BOUNDARIES = frozenset("/_-. ")
WORD_START = 8  # points for a matched character that starts a word
ADJACENT = 4  # ... that follows the previous matched character
IN_NAME = 16  # for a match wholly in the last path segment


def score(query: str, candidate: str) -> int | None:
    """The points of `candidate` for `query`, or None when it does not match."""
    wanted, text = query.lower(), candidate.lower()
    anywhere = _positions(wanted, text, 0)
    if anywhere is None:
        return None
    name = text.rfind("/") + 1
    tries = [anywhere, _positions(wanted, text, name)]
    for start in (text.find(wanted, name), text.find(wanted)):
        if start >= 0:
            tries.append(list(range(start, start + len(wanted))))
    return max(_points(text, name, found) for found in tries if found is not None)


def rank(query: str, candidates: Sequence[str], most: int) -> list[str]:
    """The best `most` matches of `query` among `candidates`, best first."""
    if not query:
        return list(candidates[:most])
    scored = []
    for index, candidate in enumerate(candidates):
        points = score(query, candidate)
        if points is not None:
            scored.append((-points, len(candidate), index, candidate))
    return [candidate for *_, candidate in heapq.nsmallest(most, scored)]


def _positions(wanted: str, text: str, start: int) -> list[int] | None:
    """Where each character of `wanted` is first found in order in `text` from `start`."""
    found = []
    for character in wanted:
        start = text.find(character, start)
        if start < 0:
            return None
        found.append(start)
        start += 1
    return found


def _points(text: str, name: int, found: list[int]) -> int:
    points = IN_NAME if found and found[0] >= name else 0
    for n, at in enumerate(found):
        if at == 0 or text[at - 1] in BOUNDARIES:
            points += WORD_START
        if n and found[n - 1] == at - 1:
            points += ADJACENT
    return points
