"""web_fetch: one http(s) URL to readable text for the model: an HTML page as Markdown
(markdownify over BeautifulSoup, imported only when a page is converted), other text as it
is, an image as an image (tools/images.py). Requests go through the provider HTTP client
(providers/client.py: its connection bounds, TLS trust and proxies), never a second stack.

Rules:
- The access is `network` with the URL's host: the permission policy decides it (`ask` by
  default; `allow` rules name domains, tools/policy.py).
- Nothing of the user's is sent: a URL with user info is refused, and a request carries the
  client's own headers (Host, User-Agent, Accept-Encoding: identity) and an Accept; no cookie
  is ever kept or sent.
- Every host is resolved before it is reached, and refused when any of its addresses is not a
  global unicast one (loopback, private, link-local, shared, reserved, multicast), unless the
  global settings say `[web] allow_private = true` (a project file never sets it, see
  config/trust.py). A plain http request goes to the very address that was checked, so a name
  that resolves anew cannot slip elsewhere; over https the certificate must name the host, so
  a connection that lands elsewhere fails its handshake before any request is sent.
- Redirects are followed, WEB_REDIRECTS at most, each target checked as the first URL was:
  its addresses, and the permission rules (to the same host, or to a host the rules allow
  without asking); any other target ends the call with its URL, for the model to fetch with a
  call of its own, which the rules and the person decide.
- Bounds: WEB_FETCH_S for the whole call (redirects and conversion included), WEB_BODY_BYTES of
  a body read, WEB_MARKUP_BYTES of a page's markup converted (once its scripts, styles and
  other blocks no reader sees are out, in one linear pass), the text within TEXT_BYTES; what
  is cut is cut whole, and the model told.
- Failures are outcomes with a stable word and a plain sentence; never an exception's text,
  nor the body of an error page.
"""

import codecs
import ipaddress
import re
import socket
from collections.abc import Mapping
from urllib.parse import SplitResult, urljoin, urlsplit

import anyio

from magi_code.records import record
from magi_code.tools import args as A
from magi_code.tools.base import Access, ToolContext, ToolInputError, ToolOutcome
from magi_code.tools.images import FORMATS, SNIFF_BYTES, ImageRefused, image_part, sniff
from magi_code.tools.limits import (
    BINARY_SNIFF_BYTES,
    TEXT_BYTES,
    WEB_BODY_BYTES,
    WEB_FETCH_S,
    WEB_MARKUP_BYTES,
    WEB_REDIRECTS,
)
from magi_code.tools.summaries import clip_utf8, safe_summary

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

URL_CHARS = 8192  # the longest URL taken
REDIRECTS = frozenset({301, 302, 303, 307, 308})
ACCEPT = "text/html, text/markdown, text/plain;q=0.9, image/*;q=0.8, */*;q=0.5"
_TEXT_TYPES = re.compile(r"text/.*|application/(json|xml|javascript|x-sh)|.*\+(json|xml)")
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_DROPPED_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "canvas")
_DROPPED_OPENING = re.compile(
    rb"<(" + b"|".join(t.encode() for t in _DROPPED_TAGS) + rb")[\s>/]", re.I
)
_BLANK_RUNS = re.compile(r"\n{3,}")


@record
class FetchArgs:
    url: SplitResult  # http or https, with a host, no user info, no fragment


@record
class Page:
    """What a fetch brought back: the final URL, its status, media type and charset, and the
    body (cut at WEB_BODY_BYTES: then `cut`)."""

    url: str
    status: int
    media_type: str
    charset: str | None
    body: bytes
    cut: bool


class FetchRefused(Exception):
    """The fetch stops here: `code` a stable word, `why` a sentence for the model."""

    def __init__(self, code: str, why: str) -> None:
        super().__init__(code)
        self.code, self.why = code, why


