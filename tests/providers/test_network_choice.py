"""Which proxy each URL goes through (providers/network.py, sans-I/O): the environment's
variables in their order, the global `[network] proxy` over them, every NO_PROXY form, a
proxy URL's credentials kept out of sight; and `[network]` as a global-only setting whose
values startup checks."""

from collections.abc import Mapping
from pathlib import Path

import pytest

from magi_code.config import settings
from magi_code.config.settings import SettingsError
from magi_code.providers.network import Network, NetworkFailure, bypassed, configure, parse_proxy

A, B, C = "http://a.corp:3128", "http://b.corp:3128", "http://c.corp:3128"


def proxy_host(
    env: dict[str, str], scheme: str = "https", table: Mapping[str, object] | None = None
) -> tuple[str, str] | None:
    proxy = Network(table or {}, env).proxy_for(scheme, "api.example.com", 443)
    return None if proxy is None else (proxy.host, proxy.setting)


def test_each_scheme_reads_its_variables_in_order_the_lower_case_first() -> None:
    assert proxy_host({"HTTPS_PROXY": A, "https_proxy": B}) == ("b.corp", "https_proxy")
    assert proxy_host({"HTTPS_PROXY": A, "ALL_PROXY": B}) == ("a.corp", "HTTPS_PROXY")
    assert proxy_host({"ALL_PROXY": A, "all_proxy": B}) == ("b.corp", "all_proxy")
    assert proxy_host({"HTTP_PROXY": A}) is None  # an https URL never takes the http proxy
    assert proxy_host({"HTTP_PROXY": A}, "http") == ("a.corp", "HTTP_PROXY")
    assert proxy_host({"HTTPS_PROXY": A}, "http") is None
    assert proxy_host({"ALL_PROXY": C}, "http") == ("c.corp", "ALL_PROXY")
    assert proxy_host({"HTTPS_PROXY": ""}) is None  # set but empty: none
    # A CGI script's HTTP_PROXY may come from a request's `Proxy:` header (httpoxy).
    assert proxy_host({"HTTP_PROXY": A, "REQUEST_METHOD": "GET"}, "http") is None
    assert proxy_host({"http_proxy": A, "REQUEST_METHOD": "GET"}, "http") == (
        "a.corp",
        "http_proxy",
    )


def test_the_network_setting_is_over_the_environment_and_empty_turns_proxies_off() -> None:
    env = {"HTTPS_PROXY": A, "HTTP_PROXY": A}
    over = {"proxy": C}
    assert proxy_host(env, "https", over) == ("c.corp", "[network] proxy")
    assert proxy_host(env, "http", over) == ("c.corp", "[network] proxy")
    assert proxy_host(env, "https", {"proxy": ""}) is None
    # NO_PROXY holds for the setting's proxy too.
    assert proxy_host({"NO_PROXY": "example.com"}, "https", over) is None


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "direct"),
    [
        ("*", "api.example.com", 443, True),
        ("localhost, *", "api.example.com", 443, True),
        ("example.com", "example.com", 443, True),
        ("example.com", "api.example.com", 443, True),
        ("example.com", "badexample.com", 443, False),
        (".example.com", "api.example.com", 443, True),
        (".example.com", "example.com", 443, True),
        ("*.example.com", "api.example.com", 443, True),
        ("EXAMPLE.com.", "Api.Example.COM", 443, True),
        ("api.example.com", "example.com", 443, False),
        ("example.com:8443", "api.example.com", 8443, True),
        ("example.com:8443", "api.example.com", 443, False),
        ("10.0.0.0/8", "10.20.30.40", 443, True),
        ("10.0.0.0/8", "11.0.0.1", 443, False),
        ("10.0.0.0/8", "ten.example.com", 443, False),  # names are never resolved
        ("10.0.0.0/8:443", "10.1.1.1", 443, True),
        ("10.0.0.0/8:443", "10.1.1.1", 80, False),
        ("192.168.1.5", "192.168.1.5", 443, True),
        ("192.168.1.5", "192.168.1.50", 443, False),
        ("fd00::/8", "fd12::1", 443, True),
        ("fd00::/8", "fe80::1", 443, False),
        ("::1", "0:0:0:0:0:0:0:1", 443, True),  # addresses compare as addresses
        ("[::1]", "::1", 443, True),
        ("[::1]:8080", "::1", 8080, True),
        ("[::1]:8080", "::1", 443, False),
        ("127.0.0.1", "localhost", 443, False),
        ("localhost", "127.0.0.1", 443, False),
        ("host:notaport,, ,", "host", 443, False),  # unusable entries say nothing
        ("", "api.example.com", 443, False),
        ("a.test b.test", "b.test", 443, True),  # spaces separate too
    ],
)
def test_no_proxy_forms(no_proxy: str, host: str, port: int, direct: bool) -> None:
    assert bypassed(no_proxy, host, port) is direct
    env = {"HTTPS_PROXY": A, "no_proxy": no_proxy}
    assert (Network({}, env).proxy_for("https", host, port) is None) is direct
    if no_proxy:  # the lower-case name first
        env["NO_PROXY"] = "*"
        assert (Network({}, env).proxy_for("https", host, port) is None) is direct


