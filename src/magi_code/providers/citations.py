"""The sources a reply cites, from a provider's own web search: gathered as the stream names
them, said once at the reply's end as a Markdown list, so that they are kept with the reply
(in the session, in every face, and in what later turns show the model). Sans-I/O.

Rules: http and https URLs only, each once, in the order first cited, at most CITED_SOURCES;
a title is one line of plain text (no Markdown that could break the list), a URL has no
whitespace, and its parentheses are escaped so the link stays whole.
"""

from magi_code.providers.limits import CITED_SOURCES, CITED_TITLE_CHARS
from magi_code.records import field, record

HEADING = "Sources:"


@record(frozen=False)
class Citations:
    sources: dict[str, str] = field(default_factory=dict)  # URL -> title, first cited first

    def cite(self, url: object, title: object) -> None:
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            return
        if any(c.isspace() or not c.isprintable() for c in url) or url in self.sources:
            return
        if len(self.sources) < CITED_SOURCES:
            self.sources[url] = _plain(title if isinstance(title, str) else "") or url

    def said(self) -> str:
        """The list that ends the reply; empty when nothing was cited."""
        if not self.sources:
            return ""
        lines = [f"- [{title}]({_escaped(url)})" for url, title in self.sources.items()]
        return "\n\n" + HEADING + "\n" + "\n".join(lines)


def _plain(title: str) -> str:
    words = "".join(c if c.isprintable() else " " for c in title).split()
    text = " ".join(words)[:CITED_TITLE_CHARS]
    for special in "\\[]":
        text = text.replace(special, "\\" + special)
    return text


def _escaped(url: str) -> str:
    return url.replace("(", "%28").replace(")", "%29")
