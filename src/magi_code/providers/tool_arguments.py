"""Tool-call arguments as a wire API streams them, bounded while they arrive. Pure.

Rules, for every wire (chat, Responses, Anthropic):
- One call keeps its arguments up to ARGUMENTS_BYTES (UTF-8). The piece that passes the bound
  drops what was kept, and every later piece is only counted: memory stays bounded however
  much a model sends. The call comes out with empty arguments and `dropped_bytes`, its size;
  the runner answers it with an error and keeps a stub, never the arguments.
- Every argument byte of one response counts in its `Budget`. Once they pass the run's
  content budget (RUN_CONTENT_BYTES) the run cannot keep them (the runner ends it with
  `content_limit`), so the wire ends the stream there and hands on its open calls dropped.
- Arguments a provider gives whole (Anthropic's `input` at a block's start, Responses'
  `arguments` when its item is done) are measured like streamed ones. Of the two forms the
  later one wins, as the wires always had it, and only it is counted.
"""

from magi_code.limits import RUN_CONTENT_BYTES
from magi_code.providers.base import ToolCall
from magi_code.records import field, record
from magi_code.tools.limits import ARGUMENTS_BYTES


def utf8_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@record(frozen=False)
class Budget:
    """The argument bytes of one response, kept or dropped."""

    received: int = 0

    @property
    def spent(self) -> bool:
        return self.received > RUN_CONTENT_BYTES


@record(frozen=False)
class Arguments:
    """One call's arguments: kept up to ARGUMENTS_BYTES, then only counted."""

    budget: Budget
    parts: list[str] = field(default_factory=list)
    size: int = 0  # bytes received (of the latest form: streamed pieces, or given whole)
    dropped: bool = False
    whole: bool = False  # the arguments were given whole

    def add(self, piece: str) -> None:
        """A streamed piece; pieces after arguments given whole replace them."""
        if not piece:
            return
        if self.whole:
            self._forget()
        n = utf8_bytes(piece)
        self.size += n
        self.budget.received += n
        if self.dropped:
            return
        if self.size > ARGUMENTS_BYTES or self.budget.spent:
            self.drop()
        else:
            self.parts.append(piece)

    def give(self, arguments: str) -> None:
        """The arguments whole (none when empty): they replace what was streamed."""
        if not arguments:
            return
        self._forget()
        self.add(arguments)
        self.whole = True

    def drop(self) -> None:
        self.parts.clear()
        self.dropped = True

    def call(self, call_id: str, name: str) -> ToolCall:
        if self.dropped:
            return ToolCall(call_id, name, "", dropped_bytes=self.size)
        return ToolCall(call_id, name, "".join(self.parts) or "{}")

    def _forget(self) -> None:
        self.budget.received -= self.size
        self.parts.clear()
        self.size, self.dropped, self.whole = 0, False, False
