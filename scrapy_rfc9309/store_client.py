"""The middleware's side of a store (``ROBOTSTXT_STORE = "disk"``, ``"redis"`` or
a class): it calls the store the way the store asks (in the reactor's asyncio
loop, in the reactor thread, or in worker threads), waits while another process
fetches an origin's robots.txt, and keeps the crawl going while the store is down
(fetching in this process, with a warning, and going back to the store when it
answers again).

Worker threads are for blocking stores of the user's own. Their calls are batched:
those made while a worker is busy go to the next worker together, since every
hand-off waits for the GIL of a busy crawl.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.reactor import is_asyncio_reactor_installed
from twisted.internet import defer, task, threads
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool

from .access import OriginState, Policy
from .exceptions import RobotsTxtConfigError
from .record import Record, RecordError, decode, encode
from .stores import AsyncStore, Claim, Store

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from .origin import Origin

__all__ = ["Lease", "Obtained", "StoreClient", "StoreUnavailable"]

logger = logging.getLogger(__name__)

#: Polling while another process fetches: first delay, growth, longest delay (s).
_POLL_FIRST, _POLL_GROWTH, _POLL_MAX = 0.05, 1.5, 1.0
#: States fetched while the store was down, saved when it is back (at most).
_MAX_UNSAVED = 1000
#: Seconds ``close`` waits for saves still running.
_CLOSE_TIMEOUT = 10.0
#: A batch's answer for the calls after the one that failed (not run).
_SKIPPED = object()


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


class StoreClient:
    """Runs one :class:`~scrapy_rfc9309.stores.Store` or
    :class:`~scrapy_rfc9309.stores.AsyncStore` for the middleware."""

    def __init__(self, store: Store | AsyncStore, crawler: Crawler, policy: Policy, lock_ttl: float,
                 retry_delay: float) -> None:
        self.store = store
        self.crawler = crawler
        self.policy = policy
        self.lock_ttl = lock_ttl
        self.retry_delay = retry_delay
        self.name = type(store).__name__
        if isinstance(store, AsyncStore):
            if not is_asyncio_reactor_installed():
                raise RobotsTxtConfigError(
                    f"ROBOTSTXT_STORE ({self.name}) needs Scrapy's asyncio reactor: set TWISTED_REACTOR to "
                    "'twisted.internet.asyncioreactor.AsyncioSelectorReactor' (Scrapy's default)"
                )
            self.mode = "async"
        else:
            self.mode = "reactor" if store.in_reactor else "thread"
        #: This process's id in the store's locks.
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._opened = False
        self._open_lock = threading.Lock()  # thread mode: batches may run at once
        self._opening: asyncio.Lock | None = None  # async mode
        self._closed = False
        self._down_until = 0.0
        self._outage: str | None = None
        self._pending: set[defer.Deferred[Any]] = set()
        self._unsaved: dict[str, OriginState] = {}
        # Thread mode only.
        self._pool: ThreadPool | None = None
        self._shutdown_trigger: Any = None
        self._queue: list[tuple[Callable[..., Any], tuple[Any, ...], defer.Deferred[Any]]] = []
        self._running = 0  # batches in worker threads

    # -- plumbing -----------------------------------------------------------------------
    def _inc(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"robotstxt/{key}")

    @property
    def _log_extra(self) -> dict[str, Any]:
        return {"spider": self.crawler.spider}

    async def _call(self, name: str, *args: Any) -> Any:
        """The store's method ``name`` called with ``args``. Raises
        :class:`StoreUnavailable` when it fails, and at once while the store is
        counted as down."""
        if self._closed or time.time() < self._down_until:
            raise StoreUnavailable
        try:
            if self.mode == "thread":
                ok, value = await maybe_deferred_to_future(self._submit(getattr(self.store, name), *args))
                if not ok:
                    if value is _SKIPPED:
                        raise StoreUnavailable
                    raise value
            else:
                if not self._opened:
                    await self._open()
                value = getattr(self.store, name)(*args)
                if self.mode == "async":
                    value = await value
        except (StoreUnavailable, defer.CancelledError, asyncio.CancelledError):
            raise
        except Exception as exc:
            self._failed(exc)
            raise StoreUnavailable from exc
        if self._outage is not None:
            self._recovered()
        return value

    async def _open(self) -> None:
        if isinstance(self.store, AsyncStore):
            # Calls made while it opens wait for that one open.
            if self._opening is None:
                self._opening = asyncio.Lock()
            async with self._opening:
                if not self._opened:
                    await self.store.open()
        else:
            self.store.open()
        self._opened = True

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
        running = deferred_from_coro(coroutine)
        self._pending.add(running)
        running.addBoth(self._finished, running)

    def _finished(self, result: Any, running: defer.Deferred[Any]) -> None:
        self._pending.discard(running)
        if isinstance(result, Failure) and not result.check(StoreUnavailable, defer.CancelledError):
            logger.error("robots.txt store %s: %s", self.name, result.getErrorMessage(), extra=self._log_extra)

    # -- thread mode ------------------------------------------------------------------------
    def _submit(self, method: Callable[..., Any], *args: Any) -> defer.Deferred[tuple[bool, Any]]:
        """Queue a call for a worker; fires with ``(True, result)`` or ``(False,
        exception)``."""
        if self._pool is None:
            assert isinstance(self.store, Store)
            self._pool = ThreadPool(minthreads=0, maxthreads=max(1, self.store.threads), name="robotstxt-store")
            self._pool.start()
            # A crawl that ends without spider_closed must not leave the threads running.
            self._shutdown_trigger = _reactor().addSystemEventTrigger("during", "shutdown", self._pool.stop)
        answer: defer.Deferred[tuple[bool, Any]] = defer.Deferred()
        self._queue.append((method, args, answer))
        self._dispatch()
        return answer

    def _dispatch(self) -> None:
        """Hand what is queued to a worker as one batch, unless every worker the
        store allows is busy (then it goes when one is done)."""
        assert isinstance(self.store, Store) and self._pool is not None
        if not self._queue or self._running >= max(1, self.store.threads):
            return
        batch, self._queue = self._queue, []
        self._running += 1
        calls = [(method, args) for method, args, _ in batch]
        running = threads.deferToThreadPool(_reactor(), self._pool, self._run_batch, calls)
        running.addBoth(self._batch_done, batch)

    def _batch_done(self, results: Any, batch: list[tuple[Any, Any, defer.Deferred[Any]]]) -> None:
        self._running -= 1
        if isinstance(results, Failure):  # the pool itself failed (stopped)
            results = [(False, results.value)] + [(False, _SKIPPED)] * (len(batch) - 1)
        for (_, _, answer), result in zip(batch, results, strict=True):
            if not answer.called:  # not cancelled meanwhile
                answer.callback(result)
        self._dispatch()

    def _run_batch(self, calls: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> list[tuple[bool, Any]]:
        """In a worker thread: open the store the first time, then run the calls
        in order; after a failure the rest are not run (a store that hangs would
        make each of them wait for its timeout)."""
        failed: BaseException | None = None
        with self._open_lock:
            if not self._opened:
                try:
                    self.store.open()
                    self._opened = True
                except Exception as exc:
                    failed = exc
        results: list[tuple[bool, Any]] = []
        for method, args in calls:
            if failed is not None:
                results.append((False, failed if not results else _SKIPPED))
                continue
            try:
                results.append((True, method(*args)))
            except Exception as exc:
                failed = exc
                results.append((False, exc))
        return results

    # -- what the middleware calls ----------------------------------------------------------
    async def obtain(self, origin: Origin, previous: OriginState | None) -> Obtained:
        """A state of ``origin`` that is still fresh in the store, waiting while
        another process fetches it; otherwise the fetch lock (and the expired state
        kept, when it is newer than this process's). With the store down: nothing
        but ``previous``."""
        key = str(origin)
        delay = _POLL_FIRST
        waited = False
        while True:
            try:
                claim, record = await self._call("claim", key, self.owner, time.time(), self.lock_ttl)
            except StoreUnavailable:
                return Obtained(previous=previous)
            if claim is Claim.FRESH and record is not None:
                fresh = self._decoded(key, record)
                return Obtained(state=fresh) if fresh is not None else Obtained(previous=previous)
            if claim is Claim.ACQUIRED:
                # Another process may have fetched since this one's copy: the newer one
                # carries the last good copy and the failure count on.
                stored = self._decoded(key, record)
                if stored is not None and (previous is None or stored.fetched_at > previous.fetched_at):
                    previous = stored
                return Obtained(previous=previous, lease=self._lease(key))
            if claim is Claim.BUSY:
                if not waited:
                    waited = True
                    self._inc("store_wait")
                    logger.debug("robots.txt of %s is being fetched by another process; waiting for it", origin,
                                 extra=self._log_extra)
                await maybe_deferred_to_future(_sleep(delay))
                delay = min(delay * _POLL_GROWTH, _POLL_MAX)

    def _decoded(self, key: str, record: Record | None) -> OriginState | None:
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
            self._background(self._call("renew", lease.key, self.owner, self.lock_ttl))

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
            written = await self._call("save", key, encode(state, self.policy), owner)
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
            self._background(self._call("release", lease.key, self.owner))

    async def close(self) -> None:
        """Wait (a bounded time) for saves still running, then close the store
        (and stop the worker threads)."""
        if self._closed:
            return
        if self._pending:
            waiting = defer.DeferredList(list(self._pending), consumeErrors=True)
            waiting.addTimeout(_CLOSE_TIMEOUT, _reactor())
            try:
                await maybe_deferred_to_future(waiting)
            except defer.TimeoutError:
                logger.warning("robots.txt store %s: saves still running at close were abandoned", self.name,
                               extra=self._log_extra)
        self._closed = True
        if self._pool is not None:
            # Batches of cancelled calls may still be running: the store closes after them.
            deadline = time.monotonic() + _CLOSE_TIMEOUT
            while (self._running or self._queue) and time.monotonic() < deadline:
                await maybe_deferred_to_future(_sleep(0.01))
        if self._opened:
            try:
                if self._pool is not None:
                    ok, value = await maybe_deferred_to_future(self._submit(self.store.close))
                    if not ok:
                        raise value
                elif isinstance(self.store, AsyncStore):
                    await self.store.close()
                else:
                    self.store.close()
            except Exception as exc:
                logger.warning("robots.txt store %s did not close cleanly: %s", self.name, exc,
                               extra=self._log_extra)
        if self._pool is not None:
            self._pool.stop()
            _reactor().removeSystemEventTrigger(self._shutdown_trigger)


def _reactor() -> Any:
    from twisted.internet import reactor  # the installed one, not at import time

    return reactor


def _sleep(seconds: float) -> defer.Deferred[None]:
    return task.deferLater(_reactor(), seconds, lambda: None)
