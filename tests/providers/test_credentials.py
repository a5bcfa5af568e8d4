"""The credential store's modes and atomicity, login/logout through real subprocesses, and
local readiness."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from magi_code.config.credentials import CredentialStore, OAuthTokens
from magi_code.providers.codex import CodexProvider
from magi_code.providers.commands import login
from magi_code.providers.fixture import FixtureProvider
from magi_code.providers.openai_chat import OpenAIChatProvider
from magi_code.providers.openai_responses import OpenAIResponsesProvider
from magi_code.providers.registry import (
    WIRES,
    ConfigurationInvalid,
    build_provider,
    check_readiness,
)

SECRET = "sk-test-SECRET-0123456789"

# The user's own tables: each is also where its credential may go (`sent_to`).
OPENAI = {"wire_api": "openai-responses"}
CODEX = {"wire_api": "codex"}


def mode(path: str | Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_store_file_is_0600_in_a_0700_dir(tmp_path: Path) -> None:
    home = tmp_path / "mc"
    store = CredentialStore(home)
    store.set_api_key("openai", SECRET)
    assert mode(home) == 0o700
    assert mode(store.path) == 0o600
    assert store.api_key("openai") == SECRET
    store.set_oauth("codex", OAuthTokens("acc", "ref", 123.0, "acct"))
    assert mode(store.path) == 0o600
    assert [p.name for p in home.iterdir()] == ["credentials.json"]  # no temp file left
    assert store.oauth("codex") == OAuthTokens("acc", "ref", 123.0, "acct")


def test_existing_loose_dir_is_tightened(tmp_path: Path) -> None:
    home = tmp_path / "mc"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    CredentialStore(home).set_api_key("x", SECRET)
    assert mode(home) == 0o700


def test_secrets_never_in_repr(tmp_path: Path) -> None:
    tokens = OAuthTokens("ACCESS-SECRET", "REFRESH-SECRET", 1.0, "ACCOUNT")
    assert "SECRET" not in repr(tokens) and "ACCOUNT" not in repr(tokens)
    store = CredentialStore(tmp_path)
    store.set_api_key("openai", SECRET)
    provider = build_provider("openai", OPENAI, store, {}, sent_to=OPENAI)
    assert SECRET not in repr(provider)


def run_cli(
    fn: str, argv: list[str], home: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys; from pathlib import Path;"
        f"from magi_code.providers.commands import {fn};"
        f"sys.exit({fn}(sys.argv[1:], Path({str(home)!r})))"
    )
    env = {**os.environ, "HOME": str(home.parent), "MC_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_login_logout_round_trip(tmp_path: Path) -> None:
    home = tmp_path / "mc"
    done = run_cli("login", ["openai", "--api-key-stdin"], home, SECRET + "\n")
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert CredentialStore(home).api_key("openai") == SECRET
    assert mode(home / "credentials.json") == 0o600
    done = run_cli("logout", ["openai"], home)
    assert done.returncode == 0
    assert CredentialStore(home).api_key("openai") is None
    assert run_cli("logout", ["openai"], home).returncode == 0  # idempotent


def test_login_rejects_an_empty_key_and_bad_usage(tmp_path: Path) -> None:
    home = tmp_path / "mc"
    assert run_cli("login", ["openai", "--api-key-stdin"], home, "\n").returncode == 1
    assert not (home / "credentials.json").exists()
    assert run_cli("login", ["openai", "--bogus"], home).returncode == 2
    listed = run_cli("login", [], home)  # without a name: the providers, nothing stored
    assert listed.returncode == 0 and "openai" in listed.stdout
    assert not (home / "credentials.json").exists()


# ---- readiness and building -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("conf", "env", "stored", "expected"),
    [
        ({"wire_api": "openai-responses", "api_key_env": "K"}, {"K": "v"}, None, None),
        ({"wire_api": "openai-responses", "api_key_env": "K"}, {}, None, "provider_unavailable"),
        ({"wire_api": "openai-responses"}, {}, "stored-key", None),
        ({"wire_api": "anthropic"}, {}, None, "provider_unavailable"),
        ({"wire_api": "openai-chat", "base_url": "http://127.0.0.1:11434/v1"}, {}, None, None),
        ({"wire_api": "telepathy"}, {}, None, "configuration_invalid"),
        ({"wire_api": "openai-chat", "base_url": "ftp://x"}, {}, "k", "configuration_invalid"),
        ({"wire_api": "openai-chat", "api_key_env": 7}, {}, None, "configuration_invalid"),
        (
            {"wire_api": "openai-chat", "base_url": "http://h:99999/v1"},
            {},
            "k",
            "configuration_invalid",
        ),
        (
            {"wire_api": "openai-chat", "base_url": "http://exa mple/v1"},
            {},
            "k",
            "configuration_invalid",
        ),
        ({"wire_api": "openai-chat", "base_url": "https:///v1"}, {}, "k", "configuration_invalid"),
        ({"wire_api": "fixture"}, {}, None, None),
    ],
)
def test_check_readiness(
    tmp_path: Path,
    conf: dict[str, object],
    env: dict[str, str],
    stored: str | None,
    expected: str | None,
) -> None:
    store = CredentialStore(tmp_path)
    if stored:
        store.set_api_key("p", stored)
    assert check_readiness("p", conf, store, env, sent_to=conf) == expected


def test_fixture_id_is_always_ready(tmp_path: Path) -> None:
    assert check_readiness("fixture", {}, CredentialStore(tmp_path), {}, sent_to={}) is None


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (None, "provider_unavailable"),
        (OAuthTokens("a", "", 2000.0), None),  # unexpired
        (OAuthTokens("a", "", 500.0), "provider_unavailable"),  # expired, cannot refresh
        (OAuthTokens("a", "r", 500.0), None),  # expired, refreshable
    ],
)
def test_codex_readiness_is_local(
    tmp_path: Path, tokens: OAuthTokens | None, expected: str | None
) -> None:
    store = CredentialStore(tmp_path)
    if tokens:
        store.set_oauth("codex", tokens)
    assert check_readiness("codex", CODEX, store, {}, now=1000.0, sent_to=CODEX) == expected


def test_build_provider_picks_the_wire_api(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path)
    env = {"OPENAI_API_KEY": "from-env"}
    conf = {
        "wire_api": "openai-chat",
        "base_url": "http://127.0.0.1:1/v1",
        "api_key_env": "OPENAI_API_KEY",
    }
    chat = build_provider("local", conf, store, env, sent_to=conf)
    assert isinstance(chat, OpenAIChatProvider) and chat.api_key == "from-env"
    assert isinstance(
        build_provider("o", OPENAI, store, {}, sent_to=OPENAI), OpenAIResponsesProvider
    )
    codex_conf = {"wire_api": "codex", "token_url": "http://127.0.0.1:9/t"}
    codex = build_provider("codex", codex_conf, store, {}, sent_to=codex_conf)
    assert isinstance(codex, CodexProvider) and codex.auth.token_url == "http://127.0.0.1:9/t"
    for wire in ("anthropic", "openai-responses", "openai-chat", "codex", "fixture"):
        made = build_provider(wire, {"wire_api": wire}, store, {}, sent_to=None)
        assert type(made).__module__ == WIRES[wire].module  # one row of the table builds it
    assert isinstance(build_provider("fixture", {}, store, {}, sent_to=None), FixtureProvider)
    with pytest.raises(ConfigurationInvalid):
        build_provider("x", {"wire_api": "nope"}, store, {}, sent_to=None)


def test_credentials_file_is_json_with_no_extra_copies(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "mc")
    store.set_api_key("a", "one")
    store.set_api_key("b", "two")
    store.remove("a")
    data = json.loads(Path(store.path).read_text())
    assert data == {"b": {"api_key": "two"}}


def _id_token(account: str) -> str:
    import base64

    claims = {"https://api.openai.com/auth": {"chatgpt_account_id": account}}
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"e30.{payload}.sig"


def test_codex_device_sign_in_against_a_local_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from providers.local_server import LocalServer, Reply

    home = tmp_path / "mc"
    with LocalServer() as server:
        server.script(
            "/device",
            Reply.json(
                {
                    "device_code": "dev-1",
                    "user_code": "ABCD-1234",
                    "verification_uri": server.url + "/activate",
                    "interval": 0,
                    "expires_in": 60,
                }
            ),
        )
        server.script(
            "/token",
            Reply.json({"error": "authorization_pending"}, status=400),
            Reply.json(
                {
                    "access_token": "ACCESS-SECRET",
                    "refresh_token": "REFRESH-SECRET",
                    "expires_in": 600,
                    "id_token": _id_token("acct-9"),
                }
            ),
        )
        argv = [
            "codex",
            "--device",
            "--device-url",
            server.url + "/device",
            "--token-url",
            server.url + "/token",
            "--client-id",
            "cid",
        ]
        assert login(argv, home) == 0
        out = capsys.readouterr()
        assert "ABCD-1234" in out.err and "SECRET" not in out.out + out.err
        polls = [r for r in server.requests if r.path == "/token"]
        assert len(polls) == 2
        assert b"device_code=dev-1" in polls[0].body and b"client_id=cid" in polls[0].body
    tokens = CredentialStore(home).oauth("codex")
    assert tokens is not None
    assert (tokens.access_token, tokens.refresh_token, tokens.account_id) == (
        "ACCESS-SECRET",
        "REFRESH-SECRET",
        "acct-9",
    )
    assert mode(home / "credentials.json") == 0o600
    assert check_readiness("codex", CODEX, CredentialStore(home), {}, sent_to=CODEX) is None


def test_codex_device_sign_in_denied(tmp_path: Path) -> None:
    from providers.local_server import LocalServer, Reply

    home = tmp_path / "mc"
    with LocalServer() as server:
        server.script("/device", Reply.json({"device_code": "d", "user_code": "U", "interval": 0}))
        server.script("/token", Reply.json({"error": "access_denied"}, status=400))
        argv = [
            "codex",
            "--device",
            "--device-url",
            server.url + "/device",
            "--token-url",
            server.url + "/token",
        ]
        assert login(argv, home) == 1
    assert CredentialStore(home).oauth("codex") is None


def _browser_login(home: Path, token_url: str) -> subprocess.Popen[str]:
    code = (
        "import sys; from pathlib import Path;"
        "from magi_code.providers.commands import login;"
        f"sys.exit(login(sys.argv[1:], Path({str(home)!r})))"
    )
    argv = [
        "codex",
        "--no-browser",
        "--callback-port",
        "0",
        "--client-id",
        "cid",
        "--authorize-url",
        "https://auth.invalid/authorize",
        "--token-url",
        token_url,
    ]
    env = {**os.environ, "HOME": str(home.parent)}
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def _get(url: str) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return refused.code


def test_codex_browser_sign_in_with_pkce(tmp_path: Path) -> None:
    import base64
    import hashlib
    from urllib.parse import parse_qs, urlencode, urlsplit

    from providers.local_server import LocalServer, Reply

    home = tmp_path / "mc"
    with LocalServer() as server:
        server.script(
            "/token",
            Reply.json({"access_token": "A-SECRET", "refresh_token": "R", "expires_in": 60}),
        )
        proc = _browser_login(home, server.url + "/token")
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("Sign in at: https://auth.invalid/authorize?"), line
        query = parse_qs(urlsplit(line.split(": ", 1)[1].strip()).query)
        redirect, state = query["redirect_uri"][0], query["state"][0]
        assert redirect.startswith("http://localhost:") and redirect.endswith("/auth/callback")
        assert query["code_challenge_method"] == ["S256"] and query["client_id"] == ["cid"]
        callback = redirect.replace("localhost", "127.0.0.1")
        assert _get(callback + "?" + urlencode({"code": "c1", "state": "forged"})) == 400
        assert _get(callback + "?" + urlencode({"code": "c1", "state": state})) == 200
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "SECRET" not in out + err + line
        form = parse_qs(server.requests[0].body.decode())
        assert form["grant_type"] == ["authorization_code"] and form["code"] == ["c1"]
        assert form["redirect_uri"] == [redirect]
        digest = hashlib.sha256(form["code_verifier"][0].encode()).digest()
        assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == query["code_challenge"][0]
    tokens = CredentialStore(home).oauth("codex")
    assert tokens is not None and tokens.access_token == "A-SECRET"


def test_codex_browser_sign_in_refused(tmp_path: Path) -> None:
    from urllib.parse import parse_qs, urlencode, urlsplit

    home = tmp_path / "mc"
    proc = _browser_login(home, "http://127.0.0.1:9/token")
    assert proc.stderr is not None
    line = proc.stderr.readline()
    query = parse_qs(urlsplit(line.split(": ", 1)[1].strip()).query)
    callback = query["redirect_uri"][0].replace("localhost", "127.0.0.1")
    params = urlencode({"error": "access_denied", "state": query["state"][0]})
    assert _get(f"{callback}?{params}") == 400
    proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert not (home / "credentials.json").exists()
