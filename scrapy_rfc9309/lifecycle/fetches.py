"""The fetches of one document of the crawl's origins (robots.txt, or another
document of :mod:`.documents`): one at a time per origin, at most
``ROBOTSTXT_CONCURRENT_FETCHES`` downloads at once, from the store when another
process fetched it or through the engine otherwise.

Every fetch ends in a state with a time for the next step (its lifetime, or its
retry time), whatever fails on the way: an unexpected exception is a failed fetch
with backoff, logged once with its traceback. The state is cached in
:class:`~.states.DocumentStates` and told of by :class:`~.fetch_report.FetchReport`;
the requests that wait for a fetch are :mod:`.waiting`'s, which learns of each
fetch's end from the Deferred that :meth:`Fetches.fetch` returns.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet import defer

from ..core.state import Access, Cause, FetchOutcome, OriginState
from ..runtime.reporting import Reporting
from .fetch import Outcome
from .states import Closing

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ..config import Config
    from ..core.changes import RobotsChange
    from ..core.documents import Document
    from ..core.origins import Origin
    from ..stores.client import Obtained, StoreClient
    from .change_signal import ChangeNews
    from .dns_warmup import DnsWarmup
    from .fetch import RobotsFetcher
    from .fetch_report import FetchReport
    from .states import DocumentStates

__all__ = ["Fetches"]

logger = logging.getLogger(__name__)


class Fetches(Reporting):
    """Fetches the states of ``states``' document, one at a time per origin, and
    tells of each through ``report``. ``store``: where a fleet's processes share the
    states (a lease makes one of them fetch); ``on_settled``: told of each state
    settled, before it is used (the ledger's ``state`` record and version file), with
    the change news (``news``) of a refetched robots.txt."""

    def __init__(self, config: Config, fetcher: RobotsFetcher, states: DocumentStates, report: FetchReport, *,
                 store: StoreClient | None = None, warmup: DnsWarmup | None = None,
                 on_settled: Callable[[Origin, OriginState, Document, str, RobotsChange | None], Awaitable[None]]
                 | None = None,
                 news: ChangeNews | None = None) -> None:
        self.crawler = states.crawler
        self.states = states
        self.document = states.document
        self.policy = states.policy
        self.fetcher = fetcher
        self.report = report
        self.store = store
        #: Resolves the host of an origin whose document another process is fetching.
        self.warmup = warmup
        self.on_settled = on_settled
        #: Tells of a refetched robots.txt that changed for the crawl's agents.
        self.news = news
        #: Downloads in flight at once (``ROBOTSTXT_CONCURRENT_FETCHES``).
        self._fetch_slots = defer.DeferredSemaphore(config.concurrent_fetches)
        self._fetches: dict[Origin, defer.Deferred[OriginState]] = {}
        #: The fetches cancelled, still ending.
        self._cancelled: set[defer.Deferred[OriginState]] = set()
        #: The request that made each origin's fetch (signals name it; a held origin's retries reuse it).
        self._triggers: dict[Origin, Request] = {}
        self.closing = False

    def _inc(self, key: str, count: int = 1) -> None:
        super()._inc(self.document.stat + key, count)

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
        """Keep ``request`` as the one the origin's next fetches are for, unless one is kept."""
        self._triggers.setdefault(origin, request)

    def forget_trigger(self, origin: Origin) -> None:
        """The origin's requests no longer wait: its next fetch is for the request that needs it."""
        self._triggers.pop(origin, None)

    def _fetch_done(self, result: Any, origin: Origin, fetching: defer.Deferred[Any]) -> Any:
        self._cancelled.discard(fetching)
        if self._fetches.get(origin) is fetching:
            del self._fetches[origin]
        return result

    async def _fetch(self, origin: Origin) -> OriginState:
        """Get the next state of ``origin``: from the store when another process
        fetched it (or is fetching it), otherwise by fetching its document. Ends
        in a state whatever happens, except when the fetch is cancelled."""
        previous = self.states.cache.get(origin)
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
                    return await self._from_store(origin, found)
                previous, lease = found.previous, found.lease
            if previous is not None:
                self._inc("retry" if previous.access is Access.UNREACHABLE else "refetch")
            self.report.fetching(origin)
            passed, held = held, False  # _download releases it
            outcome = await self._download(origin, passed, previous)
            state = self._next(previous, outcome)
        except (defer.CancelledError, Closing):
            raise
        except Exception as exc:
            logger.error("%s of %s: unexpected error; counted as a failed fetch, retried later", self.document.name,
                         origin, exc_info=True, extra=self._log_extra)
            self._inc("fetch_error")
            outcome = Outcome(self.document.url(origin), self.document).error(exc)
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
        self.states.put(origin, state)
        try:
            await self.report.report(origin, state, previous, self._triggers.get(origin))
            if change is not None and self.news is not None and previous is not None:
                await self.news.tell(origin, previous, state, change)
        except Exception:
            logger.error("%s of %s: error while reporting the fetch", self.document.name, origin, exc_info=True,
                         extra=self._log_extra)
        return state

    async def _from_store(self, origin: Origin, found: Obtained) -> OriginState:
        """The state another process of the fleet fetched, settled and cached here."""
        state = found.state
        assert state is not None
        self._inc("store_hit")
        logger.debug("%s of %s from the store (%s, fetched %.0f s ago)", self.document.name, origin,
                     state.access.value, time.time() - state.fetched_at, extra=self._log_extra)
        if self.on_settled is not None:
            await self.on_settled(origin, state, self.document, "store", None)
        self.states.put(origin, state)
        try:
            await self.report.announce(origin, state, self._triggers.get(origin))
        except Exception:
            logger.error("%s of %s: error while reporting the state from the store", self.document.name,
                         origin, exc_info=True, extra=self._log_extra)
        return state

    async def _place(self) -> bool:
        """Wait for one of the ``ROBOTSTXT_CONCURRENT_FETCHES`` places (True once taken)."""
        slot = self._fetch_slots.acquire()
        if not slot.called:
            self._inc("fetch_queued")
        await maybe_deferred_to_future(slot)
        return True

    async def _download(self, origin: Origin, held: bool = False, previous: OriginState | None = None) -> FetchOutcome:
        """Fetch the document when one of the ``ROBOTSTXT_CONCURRENT_FETCHES``
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
            return await self.fetcher.fetch(origin, self.document, validators=validators)
        finally:
            if acquired:
                self._fetch_slots.release()

    def _waiting_for_store(self, origin: Origin) -> None:
        if self.warmup is not None:
            self.warmup.waiting(origin, self._triggers.get(origin))

    def _next(self, previous: OriginState | None, outcome: FetchOutcome) -> OriginState:
        now = time.time()
        if previous is None:
            return OriginState.initial(outcome, now, self.policy)
        return previous.apply(outcome, now, self.policy)

    def close(self) -> None:
        """Cancel the fetches in flight (Scrapy's close waits for downloads in progress,
        and a stalled document must not keep the crawl open until ``DOWNLOAD_TIMEOUT``)."""
        if self.closing:
            return
        self.closing = True
        if self.warmup is not None:
            self.warmup.close()
        for fetching in list(self._fetches.values()):
            fetching.cancel()
        self.states.flush_stats()
