"""The way out of a company network, chosen per request (sans-I/O: settings and environment
in, choices out): which proxy a URL goes through, and which certificates TLS trusts and shows.

Rules:
- A URL's proxy is the GLOBAL `[network] proxy` if set (an empty string: none, whatever the
  environment says); else, for an https URL, `https_proxy`, `HTTPS_PROXY`, `all_proxy`,
  `ALL_PROXY`, and for an http URL `http_proxy`, `HTTP_PROXY` (not in a CGI script, where a
  request's `Proxy:` header would set it), `all_proxy`, `ALL_PROXY`: the first that is set.
- NO_PROXY (`no_proxy` first; comma- or space-separated, any case) sends the hosts it names
  directly: `*` (every host), a name (that host and its subdomains; `.name` and `*.name` say
  the same), an IP address, a CIDR range (`10.0.0.0/8`, `fd00::/8`: an IP address in the URL
  only, no name is resolved), each with `:port` (`[v6]:port`) for that port alone.
- A proxy is an `http://` or `https://` URL (no scheme: http; no port: the scheme's), its
  user info (percent-encoded) the proxy's Basic credentials. Any other proxy fails the
  request with a sentence naming the setting. Credentials and proxy URLs are never shown:
  `Proxy` keeps them out of its repr, and every sentence here names a setting, never a value.
- Certificates: `SSL_CERT_FILE` and `SSL_CERT_DIR` take the place of the built-in roots' file
  and folder (as for OpenSSL itself); `[network] ca_bundle` (a PEM file, or a folder of
  hashed certificates) is trusted on top of the roots in use; `client_cert` (with
  `client_key`, unless the key is in the certificate's file) is shown to a server that asks
  for one (mTLS). Paths are absolute (`~` expanded). `pool` loads them.
- `configure` checks the `[network]` table at startup (a `SettingsError` naming the key) and
  makes it, with the environment's variables, the process's `current()` choice; until then
  the choice is the process environment's. Proxy URLs are parsed when first used.
"""

from __future__ import annotations

import os

from magi_code.config.settings import SettingsError
from magi_code.records import field, record

TYPE_CHECKING = False  # this module is read at startup, on the way to the initialize result
if TYPE_CHECKING:
    from collections.abc import Mapping
    from ipaddress import IPv4Address, IPv6Address

# The environment's proxy variables, in the order each scheme reads them.
PROXY_VARIABLES = {
    "https": ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"),
    "http": ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"),
}
SETTING = "[network] proxy"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_PATH_KEYS = ("ca_bundle", "client_cert", "client_key")


class NetworkFailure(OSError):
    """A request cannot go out as the network settings say, or a proxy or server refused
    what they gave: `summary` is a fixed sentence saying what failed and which setting to
    change; `retryable` whether another attempt may fare better."""

    def __init__(self, summary: str, retryable: bool = False) -> None:
        super().__init__(summary)
        self.summary, self.retryable = summary, retryable


@record
class Proxy:
    """One proxy: how it is reached (`scheme` "http" or "https", `host`, `port`), the
    `Proxy-Authorization` value its URL's user info makes (or None), the URL as written (a
    scheme added; for a client of its own) and the `setting` that named it. Its repr shows
    neither the credentials nor the URL that holds them; two are equal when their URL and
    setting are (the rest is read from the URL)."""

    url: str = field(repr=False)
    scheme: str
    host: str
    port: int
    authorization: str | None = field(repr=False)
    setting: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Proxy) and (self.url, self.setting) == (other.url, other.setting)

    def __hash__(self) -> int:
        return hash((self.url, self.setting))


