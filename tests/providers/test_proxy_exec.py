"""`magi-code exec` in a company network, end to end (a real process): a TLS provider that
only the company's proxy can reach (proxy.py, proxy_peer.py), signed by the company's CA given
through SSL_CERT_FILE or the global `[network]` settings, over HTTP/2 in the tunnel; what a
refused proxy or an untrusted certificate says; a bad `[network]` table at startup; and the
proxy's credentials in no output, diagnostic or session file."""

import base64
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from providers.company_ca import Authority
from providers.hostile_server import H2Peer, HostileServer
from providers.local_server import LocalServer, Reply
from providers.proxy_peer import PASSWORD, USER, CompanyProxy
from providers.test_hostile_exec import SECRET, reply
from providers.test_proxy import serving
from support.exec import exec_run, run_magi_code
from support.settings import places

PROVIDER = "provider.test"  # only the proxy resolves it
CREDENTIALS = (PASSWORD, base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode())


def answering(text: str) -> Callable[[H2Peer], None]:
    def handler(peer: H2Peer) -> None:
        while (stream_id := peer.request()) is not None:
            peer.respond(stream_id)
            peer.data(stream_id, reply(text), end=True)
        peer.drain()

    return handler


@pytest.fixture
def provider(company: Authority) -> Iterator[HostileServer]:
    """An HTTP/2 provider (TLS, `h2` only) with a certificate for provider.test."""
    with HostileServer(answering("THROUGH"), company.issue("provider", PROVIDER), h2=True) as s:
        yield s


def exec_in(
    tmp_path: Path, provider: HostileServer, network: str = "", **env: str
) -> subprocess.CompletedProcess[bytes]:
    url = provider.url.replace("localhost", PROVIDER)
    home, workspace = places(
        tmp_path,
        'provider = "company"\nmodel = "m"\n[providers.company]\nwire_api = "openai-responses"\n'
        f'base_url = "{url}/v1"\napi_key_env = "COMPANY_KEY"\nmodels = ["m"]\n{network}',
    )
    return exec_run(["look around"], workspace, home, COMPANY_KEY=SECRET, **env)


def shows_no_credential(tmp_path: Path, done: subprocess.CompletedProcess[bytes]) -> None:
    """Neither the password nor the Basic value is in stdout, stderr or any file the run left
    under MC_HOME (its session among them); the settings file is the user's own."""
    home = tmp_path / "home"
    left = [path for path in home.rglob("*") if path.is_file() and path.name != "settings.toml"]
    assert list((home / "sessions").rglob("*.jsonl")), "the run left its session"
    for secret in CREDENTIALS:
        assert secret.encode() not in done.stdout + done.stderr
        assert [path for path in left if secret.encode() in path.read_bytes()] == []


def test_exec_reaches_a_tls_provider_only_through_the_proxy_over_http2(
    tmp_path: Path, proxy: CompanyProxy, company: Authority, provider: HostileServer
) -> None:
    done = exec_in(tmp_path, provider, HTTPS_PROXY=proxy.url(), SSL_CERT_FILE=str(company.cert))
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"THROUGH\n"
    port = provider.url.rsplit(":", 1)[1]
    assert proxy.seen() == [f"CONNECT {PROVIDER}:{port}"]
    assert (provider.connections, provider.requests) == (1, 1)  # an h2 peer: h2 was taken
    shows_no_credential(tmp_path, done)


def test_the_global_network_settings_are_over_the_environment(
    tmp_path: Path, proxy: CompanyProxy, company: Authority, provider: HostileServer
) -> None:
    network = f'[network]\nproxy = "{proxy.url()}"\nca_bundle = "{company.cert}"\n'
    done = exec_in(tmp_path, provider, network, HTTPS_PROXY="http://127.0.0.1:9")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"THROUGH\n"
    assert len(proxy.seen()) == 1
    shows_no_credential(tmp_path, done)


def test_a_proxy_that_refuses_the_credentials_is_named_never_them(
    tmp_path: Path, proxy: CompanyProxy, company: Authority, provider: HostileServer
) -> None:
    wrong = proxy.url(password="not-" + PASSWORD)
    done = exec_in(tmp_path, provider, HTTPS_PROXY=wrong, SSL_CERT_FILE=str(company.cert))
    assert done.returncode != 0
    assert b"The proxy refused the credentials in HTTPS_PROXY (HTTP 407)." in done.stderr
    assert provider.requests == 0
    shows_no_credential(tmp_path, done)


def test_an_untrusted_provider_certificate_names_the_setting_to_change(
    tmp_path: Path, proxy: CompanyProxy, provider: HostileServer
) -> None:
    done = exec_in(tmp_path, provider, HTTPS_PROXY=proxy.url())
    assert done.returncode != 0
    assert b"The server's certificate is not trusted" in done.stderr
    assert b"[network] ca_bundle in the global settings (or in SSL_CERT_FILE)" in done.stderr
    assert len(proxy.seen()) == 1  # not retried: no retry makes it trusted
    shows_no_credential(tmp_path, done)


def test_startup_refuses_a_bad_network_table_naming_the_key(
    tmp_path: Path, provider: HostileServer
) -> None:
    done = exec_in(tmp_path, provider, '[network]\nca_bundle = "company.pem"\n')
    assert done.returncode != 0
    assert b"configuration_invalid" in done.stderr
    assert b"network.ca_bundle must be an absolute path" in done.stderr
    assert provider.connections == 0


def test_discovery_goes_through_the_global_settings_proxy(
    tmp_path: Path, proxy: CompanyProxy, company: Authority
) -> None:
    """`magi-code models --refresh` (not `exec`: the CLI reads the settings itself) lists a
    provider's models through `[network] proxy`, trusting `[network] ca_bundle`."""
    listing = Reply.json({"data": [{"id": "through-the-proxy"}]})
    with LocalServer(tls=serving(company.issue("listing", PROVIDER))) as origin:
        origin.script("/v1/models", listing)
        port = origin.httpd.server_address[1]
        home = tmp_path / "home"
        home.mkdir()
        (home / "settings.toml").write_text(
            'provider = "company"\nmodel = "m"\n[providers.company]\nwire_api = "openai-chat"\n'
            f'base_url = "https://{PROVIDER}:{port}/v1"\napi_key_env = "COMPANY_KEY"\n'
            f'discover = true\n[network]\nproxy = "{proxy.url()}"\nca_bundle = "{company.cert}"\n'
        )
        args = ["models", "--refresh", "--json"]
        done = run_magi_code(args, tmp_path, home, COMPANY_KEY=SECRET)
    assert done.returncode == 0, done.stderr
    assert b"through-the-proxy" in done.stdout
    assert proxy.seen() == [f"CONNECT {PROVIDER}:{port}"]
    for secret in CREDENTIALS:
        assert secret.encode() not in done.stdout + done.stderr
