"""What every fuzz target is made of: the function that runs one input and its seeds, and the
split of an input into the chunks a streaming reader is fed."""

from collections.abc import Callable
from typing import NamedTuple


class Target(NamedTuple):
    run: Callable[[bytes], None]
    seeds: list[bytes]


def split(data: bytes) -> tuple[bytes, list[bytes]]:
    """(body, chunks): the first byte picks a chunk size (1-16, or all at once for 0)."""
    if not data:
        return b"", []
    size, body = data[0] % 17, data[1:]
    if size == 0:
        return body, [body]
    return body, [body[i : i + size] for i in range(0, len(body), size)]
