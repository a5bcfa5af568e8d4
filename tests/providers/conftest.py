import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from magi_code.providers import pool
from providers.local_server import LocalServer
from providers.proxy_peer import CompanyProxy
from providers.tls_cert import self_signed

if TYPE_CHECKING:  # company_ca.py needs the cryptography package: imported on first use
    from providers.company_ca import Authority


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


@pytest.fixture
def company(tmp_path: Path) -> "Authority":
    """A company's own certificate authority (company_ca.py)."""
    from providers.company_ca import Authority

    return Authority(tmp_path / "ca")


@pytest.fixture(scope="module")
def company_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CompanyProxy]:
    with CompanyProxy(tmp_path_factory.mktemp("proxy")) as started:
        yield started


@pytest.fixture
def proxy(company_proxy: CompanyProxy) -> CompanyProxy:
    """The company's proxy, what it forwarded for earlier tests forgotten."""
    company_proxy.forget()
    return company_proxy


@pytest.fixture
def trusted(certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The pool's own TLS context (ALPN included), trusting only the test's certificate."""

    def trusting_the_test_certificate(*_: object) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_verify_locations(certificate[0])
        return context

    monkeypatch.setattr(pool, "_system_trust", trusting_the_test_certificate)
    monkeypatch.setattr(pool, "_contexts", {})
    return certificate
