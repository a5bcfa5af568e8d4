"""Random identifiers without `uuid`/`secrets`: their shapes, and that they differ."""

import uuid

from magi_code.ids import token_hex, uuid4


def test_uuid4_is_a_canonical_version_4_uuid() -> None:
    drawn = {uuid4() for _ in range(1000)}
    assert len(drawn) == 1000
    for text in drawn:
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_token_hex_has_two_digits_per_byte() -> None:
    for n in (0, 1, 8, 10):
        token = token_hex(n)
        assert len(token) == 2 * n and all(c in "0123456789abcdef" for c in token)
    assert token_hex(16) != token_hex(16)
