"""OAuth for streamable-HTTP MCP servers, against a real local authorization server: `mcp login`
driven by following the printed URL, refresh at startup without a prompt, and the advice."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import SocketAttribute
from mcp_harness import HttpServer

from magi_code.client import ErrorResponse, LocalAgentClient, environment
from magi_code.mcp.limits import CALLBACK_BYTES
from magi_code.mcp.tool import mcp_tools
from magi_code.runner.startup import StartupError, admit

NAME = "web"


def mcp(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "magi_code.cli", "mcp", *args],
        capture_output=True,
        text=True,
        cwd=home.parent,
        env=environment(home),
        timeout=60,
        check=False,
    )


def login(home: Path) -> str:
    """`magi-code mcp login`, with this test as the person: it follows the printed URL."""
    child = subprocess.Popen(
        [sys.executable, "-m", "magi_code.cli", "mcp", "login", NAME],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=home.parent,
        env=environment(home),
    )
    assert child.stderr is not None
    shown = []
    for line in child.stderr:
        shown.append(line)
        if line.startswith("http://"):
            break
    page = httpx2.get(shown[-1].strip(), follow_redirects=True, timeout=30)
    assert page.status_code == 200 and "sign-in received" in page.text
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert f"Signed in to '{NAME}' (5 tools)" in err
    return "".join(shown) + out + err


def stored(home: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads((home / "credentials.json").read_text())[f"mcp:{NAME}"]
    return state["mcp_oauth"]


def expire(home: Path) -> None:
    path = home / "credentials.json"
    data = json.loads(path.read_text())
    data[f"mcp:{NAME}"]["mcp_oauth"]["expires_at"] = 1.0
    path.write_text(json.dumps(data))


@pytest.fixture
def home(tmp_path: Path, oauth_server: HttpServer) -> Path:
    """MC_HOME with the OAuth server added and approved through the commands."""
    home = tmp_path / "home"
    assert mcp(home, "add", NAME, "--url", oauth_server.url).returncode == 0
    assert mcp(home, "approve", NAME).returncode == 0
    return home


def test_login_stores_tokens_0600_and_prints_none(home: Path, oauth_server: HttpServer) -> None:
    shown = login(home)
    state = stored(home)
    assert state["url"] == oauth_server.url
    assert state["tokens"]["access_token"] and state["tokens"]["refresh_token"]
    assert stat.S_IMODE(os.stat(home / "credentials.json").st_mode) == 0o600
    assert state["tokens"]["access_token"] not in shown
    assert state["tokens"]["refresh_token"] not in shown
    assert "GET /authorize" in oauth_server.requests()
    probe = mcp(home, "list", "--probe")
    assert probe.returncode == 0 and probe.stdout.split("\n")[1].split()[-1] == "5"
    logout = mcp(home, "logout", NAME)
    assert logout.returncode == 0 and "Signed out" in logout.stderr
    assert f"mcp:{NAME}" not in json.loads((home / "credentials.json").read_text())
    login(home)
    removed = mcp(home, "remove", NAME)
    assert removed.returncode == 0 and "and its stored sign-in" in removed.stderr
    assert f"mcp:{NAME}" not in json.loads((home / "credentials.json").read_text())


def test_startup_refreshes_an_expired_token_without_a_prompt(
    home: Path, oauth_server: HttpServer
) -> None:
    login(home)
    old = stored(home)["tokens"]["access_token"]
    expire(home)
    before = len(oauth_server.requests())
    admitted = admit(str(home.parent), environment(home))
    try:
        assert admitted.mcp is not None and "mcp__web__echo" in mcp_tools(admitted.mcp)
    finally:
        admitted.mcp.close()
    since = oauth_server.requests()[before:]
    assert since[0] == "POST /token refresh_token"
    assert "GET /authorize" not in since
    assert stored(home)["tokens"]["access_token"] != old
    assert stored(home)["expires_at"] > 1.0


def test_a_revoked_refresh_token_fails_startup_with_the_login_advice(
    home: Path, oauth_server: HttpServer
) -> None:
    login(home)
    assert httpx2.post(f"{oauth_server.base}/test/revoke").status_code == 204
    expire(home)
    before = len(oauth_server.requests())
    with pytest.raises(StartupError) as caught:
        admit(str(home.parent), environment(home))
    assert caught.value.code == "mcp_unavailable"
    assert caught.value.detail is not None
    assert f"magi-code mcp login {NAME}" in caught.value.detail
    since = oauth_server.requests()[before:]
    assert "POST /token refresh_token" in since and "GET /authorize" not in since
    with LocalAgentClient.spawn(cwd=home.parent, env=environment(home)) as agent:
        with pytest.raises(ErrorResponse) as refused:
            agent.request("initialize", {"required_capabilities": []})
        assert refused.value.code == "mcp_unavailable"
    code = (
        "from magi_code.runner.startup import StartupError, admit\n"
        "import os\n"
        "try:\n    admit(os.getcwd(), dict(os.environ))\n"
        "except StartupError as failed:\n    print(failed.code)\n"
    )
    quiet = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=home.parent,
        env=environment(home),
        timeout=60,
        check=False,
    )
    assert quiet.stdout == "mcp_unavailable\n"
    assert quiet.stderr == ""  # the SDK's logs (a token endpoint's answer) never reach stderr


def test_a_server_never_logged_in_to_needs_a_login(home: Path, oauth_server: HttpServer) -> None:
    with pytest.raises(StartupError) as caught:
        admit(str(home.parent), environment(home))
    assert caught.value.code == "mcp_unavailable"
    assert f"magi-code mcp login {NAME}" in (caught.value.detail or "")
    assert "POST /register" not in oauth_server.requests()  # startup registers nothing
    primary, secondary = os.openpty()  # Mission Control says what to run, on a terminal
    try:
        terminal = subprocess.run(
            [sys.executable, "-m", "magi_code.cli", "--prompt", "hello"],
            stdin=secondary,
            stdout=secondary,
            stderr=subprocess.PIPE,
            text=True,
            cwd=home.parent,
            env=environment(home),
            timeout=60,
            check=False,
        )
    finally:
        os.close(primary)
        os.close(secondary)
    assert terminal.returncode == 1
    assert terminal.stderr == (
        "magi-code: startup failed: mcp_unavailable "
        f"(MCP server '{NAME}' needs a login: run `magi-code mcp login {NAME}`)\n"
    )
    logout = mcp(home, "logout", NAME)
    assert logout.returncode == 0 and "No sign-in stored" in logout.stderr


def test_a_stored_login_is_bound_to_its_url(tmp_path: Path) -> None:
    from mcp.shared.auth import OAuthToken

    from magi_code.config.credentials import CredentialStore
    from magi_code.mcp.oauth import CredentialTokenStorage, startup_auth

    store = CredentialStore(tmp_path)
    mine = CredentialTokenStorage(store, NAME, "https://a.example/mcp")
    token = OAuthToken(access_token="at", refresh_token="rt", expires_in=60)
    anyio.run(mine.set_tokens, token)
    assert anyio.run(mine.get_tokens) is not None and mine.has_tokens()
    elsewhere = CredentialTokenStorage(store, NAME, "https://b.example/mcp")
    assert anyio.run(elsewhere.get_tokens) is None and not elsewhere.has_tokens()
    assert startup_auth(store, NAME, "https://b.example/mcp", lambda: None) is None


def callback_request(target: str, size: int) -> bytes:
    """`GET target` padded with a header to exactly `size` bytes."""
    head = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: "
    pad = size - len(head) - 4
    return (head + "p" * pad + "\r\n\r\n").encode()


@pytest.mark.parametrize(
    ("size", "accepted"), [(CALLBACK_BYTES, True), (CALLBACK_BYTES + 1, False)]
)
def test_the_loopback_listener_takes_one_bounded_callback(
    tmp_path: Path, size: int, accepted: bool
) -> None:
    from magi_code.config.credentials import CredentialStore
    from magi_code.mcp.oauth import LoginFlow

    flow = LoginFlow(CredentialStore(tmp_path), NAME, "https://a.example/mcp", lambda url: None)

    async def go() -> list[bytes]:
        answers = []
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(SocketAttribute.local_port)
        async with anyio.create_task_group() as group:
            group.start_soon(flow.serve, listener)
            for request in (
                b"POST /callback?code=c HTTP/1.1\r\n\r\n",
                b"GET /elsewhere?code=c HTTP/1.1\r\n\r\n",
                callback_request("/callback?code=the-code&state=s", size),
            ):
                async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                    await stream.send(request)
                    answers.append(await stream.receive())
            group.cancel_scope.cancel()
        return answers

    answers = anyio.run(go)
    assert [a.split(b"\r\n")[0] for a in answers[:2]] == [b"HTTP/1.1 404 Not Found"] * 2
    if accepted:
        assert answers[2].startswith(b"HTTP/1.1 200 OK")
        assert flow.result is not None and flow.result.code == "the-code"
        assert flow.result.state == "s"
    else:
        assert answers[2].startswith(b"HTTP/1.1 404") and flow.result is None


def test_startup_restores_the_token_endpoint_and_the_expiry_the_sdk_keeps_in_memory(
    tmp_path: Path,
) -> None:
    """A refresh at startup must go to the authorization server found at login, which may be
    another origin than the MCP server's (the SDK would otherwise guess `<server>/token`)."""
    from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken

    from magi_code.config.credentials import CredentialStore
    from magi_code.mcp.oauth import CredentialTokenStorage, startup_auth

    store = CredentialStore(tmp_path)
    storage = CredentialTokenStorage(store, NAME, "https://mcp.example/mcp")
    anyio.run(storage.set_tokens, OAuthToken(access_token="a", refresh_token="r", expires_in=-5))
    anyio.run(storage.set_client_info, OAuthClientInformationFull(client_id="magi"))
    storage.set_metadata(
        OAuthMetadata.model_validate(
            {
                "issuer": "https://auth.example",
                "authorization_endpoint": "https://auth.example/oauth/authorize",
                "token_endpoint": "https://auth.example/oauth/token",
            }
        )
    )
    provider = startup_auth(store, NAME, "https://mcp.example/mcp", lambda: None)
    assert provider is not None
    anyio.run(provider._initialize)
    metadata = provider.context.oauth_metadata
    assert metadata is not None
    assert str(metadata.token_endpoint) == "https://auth.example/oauth/token"
    assert not provider.context.is_token_valid()  # expired: refreshed before any use
    assert provider.context.can_refresh_token()
