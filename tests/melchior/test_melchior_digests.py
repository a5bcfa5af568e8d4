"""melchior's digests are hashlib's SHA-256 and hmac's comparison, without loading OpenSSL."""

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
