"""web_fetch against a real local HTTP server: HTML to Markdown, redirects (followed on the same
host or where the rules allow without asking, each target's addresses checked, capped), the
private-address refusal, the body bound at its edge, nothing of the user's sent.

The server listens on 127.0.0.1, a loopback address the tool refuses unless `[web]
allow_private` is set: tests that need a "public" host use `OnlyThisLoopback`, which lets that
one address through and refuses every other local one as the real check does."""

import base64
import io
import ipaddress
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from magi_code.tools import web_fetch
from magi_code.tools.base import Access, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.limits import WEB_BODY_BYTES, WEB_MARKUP_BYTES, WEB_REDIRECTS
from magi_code.tools.web_fetch import Address, WebFetch
from providers.local_server import LocalServer, Reply

pytestmark = pytest.mark.anyio
HTML = {"content-type": "text/html; charset=utf-8"}
TEXT = {"content-type": "text/plain"}


class OnlyThisLoopback(WebFetch):
    """127.0.0.1 stands for a public host; every other address is judged as the tool does."""

    def reachable(self, address: Address) -> bool:
        return address == ipaddress.ip_address("127.0.0.1") or super().reachable(address)


def page(body: bytes, headers: dict[str, str] | None = None, status: int = 200) -> Reply:
    return Reply(status, [body], headers if headers is not None else HTML, content_length=True)


def redirect(location: str, status: int = 302, **headers: str) -> Reply:
    return Reply(status, [], {"location": location, **headers}, content_length=True)


async def fetch(
    tool: WebFetch, ctx: ToolContext, url: str, permits: Callable[[Access], bool] | None = None
) -> ToolOutcome:
    args = tool.parse(json.dumps({"url": url}))
    assert tool.access(args, ctx).kind == "network"
    return await tool.run(args, ToolContext(ctx.workspace, ctx.env, permits=permits))


async def test_an_html_page_comes_as_markdown(ctx: ToolContext) -> None:
    html = (
        b"<!doctype html><html><head><title>The  Page</title><style>p{}</style></head><body>"
        b"<script>alert(1)</script><h1>Heading</h1><p>Some <b>bold</b> and a "
        b"<a href='/docs/x?y=1'>link</a>.</p><img src='data:image/png;base64,QUFB' alt='i'>"
        b"<ul><li>one</li><li>two</li></ul><pre>code()</pre></body></html>"
    )
    with LocalServer() as server:
        server.script("/page", page(html))
        outcome = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/page")
    assert outcome.ok, outcome.output
    assert outcome.output == (
        f"URL: {server.url}/page\nTitle: The Page\n\n# Heading\n\nSome **bold** and a "
        f"[link]({server.url}/docs/x?y=1).\n\n- one\n- two\n\n```\ncode()\n```"
    )
    assert outcome.summary == f"fetched {server.url}/page (200)"


async def test_text_is_decoded_by_its_charset_and_an_image_comes_as_an_image(
    ctx: ToolContext,
) -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (12, 9)).save(buffer, "GIF")
    with LocalServer() as server:
        server.script(
            "/t", page("é and ü".encode("latin-1"), {"content-type": "text/plain; charset=latin-1"})
        )
        server.script("/i", page(buffer.getvalue(), {"content-type": "application/octet-stream"}))
        server.script("/b", page(b"\x00\x01\x02", {"content-type": "application/octet-stream"}))
        text = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/t")
        image = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/i")
        binary = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/b")
    assert text.output.endswith("\n\né and ü")
    assert image.ok and base64.b64decode(image.images[0].data) == buffer.getvalue()
    assert image.output.endswith(": GIF, 12×9 px, " + f"{len(buffer.getvalue()):,} bytes")
    assert not binary.ok and binary.output.startswith("error: not_text:")


async def test_the_body_bound_at_its_edge_and_one_byte_past_it(ctx: ToolContext) -> None:
    note = f"[the page is longer: only its first {WEB_BODY_BYTES:,} bytes were read]"
    with LocalServer() as server:
        server.script("/n", page(b"a" * WEB_BODY_BYTES, TEXT))
        server.script("/n1", Reply(200, [b"a" * WEB_BODY_BYTES + b"b"], TEXT))  # no length
        at = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/n")
        past = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/n1")
    assert at.ok and past.ok
    assert note not in at.output
    assert past.output.endswith(note)
    assert "b" not in past.output.split("\n\n", 1)[1].split("\n[")[0]


async def test_the_markup_bound_counts_no_script_and_holds_at_its_edge(ctx: ToolContext) -> None:
    note = f"[the page's markup past {WEB_MARKUP_BYTES:,} bytes was not read]"
    script = b"<script>" + b"x" * WEB_MARKUP_BYTES + b"</script>"
    at = b"<p>" + b"a" * (WEB_MARKUP_BYTES - 3)
    with LocalServer() as server:
        server.script("/n", page(script + at))
        server.script("/n1", page(script + at + b"b"))
        server.script("/late", page(script + b"<style>" + b"y" * 99 + b"</style><h1>Content</h1>"))
        exact = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/n")
        past = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/n1")
        late = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/late")
    assert exact.ok and past.ok
    assert note not in exact.output
    assert past.output.endswith(note)
    assert late.output.endswith("\n\n# Content")  # after a script larger than the bound


