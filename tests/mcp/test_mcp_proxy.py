"""MCP over HTTP in a company network, through the real `magi-code exec`: the server (plain
http, so on loopback: definitions.py) is called through the proxy (proxy.py,
tests/providers/proxy_peer.py, which logs what it forwards) the environment or `[network] proxy`
names, its credentials in no output or session file; NO_PROXY sends it around the proxy. (A
https server only the proxy reaches goes through the same transport as the providers' tests
show for the provider client: providers/test_proxy.py.)"""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_harness import HttpServer

from magi_code.mcp.definitions import canonical_digest
from providers.proxy_peer import PASSWORD, CompanyProxy
from support.exec import exec_run, json_lines


@pytest.fixture(scope="module")
def company_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CompanyProxy]:
    with CompanyProxy(tmp_path_factory.mktemp("proxy")) as started:
        yield started


def call_echo(
    tmp_path: Path, url: str, network: str = "", **env: str
) -> tuple[list[dict[str, object]], subprocess.CompletedProcess[bytes]]:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    definition = {"url": url, "enabled": True}
    (home / "settings.toml").write_text(
        f'[mcp]\napproved = ["{canonical_digest("web", definition)}"]\n'
        f'[mcp.servers.web]\nurl = "{url}"\nenabled = true\n{network}'
    )
    rounds = [{"tools": [{"name": "mcp__web__echo", "arguments": {"text": "hello"}}]}]
    prompt = "fixture:" + json.dumps([*rounds, {"text": "done"}])
    done = exec_run(["--json", "--approval-mode", "full", prompt], workspace, home, **env)
    return json_lines(done.stdout), done


def echoed(events: list[dict[str, object]]) -> list[str]:
    return [
        str(event["data"]["state"])  # type: ignore[index]
        for event in events
        if event["event"] == "activity" and event["data"]["name"] == "mcp__web__echo"  # type: ignore[index]
    ]


@pytest.mark.parametrize("how", ["environment", "settings"])
def test_an_http_server_is_called_through_the_proxy(
    tmp_path: Path, http_server: HttpServer, company_proxy: CompanyProxy, how: str
) -> None:
    company_proxy.forget()
    url = http_server.url
    if how == "environment":
        events, done = call_echo(tmp_path, url, HTTP_PROXY=company_proxy.url())
    else:
        network = f'[network]\nproxy = "{company_proxy.url()}"\n'
        events, done = call_echo(tmp_path, url, network, HTTP_PROXY="http://127.0.0.1:9")
    assert done.returncode == 0, done.stderr.decode()
    assert echoed(events)[-1] == "completed"
    port = url.rsplit(":", 1)[1].split("/")[0]
    assert f"POST 127.0.0.1:{port}" in company_proxy.seen()
    assert "POST /mcp" in http_server.requests()
    for path in (tmp_path / "home").rglob("*.jsonl"):
        assert PASSWORD.encode() not in path.read_bytes()
    assert PASSWORD.encode() not in done.stdout + done.stderr


def test_no_proxy_sends_the_server_around_the_proxy(
    tmp_path: Path, http_server: HttpServer, company_proxy: CompanyProxy
) -> None:
    company_proxy.forget()
    events, done = call_echo(
        tmp_path, http_server.url, HTTP_PROXY=company_proxy.url(), NO_PROXY="127.0.0.1"
    )
    assert done.returncode == 0, done.stderr.decode()
    assert echoed(events)[-1] == "completed"
    assert company_proxy.seen() == []
