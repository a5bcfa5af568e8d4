"""SHA-256 and constant-time comparison from CPython's own modules, not OpenSSL's.

`hashlib` and `hmac` load libcrypto: about 3.5 MB of every session's `melchior serve` and a few
milliseconds of every `melchior tool` start, for digests of short tokens and texts. CPython's
builtin SHA-256 gives the same bytes, and `_operator._compare_digest` is the constant-time
comparison `hmac.compare_digest` itself falls back to. A build without the builtin hashes uses
`hashlib`.
"""

from __future__ import annotations

import importlib
from _operator import _compare_digest as same

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from hashlib import _Hash

__all__ = ["same", "sha256_hex"]


def _builtin() -> Callable[[bytes], _Hash]:
    for name in ("_sha2", "_sha256"):  # CPython 3.12+, 3.11
        try:
            made: Callable[[bytes], _Hash] = importlib.import_module(name).sha256
        except (ImportError, AttributeError):
            continue
        return made
    from hashlib import sha256

    return sha256


_sha256 = _builtin()


def sha256_hex(data: bytes) -> str:
    return _sha256(data).hexdigest()
