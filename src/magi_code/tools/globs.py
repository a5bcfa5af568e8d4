"""Path globs: the one matcher shared by the policy and the glob and grep tools. Pure.

Rules: `/` separates segments; `*` and `?` never cross a `/`; `[...]` is a class (`[!...]`
negates); a whole `**` segment matches zero or more segments, and a trailing `/**` also matches
the directory itself (a deny on `secrets/**` covers listing `secrets`). Dotfiles are not
special: `*` matches `.env`, so a deny cannot be dodged by a dot. `{a,b}` stands for either
alternative, nested or in sequence (`src/**/*.{ts,tsx}`, `{a,b}{c,d}`); a brace pair without a
comma of its own, or one left open, is a literal character, as in a shell, and `[{]` is a
literal brace. A pattern's braces may expand to at most BRACE_EXPANSIONS patterns, and a
pattern is at most GLOB_PATTERN_CHARS long: past either bound it is refused (GlobError).

No regular expressions and no backtracking search: paths are model-controlled, so matching is
a set-of-positions walk over segments and the classic two-pointer wildcard scan within one,
O(alternatives x pattern x path) at worst.
"""

from collections.abc import Callable
from itertools import pairwise, takewhile
from typing import Literal

from magi_code.records import record
from magi_code.tools import ToolsError
from magi_code.tools.limits import BRACE_EXPANSIONS, GLOB_PATTERN_CHARS

Token = str | Callable[[str], bool]  # _STAR, or a one-character test
Segments = tuple[tuple[Token, ...] | None, ...]  # None stands for `**`; () for the root
_STAR = "*"
_WILDCARDS = frozenset("*?[")

EMPTY = "the pattern is empty or holds a NUL character"
CLIMBS = "the pattern climbs out of its folder with `..`"
TOO_LONG = f"the pattern is longer than {GLOB_PATTERN_CHARS} characters"
TOO_MANY = f"its braces expand to more than {BRACE_EXPANSIONS} patterns; use fewer alternatives"
MIXED = "its braces mix absolute and relative patterns"


class GlobError(ToolsError, ValueError):
    """The pattern cannot be used; `problem` says why in a fixed phrase (one of those above)."""

    code: Literal["glob_invalid"] = "glob_invalid"

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


@record
class Glob:
    alternatives: tuple[Segments, ...]  # one per brace expansion, in order
    absolute: bool

    def matches(self, path: str) -> bool:
        """Whether the whole POSIX path string matches (absolute patterns need absolute paths)."""
        parts = path.split("/")
        return any(_matches(segments, parts) for segments in self.alternatives)


def compile_glob(pattern: str) -> Glob:
    if not pattern or "\x00" in pattern:
        raise GlobError(EMPTY)
    if len(pattern) > GLOB_PATTERN_CHARS:
        raise GlobError(TOO_LONG)
    expanded = expand_braces(pattern)
    absolute = {one.startswith("/") for one in expanded}
    if len(absolute) > 1:
        raise GlobError(MIXED)
    alternatives = dict.fromkeys(_segments(one) for one in expanded)  # in order, no repeats
    return Glob(tuple(alternatives), absolute.pop())


def literal_folders(pattern: str) -> list[str]:
    """The leading folders every expansion of `pattern` names without a wildcard (never its
    last segment): where a walk for it may start. Call with a pattern compile_glob took."""
    common: list[str] | None = None
    for one in expand_braces(pattern):
        names = [name for name in one.split("/") if name not in ("", ".")][:-1]
        literal = list(takewhile(lambda name: not _WILDCARDS & set(name), names))
        if common is not None:
            shared = 0
            while shared < min(len(common), len(literal)) and common[shared] == literal[shared]:
                shared += 1
            literal = literal[:shared]
        common = literal
    return common or []


def expand_braces(pattern: str) -> list[str]:
    """The patterns `pattern`'s braces stand for, in order; GlobError past BRACE_EXPANSIONS.

    The count is taken first, in one pass, so a pattern past the bound is never expanded."""
    groups, count = _brace_groups(pattern)
    if count > BRACE_EXPANSIONS:
        raise GlobError(TOO_MANY)
    return _expand(pattern, groups, 0, len(pattern))


def _brace_groups(pattern: str) -> tuple[dict[int, list[int]], int]:
    """The brace pairs that are alternations ({open: [each comma at its level..., close]}) and
    how many patterns they expand to (capped at one past the bound). Iterative: any nesting."""
    cap = BRACE_EXPANSIONS + 1
    groups: dict[int, list[int]] = {}
    # Each open brace: its index, its commas, and the count of each alternative so far.
    stack: list[tuple[int, list[int], list[int]]] = []
    top_count = 1  # the count of the whole pattern outside any open brace

    def times(count: int) -> None:
        nonlocal top_count
        if stack:
            stack[-1][2][-1] = min(stack[-1][2][-1] * count, cap)
        else:
            top_count = min(top_count * count, cap)

    i = 0
    while i < len(pattern):
        c = pattern[i]
        end = _class_end(pattern, i) if c == "[" else -1
        if end > 0 and "/" not in pattern[i:end]:
            i = end  # a class: braces and commas in it are characters
        elif c == "{":
            stack.append((i, [], [1]))
        elif c == "," and stack:
            stack[-1][1].append(i)
            stack[-1][2].append(1)
        elif c == "}" and stack:
            start, commas, counts = stack.pop()
            if commas:
                groups[start] = [*commas, i]
                times(min(sum(counts), cap))
            else:
                times(counts[0])  # a literal pair: what it holds counts as it is
        i += 1
    while stack:  # braces left open are literal, and so are their commas
        _, _, counts = stack.pop()
        product = 1
        for count in counts:
            product = min(product * count, cap)
        times(product)
    return groups, top_count


def _expand(pattern: str, groups: dict[int, list[int]], start: int, end: int) -> list[str]:
    """The expansions of pattern[start:end]. Recursion follows nested alternations only, and
    each level of them adds at least one pattern, so it is at most BRACE_EXPANSIONS deep."""
    found = [""]
    literal = start
    i = start
    while i < end:
        bounds = groups.get(i)
        if bounds is None:
            i += 1
            continue
        head = pattern[literal:i]
        options: list[str] = []
        for left, right in pairwise([i, *bounds]):
            options += _expand(pattern, groups, left + 1, right)
        found = [done + head + option for done in found for option in options]
        i = literal = bounds[-1] + 1
    tail = pattern[literal:end]
    return [done + tail for done in found]


def _segments(pattern: str) -> Segments:
    absolute = pattern.startswith("/")
    names = [s for s in pattern.split("/") if s not in ("", ".")]
    if ".." in names:
        raise GlobError(CLIMBS)
    segments: list[tuple[Token, ...] | None] = [()] if absolute else []
    for name in names:
        if name == "**":
            if segments and segments[-1] is None:
                continue  # `**/**` is `**`
            segments.append(None)
        else:
            segments.append(_tokens(name))
    return tuple(segments)


def _matches(segments: Segments, parts: list[str]) -> bool:
    states = {0}  # how many parts have been consumed, in each live alternative
    for segment in segments:
        if segment is None:
            states = set(range(min(states), len(parts) + 1))
        else:
            states = {i + 1 for i in states if i < len(parts) and _fits(segment, parts[i])}
        if not states:
            return False
    return len(parts) in states


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