def test_a_proxy_url_becomes_its_address_and_basic_credentials_kept_out_of_sight() -> None:
    proxy = parse_proxy("http://us%40er:p%3Ass@proxy.corp:3128", "HTTPS_PROXY")
    assert proxy is not None
    assert (proxy.scheme, proxy.host, proxy.port) == ("http", "proxy.corp", 3128)
    assert proxy.authorization == "Basic dXNAZXI6cDpzcw=="  # base64("us@er:p:ss")
    assert "p%3Ass" not in repr(proxy) and "dXNAZXI" not in repr(proxy)
    bare = parse_proxy("proxy.corp:8080", "ALL_PROXY")
    assert bare is not None and (bare.scheme, bare.port, bare.authorization) == ("http", 8080, None)
    secure = parse_proxy("https://proxy.corp", SETTING := "[network] proxy")
    assert secure is not None and (secure.scheme, secure.port, secure.setting) == (
        "https",
        443,
        SETTING,
    )
    for unusable in ("socks5://proxy.corp:1080", "http://", "http://proxy.corp:99999", "://x"):
        assert parse_proxy(unusable, "ALL_PROXY") is None


def test_an_unusable_environment_proxy_fails_the_request_naming_its_variable() -> None:
    network = Network({}, {"ALL_PROXY": "socks5://user:hunter2@proxy.corp:1080"})
    with pytest.raises(NetworkFailure) as failure:
        network.proxy_for("https", "api.example.com", 443)
    assert failure.value.summary.startswith("ALL_PROXY names no http:// or https:// proxy")
    assert not failure.value.retryable
    assert "hunter2" not in failure.value.summary and "socks5" not in failure.value.summary
    # ...but only when a request would use it.
    assert (
        Network({}, {"ALL_PROXY": "socks5://p", "NO_PROXY": "*"}).proxy_for("https", "h", 1) is None
    )


def test_the_certificates_come_from_the_environment_and_the_setting(tmp_path: Path) -> None:
    table = {"ca_bundle": "~/company.pem", "client_cert": "/c.pem", "client_key": "/c.key"}
    env = {"SSL_CERT_FILE": "/etc/company/roots.pem", "SSL_CERT_DIR": ""}
    chosen = Network(table, env).certificates
    assert chosen.ca_file == "/etc/company/roots.pem" and chosen.ca_dir is None
    assert chosen.ca_bundle is not None and chosen.ca_bundle.endswith("/company.pem")
    assert not chosen.ca_bundle.startswith("~")
    assert (chosen.client_cert, chosen.client_key) == ("/c.pem", "/c.key")
    assert chosen == Network(table, env).certificates  # equal choices share one context


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"proxy": "socks5://proxy.corp:1080"}, "network.proxy must be an http:// or https://"),
        ({"proxy": "http://"}, "network.proxy must be an http:// or https://"),
        ({"ca_bundle": "company.pem"}, "network.ca_bundle must be an absolute path"),
        ({"ca_bundle": "/nowhere/company.pem"}, "network.ca_bundle names no file"),
        ({"client_cert": "/nowhere/me.pem"}, "network.client_cert names no file"),
        ({"client_key": "/etc/hostname"}, "network.client_key needs network.client_cert"),
    ],
)
def test_startup_refuses_a_network_table_naming_the_key(
    table: dict[str, object], says: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        configure(table, {})
    assert str(refused.value).startswith(says)
    assert "socks5" not in str(refused.value) and "nowhere" not in str(refused.value)


def test_configure_makes_the_choice_the_process_goes_by() -> None:
    from magi_code.providers import network

    configure({"proxy": "http://proxy.corp:3128"}, {"HTTPS_PROXY": A})
    chosen = network.current().proxy_for("https", "api.example.com", 443)
    assert chosen is not None and chosen.host == "proxy.corp"


def test_a_project_file_never_sets_network_trusted_or_not(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (workspace / ".magi-code").mkdir(parents=True)
    home.mkdir()
    (home / "settings.toml").write_text(
        f'[permissions]\ntrusted_projects = ["{workspace}"]\n[network]\nproxy = "{A}"\n'
    )
    project = workspace / ".magi-code" / "settings.toml"
    project.write_text('[network]\nproxy = "http://attacker.example:8080"\nca_bundle = "/x"\n')
    for trusted in (True, False):
        loaded = settings.load_layers(str(home / "settings.toml"), str(project), may_trust=trusted)
        assert loaded.trusted is trusted
        assert loaded.settings["network"] == {"proxy": A}
        (dropped,) = loaded.dropped
        assert dropped.key == "network" and not dropped.needs_trust
        assert dropped.warning().endswith("(only global settings may)")


def test_a_network_value_of_the_wrong_type_is_refused_naming_its_key(tmp_path: Path) -> None:
    (tmp_path / "settings.toml").write_text("[network]\nca_bundle = 3\n")
    with pytest.raises(SettingsError) as refused:
        settings.load_layers(str(tmp_path / "settings.toml"), str(tmp_path / "p.toml"))
    assert "network.ca_bundle must be a string" in str(refused.value)
