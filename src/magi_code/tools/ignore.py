"""Ignore files: their patterns, and which file decides for a path. Pure: walk.py reads them.

The semantics are git's, as ripgrep applies them, so that the Python walk skips what `rg` does:
- A line is blank, a `#` comment or a pattern. Trailing whitespace is trimmed unless escaped
  (`\\ `); `\\!` and `\\#` start a literal pattern; `!` re-includes what an earlier line
  ignored.
- A pattern with a `/` at its start or in its middle is anchored to its file's folder; any
  other matches a name at any depth below it. A trailing `/` matches folders only.
- `*` and `?` never match `/`; `[...]` is a class (`!` or `^` negates it); `\\` escapes the
  next character. A leading `**/` matches in every folder, `/**/` zero or more folders, a
  trailing `/**` everything inside; any other `**` is `*`.
- In one file the last matching pattern decides. Across files, a deeper folder's file decides
  before a shallower one's, and the kinds in this order: .rgignore, .ignore, .gitignore,
  .git/info/exclude, then the global excludes file (matched from the walk's root). The git
  kinds count only inside a repository (a folder holding `.git` or `.jj`, at or above the
  path), and not above its root. A folder that is ignored is never entered, so nothing below
  it can be re-included.

Matching never backtracks: literal names, `*suffix` and `prefix*` are table look-ups; any
other name is a regular expression whose stars are atomic (the first fit of the fixed piece
after a star, which is exact for fixed-length pieces); `**` is a set-of-positions walk.
"""

import functools
import re

from magi_code.records import record
from magi_code.tools.limits import IGNORE_EXPRESSIONS

OWN_FILES = (".rgignore", ".ignore", ".gitignore")  # read in each folder, in this order
REPOSITORY_MARKS = (".git", ".jj")
EXCLUDE_FILE = "info/exclude"  # in a repository's git folder
_KINDS = 4  # OWN_FILES, then the repository's exclude file
_GIT_KINDS = 2  # the kinds from this index on are git's
_EXCLUDES_FILE = re.compile(rb'(?im)^\s*excludesfile\s*=\s*"?\s*(\S+?)\s*"?\s*$')


Decision = tuple[int, bool]  # a pattern's place in its file (a later one decides), ignores
Segment = str | re.Pattern[str] | None  # a literal name, an expression for one, or `**`


@record
class _PathPattern:
    decision: Decision
    folders_only: bool
    segments: tuple[Segment, ...]


class Rules:
    """One ignore file's patterns, matched against paths relative to its folder.

    Patterns are looked up by kind, so that a long file costs little per path: literal names
    and literal paths in tables, `*suffix` and `prefix*` names in tables of their own. Of the
    rest, the first IGNORE_EXPRESSIONS names (one regular expression) and as many paths (filed
    under their first folder when it is literal) count, and the later ones not (rg has no
    such bound; real files come nowhere near it)."""

    def __init__(self, text: str) -> None:
        self._names = (_Names(), _Names())  # for files, for folders
        self._literal_paths: tuple[dict[str, Decision], dict[str, Decision]] = ({}, {})
        self._paths: dict[str, list[_PathPattern]] = {}  # "" for those not filed
        wildcard_paths = 0
        for index, (ignores, folders_only, body) in enumerate(_patterns(text)):
            decision = index, ignores
            kinds = (True,) if folders_only else (False, True)
            if "/" not in body:
                kind, source = _segment(body)
                for is_dir in kinds:
                    self._names[is_dir].add(kind, source, decision)
                continue
            segments = _path_segments(body)
            if all(isinstance(segment, str) for segment in segments):
                for is_dir in kinds:
                    self._literal_paths[is_dir]["/".join(map(str, segments))] = decision
            elif wildcard_paths < IGNORE_EXPRESSIONS:
                wildcard_paths += 1
                first = segments[0] if isinstance(segments[0], str) else ""
                pattern = _PathPattern(decision, folders_only, segments)
                self._paths.setdefault(first, []).append(pattern)

    def decide(self, path: str, is_dir: bool) -> bool | None:
        """True: ignored; False: re-included by a `!` pattern; None: no pattern matches."""
        found = self._names[is_dir].last(path.rpartition("/")[2])
        literal = self._literal_paths[is_dir].get(path)
        if literal is not None and (found is None or literal > found):
            found = literal
        if self._paths:
            filed = self._paths.get(path.partition("/")[0], [])
            for pattern in [*filed, *self._paths.get("", [])]:
                later = found is None or pattern.decision > found
                if later and (is_dir or not pattern.folders_only) and _walk(pattern, path):
                    found = pattern.decision
        return None if found is None else found[1]


