"""`magi-code login`, `logout` and `models`: the command-line edges of credentials and
discovery. The lead's CLI routes argv here.

Secrets are read from stdin (without echo on a terminal) and go only to the credential store;
nothing here prints a key or a token. Exit codes: 0 done, 1 failed, 2 usage.
"""

import argparse
import getpass
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import anyio

from magi_code.config.credentials import CredentialsError, CredentialStore, OAuthTokens
from magi_code.providers.base import ProviderError
from magi_code.providers.catalog import build_catalog
from magi_code.providers.codex import (
    DEFAULT_CLIENT_ID,
    DEFAULT_TOKEN_URL,
    account_id_from_id_token,
)
from magi_code.providers.http import HttpPolicy, control_request
from magi_code.providers.limits import DEVICE_LOGIN_S, DEVICE_POLL_MIN_S

DEFAULT_DEVICE_URL = "https://auth.openai.com/oauth/device/code"
_DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    try:
        return parser.parse_args(argv)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 2


def login(argv: list[str], mc_home: Path) -> int:
    parser = _Parser(prog="magi-code login")
    parser.add_argument("provider")
    parser.add_argument("--api-key-stdin", action="store_true", help="read the key from stdin")
    parser.add_argument("--chatgpt", action="store_true", help="ChatGPT sign-in (Codex)")
    parser.add_argument("--device-url", default=DEFAULT_DEVICE_URL)
    parser.add_argument("--token-url", default=None)
    parser.add_argument("--client-id", default=None)
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args
    store = CredentialStore(mc_home)
    if args.chatgpt or args.provider == "codex":
        return anyio.run(_device_login, args, store)
    key = _read_key(args.provider, args.api_key_stdin)
    if not key:
        print("magi-code login: no API key given", file=sys.stderr)
        return 1
    try:
        store.set_api_key(args.provider, key)
    except (CredentialsError, OSError):
        print("magi-code login: could not write the credential store", file=sys.stderr)
        return 1
    print(f"Stored an API key for {args.provider}.", file=sys.stderr)
    return 0


def _read_key(provider: str, from_stdin: bool) -> str:
    if not from_stdin and sys.stdin.isatty():
        return getpass.getpass(f"API key for {provider}: ").strip()
    return sys.stdin.readline().strip()


async def _device_login(args: argparse.Namespace, store: CredentialStore) -> int:
    """OAuth 2.0 device authorization (RFC 8628) with configurable endpoints."""
    client_id = args.client_id or DEFAULT_CLIENT_ID
    token_url = args.token_url or DEFAULT_TOKEN_URL
    policy = HttpPolicy()
    try:
        start = await control_request(
            "POST",
            args.device_url,
            policy,
            form={"client_id": client_id, "scope": "openid profile email offline_access"},
        )
        grant = _json(start.body.text) if start.status == 200 and start.body.complete else {}
        device_code, user_code = grant.get("device_code"), grant.get("user_code")
        uri = grant.get("verification_uri_complete", grant.get("verification_uri"))
        if not isinstance(device_code, str) or not isinstance(user_code, str):
            print("magi-code login: sign-in could not start", file=sys.stderr)
            return 1
        print(f"Open {uri} and enter the code {user_code}", file=sys.stderr)
        interval = _number(grant.get("interval"), 5.0)
        deadline = time.monotonic() + min(_number(grant.get("expires_in"), 900.0), DEVICE_LOGIN_S)
        form = {"grant_type": _DEVICE_GRANT, "device_code": device_code, "client_id": client_id}
        while time.monotonic() < deadline:
            await anyio.sleep(max(interval, DEVICE_POLL_MIN_S))
            answer = await control_request("POST", token_url, policy, form=form)
            body = _json(answer.body.text) if answer.body.complete else {}
            if answer.status == 200 and isinstance(body.get("access_token"), str):
                store.set_oauth(args.provider, _tokens(body))
                print(f"Signed in for {args.provider}.", file=sys.stderr)
                return 0
            error = body.get("error")
            if error == "slow_down":
                interval += 5.0
            elif error != "authorization_pending":
                break
    except ProviderError:
        pass
    except (CredentialsError, OSError):
        print("magi-code login: could not write the credential store", file=sys.stderr)
        return 1
    print("magi-code login: sign-in failed", file=sys.stderr)
    return 1


def _tokens(body: Mapping[str, object]) -> OAuthTokens:
    access, refresh = body.get("access_token"), body.get("refresh_token")
    lifetime = _number(body.get("expires_in"), 3600.0)
    return OAuthTokens(
        access if isinstance(access, str) else "",
        refresh if isinstance(refresh, str) else "",
        time.time() + lifetime,
        account_id_from_id_token(body.get("id_token")),
    )


def _json(text: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _number(value: object, default: float) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok else default  # type: ignore[arg-type]


def logout(argv: list[str], mc_home: Path) -> int:
    parser = _Parser(prog="magi-code logout")
    parser.add_argument("provider")
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args
    try:
        removed = CredentialStore(mc_home).remove(args.provider)
    except (CredentialsError, OSError):
        print("magi-code logout: could not update the credential store", file=sys.stderr)
        return 1
    said = "Removed the credentials" if removed else "No credentials were stored"
    print(f"{said} for {args.provider}.", file=sys.stderr)
    return 0


def models(argv: list[str], mc_home: Path, settings: Mapping[str, object]) -> int:
    parser = _Parser(prog="magi-code models")
    parser.add_argument("--refresh", action="store_true", help="bypass the discovery cache")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args

    raw = settings.get("providers", {})
    providers = {
        str(k): v for k, v in (raw.items() if isinstance(raw, dict) else []) if isinstance(v, dict)
    }
    store = CredentialStore(mc_home)
    env = dict(os.environ)
    catalog = anyio.run(lambda: build_catalog(providers, mc_home, store, env, refresh=args.refresh))
    if args.json:
        print(json.dumps(catalog.as_json(), ensure_ascii=False))
    else:
        for card in catalog.cards:
            print(f"{card['provider']}/{card['model']}")
        for provider_id in catalog.failed:
            print(f"magi-code models: listing failed for {provider_id}", file=sys.stderr)
    return 0