@record
class Certificates:
    """What TLS loads beyond the built-in roots (None: nothing): the environment's
    `SSL_CERT_FILE` and `SSL_CERT_DIR`, and `[network] ca_bundle`, `client_cert` and
    `client_key`. Equal choices load one context."""

    ca_file: str | None
    ca_dir: str | None
    ca_bundle: str | None
    client_cert: str | None
    client_key: str | None

    @classmethod
    def of(cls, table: Mapping[str, object], env: Mapping[str, str]) -> Certificates:
        """The choice the `[network]` table and the environment make."""
        ca_bundle, client_cert, client_key = (_path(table.get(k)) for k in _PATH_KEYS)
        ca_file, ca_dir = env.get("SSL_CERT_FILE") or None, env.get("SSL_CERT_DIR") or None
        return cls(ca_file, ca_dir, ca_bundle, client_cert, client_key)


class Network:
    """The process's outbound choices: each URL's proxy (`proxy_for`) and the certificates."""

    __slots__ = ("_cgi", "_no_proxy", "_parsed", "_proxy", "_variables", "certificates")

    def __init__(self, table: Mapping[str, object], env: Mapping[str, str]) -> None:
        chosen = table.get("proxy")
        self._proxy = chosen if isinstance(chosen, str) else None  # None: the environment's
        names = {name for names in PROXY_VARIABLES.values() for name in names}
        self._variables = {name: env[name] for name in names if env.get(name)}
        self._no_proxy = env.get("no_proxy") or env.get("NO_PROXY") or ""
        self._cgi = "REQUEST_METHOD" in env
        self._parsed: dict[tuple[str, str], Proxy | None] = {}
        self.certificates = Certificates.of(table, env)

    def proxy_for(self, scheme: str, host: str, port: int) -> Proxy | None:
        """The proxy a request to `scheme://host:port` goes through (`host` as connected to:
        IDNA, no brackets), or None: directly. Raises `NetworkFailure` for a proxy setting that
        names no usable proxy."""
        named = self._named(scheme)
        if named is None or bypassed(self._no_proxy, host, port):
            return None
        url, setting = named
        if (url, setting) not in self._parsed:
            self._parsed[url, setting] = parse_proxy(url, setting)
        proxy = self._parsed[url, setting]
        if proxy is None:
            raise NetworkFailure(
                f"{setting} names no http:// or https:// proxy: correct it, or set "
                f"[network] proxy in the global settings."
            )
        return proxy

    def _named(self, scheme: str) -> tuple[str, str] | None:
        """The proxy URL for `scheme` and the setting that names it; None for none."""
        if self._proxy is not None:
            return (self._proxy, SETTING) if self._proxy else None
        for name in PROXY_VARIABLES.get(scheme, ()):
            if name == "HTTP_PROXY" and self._cgi:
                continue
            if name in self._variables:
                return self._variables[name], name
        return None


def configure(table: object, env: Mapping[str, str]) -> None:
    """Check the global `[network]` table (None: absent) and make it, with `env`'s proxy and
    certificate variables, what every later request uses. Raises `SettingsError` naming the
    key at fault (the types are the schema's, checked before)."""
    global _current
    settings: Mapping[str, object] = table if isinstance(table, dict) else {}
    proxy = settings.get("proxy")
    if isinstance(proxy, str) and proxy and parse_proxy(proxy, SETTING) is None:
        raise SettingsError("network.proxy must be an http:// or https:// URL with a host")
    for key in _PATH_KEYS:
        value = settings.get(key)
        if not isinstance(value, str):
            continue
        path = _path(value)
        if path is None or not os.path.isabs(path):
            raise SettingsError(f"network.{key} must be an absolute path")
        if not os.path.exists(path):
            raise SettingsError(f"network.{key} names no file")
    if settings.get("client_key") is not None and settings.get("client_cert") is None:
        raise SettingsError("network.client_key needs network.client_cert")
    _current = Network(settings, env)


def current() -> Network:
    """The process's choice: the configured one, else the process environment's alone."""
    global _current
    if _current is None:
        _current = Network({}, os.environ)
    return _current


_current: Network | None = None


