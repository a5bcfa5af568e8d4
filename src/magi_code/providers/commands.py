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
from collections.abc import Collection, Mapping
from pathlib import Path

import anyio

from magi_code.config.credentials import CredentialsError, CredentialStore
from magi_code.providers.catalog import build_catalog
from magi_code.providers.clients import closing
from magi_code.providers.signin import DEFAULT_CALLBACK_PORT, Endpoints, SignInFailed, sign_in


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    try:
        return parser.parse_args(argv)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 2


def login(argv: list[str], mc_home: Path, known: Collection[str] | None = None) -> int:
    """Store a credential for a provider `known` lists (global settings and presets): a name
    only a project defines must never receive one."""
    parser = _Parser(prog="magi-code login")
    parser.add_argument("provider")
    parser.add_argument("--api-key-stdin", action="store_true", help="read the key from stdin")
    parser.add_argument("--chatgpt", action="store_true", help="ChatGPT sign-in (Codex)")
    parser.add_argument("--device", action="store_true", help="sign in with a device code")
    parser.add_argument("--no-browser", action="store_true", help="only print the sign-in URL")
    parser.add_argument("--callback-port", type=int, default=DEFAULT_CALLBACK_PORT)
    defaults = Endpoints()
    parser.add_argument("--authorize-url", default=defaults.authorize_url)
    parser.add_argument("--device-url", default=defaults.device_url)
    parser.add_argument("--token-url", default=defaults.token_url)
    parser.add_argument("--client-id", default=defaults.client_id)
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args
    if known is not None and args.provider not in known:
        print(
            "magi-code login: no such provider in the global settings or presets",
            file=sys.stderr,
        )
        return 2
    store = CredentialStore(mc_home)
    if args.chatgpt or args.provider == "codex":
        return _sign_in(args, store)
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


def _sign_in(args: argparse.Namespace, store: CredentialStore) -> int:
    endpoints = Endpoints(args.client_id, args.token_url, args.authorize_url, args.device_url)
    try:
        tokens = anyio.run(
            lambda: closing(
                sign_in(
                    endpoints,
                    device=args.device,
                    port=args.callback_port,
                    open_browser=not args.no_browser,
                )
            )
        )
    except SignInFailed:
        print("magi-code login: sign-in failed", file=sys.stderr)
        return 1
    try:
        store.set_oauth(args.provider, tokens)
    except (CredentialsError, OSError):
        print("magi-code login: could not write the credential store", file=sys.stderr)
        return 1
    print(f"Signed in for {args.provider}.", file=sys.stderr)
    return 0


def _read_key(provider: str, from_stdin: bool) -> str:
    if not from_stdin and sys.stdin.isatty():
        return getpass.getpass(f"API key for {provider}: ").strip()
    return sys.stdin.readline().strip()


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


def models(
    argv: list[str],
    mc_home: Path,
    settings: Mapping[str, object],
    sent_to: Mapping[str, Mapping[str, object]],  # where credentials may go
) -> int:
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
    catalog = anyio.run(
        lambda: closing(
            build_catalog(providers, mc_home, store, env, refresh=args.refresh, sent_to=sent_to)
        )
    )
    if args.json:
        print(json.dumps(catalog.as_json(), ensure_ascii=False))
    else:
        for card in catalog.cards:
            print(f"{card['provider']}/{card['model']}")
        for provider_id in catalog.failed:
            print(f"magi-code models: listing failed for {provider_id}", file=sys.stderr)
    return 0
