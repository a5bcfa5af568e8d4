"""Secret-looking strings are masked; ordinary text is left alone."""

import pytest

from magi_code.sessions import redact


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("key sk-proj-abcdefghijklmnopqrstuvwx end", "abcdefghijklmnopqrstuvwx"),
        ("sk-ant-api03-ZZZZZZZZZZZZZZZZZZZZ", "ZZZZZZZZZZZZZZZZZZZZ"),
        ("token ghp_0123456789abcdefghijABCDEFGHIJ", "0123456789abcdefghij"),
        ("github_pat_11ABCDEFG0123456789_abcdefghij", "11ABCDEFG0123456789"),
        ("aws AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
        ("Authorization: Bearer eyJhbGciOi.JIUzI1NiJ9.abc", "eyJhbGciOi"),
        ("xoxb-1234567890-abcdefghijkl", "1234567890-abcdefghijkl"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "MIIEpAIBAAKCAQEA",
        ),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA (cut)", "b3BlbnNzaC1rZXktdjEA"),
    ],
)
def test_secrets_are_masked(text: str, secret: str) -> None:
    masked = redact(text)
    assert secret not in masked
    assert "[REDACTED]" in masked
    assert redact(masked) == masked


@pytest.mark.parametrize(
    "text",
    ["plain text", "sk-short", "a task-list item", "Bearer", '\x00"\\😀', "skip-this-word-ok"],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text