def parse_proxy(url: str, setting: str) -> Proxy | None:
    """The proxy `url` names, `setting` naming it; None if it names no http(s) proxy."""
    from urllib.parse import unquote, urlsplit

    text = url.strip()
    if "://" not in text:
        text = f"http://{text}"
    try:
        parts = urlsplit(text)
        scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
        if scheme not in _DEFAULT_PORTS or not host:
            return None
        host = host if host.isascii() else host.encode("idna").decode("ascii")
    except ValueError:  # a bad port, a bad IPv6 literal, UnicodeError
        return None
    authorization = None
    if parts.username is not None:
        from base64 import b64encode

        user, password = unquote(parts.username), unquote(parts.password or "")
        authorization = "Basic " + b64encode(f"{user}:{password}".encode()).decode("ascii")
    port = _DEFAULT_PORTS[scheme] if port is None else port
    return Proxy(text, scheme, host, port, authorization, setting)


def bypassed(no_proxy: str, host: str, port: int) -> bool:
    """Whether a NO_PROXY value sends `host:port` (`host` without brackets) directly."""
    host = host.lower().rstrip(".")
    for raw in no_proxy.replace(" ", ",").split(","):
        entry = raw.strip().lower()
        if entry == "*":
            return True
        name, wanted = _entry_port(entry)
        if name and (wanted is None or wanted == port) and _names(name, host):
            return True
    return False


def _entry_port(entry: str) -> tuple[str, int | None]:
    """A NO_PROXY entry's host part and port (None: any); ("", None) for one that says
    nothing usable."""
    if entry.startswith("["):  # [v6], [v6]:port
        name, _, rest = entry[1:].partition("]")
    elif entry.count(":") == 1:  # host:port (a bare IPv6 address has more colons)
        name, rest = entry.split(":")
        rest = ":" + rest
    else:
        return entry, None
    if not rest:
        return name, None
    port = rest[1:]
    if not rest.startswith(":") or not port.isdigit():
        return "", None
    return name, int(port)


def _names(name: str, host: str) -> bool:
    """Whether a NO_PROXY host part names `host`: an address or range by address (an IP
    address in the URL only), else by name, subdomains included."""
    address = _address(host)
    if "/" in name:
        import ipaddress

        try:
            network = ipaddress.ip_network(name, strict=False)
        except ValueError:
            return False
        return address is not None and address.version == network.version and address in network
    named = _address(name)
    if named is not None or address is not None:
        return named == address
    domain = name.removeprefix("*.").lstrip(".").rstrip(".")
    return bool(domain) and (host == domain or host.endswith("." + domain))


def _address(text: str) -> IPv4Address | IPv6Address | None:
    """`text` as an IP address; None for a name."""
    if not text or not (text[0].isdigit() or ":" in text):
        return None  # no address (a name's first character may be a digit too)
    import ipaddress

    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _path(value: object) -> str | None:
    return os.path.expanduser(value) if isinstance(value, str) and value else None


# TLS alerts a server sends when it does not take our client certificate (or wanted one).
CLIENT_CERTIFICATE_ALERTS = frozenset(
    {
        "TLSV13_ALERT_CERTIFICATE_REQUIRED",
        "SSLV3_ALERT_BAD_CERTIFICATE",
        "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
        "SSLV3_ALERT_CERTIFICATE_EXPIRED",
        "SSLV3_ALERT_CERTIFICATE_REVOKED",
        "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE",
        "TLSV1_ALERT_UNKNOWN_CA",
        "TLSV1_ALERT_ACCESS_DENIED",
    }
)
CLIENT_CERTIFICATE_REFUSED = (
    "A server refused our client certificate, or asked for one: check [network] client_cert "
    "and client_key in the global settings."
)


def explained(exc: BaseException) -> NetworkFailure | None:
    """What the user must fix, if `exc` says so: a `NetworkFailure` as it is, or a TLS alert
    by which a server refused our client certificate (TLS 1.3 sends it after the handshake,
    so it comes with the first bytes read); None for any other failure."""
    if isinstance(exc, NetworkFailure):
        return exc
    reason = getattr(exc, "reason", None)
    if isinstance(exc, OSError) and reason in CLIENT_CERTIFICATE_ALERTS:
        return NetworkFailure(CLIENT_CERTIFICATE_REFUSED)
    return None