async def test_a_loopback_or_private_host_is_refused_before_any_request(
    ctx: ToolContext,
) -> None:
    with LocalServer() as server:
        server.script("/", page(b"secret"))
        port = server.httpd.server_address[1]
        for url in (
            f"{server.url}/",
            f"http://localhost:{port}/",
            f"http://[::ffff:127.0.0.1]:{port}/",
        ):
            outcome = await fetch(WebFetch(), ctx, url)
            assert not outcome.ok
            assert outcome.output.startswith("error: private_address:")
            assert "allow_private = true" in outcome.output
        assert server.requests == []
        allowed = await fetch(WebFetch(allow_private=True), ctx, f"{server.url}/")
    assert allowed.ok and allowed.output.endswith("secret")


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
async def test_a_redirect_on_the_same_host_is_followed(ctx: ToolContext, code: int) -> None:
    with LocalServer() as server:
        server.script("/old", redirect("/new", code, **{"set-cookie": "session=s3cret"}))
        server.script("/new", page(b"<p>moved</p>"))
        outcome = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/old")
    assert outcome.ok and outcome.output == f"URL: {server.url}/new\n\nmoved"
    for seen in server.requests:  # the cookie set on the way is never sent back
        assert set(seen.headers) == {"host", "user-agent", "accept", "accept-encoding"}


async def test_a_redirect_to_a_private_address_is_refused_even_where_the_rules_allow_it(
    ctx: ToolContext,
) -> None:
    private = socket.create_server(("127.0.0.2", 0))
    private.setblocking(False)
    target = f"http://127.0.0.2:{private.getsockname()[1]}/admin"
    with private, LocalServer() as server:
        server.script("/go", redirect(target))
        outcome = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/go", permits=lambda a: True)
        with pytest.raises(BlockingIOError):
            private.accept()  # nothing ever connected to it
    assert not outcome.ok
    assert outcome.output.startswith("error: private_address: 127.0.0.2 is a loopback")


async def test_a_redirect_to_another_host_the_rules_would_ask_about_is_handed_back(
    ctx: ToolContext,
) -> None:
    asked: list[Access] = []

    def permits(access: Access) -> bool:
        asked.append(access)
        return False

    with LocalServer() as server:
        server.script("/go", redirect("https://elsewhere.example/page?q=1"))
        outcome = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/go", permits=permits)
    assert asked == [Access("network", host="elsewhere.example")]
    assert not outcome.ok and outcome.output == (
        f"error: redirected_elsewhere: {server.url}/go redirects to "
        "https://elsewhere.example/page?q=1, another host: fetch that URL with web_fetch to "
        "read it"
    )


async def test_redirects_are_capped(ctx: ToolContext) -> None:
    with LocalServer() as server:
        for hop in range(WEB_REDIRECTS):
            server.script(f"/{hop}", redirect(f"/{hop + 1}"))
        server.script(f"/{WEB_REDIRECTS}", page(b"<p>at last</p>"))
        followed = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/0")
        for hop in range(WEB_REDIRECTS + 1):
            server.script(f"/{hop}", redirect(f"/{hop + 1}"))
        capped = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/0")
    assert followed.ok and followed.output.endswith("at last")
    assert capped.output == f"error: too_many_redirects: more than {WEB_REDIRECTS} redirects"


async def test_an_error_status_is_said_without_the_servers_body(ctx: ToolContext) -> None:
    with LocalServer() as server:
        server.script("/missing", page(b"<p>internal detail</p>", status=404))
        outcome = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/missing?token=abc")
    assert outcome.output == f"error: http_error: {server.url}/missing?… answered HTTP 404"
    assert outcome.summary == f"fetch {server.url}/missing?…: http_error"


async def test_a_fetch_past_its_deadline_ends(ctx: ToolContext, monkeypatch: Any) -> None:
    monkeypatch.setattr(web_fetch, "WEB_FETCH_S", 0.5)
    with LocalServer() as server:
        server.script("/slow", Reply(200, [b"x"], TEXT, hang=True))
        outcome = await fetch(OnlyThisLoopback(), ctx, f"{server.url}/slow")
        assert server.client_closed.wait(5)
    assert outcome.output == "error: timed_out: the fetch took longer than 0.5 s"


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "file:///etc/passwd",
        "http://user:password@example.com/",
        "https://token@example.com/",
        "http:///nohost",
        "http://exa mple.com/",
        "https://example.com:99999/",
        "javascript:alert(1)",
    ],
)
def test_urls_that_are_no_plain_http_or_carry_credentials_are_refused(url: str) -> None:
    with pytest.raises(ToolInputError):
        WebFetch().parse(json.dumps({"url": url}))


def test_the_access_names_the_host_in_lower_case_idna() -> None:
    tool = WebFetch()
    ctx = ToolContext(Path("/"), {})
    access = tool.access(tool.parse(json.dumps({"url": "https://Bücher.Example/x#frag"})), ctx)
    assert access == Access("network", host="xn--bcher-kva.example")
