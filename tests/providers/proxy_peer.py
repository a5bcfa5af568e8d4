"""proxy.py (PyPI `proxy-py`) as a company's proxy for tests: a real CONNECT (and forwarding)
proxy in a subprocess on a free port of 127.0.0.1, asking for Basic credentials, over TLS if
given a certificate. It alone resolves `*.test` names (to 127.0.0.1: proxy_plugin.py), so a
provider at `provider.test` is reachable through it and nowhere else; `seen()` lists what it
forwarded ("CONNECT provider.test:443", "GET 127.0.0.1:80")."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

USER, PASSWORD = "staff", "pr0xy-S3CRET-pass"
TESTS = Path(__file__).resolve().parents[1]


class CompanyProxy:
    def __init__(self, folder: Path, certificate: tuple[Path, Path] | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._log = folder / "forwarded.log"
        self._log.write_text("")
        port_file = folder / "port"
        command = [
            sys.executable,
            *("-m", "proxy", "--hostname", "127.0.0.1", "--port", "0"),
            *("--port-file", str(port_file), "--basic-auth", f"{USER}:{PASSWORD}"),
            *("--plugins", "providers.proxy_plugin.KnownHosts"),
            *("--num-acceptors", "1", "--num-workers", "1", "--log-level", "ERROR"),
        ]
        if certificate is not None:
            command += ["--cert-file", str(certificate[0]), "--key-file", str(certificate[1])]
        env = dict(
            os.environ, PYTHONPATH=str(TESTS), MAGI_TEST_PROXY_LOG=str(self._log), HOME=str(folder)
        )
        with open(folder / "stderr", "wb") as stderr:
            self._process = subprocess.Popen(
                command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr
            )
        self.scheme = "http" if certificate is None else "https"
        self.port = self._wait(port_file)

    def url(self, user: str | None = USER, password: str = PASSWORD) -> str:
        """The proxy's URL, with credentials unless `user` is None."""
        who = "" if user is None else f"{user}:{password}@"
        return f"{self.scheme}://{who}127.0.0.1:{self.port}"

    def seen(self) -> list[str]:
        return self._log.read_text().splitlines()

    def forget(self) -> None:
        """Start `seen` anew (one proxy for many tests)."""
        self._log.write_text("")

    def close(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def _wait(self, port_file: Path) -> int:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError("proxy.py ended before it listened")
            text = port_file.read_text().strip() if port_file.exists() else ""
            if text.isdigit():
                try:
                    socket.create_connection(("127.0.0.1", int(text)), timeout=1).close()
                    return int(text)
                except OSError:
                    pass
            time.sleep(0.05)
        self.close()
        raise RuntimeError("proxy.py did not listen within 30 s")

    def __enter__(self) -> "CompanyProxy":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
