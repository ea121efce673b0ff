"""A dict bounded in entries, for the memo tables of the per-request path: past its
bound it is emptied at once (a crawl moves on from site to site, so what was
remembered long ago is seldom asked again, and emptying costs nothing per look-up)."""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["BoundedDict"]

K = TypeVar("K")
V = TypeVar("V")


class BoundedDict(dict[K, V], Generic[K, V]):
    """A ``dict`` that empties itself when an entry would make it hold more than
    ``max_entries``. Look-ups are a plain dict's."""

    __slots__ = ("max_entries",)

    def __init__(self, max_entries: int) -> None:
        super().__init__()
        self.max_entries = max_entries

    def __setitem__(self, key: K, value: V) -> None:
        if len(self) >= self.max_entries and key not in self:
            self.clear()
        super().__setitem__(key, value)
