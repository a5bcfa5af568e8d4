"""The redactor's substring pre-checks never change its answer, and a live stream shows
exactly what the whole text redacted shows, never a secret split across deltas."""

import time
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from magi_code import redact as r
from magi_code.limits import LIVE_REDACTION_HOLD_CHARS

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


def streamed(text: str, cuts: list[int]) -> list[str]:
    """What a LiveRedactor shows for `text` fed in pieces cut at `cuts`, flush included."""
    live = r.LiveRedactor()
    bounds = [0, *sorted(c % (len(text) + 1) for c in cuts), len(text)]
    return [live.feed(text[a:b]) for a, b in pairwise(bounds)] + [live.end()]


FRAGMENTS = [  # pieces of secrets and of what may introduce one
    *("Bearer", "password", " = ", ": ", "sk-", "ABCDEFGHIJKLMNOPQRSTU", "token", "'", '"'),
    *("-----BEGIN", " RSA PRIVATE KEY-----", "://", "@", "u:p", "api_key"),
]


@given(
    st.lists(st.sampled_from(PIECES + FRAGMENTS) | st.text(max_size=12), max_size=12),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_a_live_stream_shows_exactly_what_redact_shows(parts: list[str], cuts: list[int]) -> None:
    text = "".join(parts)
    assert "".join(streamed(text, cuts)) == r.redact(text)


CORES = ["ABCDEFGHIJKLMNOPQRSTUVWX", "hunter2", "a" * 20, "b" * 12, "abcdefghijkl", "12345678"]
CORES += ["zyxwvutsrqpo", ":pw@", "MIIB", "klmnopqrs", "1234567890-abc"]
LONG_WORDS = ["y" * 300, "a-" * 150, "Z" * 257]


@given(
    st.lists(st.sampled_from(PIECES + FRAGMENTS + LONG_WORDS) | st.text(max_size=12), max_size=12),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_a_cut_inside_a_long_word_shows_no_secret(parts: list[str], cuts: list[int]) -> None:
    text = "".join(parts)
    shown, whole = "".join(streamed(text, cuts)), r.redact(text)
    for core in CORES:
        assert core not in shown or core in whole


SECRETS = {  # text around a secret -> the secret's characters that must never be shown
    "key sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX. ok": "ABCDEFGHIJKLMNOPQRSTUVWX",
    "use Authorization: Bearer abcdefghijklmnop now": "abcdefghijklmnop",
    'set password = "correct horse battery" then': "correct horse battery",
    "at https://admin:s3cr3tpass@example.com/x": "s3cr3tpass",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----": "MIIEpAIB",
}


def test_a_secret_split_at_every_point_is_never_shown() -> None:
    for text, secret in SECRETS.items():
        filler = "words before it " * 8  # past the look-ahead: the stream shows text early
        whole = filler + text + " and words after it" * 8
        for a in range(len(filler), len(filler) + len(text)):
            for b in (a + 1, a + 7):
                shown = ""
                for piece in streamed(whole, [a, b]):
                    shown += piece
                    assert secret not in shown and secret[:8] not in shown, (text, a, b)
                assert shown == r.redact(whole) and shown.startswith(filler[:40])


def test_a_secret_held_open_past_the_bound_silences_the_stream() -> None:
    header, bound = "-----BEGIN EC PRIVATE KEY-----\n", LIVE_REDACTION_HOLD_CHARS
    for held, rest in ((bound, r.REDACTED), (bound + 1, "")):
        live = r.LiveRedactor()
        assert live.feed("see " + header + "Q" * (held - len(header))) == "see "
        assert live.end() == rest  # silenced: the reconciled copy alone shows the rest


def test_repeated_keywords_stream_live_in_linear_time() -> None:
    # "token " is a keyword a secret may follow; a finished word after it is decided, so the
    # stream goes on showing the text. (It once walked back over every earlier "token", held
    # everything, went silent and took 13 s for 10,000 deltas.)
    live = r.LiveRedactor()
    started = time.perf_counter()
    shown = "".join(live.feed("token ") for _ in range(10_000))
    elapsed = time.perf_counter() - started
    assert shown + live.end() == r.redact("token " * 10_000)
    assert len(shown) >= len("token ") * 9_998  # only the last word or two are held back
    assert elapsed < 2.0
