"""The providers' HTTP client in a company network, against real peers: proxy.py as the
company's proxy (proxy_peer.py: Basic credentials, and the only one that resolves
`provider.test`), TLS origins signed by a company CA (company_ca.py) given through
SSL_CERT_FILE or `[network] ca_bundle`, an HTTP/2 origin through the tunnel, NO_PROXY, mTLS,
the connect, head and inactivity bounds through the proxy, and sentences that say which
certificate or answer failed and which setting to change, never a credential."""

import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from cryptography.hazmat.primitives import serialization

from magi_code.providers import network, pool
from magi_code.providers.base import ProviderError
from magi_code.providers.client import TransportError, close_clients, open_response
from magi_code.providers.openai_chat import OpenAIChatProvider
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.pool import outbound
from magi_code.providers.requests import control_request
from providers.company_ca import Authority
from providers.h2_server import H2Reply, H2Server
from providers.hostile_server import HostileServer, Peer
from providers.local_server import LocalServer, Reply
from providers.proxy_peer import PASSWORD, USER, CompanyProxy
from providers.test_http_bounds import OK, PATH, Sleeps
from providers.test_wire_apis import collect

pytestmark = pytest.mark.anyio

ONE = HttpPolicy(attempts=1)
PROVIDER = "provider.test"  # only the proxy resolves it

Use = Callable[..., None]


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch) -> Use:
    """Make `env` (proxy and certificate variables) and a `[network]` table the process's
    choice for this test (as startup does; tests/conftest.py forgets it after the test), with
    no TLS context kept from another test."""
    monkeypatch.setattr(pool, "_contexts", {})

    def chosen(env: dict[str, str], **table: str) -> None:
        network.configure(table, env)

    return chosen


