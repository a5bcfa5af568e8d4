from collections.abc import Iterator
from pathlib import Path

import pytest

from providers.local_server import LocalServer
from providers.tls_cert import self_signed


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for `localhost` and its key (tls_cert.py)."""
    made = self_signed(tmp_path)
    if made is None:
        pytest.skip("neither the cryptography package nor openssl is here to make a certificate")
    return made
