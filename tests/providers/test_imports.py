"""The HTTP stack is imported only when the first request is made, never by importing
providers, and never h11, httpx2 or httpcore2 (the MCP SDK's HTTP stack, not the providers'); the
serve path to the `initialize` result with a real provider configured loads no more than the
fixture path and the provider's own small modules; `melchior tool` stays as lean."""

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import magi_code.providers
from magi_code.limits import ERROR_BODY_BYTES, ERROR_BODY_DEADLINE_S, STREAM_INACTIVITY_S
from magi_code.providers.policy import HttpPolicy
from magi_code.providers.registry import ConfigurationInvalid, base_url
from source_imports import loaded_running, top_level

MODULES = [
    "magi_code.providers.registry",
    "magi_code.providers.sse",
    "magi_code.providers.requests",
    "magi_code.providers.openai_chat",
    "magi_code.providers.openai_responses",
    "magi_code.providers.anthropic",
    "magi_code.providers.codex",
    "magi_code.config.credentials",
]


# The providers' HTTP client and what it stands on; h11, httpx2 and httpcore2 (the MCP SDK's
# HTTP stack) never on that path.
CLIENT = (
    "magi_code.providers.client",
    "magi_code.providers.pool",
    "magi_code.providers.http1",
)
HTTP2 = ("magi_code.providers.http2", "h2", "hpack", "hyperframe")  # for an origin taking h2
HTTP_STACK = (*CLIENT, *HTTP2, "h11", "httpx2", "httpcore2")


def test_no_http_stack_at_import() -> None:
    code = f"for m in {MODULES!r}: __import__(m)"
    assert loaded_running(code, (*HTTP_STACK, "openai")) == []


def test_no_provider_module_imports_h11_httpx2_or_httpcore2() -> None:
    here = Path(magi_code.providers.__file__).parent
    offenders = []
    for path in sorted(here.glob("*.py")):
        if top_level(path) & {"h11", "httpx2", "httpcore2"}:
            offenders.append(path.name)
    assert offenders == []


def test_default_policy_uses_the_spec_bounds() -> None:
    policy = HttpPolicy()
    assert policy.body_bytes == ERROR_BODY_BYTES
    assert policy.body_deadline_s == ERROR_BODY_DEADLINE_S
    assert policy.inactivity_s == STREAM_INACTIVITY_S


# Loaded on the first request, never before the initialize result (issue 12).
OFF_THE_START = {
    *HTTP_STACK,
    "anyio",
    "ssl",
    "email.utils",
    "logging",
    "dataclasses",
    "tempfile",
    "pathlib",
    "asyncio",
    "urllib.parse",
    "inspect",
    "magi_code.providers.base",
    "magi_code.providers.requests",
}
PROVIDER_OWN = {
    "magi_code.providers",
    "magi_code.providers.registry",
    "magi_code.config.credentials",
}
INITIALIZE = (
    b'{"protocol":"magi-code.local-agent","version":1,"id":"i","method":"initialize",'
    b'"params":{"required_capabilities":["status"]}}\n'
)


def imported(importtime: bytes) -> set[str]:
    names = set()
    for line in importtime.decode().split("\n"):
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.split("|")[2].strip()
            if name != "imported package":
                names.add(name)
    return names


WARMING = b"magi-code: warming"


def serve_import_log(tmp: Path, wire: str, until: bytes) -> tuple[dict[str, object], bytes]:
    """`serve --stdio` with a `wire` provider configured, initialized: its answer, and its
    import log up to the first line holding `until` (within a deadline)."""
    home = tmp / wire
    home.mkdir()
    (home / "settings.toml").write_text(
        f'provider = "p"\nmodel = "m"\n[providers.p]\nwire_api = "{wire}"\n'
        'base_url = "https://127.0.0.1:9/v1"\napi_key_env = "P_KEY"\nmodels = ["m"]\n'
    )
    env = dict(os.environ, MC_HOME=str(home), P_KEY="k", MC_DEBUG_STDERR="1")
    command = [sys.executable, "-X", "importtime", "-m", "magi_code.cli", "serve", "--stdio"]
    child = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp,
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    log = b""
    try:
        child.stdin.write(INITIALIZE)
        child.stdin.flush()
        answer = json.loads(child.stdout.readline())
        deadline = time.monotonic() + 20
        while until not in log and time.monotonic() < deadline:
            if select.select([child.stderr], [], [], 0.1)[0]:
                log += os.read(child.stderr.fileno(), 65536)
    finally:
        child.kill()
        child.wait()
        child.stdin.close()
        child.stdout.close()
        child.stderr.close()
    assert until in log
    return answer, log[: log.index(until)]


