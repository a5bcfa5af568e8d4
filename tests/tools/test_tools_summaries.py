"""safe_summary: secrets redacted, control characters stripped, SUMMARY_BYTES at its edge."""

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from magi_code.limits import SUMMARY_BYTES
from magi_code.redact import REDACTED
from magi_code.tools.summaries import ELLIPSIS, SCAN_CHARS, safe_summary

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx9fQ\nabcdEFGH\n-----END RSA PRIVATE KEY-----"
)

SECRETS = [
    ("sk-proj-" + "Ab3_" * 10, "sk-proj"),
    ("sk-ant-api03-" + "x" * 40, "sk-ant"),
    ("ghp_" + "a1B2" * 9, "ghp_"),
    ("gho_" + "Z" * 36, "gho_"),
    ("github_pat_11ABCDEFG0" + "q" * 60, "github_pat_"),
    ("AKIAIOSFODNN7EXAMPLE", "AKIA"),
    ("xoxb-123456789012-abcdefABCDEF", "xoxb-"),
    ("xoxp-1234-5678-abcdefghij", "xoxp-"),
    ("AIzaSyA" + "b" * 32, "AIza"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX2hlcmU", "eyJ"),
]


@pytest.mark.parametrize(("secret", "prefix"), SECRETS)
def test_tokens_are_redacted_in_context(secret: str, prefix: str) -> None:
    out = safe_summary(f"run: curl -H 'x-key: {secret}' https://api.example.com")
    assert secret not in out
    assert secret[len(prefix) + 4 :] not in out  # no tail of it either
    assert REDACTED in out
    assert out.startswith("run: curl")
    assert out.endswith("https://api.example.com")


def test_bearer_tokens_are_redacted() -> None:
    out = safe_summary("run: curl -H 'Authorization: Bearer abc.DEF-ghi_123456'")
    assert "abc.DEF-ghi_123456" not in out
    assert f"Bearer {REDACTED}" in out


def test_pem_blocks_are_redacted_even_unterminated() -> None:
    out = safe_summary(f"write key.pem: {PEM} done")
    assert "MIIEowIBAAKCAQEAx9fQ" not in out and "abcdEFGH" not in out
    assert out == f"write key.pem: {REDACTED} done"
    cut = safe_summary("x " + PEM[:60])
    assert "MIIE" not in cut


@pytest.mark.parametrize(
    ("text", "gone", "kept"),
    [
        ("git clone https://alice:hunter2@example.com/r.git", "hunter2", "https://alice:"),
        ("fetch https://u:p%40ss@host/x", "p%40ss", "@host/x"),
        ("fetch https://u:p@ss@host/x", "p@ss", "@host/x"),
        ("psql postgres://admin:s3cret@db:5432/app", "s3cret", "@db:5432/app"),
        ("x" * 50 + "https://u:glued@host", "glued", "@host"),
        ("GET /login?user=bob&password=hunter2&x=1", "hunter2", "&x=1"),
        ("export API_KEY=abcdef123456", "abcdef123456", "export API_KEY="),
        ('config secret: "open sesame"', "open sesame", "config secret:"),
        ("DB_PASSWORD='p w'", "p w", "DB_PASSWORD="),
    ],
)
def test_passwords_are_redacted(text: str, gone: str, kept: str) -> None:
    out = safe_summary(text)
    assert gone not in out
    assert kept in out


def test_plain_text_passes_unchanged() -> None:
    text = "read src/app.py (lines 1-20); author: Bob; run: pytest -q tests/test_tokens.py"
    assert safe_summary(text) == text


def test_control_characters_are_stripped() -> None:
    out = safe_summary("a\x1b[31mred\x1b[0m\x00b\tc\r\nd\u202eevil\u2028e\x85f\ud800g")
    assert out == "a[31mred[0mb c devil e f\ufffdg"
    out.encode("utf-8")  # strict: no surrogates survive


def test_a_control_character_cannot_hide_a_key() -> None:
    key = "sk-" + "k" * 30
    out = safe_summary(key[:10] + "\x00" + key[10:])
    assert "k" * 20 not in out


def test_byte_bound_edge_ascii() -> None:
    exact = "a" * SUMMARY_BYTES
    assert safe_summary(exact) == exact
    over = safe_summary("a" * (SUMMARY_BYTES + 1))
    assert len(over.encode()) <= SUMMARY_BYTES
    assert over.endswith(ELLIPSIS)
    assert over == "a" * (SUMMARY_BYTES - len(ELLIPSIS.encode())) + ELLIPSIS


@pytest.mark.parametrize("char", ["é", "€", "😀"])
def test_byte_bound_edge_multibyte(char: str) -> None:
    width = len(char.encode())
    for pad in range(width):
        # A multibyte character straddles the limit at every alignment.
        fits = "a" * (SUMMARY_BYTES - width - pad) + char + "a" * pad
        assert len(fits.encode()) == SUMMARY_BYTES
        assert safe_summary(fits) == fits
        over = fits + "a"
        out = safe_summary(over)
        assert len(out.encode()) <= SUMMARY_BYTES
        assert out.endswith(ELLIPSIS) and "\ufffd" not in out
        assert over.startswith(out.removesuffix(ELLIPSIS))


@pytest.mark.parametrize(
    "unit", ["a.", "a-", "sk-", "x://u:", 'password="', "eyJaaaaaaaaa.", "-----BEGIN ", "a://b:c"]
)
def test_adversarial_input_stays_fast(unit: str) -> None:
    """Model-controlled text must not make a regex rescan a long run from every position."""
    text = unit * (SCAN_CHARS // len(unit))
    started = time.perf_counter()
    safe_summary(text)
    assert time.perf_counter() - started < 1.0  # quadratic patterns took 5-75 s here


def test_huge_input_is_bounded_and_never_shows_a_cut_secret() -> None:
    key = "sk-" + "s" * 60
    text = "word " * 10_000 + key
    out = safe_summary(text)
    assert len(out.encode()) <= SUMMARY_BYTES
    assert "sss" not in out


def test_a_key_cut_by_the_scan_bound_is_dropped() -> None:
    key = "sk-" + "s" * 60
    block = PEM.replace("abcdEFGH", "B" * SCAN_CHARS)[: SCAN_CHARS - 100]  # unterminated
    for shift in range(0, 40, 7):
        text = block + "-----END RSA PRIVATE KEY----- " + "w" * (70 - shift) + " " + key
        assert len(text) > SCAN_CHARS
        out = safe_summary(text)
        assert "ss" not in out
        assert "BBB" not in out


def test_token_prefixes_inside_words_are_left_alone() -> None:
    text = "rm -rf disk-usage-report-generator-v2 AKIAS3BUCKETNAMEVALUE_suffix"
    assert safe_summary("du " + text) == "du " + text


def test_a_key_after_an_underscore_is_still_redacted() -> None:
    out = safe_summary("OPENAI_sk-" + "k" * 30)
    assert "k" * 20 not in out


@given(st.text())
def test_any_text_becomes_one_bounded_valid_line(text: str) -> None:
    out = safe_summary(text)
    data = out.encode("utf-8")
    assert len(data) <= SUMMARY_BYTES
    assert not any(c in out for c in "\n\r\t\x00\x1b\x7f\u2028\u2029")
    assert safe_summary(out) == out  # idempotent


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300), st.integers(0, 3))
def test_a_key_anywhere_is_never_shown(noise: str, which: int) -> None:
    key = ["sk-" + "Q" * 32, "ghp_" + "Q" * 36, "AKIA" + "Q" * 16, "xoxb-" + "Q" * 20][which]
    out = safe_summary(f"{noise} {key} {noise}")
    assert "Q" * 16 not in out
