"""The middleware's side of a store (``ROBOTSTXT_STORE = "disk"``, ``"redis"`` or
a class): it waits while another process fetches an origin's robots.txt, and keeps
the crawl going while the store is down, fetching in this process, with a warning,
and going back to the store when it answers again.

Every store is called one way, as an :class:`~scrapy_rfc9309.stores.AsyncStore`
(a blocking :class:`~scrapy_rfc9309.stores.Store` through an adapter of
:mod:`scrapy_rfc9309.stores.blocking`), through a
:class:`~scrapy_rfc9309.stores.connection.StoreConnection`, which knows whether the store is
there; this module knows what to ask it: a state, the fetch lock, a save.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.caches import BoundedDict
from ..core.documents import ROBOTS_TXT, Document
from ..core.state import OriginState
from ..exceptions import RobotsTxtConfigError
from ..runtime.loop import Timer, asyncio_available, looping_call, sleep
from ..runtime.reporting import Reporting
from . import AsyncStore, Claim, Store
from .blocking import as_async
from .connection import StoreConnection, StoreUnavailable
from .record import Record, RecordError, dated_ahead, decode, encode

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

    from ..config import Config
    from ..core.origins import Origin

__all__ = ["Lease", "Obtained", "RepeatedWarnings", "StoreClient", "StoreUnavailable"]

logger = logging.getLogger(__name__)

#: Polling while another process fetches, with a store that cannot tell when the
#: fetch ends: first delay, growth, longest delay (s).
_POLL_FIRST, _POLL_GROWTH, _POLL_MAX = 0.05, 1.5, 1.0
#: Longest wait for a store that tells when the fetch ends before claiming again
#: anyway (a message lost with a connection is not waited for longer).
_TOLD_MAX = 5.0
#: States fetched while the store was down, saved when it is back (at most).
_MAX_UNSAVED = 1000
#: Seconds between two warnings of one kind; those in between are logged at DEBUG and counted.
WARNING_INTERVAL = 60.0
#: Kinds of warning :class:`RepeatedWarnings` remembers (at most).
_MAX_WARNING_KINDS = 256


class RepeatedWarnings:
    """Warnings of one kind (a key) at most once per :data:`WARNING_INTERVAL`: the others
    at DEBUG, and the next warning says how many there were meanwhile. ``clock``: monotonic
    seconds (injected by tests)."""

    def __init__(self, interval: float = WARNING_INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        #: Per key: when it was last logged at WARNING, and how many were logged at DEBUG since
        #: (keys are kinds of warning: a bound all the same).
        self._last: BoundedDict[str, list[float]] = BoundedDict(_MAX_WARNING_KINDS)

    def log(self, key: str, message: str, *args: Any, **kwargs: Any) -> None:
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last[0] < self.interval:
            last[1] += 1
            logger.debug(message, *args, **kwargs)
            return
        more = int(last[1]) if last is not None else 0
        if more:
            message += f" ({more} more like it in the last {now - last[0]:.0f} s, logged at DEBUG)"  # type: ignore[index]
        self._last[key] = [now, 0]
        logger.warning(message, *args, **kwargs)


@dataclass
class Lease:
    """The fetch lock of one origin, renewed while the fetch runs."""

    key: str
    renewer: Timer | None = None
    done: bool = False


@dataclass
class Obtained:
    """What the store gave for an origin: a ``state`` fresh enough to use (nothing
    to fetch), or the right to fetch: the ``previous`` (expired) state, if any, and
    the ``lease`` when the store is up."""

    state: OriginState | None = None
    previous: OriginState | None = None
    lease: Lease | None = None


class StoreClient(Reporting):
    """Runs one :class:`~scrapy_rfc9309.stores.Store` or
    :class:`~scrapy_rfc9309.stores.AsyncStore` for the middleware."""

    def __init__(self, store: Store | AsyncStore, crawler: Crawler, config: Config) -> None:
        self.name = type(store).__name__
        if isinstance(store, AsyncStore) and not asyncio_available():
            raise RobotsTxtConfigError(
                f"ROBOTSTXT_STORE ({self.name}) needs asyncio: set TWISTED_REACTOR to "
                "'twisted.internet.asyncioreactor.AsyncioSelectorReactor' (Scrapy's default), or run without a "
                "reactor (TWISTED_REACTOR_ENABLED = False)"
            )
        self.crawler = crawler
        self.policy = config.policy
        self.lock_ttl = config.store_lock_ttl
        self.timeout = config.store_timeout
        #: Longest wait for another process's fetch before fetching here anyway.
        download_timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT", 180.0)
        self.max_busy_wait = self.lock_ttl + download_timeout * (self.policy.max_redirects + 1)
        #: This process's id in the store's locks.
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._unsaved: dict[str, tuple[OriginState, Document]] = {}
        #: Records found unreadable, and dated ahead, so far: the first of each is a warning.
        self._unreadable_seen = 0
        self._ahead_seen = 0
        self._warnings = RepeatedWarnings()
        self.connection = StoreConnection(as_async(store), self.name, crawler, config, self._warnings.log,
                                          self._recovered)

    @property
    def store(self) -> AsyncStore:
        """The store, as an :class:`~scrapy_rfc9309.stores.AsyncStore`."""
        return self.connection.store

    # -- what the middleware calls ----------------------------------------------------------
    async def obtain(self, origin: Origin, previous: OriginState | None,
                     on_wait: Callable[[Origin], None] | None = None,
                     document: Document = ROBOTS_TXT) -> Obtained:
        """A state of ``origin``'s ``document`` that is still fresh in the store,
        waiting while another process fetches it (``on_wait`` is called when that
        wait starts); otherwise the fetch lock (and the expired state kept, when it
        is newer than this process's). With the store down: nothing but ``previous``."""
        key = document.key(origin)
        delay = _POLL_FIRST
        waited = False
        give_up = time.time() + self.max_busy_wait
        #: A record fresh in the store but not for this process, and its fetch time.
        stale: Record | None = None
        fetched_after: float | None = None
        while True:
            now = time.time()
            more = () if fetched_after is None else (fetched_after,)
            try:
                claim, record = await self.connection.call("claim", key, self.owner, now, self.lock_ttl, *more)
            except StoreUnavailable:
                return Obtained(previous=previous)
            if claim is Claim.FRESH and record is not None:
                if record == stale:  # a store that does not take fetched_after: fetched without its lock
                    return Obtained(previous=previous)
                fresh = self._decoded(key, record, now, document)
                if fresh is not None and fresh.expires_at > now:
                    return Obtained(state=fresh)
                # Fresh for the store, not for this process (its lifetime is shorter, the record
                # is dated ahead of its clock, or cannot be read): claimed again, to fetch it.
                stale, previous, fetched_after = record, _newer(fresh, previous), _after(record)
                continue
            if claim is Claim.ACQUIRED:
                # Another process may have fetched since this one's copy: the newer one
                # carries the last good copy and the failure count on.
                if record is not None and record != stale:
                    previous = _newer(self._decoded(key, record, now, document), previous)
                return Obtained(previous=previous, lease=self._lease(key))
            if claim is Claim.BUSY:
                if not waited:
                    waited = True
                    self._inc(f"{document.stat}store_wait")
                    logger.debug("%s of %s is being fetched by another process; waiting for it", document.name,
                                 origin, extra=self._log_extra)
                    if on_wait is not None:
                        on_wait(origin)
                now = time.time()
                if now >= give_up:
                    self._warnings.log(f"held {document.name}",
                                       "%s of %s: another process has held its fetch lock for %.0f s; fetching "
                                       "it here", document.name, origin, self.max_busy_wait, extra=self._log_extra)
                    return Obtained(previous=previous)
                # Woken when the holder saves or lets go (the store tells), or at its lock's expiry.
                try:
                    told = await self.connection.call("wait_saved", key,
                                                      min(_TOLD_MAX, give_up - now, self.timeout / 2))
                except StoreUnavailable:
                    return Obtained(previous=previous)
                if isinstance(told, Record):
                    # The holder's save, carried by the message that told: as a fresh claim's.
                    now = time.time()
                    fresh = self._decoded(key, told, now, document)
                    if fresh is not None and fresh.expires_at > now:
                        self._inc(f"{document.stat}store_woken")
                        return Obtained(state=fresh)
                    stale, previous, fetched_after = told, _newer(fresh, previous), _after(told)
                if told:
                    self._inc(f"{document.stat}store_woken")
                    continue
                self._inc(f"{document.stat}store_poll")
                if told is None:  # the store cannot tell: poll
                    await sleep(min(delay, max(give_up - time.time(), 0.0)))
                    delay = min(delay * _POLL_GROWTH, _POLL_MAX)

    def _decoded(self, key: str, record: Record | None, now: float,
                 document: Document = ROBOTS_TXT) -> OriginState | None:
        """The state ``record`` holds as this process reads it at ``now``; None (logged,
        counted) when it cannot be read."""
        if record is None:
            return None
        ahead = dated_ahead(record, now)
        if ahead:
            self._inc(f"{document.stat}store_future_dated")
            self._ahead_seen += 1
            logger.log(logging.WARNING if self._ahead_seen == 1 else logging.DEBUG,
                       "robots.txt store %s: the record of %s is dated %.0f s ahead of this process's clock (written "
                       "by a process whose clock is ahead?); it is not trusted, fetched again and replaced%s",
                       self.name, key, ahead, _LATER, extra=self._log_extra)
        try:
            return decode(record, self.policy, now, document)
        except RecordError as exc:
            self._inc(f"{document.stat}store_unreadable")
            self._unreadable_seen += 1
            logger.log(logging.WARNING if self._unreadable_seen == 1 else logging.DEBUG,
                       "robots.txt store %s: the record of %s cannot be read (%s); it is fetched again and replaced%s",
                       self.name, key, exc, _LATER, extra=self._log_extra)
            return None

    def _recovered(self) -> None:
        """The store answers again: the states fetched while it was down are saved."""
        unsaved, self._unsaved = self._unsaved, {}
        for key, (state, document) in unsaved.items():
            self.connection.background(self._save(key, state, None, document))

    def _lease(self, key: str) -> Lease:
        lease = Lease(key)
        lease.renewer = looping_call(max(self.lock_ttl / 3, 0.05), self._renew, lease)
        return lease

    def _renew(self, lease: Lease) -> None:
        if not lease.done:
            self.connection.background(self.connection.call("renew", lease.key, self.owner, self.lock_ttl))

    def _end(self, lease: Lease | None) -> bool:
        if lease is None or lease.done:
            return False
        lease.done = True
        if lease.renewer is not None:
            lease.renewer.cancel()
        return True

    def save(self, origin: Origin, state: OriginState, lease: Lease | None,
             document: Document = ROBOTS_TXT) -> None:
        """Keep ``state`` in the store (in the background) and release the lease."""
        owner = self.owner if self._end(lease) else None
        self.connection.background(self._save(document.key(origin), state, owner, document))

    async def _save(self, key: str, state: OriginState, owner: str | None, document: Document) -> None:
        try:
            written = await self.connection.call("save", key, encode(state, self.policy), owner)
        except StoreUnavailable:
            if len(self._unsaved) < _MAX_UNSAVED or key in self._unsaved:
                self._unsaved[key] = (state, document)
            raise
        if written:
            self._inc(f"{document.stat}store_saved")

    def release(self, lease: Lease | None) -> None:
        """Give the lease up without saving (the fetch was cancelled)."""
        if self._end(lease):
            assert lease is not None
            self.connection.background(self.connection.call("release", lease.key, self.owner))

    async def close(self) -> None:
        """Wait (a bounded time) for saves still running, then close the store."""
        await self.connection.close()


_LATER = " (further such records are logged at DEBUG level and counted in the stats)"


def _after(record: Record) -> float:
    """What a claim is given as ``fetched_after`` for a record of no use to the claimant."""
    return record.fetched_at if math.isfinite(record.fetched_at) else math.inf


def _newer(stored: OriginState | None, previous: OriginState | None) -> OriginState | None:
    """The newer of a state read from the store and this process's own."""
    if stored is not None and (previous is None or stored.fetched_at > previous.fetched_at):
        return stored
    return previous
