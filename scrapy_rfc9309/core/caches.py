"""A dict that stays within a number of entries, and optionally of bytes: the caches the
plugin keeps per crawl (answers by header value, JSON text by origin, versions by digest,
...), whose keys come from outside the process and so have no natural bound.

Reads are the dict's own (``get``, ``[]``, ``in`` are not overridden: a cache hit costs what a
dict's does). A store that would pass a bound first drops the oldest entries (in insertion
order) until a quarter of that bound is free (a quarter of ``max_entries``, or of ``max_bytes``
beside the new entry), so that the cost of dropping is spread over the stores that fill the
room again. An entry larger than ``max_bytes`` on its own is not stored. Stores go through
``[]``, ``setdefault`` and ``update``. ``on_drop(key, value)``, when given, is called for each entry
the bound drops, oldest first, after it is out of the dict (not for one deleted, popped, cleared or
replaced by the caller's own store): a cache whose entries hold something to hand on (counts to
report) hands it on there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any, TypeVar, overload

__all__ = ["BoundedDict"]

K = TypeVar("K")
V = TypeVar("V")


class BoundedDict(dict[K, V]):
    """At most ``max_entries`` entries; with ``max_bytes`` and ``size`` (the bytes an entry
    holds, ``size(key, value)``), at most ``max_bytes`` of them in all; ``on_drop(key, value)``
    called for each entry the bound drops."""

    __slots__ = ("_bytes", "_size", "max_bytes", "max_entries", "on_drop")

    def __init__(self, max_entries: int, *, max_bytes: int | None = None,
                 size: Callable[[K, V], int] | None = None,
                 on_drop: Callable[[K, V], None] | None = None) -> None:
        super().__init__()
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        if (max_bytes is None) != (size is None):
            raise ValueError("max_bytes and size go together")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._size = size
        self.on_drop = on_drop
        #: The bytes the entries hold, by ``size`` (0 without it).
        self._bytes = 0

    @property
    def bytes(self) -> int:
        """The bytes the entries hold, by ``size`` (0 without it)."""
        return self._bytes

    def __setitem__(self, key: K, value: V) -> None:
        size = self._size
        if size is None:
            if len(self) >= self.max_entries and key not in self:
                self._drop()
            dict.__setitem__(self, key, value)
            return
        added = size(key, value)
        if key in self:
            self._bytes -= size(key, dict.__getitem__(self, key))
            dict.__delitem__(self, key)  # stored again below, as the newest
        limit: int = self.max_bytes  # type: ignore[assignment]  # set with size
        if added > limit:
            return
        if len(self) >= self.max_entries or self._bytes + added > limit:
            self._drop(added)
        dict.__setitem__(self, key, value)
        self._bytes += added

    def _drop(self, room: int = 0) -> None:
        """Make room for one more entry of ``room`` bytes: drop the oldest entries until a quarter of
        the bound that is reached is free (of the entries, or of the bytes)."""
        entries = len(self)
        if entries >= self.max_entries:
            entries = max(0, self.max_entries - max(1, self.max_entries // 4))
        size = self._size
        dropped: list[tuple[K, V]]
        if size is None:
            dropped = list(islice(self.items(), len(self) - entries))
        else:
            limit: int = self.max_bytes  # type: ignore[assignment]
            if self._bytes + room > limit:
                limit -= limit // 4
            limit -= room
            dropped = []
            for key, value in self.items():
                if len(self) - len(dropped) <= entries and self._bytes <= limit:
                    break
                dropped.append((key, value))
                self._bytes -= size(key, value)
        for key, _ in dropped:
            dict.__delitem__(self, key)
        on_drop = self.on_drop
        if on_drop is not None:
            for key, value in dropped:
                on_drop(key, value)

    def __delitem__(self, key: K) -> None:
        if self._size is not None:
            self._bytes -= self._size(key, dict.__getitem__(self, key))
        dict.__delitem__(self, key)

    _MISSING: Any = object()

    @overload
    def pop(self, key: K, /) -> V: ...
    @overload
    def pop(self, key: K, default: V, /) -> V: ...
    @overload
    def pop(self, key: K, default: Any, /) -> Any: ...

    def pop(self, key: K, default: Any = _MISSING, /) -> Any:
        if key in self:
            value = dict.__getitem__(self, key)
            del self[key]
            return value
        if default is BoundedDict._MISSING:
            raise KeyError(key)
        return default

    def popitem(self) -> tuple[K, V]:
        key, value = dict.popitem(self)
        if self._size is not None:
            self._bytes -= self._size(key, value)
        return key, value

    def clear(self) -> None:
        dict.clear(self)
        self._bytes = 0

    def setdefault(self, key: K, default: V = None, /) -> V:  # type: ignore[assignment]
        if key in self:
            return dict.__getitem__(self, key)
        self[key] = default
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        items: Iterable[tuple[Any, Any]] = dict(*args, **kwargs).items()
        for key, value in items:
            self[key] = value

    def __repr__(self) -> str:
        return f"BoundedDict({dict.__repr__(self)}, max_entries={self.max_entries}, max_bytes={self.max_bytes})"