class _Names:
    """Name patterns by kind; the last matching one decides."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, Decision]] = {"exact": {}, "suffix": {}, "prefix": {}}
        self.expressions: list[tuple[Decision, str]] = []
        self._compiled: tuple[re.Pattern[str], list[Decision]] | None = None

    def add(self, kind: str, source: str, decision: Decision) -> None:
        if kind == "regex":
            if len(self.expressions) < IGNORE_EXPRESSIONS:
                self.expressions.append((decision, source))
        else:
            self.tables[kind][source] = decision  # a later pattern replaces an earlier one

    def last(self, name: str) -> Decision | None:
        exact, suffixes, prefixes = (
            self.tables["exact"],
            self.tables["suffix"],
            self.tables["prefix"],
        )
        found = [exact.get(name)]
        if suffixes:
            found += [suffixes.get(name[i:]) for i in range(len(name) + 1)]
        if prefixes:
            found += [prefixes.get(name[:i]) for i in range(len(name) + 1)]
        if self.expressions:
            found.append(self._by_expression(name))
        return max((one for one in found if one is not None), default=None)

    def _by_expression(self, name: str) -> Decision | None:
        """One alternation, the last pattern first: its matching group is the last match."""
        if self._compiled is None:
            ordered = list(reversed(self.expressions))
            joined = "|".join(f"({source})" for _, source in ordered)
            try:
                regex = re.compile(joined)
            except (re.error, OverflowError, RecursionError):  # too many: these do not count
                regex, ordered = re.compile("(?!)"), []
            self._compiled = regex, [decision for decision, _ in ordered]
        regex, decisions = self._compiled
        found = regex.fullmatch(name)
        if found is None or found.lastindex is None:
            return None
        return decisions[found.lastindex - 1]


@record
class Level:
    """One folder's ignore files as the walk sees them."""

    rules: tuple[Rules | None, ...]  # .rgignore, .ignore, .gitignore, the exclude file
    repository: bool  # the folder holds `.git` or `.jj`
    prefix: str = ""  # the folder's path below the walk's root, with a trailing `/`
    above: str = ""  # for a folder above the root: the root's path below it, with a `/`


