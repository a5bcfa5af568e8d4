"""Names: session ids (word pairs), project labels, roles, and the directory a project maps to.

Pure functions of strings: no files, no clock. Minting an id that is unique on disk is the
registry's job; this module only proposes candidates and checks spellings.
"""

from __future__ import annotations

from melchior.limits import ID_MAX, PROJECT_DIGEST, PROJECT_MAX

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection

WORDS = (
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "chi",
    "psi",
    "omega",
)
ROLES = ("main", "sub")

# Character sets rather than regular expressions: compiling a pattern costs a fast-starting
# `melchior tool` more than these checks ever will.
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_ID_CHARS = _LOWER | frozenset("0123456789-")
_ALNUM = _LOWER | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_PROJECT_CHARS = _ALNUM | frozenset("._-")
# Marks a shortened project directory. It cannot occur in a project name, so a shortened
# name never equals a name used as is.
SHORTENED = "~"


def valid_id(text: str) -> bool:
    """`[a-z][a-z0-9-]*`, at most ID_MAX, no `--`."""
    return (
        0 < len(text) <= ID_MAX
        and text[0] in _LOWER
        and _ID_CHARS.issuperset(text)
        and "--" not in text
    )


def valid_project(text: str) -> bool:
    """`[A-Za-z0-9][A-Za-z0-9._-]*`, at most PROJECT_MAX, no `..`."""
    return (
        0 < len(text) <= PROJECT_MAX
        and text[0] in _ALNUM
        and _PROJECT_CHARS.issuperset(text)
        and ".." not in text
    )


def pairs() -> list[str]:
    """Every id made of two distinct words, in a fixed order."""
    return [f"{first}-{second}" for first in WORDS for second in WORDS if first != second]


def candidate(attempt: int, taken: Collection[str] = ()) -> str:
    """A random word pair that is not `taken`. Once every pair is taken, or after many
    collisions with concurrent minters, a pair with a number: the space never runs out."""
    free = [pair for pair in pairs() if pair not in taken] if attempt < 16 else []
    if free:
        return free[_below(len(free))]
    first, second = WORDS[_below(len(WORDS))], WORDS[_below(len(WORDS))]
    while second == first:
        second = WORDS[_below(len(WORDS))]
    return f"{first}-{second}-{_below(10**6)}"


def _below(n: int) -> int:
    """A uniform random integer in [0, n) from os.urandom, as `secrets.randbelow` draws it
    (without `secrets`, whose hmac loads OpenSSL, or `random`: half a megabyte of a session's
    melchior). Draws above the largest multiple of n are drawn again: no modulo bias."""
    import os

    size = max(1, (n.bit_length() + 7) // 8)
    span = 256**size
    limit = span - span % n
    while True:
        value = int.from_bytes(os.urandom(size), "big")
        if value < limit:
            return value % n


def project_dirname(project: str, budget: int) -> str:
    """The project's directory name, at most `budget` bytes, unique per project name."""
    if len(project) <= budget:
        return project
    from melchior.digests import sha256_hex

    digest = sha256_hex(project.encode())[:PROJECT_DIGEST]
    keep = budget - len(SHORTENED) - PROJECT_DIGEST
    return f"{project[:keep]}{SHORTENED}{digest}"


def label(project: str, role: str, session_id: str) -> str:
    """How a session is named to a harness: `<project>/<role>/<id>`."""
    return f"{project}/{role}/{session_id}"
