"""The plugin that makes proxy.py the company's proxy in tests (proxy_peer.py): it alone
resolves `*.test` names (to 127.0.0.1), and it writes each request it forwards to the file
MAGI_TEST_PROXY_LOG names, one line each: the method, then host:port."""

import os

from proxy.http.parser import HttpParser
from proxy.http.proxy import HttpProxyBasePlugin


class KnownHosts(HttpProxyBasePlugin):
    def resolve_dns(self, host: str, port: int) -> tuple[str | None, None]:
        return ("127.0.0.1" if host.endswith(".test") else None), None

    def before_upstream_connection(self, request: HttpParser) -> HttpParser:
        method = (request.method or b"").decode()
        host = (request.host or b"").decode()
        with open(os.environ["MAGI_TEST_PROXY_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{method} {host}:{request.port}\n")
        return request
