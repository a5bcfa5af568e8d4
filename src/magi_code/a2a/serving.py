"""What `magi-code a2a serve` takes from the `[a2a]` settings, checked (sans-I/O).

Rules:
- `tokens` are the callers' bearer tokens, each `env:VARIABLE`: the token is read from that
  variable of the server's environment at start and kept in memory only. A token never comes
  back in a message, a log line or a file: a caller is known by `identity`, a digest prefix.
- Without any token the server takes no caller it cannot tell apart, so it binds loopback
  only: a host that is not loopback is refused, saying to configure tokens.
- `tls_cert` and `tls_key` come together or not at all (paths of PEM files); without them
  the server speaks plain HTTP (put it behind a TLS proxy for another machine).
- `tasks_per_token` overrides a2a/limits.py TASKS_PER_TOKEN.
- The settings type-checked by config/schema.py, and global-only by config/trust.py.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from typing import Any

from magi_code.a2a import limits
from magi_code.a2a.agents import TOKEN_FORM, token_variable
from magi_code.records import record

LOOPBACK_NAMES = ("localhost",)
ANONYMOUS = "local"  # the one caller of a server without tokens


class ServeSettingsError(ValueError):
    """The `[a2a]` settings or the command line cannot serve: the sentence says what to do."""


@record
class Token:
    identity: str  # how the caller is known in tasks, contexts and messages
    secret: bytes = b""

    def __repr__(self) -> str:  # never the secret, whatever prints it
        return f"Token({self.identity!r})"


@record
class Serving:
    tokens: tuple[Token, ...]
    tls: tuple[str, str] | None  # certificate, key
    tasks_per_token: int


def serving(settings: Mapping[str, Any], env: Mapping[str, str]) -> Serving:
    """The server's `[a2a]` settings; raises ServeSettingsError."""
    table = settings.get("a2a") or {}
    tokens = tuple(_token(entry, env) for entry in table.get("tokens") or ())
    cert, key = table.get("tls_cert"), table.get("tls_key")
    if (cert is None) != (key is None):
        raise ServeSettingsError(
            "[a2a] tls_cert and tls_key go together: set both (PEM files), or neither"
        )
    tls = (cert, key) if cert is not None and key is not None else None
    per_token = table.get("tasks_per_token") or limits.TASKS_PER_TOKEN
    return Serving(tokens, tls, per_token)


def _token(entry: str, env: Mapping[str, str]) -> Token:
    variable = token_variable(entry)
    if variable is None:
        raise ServeSettingsError(f"[a2a] tokens must each be {TOKEN_FORM}")
    secret = env.get(variable, "")
    if not secret.strip():
        raise ServeSettingsError(
            f"[a2a] tokens names {variable}, which is not set or empty: export it, or "
            "remove it from the list"
        )
    return Token(identity(secret.encode()), secret.encode())


def identity(secret: bytes) -> str:
    """A caller's name: a digest prefix of its token, which cannot be turned back into it."""
    return "token-" + hashlib.sha256(secret).hexdigest()[:16]


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind_refusal(host: str, chosen: Serving) -> str | None:
    """Why the server may not listen on `host`, or None."""
    if chosen.tokens or is_loopback(host):
        return None
    return (
        f"--host {host} would let any machine in without a token: set [a2a] tokens = "
        '["env:VARIABLE"] in the global settings, or serve on 127.0.0.1'
    )
