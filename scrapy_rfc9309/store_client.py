"""The middleware's side of a store (``ROBOTSTXT_STORE = "disk"``, ``"redis"`` or
a class): it runs the store's blocking methods in worker threads of its own,
waits while another process fetches an origin's robots.txt, and keeps the crawl
going while the store is down (fetching in this process, with a warning, and
going back to the store when it answers again).
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer, task, threads
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool

from .access import OriginState, Policy
from .record import RecordError, decode, encode
from .stores import Claim, Store

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from .origin import Origin

__all__ = ["Lease", "Obtained", "StoreClient"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Polling while another process fetches: first delay, growth, longest delay (s).
_POLL_FIRST, _POLL_GROWTH, _POLL_MAX = 0.05, 1.5, 1.0
#: States fetched while the store was down, saved when it is back (at most).
_MAX_UNSAVED = 1000
#: Seconds ``close`` waits for saves still running.
_CLOSE_TIMEOUT = 10.0


class StoreUnavailable(Exception):
    """The store failed, or failed recently; the caller goes on without it."""


@dataclass
class Lease:
    """The fetch lock of one origin, renewed while the fetch runs."""

    key: str
    renewer: task.LoopingCall | None = None
    done: bool = False


@dataclass
class Obtained:
    """What the store gave for an origin: a ``state`` fresh enough to use (nothing
    to fetch), or the right to fetch: the ``previous`` (expired) state, if any, and
    the ``lease`` when the store is up."""

    state: OriginState | None = None
    previous: OriginState | None = None
    lease: Lease | None = None
    waited: bool = False


class StoreClient:
    """Runs one :class:`~scrapy_rfc9309.stores.Store` for the middleware."""

    def __init__(self, store: Store, crawler: Crawler, policy: Policy, lock_ttl: float, retry_delay: float) -> None:
        self.store = store
        self.crawler = crawler
        self.policy = policy
        self.lock_ttl = lock_ttl
        self.retry_delay = retry_delay
        self.name = type(store).__name__
        #: This process's id in the store's locks.
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._pool = ThreadPool(minthreads=0, maxthreads=max(1, store.threads), name="robotstxt-store")
        self._started = False
        self._opened = False
        self._closed = False
        self._down_until = 0.0
        self._outage: str | None = None
        self._pending: set[defer.Deferred[Any]] = set()
        self._unsaved: dict[str, OriginState] = {}
        self._shutdown_trigger: Any = None

    # -- plumbing -----------------------------------------------------------------------
    def _inc(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"robotstxt/{key}")

    @property
    def _log_extra(self) -> dict[str, Any]:
        return {"spider": self.crawler.spider}

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._pool.start()
        # A crawl that ends without spider_closed must not leave the threads running.
        self._shutdown_trigger = _reactor().addSystemEventTrigger("during", "shutdown", self._stop_pool)

    def _stop_pool(self) -> None:
        if self._pool.started:
            self._pool.stop()

    async def _call(self, method: Callable[..., T], *args: Any) -> T:
        """``method(*args)`` in a worker thread. Raises :class:`StoreUnavailable`
        when it fails, and at once while the store is counted as down."""
        if self._closed or time.time() < self._down_until:
            raise StoreUnavailable
        reactor = _reactor()
        self.start()
        try:
            if not self._opened:
                await maybe_deferred_to_future(threads.deferToThreadPool(reactor, self._pool, self.store.open))
                self._opened = True
            result: T = await maybe_deferred_to_future(threads.deferToThreadPool(reactor, self._pool, method, *args))
        except defer.CancelledError:
            raise
        except Exception as exc:
            self._failed(exc)
            raise StoreUnavailable from exc
        if self._outage is not None:
            self._recovered()
        return result

    def _failed(self, exc: Exception) -> None:
        self._inc("store_error")
        self._down_until = time.time() + self.retry_delay
        if self._outage is None:
            self._outage = f"{type(exc).__name__}: {exc}"
            logger.warning(
                "robots.txt store %s is unavailable (%s): robots.txt files are fetched by this process until it "
                "answers again (tried every %g s)", self.name, self._outage, self.retry_delay, extra=self._log_extra)

    def _recovered(self) -> None:
        logger.info("robots.txt store %s answers again (it was unavailable: %s)", self.name, self._outage,
                    extra=self._log_extra)
        self._outage = None
        unsaved, self._unsaved = self._unsaved, {}
        for key, state in unsaved.items():
            self._background(self._save(key, state, None))

    def _background(self, coroutine: Any) -> None:
        from scrapy.utils.defer import deferred_from_coro

        running = deferred_from_coro(coroutine)
        self._pending.add(running)
        running.addBoth(self._finished, running)

    def _finished(self, result: Any, running: defer.Deferred[Any]) -> None:
        self._pending.discard(running)
        if isinstance(result, Failure) and not result.check(StoreUnavailable, defer.CancelledError):
            logger.error("robots.txt store %s: %s", self.name, result.getErrorMessage(), extra=self._log_extra)

    # -- what the middleware calls ----------------------------------------------------------
    async def obtain(self, origin: Origin, previous: OriginState | None) -> Obtained:
        """A state of ``origin`` that is still fresh in the store, waiting while
        another process fetches it; otherwise the fetch lock (and the expired state,
        when this process has none). With the store down: nothing but ``previous``."""
        key = str(origin)
        delay = _POLL_FIRST
        waited = False
        while True:
            try:
                claim = await self._call(self.store.claim, key, self.owner, time.time(), self.lock_ttl)
                if claim is Claim.FRESH:
                    record = await self._call(self.store.load, key)
                    if record is None:
                        continue  # forgotten between the two calls
                    try:
                        return Obtained(state=decode(record, self.policy), waited=waited)
                    except RecordError as exc:
                        self._unreadable(key, exc)
                        return Obtained(previous=previous, waited=waited)
                if claim is Claim.ACQUIRED:
                    lease = self._lease(key)
                    # Another process may have fetched since this one's copy: the newer
                    # one carries the last good copy and the failure count on.
                    stored = await self._stale(key)
                    if stored is not None and (previous is None or stored.fetched_at > previous.fetched_at):
                        previous = stored
                    return Obtained(previous=previous, lease=lease, waited=waited)
            except StoreUnavailable:
                return Obtained(previous=previous, waited=waited)
            if not waited:
                waited = True
                self._inc("store_wait")
                logger.debug("robots.txt of %s is being fetched by another process; waiting for it", origin,
                             extra=self._log_extra)
            await maybe_deferred_to_future(_sleep(delay))
            delay = min(delay * _POLL_GROWTH, _POLL_MAX)

    async def _stale(self, key: str) -> OriginState | None:
        """The expired state kept for ``key`` (its good copy may still apply)."""
        try:
            record = await self._call(self.store.load, key)
        except StoreUnavailable:
            return None
        if record is None:
            return None
        try:
            return decode(record, self.policy)
        except RecordError as exc:
            self._unreadable(key, exc)
            return None

    def _unreadable(self, key: str, exc: RecordError) -> None:
        self._inc("store_unreadable")
        logger.warning("robots.txt store %s: the record of %s cannot be read (%s); fetching it again", self.name,
                       key, exc, extra=self._log_extra)

    def _lease(self, key: str) -> Lease:
        lease = Lease(key)
        renewer = task.LoopingCall(self._renew, lease)
        renewer.start(max(self.lock_ttl / 3, 0.05), now=False).addErrback(lambda _: None)
        lease.renewer = renewer
        return lease

    def _renew(self, lease: Lease) -> None:
        if not lease.done:
            self._background(self._call(self.store.renew, lease.key, self.owner, self.lock_ttl))

    def _end(self, lease: Lease | None) -> bool:
        if lease is None or lease.done:
            return False
        lease.done = True
        if lease.renewer is not None and lease.renewer.running:
            lease.renewer.stop()
        return True

    def save(self, origin: Origin, state: OriginState, lease: Lease | None) -> None:
        """Keep ``state`` in the store (in the background) and release the lease."""
        owner = self.owner if self._end(lease) else None
        self._background(self._save(str(origin), state, owner))

    async def _save(self, key: str, state: OriginState, owner: str | None) -> None:
        try:
            written = await self._call(self.store.save, key, encode(state, self.policy), owner)
        except StoreUnavailable:
            if len(self._unsaved) < _MAX_UNSAVED or key in self._unsaved:
                self._unsaved[key] = state
            raise
        if written:
            self._inc("store_saved")

    def release(self, lease: Lease | None) -> None:
        """Give the lease up without saving (the fetch was cancelled)."""
        if self._end(lease):
            assert lease is not None
            self._background(self._call(self.store.release, lease.key, self.owner))

    async def close(self) -> None:
        """Wait (a bounded time) for saves still running, then close the store and
        stop the threads."""
        if self._closed:
            return
        reactor = _reactor()
        if self._pending:
            waiting = defer.DeferredList(list(self._pending), consumeErrors=True)
            waiting.addTimeout(_CLOSE_TIMEOUT, reactor)
            try:
                await maybe_deferred_to_future(waiting)
            except defer.TimeoutError:
                logger.warning("robots.txt store %s: saves still running at close were abandoned", self.name,
                               extra=self._log_extra)
        self._closed = True
        if self._started and self._opened:
            try:
                await maybe_deferred_to_future(threads.deferToThreadPool(reactor, self._pool, self.store.close))
            except Exception as exc:
                logger.warning("robots.txt store %s did not close cleanly: %s", self.name, exc, extra=self._log_extra)
        if self._started:
            self._stop_pool()
            if self._shutdown_trigger is not None:
                _reactor().removeSystemEventTrigger(self._shutdown_trigger)
                self._shutdown_trigger = None


def _reactor() -> Any:
    from twisted.internet import reactor  # the installed one, not at import time

    return reactor


def _sleep(seconds: float) -> defer.Deferred[None]:
    return task.deferLater(_reactor(), seconds, lambda: None)