class WebFetch:
    name = "web_fetch"
    description = (
        "Fetch a web page (an http or https URL) and read it as Markdown; plain text comes as it "
        "is and an image as the image. Pages are cut past a bound, which the result says."
    )

    def __init__(self, allow_private: bool = False) -> None:
        self.allow_private = allow_private
        self.parameters: dict[str, object] = {
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http or https URL to fetch."}
            },
            "required": ["url"],
            "additionalProperties": False,
        }

    def parse(self, arguments: str) -> FetchArgs:
        fields = A.load_object(arguments, {"url"}, set())
        url = checked_url(A.text(fields, "url"))
        if url is None:
            raise ToolInputError("invalid_arguments")
        return FetchArgs(url)

    def access(self, args: FetchArgs, ctx: ToolContext) -> Access:
        return Access("network", host=args.url.hostname)

    def describe(self, args: FetchArgs, ctx: ToolContext) -> str:
        return safe_summary(f"fetch {shown(args.url)}")

    def reachable(self, address: Address) -> bool:
        """Whether a connection may go to `address`: a global unicast one, or any with
        `[web] allow_private`."""
        if self.allow_private:
            return True
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return address.is_global and not address.is_multicast

    async def run(self, args: FetchArgs, ctx: ToolContext) -> ToolOutcome:
        summary = f"fetch {shown(args.url)}"
        with anyio.move_on_after(WEB_FETCH_S):
            try:
                page = await self._follow(args.url, ctx)
                return await anyio.to_thread.run_sync(readable, page, abandon_on_cancel=True)
            except FetchRefused as refused:
                return _failed(refused.code, refused.why, summary)
        return _failed("timed_out", f"the fetch took longer than {WEB_FETCH_S:g} s", summary)

    async def _follow(self, url: SplitResult, ctx: ToolContext) -> Page:
        """The page at `url`, after the redirects the rules let it follow."""
        for hop in range(WEB_REDIRECTS + 1):
            target, headers = await self._pinned(url)
            got = await _get(target, headers, url)
            if isinstance(got, Page):
                return got
            after = checked_url(urljoin(url.geturl(), got))
            if after is None:
                raise FetchRefused(
                    "bad_redirect", f"{shown(url)} redirects to a URL that cannot be used"
                )
            if hop == WEB_REDIRECTS:
                raise FetchRefused("too_many_redirects", f"more than {WEB_REDIRECTS} redirects")
            if after.hostname != url.hostname and not _permitted(ctx, after):
                raise FetchRefused(
                    "redirected_elsewhere",
                    f"{shown(url)} redirects to {after.geturl()}, another host: fetch that URL "
                    "with web_fetch to read it",
                )
            url = after
        raise AssertionError("the loop returns or raises")

    async def _pinned(self, url: SplitResult) -> tuple[str, dict[str, str]]:
        """The URL to request and its headers: the host resolved, every address checked; a
        plain http request goes to the first address itself (its Host header the name's)."""
        host = url.hostname or ""
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            raise FetchRefused("unresolved", f"the host {host} cannot be resolved") from None
        addresses = [ipaddress.ip_address(str(entry[4][0]).partition("%")[0]) for entry in found]
        if not addresses:
            raise FetchRefused("unresolved", f"the host {host} cannot be resolved")
        for address in addresses:
            if not self.reachable(address):
                why = (
                    f"{host} is a loopback, private or otherwise local address ({address}); "
                    "[web] allow_private = true in the global settings allows them"
                )
                raise FetchRefused("private_address", why)
        headers = {"accept": ACCEPT}
        if url.scheme == "https":
            return url._replace(fragment="").geturl(), headers
        literal = f"[{addresses[0]}]" if addresses[0].version == 6 else str(addresses[0])
        headers["host"] = url.netloc
        return url._replace(netloc=f"{literal}:{port}", fragment="").geturl(), headers


async def _get(target: str, headers: Mapping[str, str], url: SplitResult) -> Page | str:
    """One GET: the page, or the Location a redirect names."""
    from magi_code.providers.client import InvalidURL, TransportError, open_response
    from magi_code.providers.policy import HttpPolicy

    policy = HttpPolicy(attempts=1, connect_s=WEB_FETCH_S, head_s=WEB_FETCH_S)
    try:
        async with open_response("GET", target, policy, headers) as response:
            location = response.headers.get("location")
            if response.status in REDIRECTS and location:
                return location
            if response.status >= 400:
                why = f"{shown(url)} answered HTTP {response.status}"
                raise FetchRefused("http_error", why)
            body = bytearray()
            async for chunk in response:
                body += chunk
                if len(body) > WEB_BODY_BYTES:
                    break
    except InvalidURL:
        raise FetchRefused("bad_url", "the URL names no http or https host") from None
    except TransportError:
        why = f"{shown(url)} could not be reached, or stopped answering"
        raise FetchRefused("unreachable", why) from None
    media, charset = _content_type(response.headers.get("content-type", ""))
    cut = len(body) > WEB_BODY_BYTES
    return Page(url.geturl(), response.status, media, charset, bytes(body[:WEB_BODY_BYTES]), cut)


