"""The interface of a store: where origin states are kept beyond one process's
in-memory cache (on disk across restarts, in Redis across a fleet).

A store keeps :class:`~scrapy_rfc9309.record.Record` objects by key (the origin,
``scheme://host[:port]``) and a short-lived fetch lock per key, so that one
process fetches an origin's robots.txt while the others wait for its result.
Any exception counts as the store being unavailable: the middleware logs it,
fetches on its own meanwhile and tries the store again later. A record that cannot
be read back is not an exception: the store returns it as
:class:`~scrapy_rfc9309.record.Unreadable` (a missing record that says why), and the
next save replaces it.

Times come from the processes' clocks, which may differ: a record dated ahead of
the claimant's clock by more than :data:`~scrapy_rfc9309.record.CLOCK_TOLERANCE` is
never fresh, and a save replaces it (see :func:`fresh` and :func:`replaces`).

How the middleware calls it:

- :class:`Store`, blocking methods: in worker threads of the middleware's own
  (calls made while a worker is busy go to the next one together), or, with
  ``in_reactor = True``, directly in the reactor thread, for a store whose calls
  take microseconds and never wait long (the disk store). A thread hand-off is not
  free: a busy crawl holds the GIL, and each time a worker gives it up and takes it
  back (every socket or SQLite call does) it waits up to the 5 ms switch interval.
- :class:`AsyncStore`, coroutine methods: awaited in the reactor's asyncio loop
  (needs Scrapy's asyncio reactor, the default), for a network store (Redis).
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

from .record import CLOCK_TOLERANCE, Record, Unreadable

__all__ = ["AsyncStore", "Claim", "Store", "fresh", "replaces"]

#: How to install what the Redis store needs: redis-py, which the package's ``redis`` extra names
#: (the package is installed from its source, not from a package index).
REDIS_INSTALL = ("pip install 'redis>=5.0.1', or install scrapy-rfc9309 from its source with the extra: "
                 "pip install '/path/to/scrapy-rfc9309[redis]'")


class Claim(enum.Enum):
    """The answer to ``claim``."""

    FRESH = "fresh"  # a record still fresh is kept: use it, fetch nothing
    ACQUIRED = "acquired"  # the caller holds the fetch lock: fetch, then save
    BUSY = "busy"  # another process holds the lock: wait, then claim again


def fresh(record: Record, now: float, fetched_after: float | None = None) -> bool:
    """Whether a claim at ``now`` answers :attr:`Claim.FRESH` with ``record``: it
    expires after ``now``, is not dated ahead of ``now`` (beyond
    :data:`~scrapy_rfc9309.record.CLOCK_TOLERANCE`), and was fetched after
    ``fetched_after`` when that is given."""
    return (not isinstance(record, Unreadable) and record.expires_at > now
            and record.fetched_at <= now + CLOCK_TOLERANCE
            and (fetched_after is None or record.fetched_at > fetched_after))


def replaces(record: Record, kept: Record | None, now: float) -> bool:
    """Whether a save at ``now`` writes ``record`` over ``kept``: unless ``kept`` was
    fetched later, and is readable and not dated ahead of ``now``."""
    return (kept is None or isinstance(kept, Unreadable) or kept.fetched_at <= record.fetched_at
            or kept.fetched_at > now + CLOCK_TOLERANCE)


class Store:
    """Base class of the stores named by ``ROBOTSTXT_STORE``, with blocking
    methods. Subclasses implement :meth:`load` and :meth:`save`; a store shared
    between processes also implements :meth:`claim`, :meth:`renew` and
    :meth:`release` atomically."""

    #: Worker threads the middleware may run this store's methods in at once.
    threads: ClassVar[int] = 1
    #: Call the methods in the reactor thread (they must never block for long).
    in_reactor: ClassVar[bool] = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> Store | AsyncStore:
        """Build the store from the crawler's settings. Raise
        :class:`~scrapy_rfc9309.exceptions.RobotsTxtConfigError` naming the setting
        for a value it cannot use: the crawl then stops at start-up."""
        return cls()

    def open(self) -> None:
        """Connect, create what is missing (called once, before any other call)."""

    def close(self) -> None:
        """Release connections and files (called once, at the end)."""

    def load(self, key: str) -> Record | None:
        """The record kept for ``key`` (:class:`~scrapy_rfc9309.record.Unreadable`
        when it cannot be read back), or None."""
        raise NotImplementedError

    def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        """Keep ``record`` unless the record kept was fetched later (see
        :func:`replaces`; returns whether it was written), forget it after
        ``record.keep_until``, and release ``owner``'s fetch lock on ``key``."""
        raise NotImplementedError

    def claim(self, key: str, owner: str, now: float, lock_ttl: float,
              fetched_after: float | None = None) -> tuple[Claim, Record | None]:
        """:attr:`Claim.FRESH` with the record, when the record kept is fresh at
        ``now`` (see :func:`fresh`: ``fetched_after`` is given when the caller found
        the record fetched then too old for it); otherwise take the fetch lock for
        ``owner`` for ``lock_ttl`` seconds (:attr:`Claim.ACQUIRED`, also when
        ``owner`` holds it already) with the record kept, if any (its good copy may
        still apply); or :attr:`Claim.BUSY` (and None) when another owner holds it.
        A lock that would never expire is given ``lock_ttl``. The default, for a
        store of one process, never waits."""
        record = self.load(key)
        if record is not None and fresh(record, now, fetched_after):
            return Claim.FRESH, record
        return Claim.ACQUIRED, record

    def renew(self, key: str, owner: str, lock_ttl: float) -> bool:
        """Extend ``owner``'s lock on ``key`` (a long fetch); False when it was lost."""
        return True

    def release(self, key: str, owner: str) -> None:
        """Give up ``owner``'s lock on ``key`` without saving (a fetch cancelled)."""


class AsyncStore:
    """A store whose methods are coroutines (see :class:`Store` for each one's
    contract), awaited in the reactor's asyncio loop."""

    @classmethod
    def from_crawler(cls, crawler: Any) -> Store | AsyncStore:
        return cls()

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def load(self, key: str) -> Record | None:
        raise NotImplementedError

    async def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        raise NotImplementedError

    async def claim(self, key: str, owner: str, now: float, lock_ttl: float,
                    fetched_after: float | None = None) -> tuple[Claim, Record | None]:
        raise NotImplementedError

    async def renew(self, key: str, owner: str, lock_ttl: float) -> bool:
        return True

    async def release(self, key: str, owner: str) -> None:
        pass

    async def wait_saved(self, key: str, timeout: float) -> Record | bool | None:
        """Called after :meth:`claim` answered :attr:`Claim.BUSY`: wait until the
        holder of ``key``'s fetch lock saves a record or lets the lock go, for
        ``timeout`` seconds at most. Returns the record saved when the store's
        message carries it and the store vouches for it as for a claim's answer (the
        caller uses it as a fresh claim's, claiming again only when it has expired
        already: a message anyone else may send is no such record, the Redis store
        never returns one); True when told without a record (or the
        lock is gone already): the caller claims again at once; False when
        ``timeout`` or the lock's expiry came first (it claims again then); and None
        when this store cannot tell: the caller polls, claiming again after 50 ms,
        growing to 1 s. The default (and every blocking :class:`Store`) returns
        None."""
        return None
