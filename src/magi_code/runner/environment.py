"""The environment tools run with (shell commands, Code Mode, hooks): an allow-list, as
Codex's `shell_environment_policy` keeps one, and a second net over what it keeps.

Kept: the names a command needs to behave (ALLOWED, ALLOWED_PREFIXES: PATH, HOME, the
locale, the terminal, XDG_*, our own MC_*/MAGI_* that melchior and subagents read) and what
the GLOBAL settings' `[shell] env_keep` names (exact names or globs: "NAME", "PREFIX_*"; a
project may not set `[shell]`, see config/trust.py). Everything else is dropped, SSH_AUTH_SOCK
included unless env_keep names it.

The second net drops, whatever kept it: a credential-like name (SECRET_NAME_PARTS anywhere
in it, or one of SECRET_NAME_WORDS as a `_`-separated word), every provider's `api_key_env`,
and any value holding a URL with a password (`scheme://user:pa/ss@host`, a `/` in it
included), a URL whose user name looks like a token (`scheme://TOKEN@host`), or a well-known
token shape (redact.py's table).

`[shell] env_keep` is validated here, lazily: a bad entry (not a string of letters, digits,
`_` and the glob characters `*`/`?`) is ignored, a bad table or list keeps nothing more;
neither fails the run.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping
from fnmatch import fnmatchcase

from magi_code.limits import URL_LONG_USER_CHARS, URL_TOKEN_USER_CHARS

ALLOWED = frozenset(
    {
        *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM"),
        *("TMPDIR", "TZ", "PWD", "EDITOR", "VISUAL", "PAGER", "DISPLAY", "WAYLAND_DISPLAY"),
        *("NO_COLOR", "CI"),
        # The network and the toolchains a command expects (values still pass the second
        # net: a proxy URL with a password in it is dropped).
        *("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"),
        *("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"),
        *("VIRTUAL_ENV", "CONDA_PREFIX", "PYENV_ROOT", "JAVA_HOME", "GOPATH", "GOROOT"),
        *("CARGO_HOME", "RUSTUP_HOME", "NVM_DIR"),
    }
)
# LC_*: the locale; XDG_*: XDG_RUNTIME_DIR/XDG_STATE_HOME place melchior's sockets and state;
# MC_* and MAGI_*: MC_HOME, MC_DEBUG_STDERR, MC_NO_LANDLOCK, MC_NO_PID_NAMESPACE, MAGI_SANDBOX_MODE,
# MAGI_MELCHIOR_* (all but its token, a secret name), MAGI_CODE_* that our own children read.
ALLOWED_PREFIXES = ("LC_", "XDG_", "MC_", "MAGI_")

SECRET_NAME_PARTS = ("API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
# A word of a name (split at `_`) that says it holds a credential: STRIPE_KEY, MY_PASS,
# MYSQL_PWD, GH_PAT, JWT, KUBE_BEARER, NPM_AUTH. AUTH counts only as the last word, so that
# SSH_AUTH_SOCK (a socket, kept only when env_keep names it) is not taken for one.
SECRET_NAME_WORDS = frozenset({"KEY", "KEYS", "PASS", "PWD", "PAT", "JWT", "BEARER", "COOKIE"})
SECRET_LAST_WORDS = frozenset({"AUTH"})
NOT_SECRET_NAMES = frozenset({"PWD"})  # the working directory

ENV_KEEP_ENTRY = re.compile(r"[A-Za-z0-9_*?]+")


def tool_environment(
    env: Mapping[str, str], keep: Collection[str] = (), named: Collection[str] = ()
) -> dict[str, str]:
    """`env` as tools get it: the allowed names and those `keep` matches, less secret-looking
    names (and the `named` ones: providers' `api_key_env`) and secret-looking values."""
    return {
        name: value
        for name, value in env.items()
        if (allowed(name) or kept(name, keep))
        and name not in named
        and not secret_name(name)
        and not secret_value(value)
    }


def allowed(name: str) -> bool:
    return name in ALLOWED or name.startswith(ALLOWED_PREFIXES)


def kept(name: str, keep: Collection[str]) -> bool:
    """Whether an env_keep entry names `name` (case-sensitive, as the environment is)."""
    return any(fnmatchcase(name, pattern) for pattern in keep)


def env_keep(settings: Mapping[str, object]) -> tuple[str, ...]:
    """The good entries of `[shell] env_keep`; nothing for a missing or malformed table."""
    table = settings.get("shell")
    listed = table.get("env_keep", ()) if isinstance(table, Mapping) else ()
    if not isinstance(listed, list):
        return ()
    return tuple(e for e in listed if isinstance(e, str) and ENV_KEEP_ENTRY.fullmatch(e))


def secret_name(name: str) -> bool:
    upper = name.upper()
    if upper in NOT_SECRET_NAMES:
        return False
    if any(part in upper for part in SECRET_NAME_PARTS):
        return True
    words = upper.split("_")
    return not SECRET_NAME_WORDS.isdisjoint(words) or words[-1] in SECRET_LAST_WORDS


def secret_value(value: str) -> bool:
    """A URL with a password or a token for its user name, or a well-known token shape.
    The patterns are compiled only for a value with a mark of one."""
    if "://" in value and "@" in value:
        if url_password().search(value):
            return True
        if any(token_user(user) for user in url_user().findall(value)):
            return True
    from magi_code.redact import has_token

    return has_token(value)


@functools.cache
def url_password() -> re.Pattern[str]:
    """`scheme://user:password@` anywhere in a value (DATABASE_URL, proxies, git remotes),
    the password running to the `@`, a `/` in it included."""
    return re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://[^/?#@\s:]*+:[^@\s]*+@")


@functools.cache
def url_user() -> re.Pattern[str]:
    """The user name of `scheme://user@`, with no password."""
    return re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://([^/?#@\s:]++)@")


def token_user(user: str) -> bool:
    """A URL user name that looks like a token: a known token shape, long, or long enough
    with both letters and digits (`git`, `oauth2`, `deploy-bot` are not)."""
    from magi_code.redact import has_token

    if has_token(user) or len(user) >= URL_LONG_USER_CHARS:
        return True
    letters, digits = any(c.isalpha() for c in user), any(c.isdigit() for c in user)
    return len(user) >= URL_TOKEN_USER_CHARS and letters and digits
