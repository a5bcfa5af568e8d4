"""Random identifiers from `os.urandom`, the source the `uuid` and `secrets` modules use,
without importing either: each costs milliseconds on the way to a session's first reply."""

import os


def uuid4() -> str:
    """A random RFC 4122 version-4 UUID, in its canonical text form."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def token_hex(nbytes: int) -> str:
    """`nbytes` random bytes as hex (as `secrets.token_hex`)."""
    return os.urandom(nbytes).hex()
