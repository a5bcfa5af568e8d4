"""Path globs as regular expressions: the one matcher shared by the policy and the glob tool.

Pure. Rules: `/` separates segments; `*` and `?` never cross a `/`; `[...]` is a class
(`[!...]` negates) that never matches `/`; a whole `**` segment matches zero or more segments,
and a trailing `/**` also matches the directory itself (a deny on `secrets/**` covers listing
`secrets`). Dotfiles are not special: `*` matches `.env`, so a deny cannot be dodged by a dot.
"""

import re


class GlobError(ValueError):
    """The pattern is empty or climbs with `..`."""


def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile `pattern` to a regex to `fullmatch` against a POSIX path string."""
    if not pattern or "\x00" in pattern:
        raise GlobError("empty")
    absolute = pattern.startswith("/")
    segments = [s for s in pattern.strip("/").split("/") if s not in ("", ".")]
    if ".." in segments:
        raise GlobError("parent")
    out = "/" if absolute else ""
    need_sep = False
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            if last:
                out += "(?:/.*)?" if need_sep else ".*"
            else:
                out += ("/" if need_sep else "") + "(?:.*/)?"
                need_sep = False
            continue
        out += ("/" if need_sep else "") + _segment(seg)
        need_sep = True
    return re.compile(out, re.S)


def _segment(seg: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := _class_end(seg, i)) > 0:
            out.append(_char_class(seg[i + 1 : end]))
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _class_end(seg: str, start: int) -> int:
    """Index of the `]` closing the class opened at `start`, or -1 when it is a literal `[`."""
    i = start + 1
    if i < len(seg) and seg[i] == "!":
        i += 1
    if i < len(seg) and seg[i] == "]":
        i += 1
    end = seg.find("]", i)
    return end


def _char_class(body: str) -> str:
    negate = body.startswith("!")
    if negate:
        body = body[1:]
    escaped = "".join("\\" + c if c in "\\[^&~|" else c for c in body)
    return "(?!/)[" + ("^" if negate else "") + escaped + "]"