def readable(page: Page) -> ToolOutcome:
    """The page for the model: Markdown, text or an image, with what was cut said."""
    summary = f"fetched {shown(urlsplit(page.url))}"
    if page.media_type in FORMATS or sniff(page.body[:SNIFF_BYTES]) is not None:
        if page.cut:
            return _failed("too_large", f"the image is over {WEB_BODY_BYTES:,} bytes", summary)
        try:
            image = image_part(page.body)
        except ImageRefused as refused:
            return _failed(refused.code, f"the image: {refused.why}", summary)
        said = f"{page.url}: {image.description}"
        return ToolOutcome(True, said, f"{summary} (image)", images=(image,))
    markup_cut = False
    if page.media_type in _HTML_TYPES or (not page.media_type and _looks_html(page.body)):
        markup = without_hidden_blocks(page.body)
        markup_cut = len(markup) > WEB_MARKUP_BYTES
        title, text = markdown(markup[:WEB_MARKUP_BYTES], page.charset, page.url)
    elif not page.media_type or _TEXT_TYPES.fullmatch(page.media_type):
        if b"\x00" in page.body[:BINARY_SNIFF_BYTES]:
            return _failed("not_text", "the page is not text", summary)
        title, text = "", page.body.decode(page.charset or "utf-8", "replace")
    else:
        return _failed("not_text", f"the page is {page.media_type}, not text", summary)
    head = f"URL: {page.url}\n" + (f"Title: {title}\n" if title else "") + "\n"
    read = f"\n[the page is longer: only its first {WEB_BODY_BYTES:,} bytes were read]"
    notes = read if page.cut else ""
    if markup_cut:
        notes = f"\n[the page's markup past {WEB_MARKUP_BYTES:,} bytes was not read]" + notes
    cut = f"\n[the text is cut here, at {TEXT_BYTES:,} bytes]"
    room = TEXT_BYTES - len(head.encode()) - len(notes.encode()) - len(cut.encode())
    body = clip_utf8(text, room)
    if body != text:
        notes = cut + notes
    return ToolOutcome(True, head + body + notes, f"{summary} ({page.status})")


def without_hidden_blocks(html: bytes) -> bytes:
    """`html` without its script, style and like blocks (an unclosed one runs to the end),
    found in one pass: each search starts where the last block ended."""
    lower = html.lower()
    kept: list[bytes] = []
    at = 0
    while (opening := _DROPPED_OPENING.search(html, at)) is not None:
        kept.append(html[at : opening.start()])
        tag_end = html.find(b">", opening.end() - 1)
        if tag_end > 0 and html[tag_end - 1 : tag_end] == b"/":  # <svg ... />: no content
            at = tag_end + 1
            continue
        closing = lower.find(b"</" + opening.group(1).lower(), opening.end())
        if closing < 0:
            return b"".join(kept)
        end = html.find(b">", closing)
        at = len(html) if end < 0 else end + 1
    kept.append(html[at:])
    return b"".join(kept)


def markdown(html: bytes, charset: str | None, url: str) -> tuple[str, str]:
    """The page's title and its body as Markdown (links made absolute against `url`), scripts,
    styles and inline data left out."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser", from_encoding=charset)
    title = " ".join(soup.title.get_text().split()) if soup.title is not None else ""
    for tag in soup((*_DROPPED_TAGS, "head")):
        tag.decompose()
    for image in soup("img"):
        source = image.get("src")
        if not isinstance(source, str) or source.startswith("data:"):
            image.decompose()
        else:
            image["src"] = urljoin(url, source)
    for link in soup("a"):
        target = link.get("href")
        if isinstance(target, str):
            link["href"] = urljoin(url, target)
    converter = MarkdownConverter(heading_style="ATX", bullets="-")
    text = converter.convert_soup(soup)
    return title, _BLANK_RUNS.sub("\n\n", text).strip()


def checked_url(text: str) -> SplitResult | None:
    """`text` as an http(s) URL with a host and without user info (its host in IDNA, lower
    case; its fragment dropped); None if it is none."""
    if len(text) > URL_CHARS or any(c.isspace() or ord(c) < 32 or c == "\x7f" for c in text):
        return None
    try:
        url = urlsplit(text)
        host, _ = url.hostname, url.port  # the port raises when it is not one
    except ValueError:
        return None
    if url.scheme not in ("http", "https") or not host or url.username or url.password:
        return None
    if "@" in url.netloc:
        return None
    try:
        host = host if host.isascii() else host.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    literal = f"[{host}]" if ":" in host else host
    netloc = literal if url.port is None else f"{literal}:{url.port}"
    return url._replace(netloc=netloc, fragment="")


def shown(url: SplitResult) -> str:
    """The URL for a summary or a sentence: no query (it may hold a token), marked if any."""
    return f"{url.scheme}://{url.netloc}{url.path or '/'}" + ("?…" if url.query else "")


def _permitted(ctx: ToolContext, url: SplitResult) -> bool:
    """Whether the rules allow this tool to reach `url`'s host without asking."""
    return ctx.permits is not None and ctx.permits(Access("network", host=url.hostname))


def _content_type(value: str) -> tuple[str, str | None]:
    media, _, parameters = value.partition(";")
    charset = None
    for parameter in parameters.split(";"):
        name, _, given = parameter.partition("=")
        if name.strip().lower() == "charset" and given.strip(" \"'"):
            charset = given.strip(" \"'")
    if charset is not None:
        try:
            codecs.lookup(charset)
        except LookupError:
            charset = None
    return media.strip().lower(), charset


def _looks_html(body: bytes) -> bool:
    start = body[:1024].lstrip().lower()
    return start.startswith((b"<!doctype html", b"<html"))


def _failed(code: str, why: str, summary: str) -> ToolOutcome:
    return ToolOutcome(False, f"error: {code}: {why}", f"{summary}: {code}")
