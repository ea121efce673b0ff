"""The interface of a store: where origin states are kept beyond one process's
in-memory cache (on disk across restarts, in Redis across a fleet).

A store keeps :class:`~scrapy_rfc9309.record.Record` objects by key (the origin,
``scheme://host[:port]``) and a short-lived fetch lock per key, so that one
process fetches an origin's robots.txt while the others wait for its result.
Its methods block: the middleware calls them in worker threads of its own, never
in the reactor thread. Any exception counts as the store being unavailable: the
middleware logs it, fetches on its own meanwhile and tries the store again later.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

from ..record import Record

__all__ = ["Claim", "Store"]


class Claim(enum.Enum):
    """The answer to :meth:`Store.claim`."""

    FRESH = "fresh"  # a record still fresh is stored: load it, fetch nothing
    ACQUIRED = "acquired"  # the caller holds the fetch lock: fetch, then save
    BUSY = "busy"  # another process holds the lock: wait, then claim again


class Store:
    """Base class of the stores named by ``ROBOTSTXT_STORE``. Subclasses
    implement :meth:`load` and :meth:`save`; a store shared between processes
    also implements :meth:`claim`, :meth:`renew` and :meth:`release` atomically."""

    #: Worker threads the middleware may run this store's methods in at once.
    threads: ClassVar[int] = 1

    @classmethod
    def from_crawler(cls, crawler: Any) -> Store:
        """Build the store from the crawler's settings. Raise
        :class:`~scrapy_rfc9309.exceptions.RobotsTxtConfigError` naming the setting
        for a value it cannot use: the crawl then stops at start-up."""
        return cls()

    def open(self) -> None:
        """Connect, create what is missing (called once, in a worker thread)."""

    def close(self) -> None:
        """Release connections and files (called once, in a worker thread)."""

    def load(self, key: str) -> Record | None:
        """The record kept for ``key``, or None."""
        raise NotImplementedError

    def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        """Keep ``record`` unless a record fetched later is kept already (returns
        whether it was written), forget it after ``record.keep_until``, and release
        ``owner``'s fetch lock on ``key``."""
        raise NotImplementedError

    def claim(self, key: str, owner: str, now: float, lock_ttl: float) -> Claim:
        """:attr:`Claim.FRESH` when the kept record expires after ``now``;
        otherwise take the fetch lock for ``owner`` for ``lock_ttl`` seconds
        (:attr:`Claim.ACQUIRED`; also when ``owner`` holds it already), or
        :attr:`Claim.BUSY` when another owner holds it. The default, for a store
        of one process, never waits."""
        record = self.load(key)
        if record is not None and record.expires_at > now:
            return Claim.FRESH
        return Claim.ACQUIRED

    def renew(self, key: str, owner: str, lock_ttl: float) -> bool:
        """Extend ``owner``'s lock on ``key`` (a long fetch); False when it was lost."""
        return True

    def release(self, key: str, owner: str) -> None:
        """Give up ``owner``'s lock on ``key`` without saving (a fetch cancelled)."""
