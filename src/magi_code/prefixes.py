"""Lists that grow at the end and hand out immutable prefixes of themselves without copying.

A long session's history is kept in lists that mostly grow: a turn appends a few entries,
parts or items. Handing a copy of such a list to each snapshot or model request costs the
whole history every turn; a `Prefix` instead shares the list it came from and remembers its
length. The owner, a `Growing`, keeps the promise that makes this safe: the items under the
longest prefix it handed out are never changed in place. Changing one of them (or cutting
the list shorter, or dropping its front) first moves the owner to a fresh copy, which old
prefixes do not see; those changes are rare (a fold, an entry changed after a snapshot),
appends are the common case and copy nothing.

Pure data structure: no I/O, no locks (each owner serializes its own changes).
"""

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, compress, count, islice
from operator import is_not
from typing import Generic, TypeVar, overload

T = TypeVar("T")


class Prefix(Sequence[T]):
    """The first `length` items of a list whose owner never changes them, then `tail`.

    Immutable; slices are tuples; equal to any sequence (list or tuple) of equal items.
    """

    __slots__ = ("_items", "_length", "_tail")

    def __init__(self, items: list[T], length: int, tail: Sequence[T] = ()) -> None:
        self._items, self._length, self._tail = items, length, tuple(tail)

    def __len__(self) -> int:
        return self._length + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...
    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1 and stop <= self._length:
                return tuple(self._items[start:stop])  # the common case, in C
            return tuple(self[i] for i in range(start, stop, step))
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError("prefix index out of range")
        if position < self._length:
            return self._items[position]
        return self._tail[position - self._length]

    def __iter__(self) -> Iterator[T]:
        return chain(islice(self._items, self._length), self._tail)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def __repr__(self) -> str:
        return f"Prefix({list(self)!r})"

    def extended(self, more: Sequence[T]) -> "Prefix[T]":
        """These items, then `more` (copied: the cost is its length, not this one's)."""
        return Prefix(self._items, self._length, (*self._tail, *more))

    def _from(self, start: int) -> Iterator[T]:
        """The items from `start` on, without stepping over the ones before it."""
        return chain(self._items[start : self._length], self._tail[max(0, start - self._length) :])

    def common_prefix(self, other: Sequence[T]) -> int:
        """How many leading items are the very same objects in both (`is`, not `==`).

        Two prefixes of one owner's list share their shorter list part without a look at
        it; the rest is compared item by item, so the cost is what differs or was added.
        """
        start = 0
        if isinstance(other, Prefix) and other._items is self._items:
            start = min(self._length, other._length)
        mine = self._from(start)
        theirs = other._from(start) if isinstance(other, Prefix) else islice(other, start, None)
        differing = compress(count(start), map(is_not, mine, theirs))
        return next(differing, min(len(self), len(other)))


class Growing(Generic[T]):
    """A list its owner changes freely and hands out `Prefix`es of (see the module doc)."""

    __slots__ = ("_items", "_shared")

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items: list[T] = list(items)
        self._shared = 0  # the length of the longest prefix handed out of `_items`

    def prefix(self, tail: Sequence[T] = ()) -> Prefix[T]:
        """All the items now, then `tail`; later changes here never show in it."""
        self._shared = len(self._items)
        return Prefix(self._items, self._shared, tail)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def append(self, item: T) -> None:
        self._items.append(item)

    def extend(self, items: Iterable[T]) -> None:
        self._items.extend(items)

    def __setitem__(self, index: int, item: T) -> None:
        if index < 0:
            index += len(self._items)
        if index < self._shared:
            self._unshare()
        self._items[index] = item

    def pop_at(self, index: int) -> T:
        """Remove and return the item at `index` (from 0)."""
        if index < self._shared:
            self._unshare()
        return self._items.pop(index)

    def truncate(self, length: int) -> None:
        """Keep the first `length` items."""
        if length < self._shared:
            self._items, self._shared = self._items[:length], 0
        else:
            del self._items[length:]

    def drop_front(self, count: int) -> None:
        """Remove the first `count` items."""
        if self._shared:
            self._items, self._shared = self._items[count:], 0
        else:
            del self._items[:count]

    def _unshare(self) -> None:
        self._items, self._shared = self._items.copy(), 0