def serve_imports_to_initialize(tmp: Path, wire: str) -> tuple[dict[str, object], set[str]]:
    """The modules `serve --stdio` imported by the time its initialize result was written:
    all it logged before it started warming (which follows that result)."""
    answer, log = serve_import_log(tmp, wire, WARMING)
    return answer, imported(log)


def test_the_runtime_warms_after_initialize_without_a_request(tmp_path: Path) -> None:
    """The first session's and turn's modules load (and the event loop starts) on their own
    once the initialize result is out, so session.create and turn.start find them ready: for
    an https provider, the HTTP/2 client with them."""
    answer, log = serve_import_log(tmp_path, "openai-responses", b"magi-code: warmed")
    assert answer["result"]["status"]["readiness"] == "ready", answer
    assert WARMING in log
    loaded = imported(log)
    assert {"magi_code.sessions", "magi_code.runner.turn", "anyio", *CLIENT, *HTTP2} <= loaded
    assert not {"h11", "httpx2", "httpcore2"} & loaded, "the MCP SDK's HTTP stack is not ours"


@pytest.mark.parametrize("wire", ["openai-responses", "anthropic", "openai-chat"])
def test_initialize_with_a_real_provider_loads_only_its_small_modules(
    tmp_path: Path, wire: str
) -> None:
    answer, fixture = serve_imports_to_initialize(tmp_path, "fixture")
    assert "result" in answer
    answer, real = serve_imports_to_initialize(tmp_path, wire)
    assert answer["result"]["status"]["readiness"] == "ready", answer
    assert real - fixture <= PROVIDER_OWN, sorted(real - fixture)
    assert not real & OFF_THE_START, sorted(real & OFF_THE_START)


def test_the_fixture_is_checked_by_the_registry_and_loads_no_wire_module(tmp_path: Path) -> None:
    answer, loaded = serve_imports_to_initialize(tmp_path, "fixture")
    assert answer["result"]["status"]["readiness"] == "ready", answer
    assert "magi_code.providers.registry" in loaded  # one dispatch table, the fixture a row
    assert "magi_code.config.credentials" not in loaded  # its row needs no credential
    wires = {f"magi_code.providers.{m}" for m in ("fixture", "openai_responses", "anthropic")}
    assert not loaded & (OFF_THE_START | wires), sorted(loaded & (OFF_THE_START | wires))


MELCHIOR_TOOL = {
    *("__future__", "_abc", "_codecs", "_collections", "_collections_abc", "_distutils_hack"),
    *("_frozen_importlib_external", "_functools", "_io", "_json", "_operator", "_signal"),
    *("_sitebuiltins", "_socket", "_stat", "_struct", "abc", "codecs", "collections"),
    *("contextlib", "encodings", "encodings.aliases", "encodings.utf_8", "errno", "fcntl"),
    *("functools", "genericpath", "importlib", "importlib._abc", "importlib.machinery"),
    *("importlib.util", "io", "itertools", "keyword", "marshal", "operator", "os", "posix"),
    *("posixpath", "reprlib", "runpy", "site", "sitecustomize", "stat", "struct", "time"),
    *("types", "warnings", "zipimport"),
}


def test_melchior_tool_loads_only_its_own_lean_modules(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAGI_MELCHIOR_")}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "melchior.cli", "tool", "--verb=status"],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert json.loads(done.stdout)["code"] == "no_identity"
    loaded = imported(done.stderr)
    own = {m for m in loaded if m.split(".")[0] == "melchior"}
    assert own and loaded - own <= MELCHIOR_TOOL, sorted(loaded - own - MELCHIOR_TOOL)
    assert not loaded & OFF_THE_START


@pytest.mark.parametrize(
    "url",
    [
        "http://h/v1",
        "https://h:443/v1",
        "http://h:/v1",
        "http://u:p@h:8080/v1?q#f",
        "http://[::1]:8080/v1",
        "http://[::1]/",
        "http://h:65535",
        "http://h:65536",
        "http://h:99999/v1",
        "http://h:8x/v1",
        "http://h:-1/v1",
        "https:///v1",
        "http://:80/v1",
        "http://u@/v1",
        "http://[::1/v1",
        "http://h:\u0661/v1",
    ],
)
def test_base_url_check_agrees_with_urlsplit(url: str) -> None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number in range
        ok = bool(parts.hostname)
    except ValueError:
        ok = False
    try:
        base_url({"base_url": url}, "openai-chat")
        accepted = True
    except ConfigurationInvalid:
        accepted = False
    assert accepted == ok
