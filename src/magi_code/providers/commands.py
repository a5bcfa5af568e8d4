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
from collections.abc import Mapping
from pathlib import Path

import anyio

from magi_code.arguments import Parser, UsageError, refused
from magi_code.config.credentials import CredentialsError, CredentialStore
from magi_code.config.settings import DEFAULTS
from magi_code.providers.catalog import build_catalog
from magi_code.providers.client import closing
from magi_code.providers.registry import LOOPBACK
from magi_code.providers.signin import DEFAULT_CALLBACK_PORT, Endpoints, SignInFailed, sign_in

SHOWN_CHARS = 60  # a provider name or URL from the settings, as listed


def login(
    argv: list[str], mc_home: Path, known: Mapping[str, Mapping[str, object]] | None = None
) -> int:
    """Store a credential for a provider `known` lists (global settings and presets): a name
    only a project defines must never receive one. Without a NAME, list those providers."""
    parser = Parser(
        "magi-code login",
        usage="magi-code login [NAME] [OPTIONS]",
        description="Store an API key for provider NAME (read without echo, or from stdin), "
        "or sign in\n(codex: ChatGPT, in a browser). Without NAME, list the providers.",
        stray="give one provider NAME",
    )
    parser.add_argument("provider", nargs="?", metavar="NAME", help="a provider to sign in to")
    parser.add_argument("--api-key-stdin", action="store_true", help="read the key from stdin")
    parser.add_argument("--chatgpt", action="store_true", help="ChatGPT sign-in (Codex)")
    parser.add_argument("--device", action="store_true", help="sign in with a device code")
    parser.add_argument("--no-browser", action="store_true", help="only print the sign-in URL")
    parser.add_argument(
        "--callback-port",
        type=int,
        default=DEFAULT_CALLBACK_PORT,
        metavar="PORT",
        help=f"where the browser comes back to (default {DEFAULT_CALLBACK_PORT})",
    )
    defaults = Endpoints()
    endpoints = parser.add_argument_group("sign-in endpoints (a local server may stand in)")
    endpoints.add_argument("--authorize-url", default=defaults.authorize_url, metavar="URL")
    endpoints.add_argument("--device-url", default=defaults.device_url, metavar="URL")
    endpoints.add_argument("--token-url", default=defaults.token_url, metavar="URL")
    endpoints.add_argument("--client-id", default=defaults.client_id, metavar="ID")
    try:
        args = parser.parse(argv)
    except UsageError as bad:
        return refused(bad)
    if args is None:
        return 0
    if args.provider is None:
        print(listing(DEFAULTS["providers"] if known is None else known))
        return 0
    if known is not None and args.provider not in known:
        print(
            "magi-code login: no such provider in the global settings or presets: "
            "`magi-code login` lists them",
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


def listing(providers: Mapping[str, object]) -> str:
    """The providers `login` takes, each with what signing in to it asks for."""
    rows = [
        f"  {shown(name):<12}{how_to_sign_in(conf)}"
        + ("" if name in DEFAULTS["providers"] else " (your settings)")
        for name, conf in providers.items()
        if isinstance(conf, Mapping) and conf.get("wire_api", "fixture") != "fixture"
    ]
    return "\n".join(
        [
            "Providers (magi-code login NAME):",
            *rows,
            'Then choose one: `magi-code --provider NAME`, or `provider = "NAME"` in the settings.',
        ]
    )


def how_to_sign_in(conf: Mapping[str, object]) -> str:
    url, variable = conf.get("base_url"), conf.get("api_key_env")
    if conf.get("wire_api") == "codex":
        return "ChatGPT sign-in, in a browser (--device: with a code instead)"
    if isinstance(url, str) and url.partition("://")[2].startswith(LOOPBACK):
        return f"no key needed: a server on this machine, {shown(url)}"
    return "an API key" + (
        f", or ${shown(variable)} in the environment" if isinstance(variable, str) else ""
    )


def shown(text: str) -> str:
    """A name or URL from the settings as it may appear on a terminal."""
    return text if text.isprintable() and len(text) <= SHOWN_CHARS else ascii(text[:SHOWN_CHARS])


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
    """The key typed (without echo) or piped; "" at Ctrl-D."""
    if not from_stdin and sys.stdin.isatty():
        try:
            return getpass.getpass(f"API key for {provider}: ").strip()
        except EOFError:  # Ctrl-D: nothing given
            print(file=sys.stderr)
            return ""
    return sys.stdin.readline().strip()


def logout(argv: list[str], mc_home: Path) -> int:
    parser = Parser(
        "magi-code logout",
        description="Forget the credentials stored for provider NAME.",
        stray="give one provider NAME",
    )
    parser.add_argument("provider", metavar="NAME", help="the provider")
    try:
        args = parser.parse(argv)
    except UsageError as bad:
        return refused(bad)
    if args is None:
        return 0
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
    parser = Parser(
        "magi-code models",
        description="List the models of the configured providers, as PROVIDER/MODEL.",
    )
    parser.add_argument("--refresh", action="store_true", help="bypass the discovery cache")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    try:
        args = parser.parse(argv)
    except UsageError as bad:
        return refused(bad)
    if args is None:
        return 0

    raw = settings.get("providers", {})
    providers = {
        str(k): v for k, v in (raw.items() if isinstance(raw, dict) else []) if isinstance(v, dict)
    }
    store = CredentialStore(mc_home)
    env = dict(os.environ)
    selected = settings.get("provider")
    catalog = anyio.run(
        lambda: closing(
            build_catalog(
                providers,
                mc_home,
                store,
                env,
                refresh=args.refresh,
                sent_to=sent_to,
                selected=selected if isinstance(selected, str) else None,
            )
        )
    )
    if args.json:
        print(json.dumps(catalog.as_json(), ensure_ascii=False))
    else:
        for card in catalog.cards:
            facts = card_facts(card)
            print(f"{card['provider']}/{card['model']}" + (f"  ({facts})" if facts else ""))
        for provider_id in catalog.failed:
            why = catalog.reasons.get(provider_id)
            said = f"listing failed for {provider_id}" + (f": {why}" if why else "")
            print(f"magi-code models: {said}", file=sys.stderr)
    return 0


def card_facts(card: Mapping[str, object]) -> str:
    """What the built-in catalog says of a listed model, for a person: default, context
    window, prices per million tokens, images (empty for a model it does not know)."""
    facts = []
    if card.get("default") is True:
        facts.append("default")
    window = card.get("context_window")
    if isinstance(window, int):
        facts.append(f"{window:,} tokens")
    prices = card.get("input"), card.get("output")
    if all(isinstance(p, int | float) for p in prices):
        facts.append(f"${prices[0]:g} in / ${prices[1]:g} out per 1M tokens")
    if card.get("images") is True:
        facts.append("images")
    return ", ".join(facts)
