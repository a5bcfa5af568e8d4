"""The redactor's substring pre-checks never change its answer."""

from hypothesis import given
from hypothesis import strategies as st

from magi_code import redact as r

PIECES = [
    "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX",
    "ghp_" + "a" * 24,
    "AKIAABCDEFGHIJKLMNOP",
    "xoxb-1234567890-abc",
    "AIza" + "b" * 32,
    "eyJabcdefghij.eyJklmnopqrs.sig",
    "Bearer abcdefghijkl",
    "TOKEN  zyxwvutsrqpo",
    "password=hunter2hunter",
    "Api-Key: 12345678",
    "https://user:pw@host/x",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----",
    " ",
    "\n",
    "plain words",
]


def slow(text: str) -> str:
    p = r.patterns()
    text = p.pem.sub(r.REDACTED, text)
    text = p.url_password.sub(rf"\1:{r.REDACTED}@", text)
    text = p.bearer.sub(rf"\1 {r.REDACTED}", text)
    text = p.key_value.sub(rf"\1\2{r.REDACTED}", text)
    return p.tokens.sub(r.REDACTED, text)


@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=12), max_size=8))
def test_pre_checks_change_nothing(parts: list[str]) -> None:
    text = "".join(parts)
    assert r.redact(text) == slow(text)


def test_each_shape_is_masked() -> None:
    for piece in PIECES[:12]:
        assert r.REDACTED in r.redact(piece), piece