@record
class Chain:
    """The levels from the filesystem's root down to one folder, and the global excludes."""

    levels: tuple[Level, ...] = ()
    excludes: Rules | None = None
    in_repository: bool = False

    def below(self, level: Level) -> "Chain":
        if not level.repository and not any(level.rules):
            return self
        return Chain((*self.levels, level), self.excludes, self.in_repository or level.repository)

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether `path` (relative to the walk's root, POSIX) is ignored."""
        for kind in range(_KINDS):
            git = kind >= _GIT_KINDS
            if git and not self.in_repository:
                break
            for level in reversed(self.levels):
                rules = level.rules[kind]
                if rules is not None:
                    decided = rules.decide(level.above + path[len(level.prefix) :], is_dir)
                    if decided is not None:
                        return decided
                if git and level.repository:
                    break  # git's files above a repository's root do not count in it
        if self.in_repository and self.excludes is not None:
            return self.excludes.decide(path, is_dir) is True
        return False


def excludes_file(config: bytes, home: str | None) -> str | None:
    """The `core.excludesFile` a git configuration file names, `~` expanded, as ripgrep
    reads it (the first `excludesfile = ...` line, in any section)."""
    found = _EXCLUDES_FILE.search(config)
    if found is None:
        return None
    try:
        path = found.group(1).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return path.replace("~", home) if home is not None else path


def _parse_line(line: str) -> tuple[bool, bool, str] | None:
    """(ignores, folders only, the pattern without its `!`, leading `/` or trailing `/`),
    or None for a blank line or a comment. An anchored pattern keeps a `/` in its body."""
    if line.startswith("#"):
        return None
    if not line.endswith("\\ "):
        line = line.rstrip()
    if not line:
        return None
    ignores, anchored = True, False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
    else:
        if line.startswith("!"):
            ignores, line = False, line[1:]
        if line.startswith("/"):
            anchored, line = True, line[1:]
    folders_only = line.endswith("/")
    if folders_only:
        line = line[:-1]
        if line.endswith("\\"):
            line = line[:-1]
    if not line:
        return None
    return ignores, folders_only, "/" + line if anchored else line


def _patterns(text: str) -> list[tuple[bool, bool, str]]:
    return [parsed for line in text.split("\n") if (parsed := _parse_line(line)) is not None]


def _path_segments(body: str) -> tuple[Segment, ...]:
    names = body.removeprefix("/").split("/")
    if len(names) > 1 and names[-1] == "**":
        names.append("*")  # `a/**` is what is inside a, never a itself
    segments: list[Segment] = []
    for name in names:
        if name == "**":
            if not segments or segments[-1] is not None:
                segments.append(None)
            continue
        kind, source = _segment(name)
        segments.append(source if kind == "exact" else _compiled(_regex_of(kind, source)))
    return tuple(segments)


def _walk(pattern: _PathPattern, path: str) -> bool:
    parts = path.split("/")
    states = {0}
    for segment in pattern.segments:
        if segment is None:
            states = set(range(min(states), len(parts) + 1))
        elif isinstance(segment, str):
            states = {i + 1 for i in states if i < len(parts) and parts[i] == segment}
        else:
            states = {i + 1 for i in states if i < len(parts) and segment.fullmatch(parts[i])}
        if not states:
            return False
    return len(parts) in states


@functools.cache
def _compiled(source: str) -> re.Pattern[str]:
    return re.compile(source)


def _regex_of(kind: str, source: str) -> str:
    if kind == "suffix":
        return "[^/]*" + re.escape(source)
    if kind == "prefix":
        return re.escape(source) + "[^/]*"
    return source


def _segment(name: str) -> tuple[str, str]:
    """One segment's kind and text: ("exact", name), ("suffix", text) for `*text`,
    ("prefix", text) for `text*`, or ("regex", an expression whose stars are atomic lazy
    scans between the fixed pieces)."""
    pieces: list[tuple[str, str]] = []  # ("literal", character), ("star", ""), ("regex", source)
    i = 0
    while i < len(name):
        c = name[i]
        if c == "*":
            if not pieces or pieces[-1][0] != "star":
                pieces.append(("star", ""))
        elif c == "?":
            pieces.append(("regex", "[^/]"))
        elif c == "[" and (found := _char_class(name, i)) is not None:
            source, i = found
            pieces.append(("regex", source))
            continue
        elif c == "\\" and i + 1 < len(name):
            i += 1
            pieces.append(("literal", name[i]))
        else:
            pieces.append(("literal", c))
        i += 1
    stars = [index for index, (kind, _) in enumerate(pieces) if kind == "star"]
    if all(kind != "regex" for kind, _ in pieces):
        literal = "".join(text for kind, text in pieces if kind == "literal")
        if not stars:
            return "exact", literal
        if stars == [0]:
            return "suffix", literal
        if stars == [len(pieces) - 1]:
            return "prefix", literal
    runs = [""]  # the fixed pieces: before the first star, between stars, after the last
    for kind, text in pieces:
        if kind == "star":
            runs.append("")
        else:
            runs[-1] += re.escape(text) if kind == "literal" else text
    if len(runs) == 1:
        return "regex", runs[0]
    head, *middle, tail = runs
    return "regex", head + "".join(f"(?>[^/]*?{run})" for run in middle) + "[^/]*" + tail


def _char_class(name: str, start: int) -> tuple[str, int] | None:
    """The class opening at `start` as a regular expression and the index past its `]`, or
    None when no `]` closes it (the `[` is then a literal character)."""
    i = start + 1
    negate = i < len(name) and name[i] in "!^"
    if negate:
        i += 1
    items: list[str] = []
    first = True
    while i < len(name):
        c = name[i]
        if c == "]" and not first:
            if not items:
                return ("[^/]" if negate else "(?!)"), i + 1
            return "[" + ("^/" if negate else "") + "".join(items) + "]", i + 1
        first = False
        if c == "\\" and i + 1 < len(name):
            i += 1
            c = name[i]
        if i + 2 < len(name) and name[i + 1] == "-" and name[i + 2] != "]":
            high = name[i + 2]
            if high == "\\" and i + 3 < len(name):
                i += 1
                high = name[i + 2]
            if c <= high:
                items.append(f"{re.escape(c)}-{re.escape(high)}")
            i += 3
            continue
        items.append(re.escape(c))
        i += 1
    return None
