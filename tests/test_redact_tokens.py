"""Every row of redact.TOKEN_SHAPES, one by one: samples of realistic length are masked (by
`redact`, by a live stream fed a character at a time, and by that row's own pattern), and a
near-miss ordinary word is not. Ordinary text never compiles the patterns."""

import random
import re
import string

import pytest

from magi_code import redact as r

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
UPPER_DIGITS = string.ascii_uppercase + string.digits


def fake(prefix: str, length: int, alphabet: str = ALNUM) -> str:
    """`prefix` and `length` random characters, built at run time (the source holds no token
    a secret scanner would flag)."""
    rng = random.Random(f"{prefix}{length}{alphabet}")
    return prefix + "".join(rng.choice(alphabet) for _ in range(length))


def slack(kind: str) -> str:
    return (
        f"xox{kind}-"
        + fake("", 13, string.digits)
        + "-"
        + fake("", 13, string.digits)
        + "-"
        + fake("", 24)
    )


# name -> (samples of realistic length, near-miss ordinary words)
SAMPLES: dict[str, tuple[list[str], list[str]]] = {
    "anthropic": (
        [fake("sk-ant-api03-", 95, B64URL), fake("sk-ant-admin01-", 95, B64URL)],
        ["sk-ant-farm"],
    ),
    "anthropic-underscore": ([fake("sk_ant_api03_", 80, B64URL)], ["sk_ant_colony", "task_ant_"]),
    "openai": (
        [fake("sk-proj-", 156, B64URL), fake("sk-", 48), fake("sk-svcacct-", 120, B64URL)],
        ["sk-learn", "risk-assessment-framework-document", "sk-short"],
    ),
    "github": (
        [fake(p, 36) for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")],
        ["ghp_short", "ghx_" + "a" * 36],
    ),
    "github-fine-grained": ([fake("github_pat_", 22) + fake("_", 59)], ["github_pat_docs"]),
    "gitlab": ([fake("glpat-", 20, B64URL)], ["glpat-short", "glpat-token-format"]),
    "slack": (
        [slack("b"), slack("p"), slack("a"), slack("r")],
        ["xoxb-bot", "xoxz-1234567890-abc"],
    ),
    "stripe": (
        [fake(p, 99) for p in ("sk_" + "live_", "rk_" + "live_", "sk_" + "test_", "rk_test_")],
        ["sk_live_demo", "sk_test_mode", "pk_live_" + "a" * 24],
    ),
    "aws-access-key-id": (
        [fake("AKIA", 16, UPPER_DIGITS), fake("ASIA", 16, UPPER_DIGITS)],
        ["AKIA1234", "AKIAlowercaseletters1", "AKIA" + "B" * 17, "XAKIA" + "B" * 16],
    ),
    "google": ([fake("AIza", 35, B64URL)], ["AIzawesome", "AIza-short"]),
    "npm": ([fake("npm_", 36)], ["npm_config_registry", "npm_token"]),
    "pypi": ([fake("pypi-AgEIcHlwaS5vcmc", 160, B64URL)], ["pypi-simple-index", "pypi-server"]),
    "hugging-face": ([fake("hf_", 34, string.ascii_letters)], ["hf_hub_download", "shelf_life"]),
    "jwt": (
        ["eyJhbGciOiJIUzI1NiJ9." + fake("eyJ", 60, B64URL) + "." + fake("", 43, B64URL)],
        ["eyJustSaying.hello.world", "eyJ"],
    ),
}
ROWS = {name: (marks, shape) for name, marks, shape in r.TOKEN_SHAPES}


def test_every_row_has_samples() -> None:
    assert set(SAMPLES) == set(ROWS)
    assert len(ROWS) == len(r.TOKEN_SHAPES)  # one row per name


@pytest.mark.parametrize("name", list(ROWS))
def test_each_token_shape_is_masked(name: str) -> None:
    marks, shape = ROWS[name]
    samples, _ = SAMPLES[name]
    for sample in samples:
        assert re.fullmatch(shape, sample), (name, sample)  # this row's own pattern
        assert any(mark in sample for mark in marks)  # the pre-check lets it through
        for text in (sample, f"key {sample}.", f"X={sample}\n", f"'{sample}' and more"):
            shown = r.redact(text)
            assert sample not in shown and r.REDACTED in shown, (name, text)
            assert shown == text.replace(sample, r.REDACTED), (name, text)
        assert r.has_token(sample) and r.looks_secret(sample)


@pytest.mark.parametrize("name", list(ROWS))
def test_a_near_miss_is_not_masked(name: str) -> None:
    _, near = SAMPLES[name]
    for word in near:
        for text in (word, f"see {word} here"):
            assert r.redact(text) == text, (name, text)
            assert not r.has_token(text), (name, text)


@pytest.mark.parametrize("name", list(ROWS))
def test_a_streamed_token_is_never_shown(name: str) -> None:
    samples, _ = SAMPLES[name]
    sample = samples[0]
    text = f"here it is: {sample} and the rest of the line"
    live, shown = r.LiveRedactor(), ""
    for char in text:
        shown += live.feed(char)
        assert sample[len(sample) // 2 :][:12] not in shown, name
    shown += live.end()
    assert shown == r.redact(text)
    assert sample not in shown


def test_ordinary_text_compiles_no_pattern() -> None:
    r.patterns.cache_clear()
    for text in ("Hello from the fixture model.", "def f(x):\n    return x + 1\n", "ok"):
        assert r.redact(text) == text
        assert not r.has_token(text)
    assert r.patterns.cache_info().currsize == 0
