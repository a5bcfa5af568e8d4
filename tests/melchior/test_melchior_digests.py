"""melchior's digests are hashlib's SHA-256 and hmac's comparison, and its draws secrets', without
loading OpenSSL or `random`."""

import hashlib
import hmac
import subprocess
import sys

import pytest

from melchior.digests import same, sha256_hex


@pytest.mark.parametrize("data", [b"", b"abc", "tökén\udcff".encode("utf-8", "surrogatepass")])
def test_sha256_is_hashlibs(data: bytes) -> None:
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_same_compares_as_hmac_does() -> None:
    a = sha256_hex(b"a")
    assert same(a, a) and not same(a, sha256_hex(b"b")) and not same(a, a[:-1])
    assert same(a, a) == hmac.compare_digest(a, a)
    with pytest.raises(TypeError):  # non-ASCII text, refused as by hmac.compare_digest
        same("é", "é")


def test_no_openssl_is_loaded() -> None:
    code = (
        "import sys\nfrom melchior.digests import same, sha256_hex\n"
        "sha256_hex(b'x'); same('a', 'a')\n"
        "print(sorted(m for m in sys.modules if m in ('_hashlib', 'hashlib', 'hmac', '_ssl')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("n", [1, 2, 255, 256, 257, 10**6])
def test_draws_stay_below_their_bound_and_reach_both_ends(n: int) -> None:
    from melchior.names import _below

    drawn = {_below(n) for _ in range(4000)}
    assert min(drawn) >= 0 and max(drawn) < n
    if n <= 257:
        assert {0, n - 1} <= drawn  # both ends come up


def test_draws_are_uniform() -> None:
    from collections import Counter

    from melchior.names import _below

    counts = Counter(_below(3) for _ in range(30_000))
    assert all(9_400 < counts[k] < 10_600 for k in range(3))  # about 10 standard deviations


def test_minting_loads_neither_random_nor_openssl() -> None:
    code = (
        "import sys\nfrom melchior.names import candidate\ncandidate(0); candidate(16)\n"
        "print(sorted(m for m in sys.modules if m in ('random', '_hashlib', 'secrets')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