def serving(certificate: tuple[Path, Path], clients_of: Path | None = None) -> ssl.SSLContext:
    """A server's TLS context; with `clients_of` (a CA file) it requires a client certificate
    that CA signed."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    if clients_of is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(clients_of)
    return context


@pytest.fixture
def origin(company: Authority) -> Iterator[LocalServer]:
    """An https origin (HTTP/1.1) whose certificate, for provider.test, the company CA signed."""
    with LocalServer(tls=serving(company.issue("provider", PROVIDER))) as server:
        yield server


def port_of(server: LocalServer) -> int:
    return int(server.httpd.server_address[1])


async def fetch(url: str, policy: HttpPolicy = ONE) -> tuple[int, bytes]:
    async with open_response("GET", url, policy, {}) as response:
        return response.status, b"".join([chunk async for chunk in response])


async def failure(url: str, policy: HttpPolicy = ONE) -> ProviderError:
    """The error of a control request (sign-in, discovery) to `url`."""
    with pytest.raises(ProviderError) as failed:
        await control_request("GET", url, policy)
    await close_clients()
    return failed.value


def keeps_no_credential(*texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text and f"{USER}:" not in text


# ---- through the tunnel ---------------------------------------------------------------------


async def test_an_https_origin_is_reached_only_through_the_proxy_tunnel(
    use: Use, proxy: CompanyProxy, company: Authority, origin: LocalServer
) -> None:
    port = port_of(origin)
    url = f"https://{PROVIDER}:{port}/x"
    origin.script("/x", Reply(chunks=[b"one"], keep_alive=True, chunked=True), Reply(chunks=[b"2"]))
    use({})  # no proxy: provider.test is not a name this machine resolves
    with pytest.raises(TransportError):
        await fetch(url)
    use({"HTTPS_PROXY": proxy.url(), "SSL_CERT_FILE": str(company.cert)})
    assert await fetch(url) == (200, b"one")
    assert await fetch(url) == (200, b"2")  # the tunnel's connection was kept for it
    assert proxy.seen() == [f"CONNECT {PROVIDER}:{port}"]
    assert origin.connections == 1
    seen = origin.requests[0]
    assert (seen.path, seen.headers["host"]) == ("/x", f"{PROVIDER}:{port}")
    assert "proxy-authorization" not in seen.headers  # the credentials are the proxy's alone
    await close_clients()


async def test_a_company_ca_as_ca_bundle_is_trusted_on_top_of_the_system_roots(
    use: Use, proxy: CompanyProxy, company: Authority, origin: LocalServer
) -> None:
    origin.script("/x", Reply(chunks=[b"ok"]))
    use({"HTTPS_PROXY": proxy.url()})
    system = pool.tls_context(network.current().certificates, ("http/1.1",))
    use({"HTTPS_PROXY": proxy.url()}, ca_bundle=str(company.cert))
    assert await fetch(f"https://{PROVIDER}:{port_of(origin)}/x") == (200, b"ok")
    context = pool._contexts[network.current().certificates, ("h2", "http/1.1")]
    added = context.cert_store_stats()["x509_ca"] - system.cert_store_stats()["x509_ca"]
    assert added == 1
    await close_clients()


async def test_an_untrusted_origin_says_its_certificate_and_the_setting_unretried(
    use: Use, proxy: CompanyProxy, origin: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    origin.script(PATH, Reply(chunks=[OK]))
    use({"HTTPS_PROXY": proxy.url()})  # the company CA is not given
    sleeps = Sleeps()
    provider = OpenAIChatProvider(
        "p", f"https://{PROVIDER}:{port_of(origin)}/v1", "k", HttpPolicy(attempts=3, sleep=sleeps)
    )
    with pytest.raises(ProviderError) as failed:
        await collect(provider)
    error = failed.value
    assert (error.code, error.retryable, sleeps.delays) == ("transport_failed", False, [])
    assert error.summary == (
        "The server's certificate is not trusted: if your network inspects TLS, add the "
        "certificate of the authority that signed it to [network] ca_bundle in the global "
        "settings (or in SSL_CERT_FILE)."
    )
    assert len(proxy.seen()) == 1 and origin.requests == []
    keeps_no_credential(error.summary, repr(error), caplog.text)
    await close_clients()


async def test_an_origin_certificate_for_another_name_says_to_check_the_url(
    use: Use, proxy: CompanyProxy, company: Authority, tmp_path: Path
) -> None:
    with LocalServer(tls=serving(company.issue("other", "other.test"))) as elsewhere:
        use({"HTTPS_PROXY": proxy.url(), "SSL_CERT_FILE": str(company.cert)})
        error = await failure(f"https://{PROVIDER}:{port_of(elsewhere)}/x")
    assert error.summary == "The server's certificate is for another host name: check the URL."


async def test_an_https_proxy_is_reached_over_its_own_tls_and_its_certificate_named(
    use: Use, company: Authority, origin: LocalServer, tmp_path: Path
) -> None:
    """TLS in TLS: the proxy's own (its certificate from another CA), and the origin's inside
    the tunnel."""
    proxies_ca = Authority(tmp_path / "proxy-ca", "magi-code test proxy CA")
    origin.script("/x", Reply(chunks=[b"inner"]))
    url = f"https://{PROVIDER}:{port_of(origin)}/x"
    with CompanyProxy(tmp_path / "tls-proxy", proxies_ca.issue("proxy", "localhost")) as secure:
        proxy_url = secure.url().replace("127.0.0.1", "localhost")
        use({"HTTPS_PROXY": proxy_url}, ca_bundle=str(company.cert))
        error = await failure(url)
        assert error.summary.startswith(
            "The proxy's (in HTTPS_PROXY) certificate is not trusted: if your network inspects "
            "TLS, add the certificate of the authority that signed it to [network] ca_bundle"
        )
        assert secure.seen() == []
        use(
            {"HTTPS_PROXY": proxy_url, "SSL_CERT_FILE": str(proxies_ca.cert)},
            ca_bundle=str(company.cert),
        )
        assert await fetch(url) == (200, b"inner")
        assert secure.seen() == [f"CONNECT {PROVIDER}:{port_of(origin)}"]
    await close_clients()


@pytest.mark.parametrize(
    ("user", "says"),
    [
        (None, "The proxy asks for credentials (HTTP 407): put them in https_proxy"),
        ("intruder", "The proxy refused the credentials in https_proxy (HTTP 407)."),
    ],
)
async def test_the_proxys_refusal_of_its_credentials_names_the_setting_never_them(
    use: Use,
    proxy: CompanyProxy,
    origin: LocalServer,
    user: str | None,
    says: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    use({"https_proxy": proxy.url(user)})
    sleeps = Sleeps()
    provider = OpenAIChatProvider(
        "p", f"https://{PROVIDER}:{port_of(origin)}/v1", "k", HttpPolicy(attempts=3, sleep=sleeps)
    )
    with pytest.raises(ProviderError) as failed:
        await collect(provider)
    assert failed.value.summary.startswith(says)
    assert (failed.value.retryable, sleeps.delays) == (False, [])
    keeps_no_credential(failed.value.summary, repr(failed.value), caplog.text)
    await close_clients()


async def test_an_unreachable_proxy_is_named_and_worth_a_retry(use: Use) -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    use({"HTTPS_PROXY": f"http://{USER}:{PASSWORD}@127.0.0.1:{port}"})
    error = await failure(f"https://{PROVIDER}/x")
    assert error.summary == "The proxy in HTTPS_PROXY could not be reached: check it, and NO_PROXY."
    assert error.retryable
    keeps_no_credential(error.summary)


async def test_http2_goes_through_the_tunnel_when_the_origin_offers_it(
    use: Use, proxy: CompanyProxy, company: Authority
) -> None:
    with H2Server(company.issue("provider-h2", PROVIDER)) as h2:
        h2.script("/x", H2Reply(chunks=[b"over h2"]), H2Reply(chunks=[b"again"]))
        use({"HTTPS_PROXY": proxy.url()}, ca_bundle=str(company.cert))
        url = f"https://{PROVIDER}:{h2.port}/x"
        assert await fetch(url) == (200, b"over h2")
        assert await fetch(url) == (200, b"again")  # on the shared HTTP/2 connection
        assert h2.connections == 1 and len(h2.requests) == 2
        assert h2.requests[0].headers[":authority"] == f"{PROVIDER}:{h2.port}"
        assert proxy.seen() == [f"CONNECT {PROVIDER}:{h2.port}"]
        await close_clients()


async def test_an_http_origin_is_asked_through_the_proxy_in_absolute_form(
    use: Use, proxy: CompanyProxy
) -> None:
    with LocalServer() as plain:
        plain.script("/x", Reply(chunks=[b"forwarded"]))
        port = port_of(plain)
        use({"HTTP_PROXY": proxy.url(), "HTTPS_PROXY": "http://unused.invalid:1"})
        assert await fetch(f"http://{PROVIDER}:{port}/x?q=1") == (200, b"forwarded")
        assert proxy.seen() == [f"GET {PROVIDER}:{port}"]
        (seen,) = plain.requests
        assert (seen.path, seen.headers["host"]) == ("/x?q=1", f"{PROVIDER}:{port}")
        assert "proxy.py" in seen.headers["via"]
    await close_clients()


@pytest.mark.parametrize(
    ("host", "no_proxy", "direct"),
    [
        ("localhost", "localhost", True),
        ("localhost", ".localhost", True),
        ("localhost", "*", True),
        ("localhost", "example.com, localhost:{port}", True),
        ("localhost", "localhost:1", False),
        ("127.0.0.1", "127.0.0.0/8", True),
        ("127.0.0.1", "127.0.0.1:{port}", True),
        ("127.0.0.1", "10.0.0.0/8,::1", False),
        ("127.0.0.1", "localhost", False),  # a name never covers an address
    ],
)
async def test_no_proxy_sends_the_hosts_it_names_directly(
    use: Use, proxy: CompanyProxy, host: str, no_proxy: str, direct: bool
) -> None:
    with LocalServer() as plain:
        plain.script("/x", Reply(chunks=[b"here"]))
        port = port_of(plain)
        use({"HTTP_PROXY": proxy.url(), "NO_PROXY": no_proxy.format(port=port)})
        assert await fetch(f"http://{host}:{port}/x") == (200, b"here")
        assert proxy.seen() == ([] if direct else [f"GET {host}:{port}"])
        assert ("via" not in plain.requests[0].headers) is direct
    await close_clients()


async def test_outbound_gives_a_client_of_its_own_the_proxy_and_the_certificates(
    use: Use, proxy: CompanyProxy, company: Authority, origin: LocalServer
) -> None:
    """What the MCP client (httpx2) is to call for a server's URL: with it, httpx2 reaches the
    same origin through the same proxy."""
    origin.script("/mcp", Reply(chunks=[b"mcp over the proxy"]))
    use({"HTTPS_PROXY": proxy.url(), "NO_PROXY": "direct.test"}, ca_bundle=str(company.cert))
    url = f"https://{PROVIDER}:{port_of(origin)}/mcp"
    proxy_url, context = outbound(url)
    assert proxy_url == proxy.url()
    assert outbound("https://direct.test/mcp")[0] is None
    transport = httpx2.AsyncHTTPTransport(proxy=proxy_url, verify=context)
    async with httpx2.AsyncClient(transport=transport) as client:
        answer = await client.get(url)
    assert (answer.status_code, answer.content) == (200, b"mcp over the proxy")
    assert proxy.seen() == [f"CONNECT {PROVIDER}:{port_of(origin)}"]


# ---- the bounds hold through the proxy ------------------------------------------------------


async def test_a_proxy_that_never_answers_its_connect_is_bound_by_the_connect_deadline(
    use: Use,
) -> None:
    silent = socket.create_server(("127.0.0.1", 0))
    taken: list[socket.socket] = []
    threading.Thread(target=lambda: taken.append(silent.accept()[0]), daemon=True).start()
    use({"HTTPS_PROXY": f"http://127.0.0.1:{silent.getsockname()[1]}"})
    started = time.monotonic()
    with pytest.raises(TransportError):
        await fetch(f"https://{PROVIDER}/x", HttpPolicy(attempts=1, connect_s=0.5))
    assert 0.5 <= time.monotonic() - started < 1.0
    silent.close()
    for sock in taken:
        sock.close()


def hostile_origin(company: Authority, handler: Callable[[Peer], None]) -> HostileServer:
    return HostileServer(handler, company.issue("hostile", PROVIDER))


async def test_the_head_and_inactivity_bounds_hold_through_the_tunnel(
    use: Use, proxy: CompanyProxy, company: Authority
) -> None:
    def stalls(peer: Peer) -> None:
        peer.request()
        if peer.index == 1:  # the second connection gets its head, then a body that stops
            peer.send(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nfive.")
        time.sleep(3)

    with hostile_origin(company, stalls) as server:
        use({"HTTPS_PROXY": proxy.url(), "SSL_CERT_FILE": str(company.cert)})
        url = server.url.replace("localhost", PROVIDER) + "/x"
        started = time.monotonic()
        with pytest.raises(TransportError):
            await fetch(url, HttpPolicy(attempts=1, head_s=0.5, inactivity_s=5))
        assert 0.5 <= time.monotonic() - started < 1.0  # the head's bound, a total
        policy = HttpPolicy(attempts=1, head_s=5, inactivity_s=0.4)
        async with open_response("GET", url, policy, {}) as response:
            assert await anext(response) == b"five."
            started = time.monotonic()
            with pytest.raises(TransportError):
                await anext(response)
        assert 0.4 <= time.monotonic() - started < 0.9  # the inactivity bound
        assert len(proxy.seen()) == 2
    await close_clients()


# ---- mTLS ------------------------------------------------------------------------------------


class ClientCertificateGate:
    """An https server (HTTP/1.1) that requires a client certificate `ca` signed: one it
    refuses gets TLS's alert, and the connection is drained before it closes (as servers
    linger), so that the alert reaches the client, not a reset; one it takes is answered
    `200 hello, me`. A refusal is counted after its alert has gone out, so the client can
    hear of it first: `refusals` waits for the count."""

    def __init__(self, certificate: tuple[Path, Path], ca: Path) -> None:
        self._context = serving(certificate, clients_of=ca)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.refused = 0
        self._counted = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._listener.close()

    def refusals(self, at_least: int, within_s: float = 10.0) -> int:
        with self._counted:
            self._counted.wait_for(lambda: self.refused >= at_least, within_s)
            return self.refused

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        raw.settimeout(5)
        tls = self._context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        try:
            tls.do_handshake()
            request = b""
            while b"\r\n\r\n" not in request:
                request += tls.recv(4096)
            tls.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\nconnection: close\r\n\r\n")
            tls.sendall(b"hello, me")
            tls.close()
        except (ssl.SSLError, OSError):  # the alert went out: linger, below TLS
            with self._counted:
                self.refused += 1
                self._counted.notify_all()
            socket.socket.shutdown(tls, socket.SHUT_WR)
            while socket.socket.recv(tls, 4096):
                pass
            tls.close()


async def test_a_server_that_requires_a_client_certificate_gets_ours(
    use: Use, proxy: CompanyProxy, company: Authority
) -> None:
    mine = company.issue("me", client=True)
    gate = ClientCertificateGate(company.issue("mtls", PROVIDER), company.cert)
    env = {"HTTPS_PROXY": proxy.url(), "SSL_CERT_FILE": str(company.cert)}
    use(env, client_cert=str(mine[0]), client_key=str(mine[1]))
    assert await fetch(f"https://{PROVIDER}:{gate.port}/x") == (200, b"hello, me")
    assert gate.refused == 0
    gate.close()
    await close_clients()


@pytest.mark.parametrize("shown", ["none", "another CA's"])
async def test_a_refused_client_certificate_says_which_settings_to_check(
    use: Use, company: Authority, tmp_path: Path, shown: str
) -> None:
    gate = ClientCertificateGate(company.issue("mtls", "localhost"), company.cert)
    table = {}
    if shown != "none":
        stranger = Authority(tmp_path / "stranger", "a stranger CA").issue("me", client=True)
        table = {"client_cert": str(stranger[0]), "client_key": str(stranger[1])}
    use({"SSL_CERT_FILE": str(company.cert)}, **table)
    error = await failure(f"https://localhost:{gate.port}/x")
    assert error.summary == (
        "A server refused our client certificate, or asked for one: check [network] "
        "client_cert and client_key in the global settings."
    )
    assert not error.retryable
    assert await anyio.to_thread.run_sync(gate.refusals, 1) == 1
    gate.close()


async def test_certificate_files_that_do_not_load_name_their_setting(
    use: Use, company: Authority, origin: LocalServer, tmp_path: Path
) -> None:
    url = f"https://localhost:{port_of(origin)}/x"
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    use({}, ca_bundle=str(garbage))
    assert (await failure(url)).summary.startswith("[network] ca_bundle could not be loaded")
    use({"SSL_CERT_FILE": str(tmp_path / "gone.pem")})
    assert (await failure(url)).summary.startswith("SSL_CERT_FILE or SSL_CERT_DIR could not")
    cert, key = company.issue("me", client=True)
    locked = tmp_path / "locked.key"  # an encrypted key fails: OpenSSL never asks on a terminal
    plain = serialization.load_pem_private_key(key.read_bytes(), None)
    locked.write_bytes(
        plain.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"key password"),
        )
    )
    for unusable in (garbage, locked):
        use({}, client_cert=str(cert), client_key=str(unusable))
        assert (await failure(url)).summary.startswith(
            "[network] client_cert and client_key could not be loaded"
        )
