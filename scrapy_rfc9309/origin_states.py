"""Each origin's robots.txt state through its life: cached, fetched once at a time
(from the store, or through the engine), waited for, retried, and let go when the
spider closes. The same lifecycle serves the origin's other documents (see
:mod:`.documents`): one :class:`OriginStates` per document, the requests that wait
for any of them parked together.

The middleware asks two things: :meth:`OriginStates.cached` (a usable state, with
no waiting) and :meth:`OriginStates.current` (a state, waiting for a fetch when
there is none). Every fetch ends in a state with a time for the next step (its
lifetime, or its retry time), whatever fails on the way: an unexpected exception
is a failed fetch with backoff, logged once with its traceback.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet import defer
from twisted.internet.error import TimeoutError as TxTimeoutError

from . import _compat
from . import signals as rfc_signals
from .access import Access, Cause, Decision, FetchOutcome, OriginState
from .documents import ROBOTS_TXT, Document
from .judgement import DROP_REASONS
from .origin import Origin
from .parking import Parking
from .reporting import Reporting
from .scrapy_parser import RobotParser
from .stores import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy.crawler import Crawler

    from .change_news import ChangeNews
    from .changes import RobotsChange
    from .config import Config
    from .dns_warmup import DnsWarmup
    from .fetch import RobotsFetcher
    from .store_client import StoreClient

__all__ = ["Closing", "OriginStates"]

logger = logging.getLogger(__name__)

#: Waiters woken per reactor turn: a release of thousands must not stall other origins.
WAKE_BATCH = 200
#: Warn (once) when more than this share of the fetches, after at least
#: ``EVICTION_WARN_AFTER`` of them, were of origins evicted from the cache while fresh.
EVICTION_WARN_SHARE, EVICTION_WARN_AFTER = 0.5, 100
_CLOSE_POLL = 0.2
#: Origins named per cause in the summary at close.
_SUMMARY_ORIGINS = 5


class Closing(Exception):
    """The spider started closing while a request waited; ``reason``: ``"closing"``,
    or ``"idle"`` when held requests were all that was left of the crawl
    (``ROBOTSTXT_MAX_WAIT_IDLE``)."""

    def __init__(self, reason: str = "closing") -> None:
        super().__init__(reason)
        self.reason = reason


class OriginStates(Reporting):
    """The robots.txt states (or those of another ``document``) of the origins one
    crawl uses. ``holds`` says whether the requests of an origin whose document is
    unreachable (without a good copy) are held until a retry succeeds or
    ``ROBOTSTXT_MAX_WAIT`` ends (robots.txt: complete disallow); when False they
    are judged at once with the state at hand. ``peer``: the lifecycle of another
    document of the same origins, whose parked requests and ``ROBOTSTXT_MAX_WAITING``
    bound this one shares."""

    def __init__(self, crawler: Crawler, config: Config, fetcher: RobotsFetcher,
                 store: StoreClient | None = None, warmup: DnsWarmup | None = None,
                 origin_of: Callable[[str], Origin | None] | None = None, *,
                 document: Document = ROBOTS_TXT, holds: bool = True, peer: OriginStates | None = None,
                 on_settled: Callable[[Origin, OriginState, Document, str, RobotsChange | None], Awaitable[None]]
                 | None = None,
                 on_held: Callable[[Request, Origin], None] | None = None, news: ChangeNews | None = None) -> None:
        self.crawler = crawler
        self.document = document
        self.holds = holds
        self.policy = config.policy
        self.max_waiting = config.max_waiting
        #: Requests of one origin that wait for its fetch in the downloader, and of all origins
        #: (for each robots.txt fetch in flight, as many): more are parked.
        self.in_downloader = max(1, crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN", 8))
        self.in_downloader_max = self.in_downloader * config.concurrent_fetches
        #: robots.txt downloads in flight at once (``ROBOTSTXT_CONCURRENT_FETCHES``).
        self._fetch_slots = defer.DeferredSemaphore(config.concurrent_fetches)
        #: Requests kept out of the downloader while their robots.txt is not known.
        self._peer = peer
        if peer is not None:
            peer._peer = self
        self.parking: Parking = (peer.parking if peer is not None else
                                 Parking(crawler, origin_of or Origin.from_url, self._held, self._room, on_held))
        self.fetcher = fetcher
        self.store = store
        #: Resolves the host of an origin whose robots.txt another process is fetching.
        self.warmup = warmup
        #: Parsed states of the origins in use (bounded LRU, with the backoff of evicted unreachable ones).
        self.cache = MemoryStore(config.cache_size)
        self.closing = False
        self.close_reason = "closing"
        self._fetches: dict[Origin, defer.Deferred[Any]] = {}
        self._waiters: dict[Origin, list[defer.Deferred[Any]]] = {}
        self._retries: dict[Origin, _compat.Timer] = {}
        self._deadlines: dict[Origin, tuple[float, _compat.Timer]] = {}
        self._triggers: dict[Origin, Request] = {}
        self._waiting = 0
        self._close_watch: _compat.Timer | None = None
        self._cache_hits = 0
        self._evictions_counted = 0
        self._fetches_made = 0
        self._refetches_evicted = 0
        self._eviction_warned = False
        self._given_up: dict[Cause, list[str]] = {}
        self._given_up_count: dict[Cause, int] = {}
        self._requeued = 0
        self._discarded = 0
        #: Told of each state settled, before it is used (the ledger's ``state`` record and version file),
        #: with the change news of a refetched robots.txt.
        self.on_settled = on_settled
        #: Tells of a refetched robots.txt that changed for the crawl's agents.
        self.news = news

    def _inc(self, key: str, count: int = 1) -> None:
        super()._inc(self.document.stat + key, count)

    def holding(self, state: OriginState, now: float) -> bool:
        """Whether ``state`` holds its origin's requests now (see ``holds``)."""
        return self.holds and state.decision(now, self.policy) is Decision.HOLD

    # -- what the middleware asks ---------------------------------------------------------
    def cached(self, origin: Origin, now: float) -> OriginState | None:
        """The origin's state when it is cached, fresh and reachable (judge at
        once), else None."""
        state = self.cache.get(origin)
        if state is None or now >= state.expires_at or state.access is Access.UNREACHABLE:
            return None
        self._hit()
        return state

    def prefetch(self, origin: Origin, request: Request) -> None:
        """Start the origin's fetch unless its state is cached and not expired (for
        an unreachable origin: unless its retry is not due), or a fetch runs."""
        state = self.cache.get(origin)
        if state is None or state.expired(time.time()):
            self._start_fetch(origin, request)

    def park(self, origin: Origin, request: Request) -> Request | None:
        """Park ``request`` (see :mod:`.parking`) when it would wait: its origin is
        held (unreachable, no good copy, not given up), or it waits for a fetch
        while ``CONCURRENT_REQUESTS_PER_DOMAIN`` requests of its origin, or
        :attr:`in_downloader_max` in all, wait for theirs in the downloader already.
        Returns what ``process_request`` returns then, or None: the request waits
        in the downloader (:meth:`current`), or is judged there."""
        if self.closing or not self._room():
            return None
        now = time.time()
        state = self.cache.get(origin)
        held = False
        if state is not None and state.access is Access.UNREACHABLE:
            if not self.holding(state, now):
                return None  # judged by its good copy, or with the state at hand
            if not state.waited_too_long(now, self.policy):
                held = True
                self._schedule_retry(origin, request)
                self._wake_at(origin, state.give_up_at(self.policy))
            elif not state.expired(now):
                return None  # given up, its next fetch not due: dropped at once
        if not held:  # it waits for a fetch
            if self._waiting < self.in_downloader_max and (
                    origin not in self._fetches or len(self._waiters.get(origin, ())) < self.in_downloader):
                return None
            self._start_fetch(origin, request)
        parked = self.parking.park(origin, request, held)
        if parked is not None:
            self._watch_close()
            if held:
                self._inc("held")
        return parked

    def given_up(self, origin: Origin) -> OriginState | None:
        """The origin's state while its held requests are given up (unreachable past
        its maximum wait, no fetch succeeded since), else None."""
        state = self.cache.get(origin)
        now = time.time()
        if state is None or not self.holding(state, now):
            return None
        return state if state.waited_too_long(now, self.policy) else None

    def _room(self) -> bool:
        """Whether one more request may wait without taking a ``CONCURRENT_REQUESTS``
        place (``ROBOTSTXT_MAX_WAITING``, for the requests waiting in the downloader
        and those parked)."""
        peer = self._peer
        return self._waiting + (peer._waiting if peer is not None else 0) + self.parking.count < self.max_waiting

    def _held(self, origin: Origin) -> bool:
        state = self.cache.get(origin)
        return state is not None and self.holding(state, time.time())

    async def current(self, origin: Origin, request: Request) -> OriginState:
        """The origin's state, fetched (and waited for) when there is none or it
        expired. For an unreachable origin, the state at hand, with its retry
        started when due. Raises :class:`Closing`."""
        while True:
            state = self.cache.get(origin)
            if state is not None and time.time() < state.expires_at:
                self._hit()
                return state
            self._start_fetch(origin, request)
            if (state is not None and state.access is Access.UNREACHABLE
                    and not state.waited_too_long(time.time(), self.policy)):
                return state  # judged by its good copy, or held, while the retry runs
            fetched = await self.wait(origin, request, None)
            if fetched is not None:
                return fetched

    async def wait(self, origin: Origin, request: Request, timeout: float | None) -> OriginState | None:
        """Wait until the origin's next fetch ends (its new state), or ``timeout``
        seconds (None). A held request calls it with its retry scheduled. While it
        waits, the request takes no ``CONCURRENT_REQUESTS`` place (up to
        ``ROBOTSTXT_MAX_WAITING`` requests). Raises :class:`Closing`."""
        if self.closing:
            raise Closing(self.close_reason)
        self._schedule_retry(origin, request)
        waiter: defer.Deferred[Any] = defer.Deferred()
        self._waiters.setdefault(origin, []).append(waiter)
        if timeout is not None:
            self._wake_at(origin, time.time() + timeout)
        widened = self._room() and _compat.widen_concurrency(self.crawler.engine, 1)
        self._waiting += 1
        self._watch_close()
        try:
            value = await maybe_deferred_to_future(waiter)
        except (defer.CancelledError, defer.TimeoutError, TxTimeoutError):
            return None
        finally:
            self._waiting -= 1
            if widened:
                _compat.widen_concurrency(self.crawler.engine, -1)
            waiters = self._waiters.get(origin)
            if waiters and waiter in waiters:
                waiters.remove(waiter)
        if isinstance(value, Closing):
            raise value
        return value  # type: ignore[no-any-return]

    def give_up(self, origin: Origin) -> None:
        """The origin's held requests were dropped (``ROBOTSTXT_MAX_WAIT``): a retry
        still in flight serves nobody, and its download would keep the spider open
        until ``DOWNLOAD_TIMEOUT``. It is cancelled; the origin keeps its unreachable
        state, and the next request of it fetches again."""
        if self._waiters.get(origin) or origin in self.parking:
            return
        retry = self._retries.pop(origin, None)
        if retry is not None:
            retry.cancel()
        state = self.cache.get(origin)
        fetching = self._fetches.get(origin)
        if fetching is not None and state is not None and state.access is Access.UNREACHABLE:
            fetching.cancel()

    def held(self, now: float) -> list[tuple[Origin, int, OriginState]]:
        """The origins whose requests this document holds now: each with how many of
        its requests wait (in the downloader, and parked) and its state."""
        parked = self.parking.parked()
        found = []
        for origin in set(self._waiters) | set(parked):
            state = self.cache.get(origin)
            if state is not None and self.holding(state, now):
                found.append((origin, len(self._waiters.get(origin, ())) + parked.get(origin, 0), state))
        return found

    @property
    def downloading(self) -> int:
        """This document's requests in the downloader: those waiting there for it, and its fetches."""
        return self._waiting + len(self._fetches)

    @property
    def waiting(self) -> int:
        """Requests waiting for a robots.txt: in the downloader, and parked."""
        return self._waiting + self.parking.count

    # -- fetching ---------------------------------------------------------------------------
    def _start_fetch(self, origin: Origin, request: Request) -> None:
        if origin in self._fetches or self.closing:
            return
        self._triggers.setdefault(origin, request)
        fetching = deferred_from_coro(self._fetch(origin))
        self._fetches[origin] = fetching
        self._watch_close()
        fetching.addBoth(self._fetch_done, origin, fetching)

    def _fetch_done(self, result: Any, origin: Origin, fetching: defer.Deferred[Any]) -> None:
        if self._fetches.get(origin) is fetching:
            del self._fetches[origin]
        # A failure here is a cancelled fetch (closing): the waiters were told already.
        return None

    async def _fetch(self, origin: Origin) -> None:
        """Get the next state of ``origin``: from the store when another process
        fetched it (or is fetching it), otherwise by fetching its robots.txt. Ends
        in a state whatever happens, except when the fetch is cancelled."""
        previous = self.cache.get(origin)
        state: OriginState | None = None
        lease = None
        held = False  # one of the fetch places, taken before the fleet's lock (see _download)
        try:
            if self.store is not None:
                held = await self._place()
                try:
                    found = await self.store.obtain(origin, previous, self._waiting_for_store, self.document)
                finally:
                    if self.warmup is not None:
                        self.warmup.done(origin)
                if found.state is not None:
                    held = False
                    self._fetch_slots.release()
                    state = found.state
                    self._inc("store_hit")
                    logger.debug("%s of %s from the store (%s, fetched %.0f s ago)", self.document.name, origin,
                                 state.access.value, time.time() - state.fetched_at, extra=self._log_extra)
                    if self.on_settled is not None:
                        await self.on_settled(origin, state, self.document, "store", None)
                    self._put(origin, state)
                    try:
                        await self._announce(origin, state)
                    finally:
                        self._settle(origin, state)
                    return
                previous, lease = found.previous, found.lease
            if previous is not None:
                self._inc("retry" if previous.access is Access.UNREACHABLE else "refetch")
            self._fetching(origin)
            passed, held = held, False  # _download releases it
            outcome = await self._download(origin, passed, previous)
            state = self._next(previous, outcome)
        except (defer.CancelledError, Closing):
            raise
        except Exception as exc:
            logger.error("%s of %s: unexpected error; counted as a failed fetch, retried later", self.document.name,
                         origin, exc_info=True, extra=self._log_extra)
            self._inc("fetch_error")
            outcome = FetchOutcome(Access.UNREACHABLE, self.document.url(origin),
                                   error=f"{type(exc).__name__}: {exc}", reason="unexpected error",
                                   document=self.document)
            state = self._next(previous, outcome)
        finally:
            if held:
                self._fetch_slots.release()
            if state is None:  # cancelled
                if self.store is not None:
                    self.store.release(lease)
                self._fetches.pop(origin, None)
                # Cancelled: at close, or a retry that served nobody (its waiters look again).
                self._notify(origin, Closing(self.close_reason) if self.closing else None)
        change = None if self.news is None else self.news.between(previous, state)
        if self.on_settled is not None:  # before the save: a fleet's other processes find the version written
            await self.on_settled(origin, state, self.document, "fetch", change)
        if self.store is not None:
            if state.access is Access.UNREACHABLE and state.cause is Cause.CANNOT_REQUEST:
                self.store.release(lease)  # this process's settings, not the origin's state: not shared
            else:
                self.store.save(origin, state, lease, self.document)
        self._put(origin, state)
        try:
            await self._report(origin, state, previous)
            if change is not None and self.news is not None and previous is not None:
                await self.news.tell(origin, previous, state, change)
        except Exception:
            logger.error("%s of %s: error while reporting the fetch", self.document.name, origin, exc_info=True,
                         extra=self._log_extra)
        finally:
            self._settle(origin, state)

    async def _place(self) -> bool:
        """Wait for one of the ``ROBOTSTXT_CONCURRENT_FETCHES`` places (True once taken)."""
        slot = self._fetch_slots.acquire()
        if not slot.called:
            self._inc("fetch_queued")
        await maybe_deferred_to_future(slot)
        return True

    async def _download(self, origin: Origin, held: bool = False, previous: OriginState | None = None) -> FetchOutcome:
        """Fetch the robots.txt when one of the ``ROBOTSTXT_CONCURRENT_FETCHES``
        places is free (``held``: taken already, before the store's lock was claimed, so
        that a fleet's lock is held only while its fetch can run): a broad crawl sends
        them at the pace of its concurrency, not all at once, and their name lookups do
        not queue for the resolver's threads until they time out. ``previous``: the copy
        held, whose validators make the refetch conditional."""
        acquired = held
        try:
            if not acquired:
                acquired = await self._place()
            validators = None if previous is None else previous.validators(time.time(), self.policy)
            if validators is not None:  # a conditional refetch of the copy held (fetch.py)
                return await self.fetcher.fetch(origin, self.document, validators=validators)
            if self.document is ROBOTS_TXT:  # the fetcher's call with its one argument, as code that wraps it expects
                return await self.fetcher.fetch(origin)
            return await self.fetcher.fetch(origin, self.document)
        finally:
            if acquired:
                self._fetch_slots.release()

    def _waiting_for_store(self, origin: Origin) -> None:
        if self.warmup is not None:
            self.warmup.waiting(origin, self._triggers.get(origin))

    def _put(self, origin: Origin, state: OriginState) -> None:
        self.cache.put(origin, state)
        evicted = self.cache.evictions - self._evictions_counted
        if evicted and self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"robotstxt/{self.document.stat}cache_evicted", evicted)
        self._evictions_counted = self.cache.evictions

    def _fetching(self, origin: Origin) -> None:
        """Count a fetch by this process, and the fetches that evictions from the
        cache caused (their origin's state was still fresh): a warning, once, when
        those are most of them."""
        self._fetches_made += 1
        if not self.cache.evicted_fresh(origin):
            return
        self._refetches_evicted += 1
        self._inc("refetch_evicted")
        if (not self._eviction_warned and self._fetches_made >= EVICTION_WARN_AFTER
                and self._refetches_evicted > EVICTION_WARN_SHARE * self._fetches_made):
            self._eviction_warned = True
            remedy = f"raise ROBOTSTXT_CACHE_SIZE (now {self.cache.max_origins})"
            if self.store is None:
                remedy += " or set ROBOTSTXT_STORE (\"disk\", \"redis\") to load them from a store instead"
            name = self.document.name
            logger.warning(
                "%s cache: %d of the %d %s fetches so far were of origins evicted from the in-memory cache while their "
                "%s was still fresh: %s", name, self._refetches_evicted, self._fetches_made, name, name, remedy,
                extra=self._log_extra)

    def _next(self, previous: OriginState | None, outcome: FetchOutcome) -> OriginState:
        now = time.time()
        if previous is None:
            return OriginState.initial(outcome, now, self.policy)
        return previous.apply(outcome, now, self.policy)

    def _settle(self, origin: Origin, state: OriginState) -> None:
        """Cache the state, end the fetch and wake the requests waiting for it."""
        self._fetches.pop(origin, None)
        self._put(origin, state)
        now = time.time()
        holding = self.holding(state, now)
        if not holding:
            self._triggers.pop(origin, None)
        self._notify(origin, state)
        if origin not in self.parking:
            return
        if not holding:
            self._inc("released", self.parking.release(origin))
        elif state.waited_too_long(now, self.policy):
            self.parking.release(origin, given_up=True)  # dropped as they come back
        else:  # held: the next retry and the deadline, for the parked requests
            self._inc("held", self.parking.hold(origin))
            self._schedule_retry(origin, self._triggers.get(origin) or Request(self.document.url(origin)))
            self._wake_at(origin, state.give_up_at(self.policy))

    async def _report(self, origin: Origin, state: OriginState, previous: OriginState | None) -> None:
        outcome = state.outcome
        assert outcome is not None
        self._inc(outcome.access.value)
        self._flush_stats()
        if self.document is ROBOTS_TXT:
            await _compat.send_signal(self.crawler, rfc_signals.robotstxt_fetched, origin=origin, state=state,
                                      request=self._triggers.get(origin))
        await self._announce(origin, state)
        if outcome.access is Access.UNREACHABLE and state.parsed is not None:
            self._inc("stale_used")
        tdmrep = state.tdmrep
        if outcome.access is Access.PARSED and tdmrep is not None and tdmrep.problem_count:
            # The file is the site's: what could not be read is skipped (see tdmrep), and said once per fetch.
            self._inc("invalid")
            more = tdmrep.problem_count - len(tdmrep.problems)
            logger.warning("%s of %s (%s): %s%s; %d rules read", self.document.name, origin, outcome.url,
                           "; ".join(tdmrep.problems), f" (and {more} more problems)" if more else "",
                           len(tdmrep.entries), extra=self._log_extra)
        self._log_change(origin, state, previous)

    def _log_change(self, origin: Origin, state: OriginState, previous: OriginState | None) -> None:
        """One line per origin when its state changes (it became unreachable, or
        reachable again); a failed retry of an unreachable origin is logged at DEBUG.
        Giving up is logged when it happens (:meth:`_deadline`)."""
        now = time.time()
        was_unreachable = previous is not None and previous.access is Access.UNREACHABLE
        detail = state.detail
        name = self.document.name
        if state.access is not Access.UNREACHABLE:
            if was_unreachable:
                assert previous is not None
                since = previous.unreachable_since or previous.fetched_at
                logger.info("%s of %s is reachable again (%s) after %d failed fetches over %.0f s", name, origin,
                            state.access.value, previous.failures, now - since, extra=self._log_extra)
            return
        retry = state.expires_at - now
        cause = state.cause
        if cause is Cause.CANNOT_REQUEST and not was_unreachable:
            self._gave_up(origin, cause)
        if was_unreachable or cause is Cause.CANNOT_REQUEST:  # the cause was logged once, by the fetcher
            logger.debug("%s of %s still unreachable (%s), failure %d, next fetch in %.1f s", name, origin,
                         detail, state.failures, retry, extra=self._log_extra)
        elif state.parsed is not None:
            logger.warning("%s of %s unreachable (%s); keeping the copy fetched %.0f s ago, retrying in "
                           "%.1f s", name, origin, detail, now - (state.good_at or now), retry, extra=self._log_extra)
        elif not self.holds:
            logger.warning("%s of %s unreachable (%s): %s, its requests go on; retrying in %.1f s", name, origin,
                           detail, self.document.unreachable, retry, extra=self._log_extra)
        elif cause is Cause.NO_HOST:
            self._gave_up(origin, cause)
            logger.warning("%s of %s cannot be fetched: its host name does not resolve (%s). Its requests are "
                           "dropped (robotstxt/%sdropped_no_host); fetched again in %.0f s if more come", name, origin,
                           detail, self.document.stat, retry, extra=self._log_extra)
        else:
            logger.warning("%s of %s unreachable (%s): %s. Its requests are held for up to "
                           "%.0f s, retrying in %.1f s", name, origin, detail, self.document.unreachable,
                           self.policy.max_wait_for(cause), retry, extra=self._log_extra)

    async def _announce(self, origin: Origin, state: OriginState) -> None:
        """Send ``robotstxt_sitemaps`` and Scrapy's ``robots_parsed`` for a file
        parsed in this process (fetched, or loaded from the store)."""
        if state.access is not Access.PARSED or state.robots is None:
            return
        trigger = self._triggers.get(origin)
        if state.robots.sitemaps:
            await _compat.send_signal(self.crawler, rfc_signals.robotstxt_sitemaps, origin=origin,
                                      sitemaps=list(state.robots.sitemaps), request=trigger)
        if _compat.ROBOTS_PARSED is not None:
            parser = RobotParser.from_robots(state.robots, self.crawler.spider)
            await _compat.send_signal(self.crawler, _compat.ROBOTS_PARSED, robotparser=parser, request=trigger)

    def _schedule_retry(self, origin: Origin, request: Request) -> None:
        """For a held origin: fetch again when its retry is due (if requests still wait)."""
        if origin in self._fetches or origin in self._retries:
            return
        state = self.cache.get(origin)
        if state is None or state.access is not Access.UNREACHABLE:
            return
        self._triggers.setdefault(origin, request)

        def retry() -> None:
            self._retries.pop(origin, None)
            if (self._waiters.get(origin) or origin in self.parking) and not self.closing:
                self._start_fetch(origin, self._triggers.get(origin) or Request(self.document.url(origin)))

        delay = max(0.0, state.expires_at - time.time())
        self._retries[origin] = _compat.call_later(delay, retry)

    # -- waking -------------------------------------------------------------------------
    def _wake_at(self, origin: Origin, when: float) -> None:
        """Wake the origin's waiters (with None) at ``when``: one timer per origin,
        and the waking in batches (``_wake``), so that thousands of held requests
        reaching ``ROBOTSTXT_MAX_WAIT`` together are not all dropped in one reactor
        turn. A waiter woken before its own time waits again."""
        current = self._deadlines.get(origin)
        if current is not None:  # a timer still to run (``_deadline`` removes it)
            if current[0] <= when:
                return
            current[1].cancel()
        delay = max(0.0, when - time.time())
        self._deadlines[origin] = (when, _compat.call_later(delay, self._deadline, origin))

    def _deadline(self, origin: Origin) -> None:
        self._deadlines.pop(origin, None)
        state = self.cache.get(origin)
        given_up = state is not None and state.waited_too_long(time.time(), self.policy)
        if given_up and (self._waiters.get(origin) or origin in self.parking):
            assert state is not None
            self._gave_up(origin, state.cause)
            logger.warning("%s of %s unreachable for %.0f s (%s): its held requests, and new ones until a "
                           "fetch succeeds, are dropped (robotstxt/%sdropped_unreachable)", self.document.name, origin,
                           self.policy.max_wait_for(state.cause), state.detail, self.document.stat,
                           extra=self._log_extra)
        self._notify(origin, None)
        if given_up:
            self.parking.release(origin, given_up=True)  # dropped as they come back

    def _notify(self, origin: Origin, value: Any) -> None:
        waiters = self._waiters.pop(origin, [])
        if waiters:
            self._wake(waiters, value)

    def _wake(self, waiters: list[defer.Deferred[Any]], value: Any) -> None:
        """Wake ``WAKE_BATCH`` waiters now and the rest in later reactor turns, so
        that other origins' downloads go on meanwhile."""
        batch, rest = waiters[:WAKE_BATCH], waiters[WAKE_BATCH:]
        for waiter in batch:
            if not waiter.called:
                waiter.callback(value)
        if rest:
            _compat.call_later(0, self._wake, rest, value)

    # -- closing ------------------------------------------------------------------------
    def _watch_close(self) -> None:
        if self._close_watch is None:
            self._close_watch = _compat.looping_call(_CLOSE_POLL, self._check_closing)

    def _check_closing(self) -> None:
        closing = _compat.engine_closing(self.crawler.engine)
        if closing:
            self.close()
        if (closing or not (self._waiting or self._fetches or self.parking.count)) and self._close_watch is not None:
            self._close_watch.cancel()
            self._close_watch = None

    def close(self, reason: str = "closing") -> None:
        """Release every waiting request (they are dropped, or handed back to a
        scheduler that keeps its queue) and cancel the fetches in flight: Scrapy's
        close waits for downloads in progress, and a stalled robots.txt must not keep
        the crawl open until ``DOWNLOAD_TIMEOUT``. ``reason``: see :class:`Closing`."""
        if self.closing:
            return
        self.closing = True
        self.close_reason = reason
        if self.warmup is not None:
            self.warmup.close()
        requeued, discarded = self.parking.close(_compat.scheduler_persists(self.crawler.engine))
        self._requeued += requeued
        self._discarded += discarded
        self._inc("requeued_on_close", requeued)
        self._inc("discarded_on_close", discarded)
        for call in self._retries.values():
            call.cancel()
        self._retries.clear()
        for _, call in self._deadlines.values():
            call.cancel()
        self._deadlines.clear()
        for origin in list(self._waiters):
            self._notify(origin, Closing(reason))
        for fetching in list(self._fetches.values()):
            fetching.cancel()
        if self._close_watch is not None:
            self._close_watch.cancel()
            self._close_watch = None
        self._flush_stats()

    # -- what was given up, for the summary at close --------------------------------------
    def _gave_up(self, origin: Origin, cause: Cause) -> None:
        names = self._given_up.setdefault(cause, [])
        if len(names) < _SUMMARY_ORIGINS:
            names.append(str(origin))
        self._given_up_count[cause] = self._given_up_count.get(cause, 0) + 1

    def summary(self, dropped: dict[str, int], requeued: int) -> str | None:
        """The origins given up and the requests dropped in this crawl, and why, in
        one line (None when there were none). ``dropped``: the requests dropped per
        reason, and ``requeued`` those handed back to the scheduler while they waited
        in the downloader (the verdicts' tally)."""
        requeued += self._requeued
        if not dropped and not self._given_up_count and not requeued and not self._discarded:
            return None
        parts = []
        for cause, count in self._given_up_count.items():
            names = self._given_up[cause]
            more = f" and {count - len(names)} more" if count > len(names) else ""
            parts.append(f"{count} {cause.words} ({', '.join(names)}{more})")
        origins = "; ".join(parts) or "none"
        requests = ", ".join(f"{count} {DROP_REASONS.get(reason, reason)}" for reason, count in dropped.items())
        name = self.document.name
        back = (f". Put back in the scheduler for the next run: {requeued} requests that waited for a {name}"
                if requeued else "")
        if self._discarded:
            back += (f". Not crawled: {self._discarded} requests that waited for a {name} outside the downloader "
                     "when the spider closed (a JOBDIR keeps them for a resumed crawl)")
        return f"origins given up: {origins}. Requests dropped: {requests or 'none'}{back}"

    # -- stats --------------------------------------------------------------------------
    def hits(self, count: int) -> None:
        """Count ``count`` requests judged by a state found cached, as :meth:`cached` counts
        each (for the shortcuts, see :mod:`~scrapy_rfc9309.shortcuts`)."""
        self._cache_hits += count
        if self._cache_hits >= 1000:
            self._flush_stats()

    def _hit(self) -> None:
        self._cache_hits += 1  # written to the stats now and then (see _flush_stats)
        if self._cache_hits >= 1000:
            self._flush_stats()

    def _flush_stats(self) -> None:
        if self._cache_hits and self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"robotstxt/{self.document.stat}cache_hit", self._cache_hits)
            self._cache_hits = 0

