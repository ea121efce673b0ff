"""One document's states of the origins a crawl uses (robots.txt, or another
document of :mod:`.documents`): cached (a bounded LRU), and fetched once at a time,
from the store when another process fetched it or through the engine otherwise.

Every fetch ends in a state with a time for the next step (its lifetime, or its
retry time), whatever fails on the way: an unexpected exception is a failed fetch
with backoff, logged once with its traceback. The requests that wait for a fetch
are :mod:`.waiting`'s; it learns of each fetch's end from the Deferred that
:meth:`StateCache.fetch` returns.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet import defer

from .. import signals as rfc_signals
from ..core.documents import ROBOTS_TXT, Document
from ..core.state import Access, Cause, FetchOutcome, Hold, OriginState
from ..core.verdict import DROP_REASONS
from ..runtime import compat as _compat
from ..runtime.reporting import Reporting
from ..stores import MemoryStore
from .robot_parser import RobotParser

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy.crawler import Crawler

    from ..config import Config
    from ..core.changes import RobotsChange
    from ..core.origins import Origin
    from ..stores.client import StoreClient
    from .change_signal import ChangeNews
    from .dns_warmup import DnsWarmup
    from .fetch import RobotsFetcher

__all__ = ["Closing", "StateCache"]

logger = logging.getLogger(__name__)

#: Warn (once) when more than this share of the fetches, after at least
#: ``EVICTION_WARN_AFTER`` of them, were of origins evicted from the cache while fresh.
EVICTION_WARN_SHARE, EVICTION_WARN_AFTER = 0.5, 100
#: Origins named per cause in the summary at close.
_SUMMARY_ORIGINS = 5


class Closing(Exception):
    """The spider started closing while a request waited; ``reason``: ``"closing"``,
    or ``"idle"`` when held requests were all that was left of the crawl
    (``ROBOTSTXT_MAX_WAIT_IDLE``)."""

    def __init__(self, reason: str = "closing") -> None:
        super().__init__(reason)
        self.reason = reason


class StateCache(Reporting):
    """The states of one ``document`` (robots.txt by default) of the crawl's origins,
    and their fetches, one at a time per origin. ``holds`` says whether an origin
    whose document is unreachable (without a good copy) holds its requests
    (robots.txt: complete disallow); when False they are judged at once with the
    state at hand."""

    def __init__(self, crawler: Crawler, config: Config, fetcher: RobotsFetcher, *,
                 document: Document = ROBOTS_TXT, holds: bool = True, store: StoreClient | None = None,
                 warmup: DnsWarmup | None = None,
                 on_settled: Callable[[Origin, OriginState, Document, str, RobotsChange | None], Awaitable[None]]
                 | None = None,
                 news: ChangeNews | None = None) -> None:
        self.crawler = crawler
        self.document = document
        self.holds = holds
        self.policy = config.policy
        self.fetcher = fetcher
        self.store = store
        #: Resolves the host of an origin whose robots.txt another process is fetching.
        self.warmup = warmup
        #: Told of each state settled, before it is used (the ledger's ``state`` record and version file),
        #: with the change news of a refetched robots.txt.
        self.on_settled = on_settled
        #: Tells of a refetched robots.txt that changed for the crawl's agents.
        self.news = news
        #: Parsed states of the origins in use (bounded LRU, with the backoff of evicted unreachable ones).
        self.cache = MemoryStore(config.cache_size)
        #: robots.txt downloads in flight at once (``ROBOTSTXT_CONCURRENT_FETCHES``).
        self._fetch_slots = defer.DeferredSemaphore(config.concurrent_fetches)
        self._fetches: dict[Origin, defer.Deferred[OriginState]] = {}
        #: The fetches cancelled, still ending.
        self._cancelled: set[defer.Deferred[OriginState]] = set()
        #: The request that made each origin's fetch (signals name it; a held origin's retries reuse it).
        self._triggers: dict[Origin, Request] = {}
        self.closing = False
        self._cache_hits = 0
        self._evictions_counted = 0
        self._fetches_made = 0
        self._refetches_evicted = 0
        self._eviction_warned = False
        self._given_up: dict[Cause, list[str]] = {}
        self._given_up_count: dict[Cause, int] = {}

    def _inc(self, key: str, count: int = 1) -> None:
        super()._inc(self.document.stat + key, count)

    def holding(self, state: OriginState, now: float) -> bool:
        """Whether ``state`` holds its origin's requests now (see ``holds``)."""
        return self.holds and state.hold(now, self.policy) is not Hold.NO

    def holds_now(self, origin: Origin) -> bool:
        """Whether the origin's cached state holds its requests now: unreachable, and
        not given up (a request of an origin that waiting cannot help, one whose host
        name does not resolve, waits for its next fetch, or is dropped: never held)."""
        state = self.cache.get(origin)
        if state is None:
            return False
        now = time.time()
        return self.holds and state.hold(now, self.policy) is Hold.HOLD

    def cached(self, origin: Origin, now: float) -> OriginState | None:
        """The origin's state when it is cached, fresh and reachable (judge at
        once), else None."""
        state = self.cache.get(origin)
        if state is None or now >= state.expires_at or state.access is Access.UNREACHABLE:
            return None
        self._hit()
        return state

    def fresh(self, origin: Origin, now: float) -> OriginState | None:
        """The origin's state when it is cached and not expired (reachable or not), else None."""
        state = self.cache.get(origin)
        if state is None or now >= state.expires_at:
            return None
        self._hit()
        return state

    # -- fetching ---------------------------------------------------------------------------
    def fetch(self, origin: Origin, request: Request) -> defer.Deferred[OriginState] | None:
        """Start the origin's fetch (``request``: the one that needs it) unless one
        runs or the spider closes: the Deferred of the new fetch, which fires with
        its state once it is cached and reported (or fails, cancelled), else None."""
        if origin in self._fetches or self.closing:
            return None
        self._triggers.setdefault(origin, request)
        fetching = deferred_from_coro(self._fetch(origin))
        self._fetches[origin] = fetching
        fetching.addBoth(self._fetch_done, origin, fetching)
        return fetching

    def fetching(self, origin: Origin) -> bool:
        """Whether the origin's fetch runs."""
        return origin in self._fetches

    @property
    def in_flight(self) -> int:
        """This document's fetches running."""
        return len(self._fetches)

    def cancel(self, origin: Origin) -> None:
        """Cancel the origin's fetch, if one runs, once: its Deferred then fails when its
        coroutine has ended (asyncio's ``CancelledError``, its places and leases given
        back). A second cancel would fail it at once, before that."""
        fetching = self._fetches.get(origin)
        if fetching is not None and fetching not in self._cancelled:
            self._cancelled.add(fetching)
            fetching.cancel()

    def trigger(self, origin: Origin) -> Request:
        """The request that made the origin's fetch (one of the document's URL when none is kept)."""
        return self._triggers.get(origin) or Request(self.document.url(origin))

    def keep_trigger(self, origin: Origin, request: Request) -> None:
        self._triggers.setdefault(origin, request)

    def forget_trigger(self, origin: Origin) -> None:
        self._triggers.pop(origin, None)

    def _fetch_done(self, result: Any, origin: Origin, fetching: defer.Deferred[Any]) -> Any:
        self._cancelled.discard(fetching)
        if self._fetches.get(origin) is fetching:
            del self._fetches[origin]
        return result

    async def _fetch(self, origin: Origin) -> OriginState:
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
                    except Exception:
                        logger.error("%s of %s: error while reporting the state from the store", self.document.name,
                                     origin, exc_info=True, extra=self._log_extra)
                    return state
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
            if state is None and self.store is not None:  # cancelled
                self.store.release(lease)
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
        return state

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
            self.gave_up(origin, cause)
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
            self.gave_up(origin, cause)
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

    def close(self) -> None:
        """Cancel the fetches in flight (Scrapy's close waits for downloads in progress,
        and a stalled robots.txt must not keep the crawl open until ``DOWNLOAD_TIMEOUT``)."""
        if self.closing:
            return
        self.closing = True
        if self.warmup is not None:
            self.warmup.close()
        for fetching in list(self._fetches.values()):
            fetching.cancel()
        self._flush_stats()

    # -- what was given up, for the summary at close --------------------------------------
    def gave_up(self, origin: Origin, cause: Cause) -> None:
        """Count the origin as given up (its requests dropped) for ``cause``, for the summary."""
        names = self._given_up.setdefault(cause, [])
        if len(names) < _SUMMARY_ORIGINS:
            names.append(str(origin))
        self._given_up_count[cause] = self._given_up_count.get(cause, 0) + 1

    def summary(self, dropped: dict[str, int], requeued: int, discarded: int) -> str | None:
        """The origins given up and the requests dropped in this crawl, and why, in
        one line (None when there were none). ``dropped``: the requests dropped per
        reason, ``requeued`` those handed back to the scheduler and ``discarded``
        those parked when the spider closed without a scheduler to keep them."""
        if not dropped and not self._given_up_count and not requeued and not discarded:
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
        if discarded:
            back += (f". Not crawled: {discarded} requests that waited for a {name} outside the downloader "
                     "when the spider closed (a JOBDIR keeps them for a resumed crawl)")
        return f"origins given up: {origins}. Requests dropped: {requests or 'none'}{back}"

    # -- stats --------------------------------------------------------------------------
    def hits(self, count: int) -> None:
        """Count ``count`` requests judged by a state found cached, as :meth:`cached` counts
        each (for the shortcuts, see :mod:`~scrapy_rfc9309.enforcement.release_memo`)."""
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

