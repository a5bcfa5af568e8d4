"""Path globs: the one matcher shared by the policy and the glob and grep tools. Pure.

Rules: `/` separates segments; `*` and `?` never cross a `/`; `[...]` is a class (`[!...]`
negates); a whole `**` segment matches zero or more segments, and a trailing `/**` also matches
the directory itself (a deny on `secrets/**` covers listing `secrets`). Dotfiles are not
special: `*` matches `.env`, so a deny cannot be dodged by a dot.

No regular expressions and no backtracking search: paths are model-controlled, so matching is
a set-of-positions walk over segments and the classic two-pointer wildcard scan within one,
O(pattern x path) at worst.
"""

from collections.abc import Callable
from typing import Literal

from magi_code.records import record
from magi_code.tools import ToolsError

Token = str | Callable[[str], bool]  # _STAR, or a one-character test
_STAR = "*"


class GlobError(ToolsError, ValueError):
    """The pattern is empty, holds NUL, or climbs with `..`."""

    code: Literal["glob_invalid"] = "glob_invalid"


@record
class Glob:
    segments: tuple[tuple[Token, ...] | None, ...]  # None stands for `**`; () for the root
    absolute: bool

    def matches(self, path: str) -> bool:
        """Whether the whole POSIX path string matches (absolute patterns need absolute paths)."""
        parts = path.split("/")
        states = {0}  # how many parts have been consumed, in each live alternative
        for segment in self.segments:
            if segment is None:
                states = set(range(min(states), len(parts) + 1))
            else:
                states = {i + 1 for i in states if i < len(parts) and _fits(segment, parts[i])}
            if not states:
                return False
        return len(parts) in states


def compile_glob(pattern: str) -> Glob:
    if not pattern or "\x00" in pattern:
        raise GlobError("empty")
    absolute = pattern.startswith("/")
    names = [s for s in pattern.split("/") if s not in ("", ".")]
    if ".." in names:
        raise GlobError("parent")
    segments: list[tuple[Token, ...] | None] = [()] if absolute else []
    for name in names:
        if name == "**":
            if segments and segments[-1] is None:
                continue  # `**/**` is `**`
            segments.append(None)
        else:
            segments.append(_tokens(name))
    return Glob(tuple(segments), absolute)


def _fits(tokens: tuple[Token, ...], name: str) -> bool:
    """Wildcard match of one segment: on a mismatch, retry from the last star, one further."""
    t = n = 0
    star_t, star_n = -1, 0
    while n < len(name):
        token = tokens[t] if t < len(tokens) else None
        if token == _STAR:
            star_t, star_n = t, n
            t += 1
        elif token is not None and not isinstance(token, str) and token(name[n]):
            t += 1
            n += 1
        elif star_t >= 0:
            t, star_n = star_t + 1, star_n + 1
            n = star_n
        else:
            return False
    return all(token == _STAR for token in tokens[t:])


def _tokens(name: str) -> tuple[Token, ...]:
    out: list[Token] = []
    i = 0
    while i < len(name):
        c = name[i]
        end = _class_end(name, i) if c == "[" else -1
        if c == "*":
            if not out or out[-1] != _STAR:
                out.append(_STAR)
        elif c == "?":
            out.append(_any)
        elif end > 0:
            out.append(_char_class(name[i + 1 : end]))
            i = end
        else:
            out.append(_literal(c))
        i += 1
    return tuple(out)


def _any(c: str) -> bool:
    return True


def _literal(expected: str) -> Callable[[str], bool]:
    return expected.__eq__


def _class_end(name: str, start: int) -> int:
    """Index of the `]` closing the class opened at `start`, or -1 when it is a literal `[`."""
    i = start + 1
    if i < len(name) and name[i] == "!":
        i += 1
    if i < len(name) and name[i] == "]":
        i += 1
    return name.find("]", i)


def _char_class(body: str) -> Callable[[str], bool]:
    negate = body.startswith("!")
    if negate:
        body = body[1:]
    singles: set[str] = set()
    ranges: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            ranges.append((body[i], body[i + 2]))
            i += 3
        else:
            singles.add(body[i])
            i += 1

    def test(c: str) -> bool:
        hit = c in singles or any(lo <= c <= hi for lo, hi in ranges)
        return hit != negate

    return test
