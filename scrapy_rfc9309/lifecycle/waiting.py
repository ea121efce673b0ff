"""The requests that wait for one document of their origin (robots.txt, or another
document of :mod:`.documents`): in the downloader or parked (:mod:`.parking`), woken
when the fetch of their origin's document ends, held while it is unreachable (retried
and given up at their deadline by :mod:`.retries`), and let go when the spider closes.

The states are :class:`~.states.DocumentStates`' and their fetches
:class:`~.fetches.Fetches`'; this module decides when to fetch for a waiting request,
and what the waiting requests do when a fetch ends. The middleware asks
:attr:`WaitingRequests.cached` (a usable state, with no waiting) and
:meth:`WaitingRequests.current` (a state, waiting for a fetch when there is none). The
documents of one crawl share one :class:`WaitingRoom`: its parked requests and its
``ROBOTSTXT_MAX_WAITING`` bound.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer
from twisted.internet.error import TimeoutError as TxTimeoutError

from ..core.documents import TDMREP
from ..core.state import Access
from ..runtime import compat as _compat
from ..runtime.loop import Timer, call_later, looping_call
from ..runtime.reporting import Reporting
from .fetch_report import FetchReport
from .fetches import Fetches
from .given_up import GivenUp
from .parking import Parking
from .retries import Retries
from .states import Closing, DocumentStates

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..config import Config
    from ..core.changes import RobotsChange
    from ..core.documents import Document
    from ..core.origins import Origin
    from ..core.state import OriginState
    from ..stores.client import StoreClient
    from .change_signal import ChangeNews
    from .dns_warmup import DnsWarmup
    from .fetch import RobotsFetcher

__all__ = ["Closing", "WaitingRequests", "WaitingRoom", "for_crawl"]

logger = logging.getLogger(__name__)

#: Waiters woken per loop turn: a release of thousands must not stall other origins.
WAKE_BATCH = 200
_CLOSE_POLL = 0.2


def for_crawl(crawler: Crawler, config: Config, fetcher: RobotsFetcher, origin_of: Callable[[str], Origin | None], *,
              store: StoreClient | None, warmup: DnsWarmup | None,
              on_settled: Callable[[Origin, OriginState, Document, str, RobotsChange | None], Awaitable[None]] | None,
              on_held: Callable[[Request, Origin, Document], None], tdm_holds: bool,
              news: ChangeNews | None,
              on_requeued: Callable[[Request, Origin, str, Document], None] | None = None,
              ) -> tuple[WaitingRequests, WaitingRequests | None]:
    """The waiting requests of a crawl's documents, in one room: robots.txt's, and with
    ``ROBOTSTXT_TDMREP`` tdmrep.json's (whose unreachable file holds its requests when
    ``tdm_holds``), each with its :class:`~.states.DocumentStates` and
    :class:`~.fetches.Fetches`. ``on_held``: told of a request parked while a document
    holds it; ``on_requeued``: of a parked request handed back to the scheduler at close;
    each with that document (its verdict, which counts it)."""
    robots = DocumentStates(crawler, config)
    room = WaitingRoom(crawler, config, origin_of, on_held, on_requeued)
    first = _waiting_requests(crawler, config, fetcher, robots, room, store=store, warmup=warmup,
                               on_settled=on_settled, news=news)
    if not config.tdmrep:
        return first, None
    tdm = DocumentStates(crawler, config, document=TDMREP, holds=tdm_holds)
    return first, _waiting_requests(crawler, config, fetcher, tdm, room, store=store, on_settled=on_settled)


def _waiting_requests(crawler: Crawler, config: Config, fetcher: RobotsFetcher, states: DocumentStates,
                      room: WaitingRoom, *, store: StoreClient | None, warmup: DnsWarmup | None = None,
                      on_settled: Callable[[Origin, OriginState, Document, str, RobotsChange | None], Awaitable[None]]
                      | None, news: ChangeNews | None = None) -> WaitingRequests:
    """The waiting requests of ``states``' document, with their fetches and what tells of them."""
    given_up = GivenUp(states.document)
    report = FetchReport(crawler, states, given_up, shared=store is not None)
    fetches = Fetches(config, fetcher, states, report, store=store, warmup=warmup, on_settled=on_settled, news=news)
    return WaitingRequests(crawler, config, states, fetches, given_up, room)


class WaitingRoom:
    """What the waiting requests of a crawl's documents share: the parking and the
    ``ROBOTSTXT_MAX_WAITING`` bound over the requests waiting in the downloader and
    those parked."""

    def __init__(self, crawler: Crawler, config: Config, origin_of: Callable[[str], Origin | None],
                 on_held: Callable[[Request, Origin, Document], None] | None = None,
                 on_requeued: Callable[[Request, Origin, str, Document], None] | None = None) -> None:
        self.max_waiting = config.max_waiting
        #: Requests of every document waiting in the downloader.
        self.waiting_in_downloader = 0
        #: The states of each document whose requests wait here.
        self.states: dict[Document, DocumentStates] = {}
        self.parking = Parking(crawler, origin_of, self.held, self.room, on_held, on_requeued)

    def held(self, origin: Origin, document: Document) -> bool:
        """Whether the origin's ``document`` holds its requests now (:meth:`.DocumentStates.holds_now`)."""
        return self.states[document].holds_now(origin)

    @property
    def waiting(self) -> int:
        """Requests of every document waiting: in the downloader, and parked."""
        return self.waiting_in_downloader + self.parking.count

    def room(self) -> bool:
        """Whether one more request may wait without taking a ``CONCURRENT_REQUESTS`` place."""
        return self.waiting < self.max_waiting


class WaitingRequests(Reporting):
    """The requests waiting for ``states``' document, in ``room``; ``fetches`` gets
    the states they wait for, ``retries`` the held origins' next fetches, and
    ``given_up_origins`` counts the origins given up, for the summary at close."""

    def __init__(self, crawler: Crawler, config: Config, states: DocumentStates, fetches: Fetches,
                 given_up: GivenUp, room: WaitingRoom) -> None:
        self.crawler = crawler
        self.document_states = states
        self.fetches = fetches
        self.given_up_origins = given_up
        self.document = states.document
        self.policy = config.policy
        self.room = room
        room.states[self.document] = states
        self.parking = room.parking
        self.retries = Retries(states, fetches, given_up, room.parking, waited=self._waited, start=self._start_fetch,
                               notify=self._notify)
        #: Requests of one origin that wait for its fetch in the downloader, and of all origins
        #: (for each fetch in flight, as many): more are parked.
        self.in_downloader = max(1, crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN", 8))
        self.in_downloader_max = self.in_downloader * config.concurrent_fetches
        #: What the middleware's judging path reads and does without a detour: the states (read-only
        #: here), and cancelling the retry of an origin whose held requests were dropped.
        self.cache, self.cached, self.holding, self.given_up = (states.cache, states.cached, states.holding,
                                                                states.given_up)
        self.give_up = self.retries.give_up
        self.closing = False
        self.close_reason = "closing"
        self._waiters: dict[Origin, list[defer.Deferred[Any]]] = {}
        self._waiting = 0
        self._close_watch: Timer | None = None
        self._requeued = 0
        self._discarded = 0

    def _inc(self, key: str, count: int = 1) -> None:
        super()._inc(self.document.stat + key, count)

    # -- what the middleware asks ---------------------------------------------------------
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
        if self.closing or not self.room.room():
            return None
        now = time.time()
        state = self.cache.get(origin)
        held = False
        if state is not None and state.access is Access.UNREACHABLE:
            if self.document_states.held(state, now):
                held = True
                self.retries.schedule(origin, request)
                self.retries.wake_at(origin, state.give_up_at(self.policy))
            elif not (self.document_states.gives_up(state, now) and state.expired(now)):
                return None  # judged by its good copy or with the state at hand, or dropped at once (given up)
        if not held:  # it waits for a fetch
            if self._waiting < self.in_downloader_max and (
                    not self.fetches.fetching(origin) or len(self._waiters.get(origin, ())) < self.in_downloader):
                return None
            self._start_fetch(origin, request)
        parked = self.parking.park(origin, request, held, self.document)
        if parked is not None:
            self._watch_close()
            if held:
                self._inc("held")
        return parked

    async def current(self, origin: Origin, request: Request) -> OriginState:
        """The origin's state, fetched (and waited for) when there is none or it
        expired. For an unreachable origin, the state at hand, with its retry
        started when due. Raises :class:`Closing`."""
        while True:
            state = self.document_states.fresh(origin, time.time())
            if state is not None:
                return state
            state = self.cache.get(origin)
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
        self.retries.schedule(origin, request)
        waiter: defer.Deferred[Any] = defer.Deferred()
        self._waiters.setdefault(origin, []).append(waiter)
        if timeout is not None:
            self.retries.wake_at(origin, time.time() + timeout)
        widened = self.room.room() and _compat.widen_concurrency(self.crawler.engine, 1)
        self._waiting += 1
        self.room.waiting_in_downloader += 1
        self._watch_close()
        try:
            value = await maybe_deferred_to_future(waiter)
        except (defer.CancelledError, defer.TimeoutError, TxTimeoutError):
            return None
        finally:
            self._waiting -= 1
            self.room.waiting_in_downloader -= 1
            if widened:
                _compat.widen_concurrency(self.crawler.engine, -1)
            waiters = self._waiters.get(origin)
            if waiters and waiter in waiters:
                waiters.remove(waiter)
        if isinstance(value, Closing):
            raise value
        return value  # type: ignore[no-any-return]

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
        return self._waiting + self.fetches.in_flight

    @property
    def waiting(self) -> int:
        """Requests waiting for this document: in the downloader, and parked (the parking is the crawl's)."""
        return self._waiting + self.parking.count

    # -- a fetch's end -----------------------------------------------------------------------
    def _start_fetch(self, origin: Origin, request: Request) -> None:
        if self.closing:
            return
        fetching = self.fetches.fetch(origin, request)
        if fetching is not None:
            self._watch_close()
            fetching.addCallbacks(self._settle, self._cancelled, callbackArgs=(origin,), errbackArgs=(origin,))

    def _cancelled(self, failure: Any, origin: Origin) -> None:
        """A fetch cancelled: at close, or a retry that served nobody (its waiters look again).
        Cancelling it cancels its coroutine's task, which ends in asyncio's ``CancelledError``:
        logged at DEBUG; any other failure is a bug, logged with its traceback."""
        if failure.check(defer.CancelledError, asyncio.CancelledError, Closing):
            logger.debug("%s of %s: the fetch was cancelled (%s)", self.document.name, origin,
                         "the spider closes" if self.closing else "it serves no request", extra=self._log_extra)
        else:
            logger.error("%s of %s: the fetch failed", self.document.name, origin,
                         exc_info=(failure.type, failure.value, failure.getTracebackObject()), extra=self._log_extra)
        self._notify(origin, Closing(self.close_reason) if self.closing else None)

    def _settle(self, state: OriginState, origin: Origin) -> None:
        """Wake the requests waiting for the origin's fetch, which ended in ``state``:
        released, or held (with the next retry and their deadline), or given up."""
        now = time.time()
        holding = self.holding(state, now)
        if not holding:
            self.fetches.forget_trigger(origin)
        self._notify(origin, state)
        if origin not in self.parking:
            return
        if not holding:
            self._inc("released", self.parking.release(origin))
        elif self.document_states.gives_up(state, now):
            self.parking.release(origin, given_up=True)  # dropped as they come back
        else:  # held: the next retry and the deadline, for the parked requests
            self._inc("held", self.parking.hold(origin))
            self.retries.schedule(origin, self.fetches.trigger(origin))
            self.retries.wake_at(origin, state.give_up_at(self.policy))

    def _waited(self, origin: Origin) -> bool:
        """Whether requests of the origin wait: in the downloader, or parked."""
        return bool(self._waiters.get(origin)) or origin in self.parking

    def _notify(self, origin: Origin, value: Any) -> None:
        waiters = self._waiters.pop(origin, [])
        if waiters:
            self._wake(waiters, value)

    def _wake(self, waiters: list[defer.Deferred[Any]], value: Any) -> None:
        """Wake ``WAKE_BATCH`` waiters now and the rest in later loop turns, so
        that other origins' downloads go on meanwhile."""
        batch, rest = waiters[:WAKE_BATCH], waiters[WAKE_BATCH:]
        for waiter in batch:
            if not waiter.called:
                waiter.callback(value)
        if rest:
            call_later(0, self._wake, rest, value)

    # -- closing ------------------------------------------------------------------------
    def _watch_close(self) -> None:
        if self._close_watch is None:
            self._close_watch = looping_call(_CLOSE_POLL, self._check_closing)

    def _check_closing(self) -> None:
        closing = _compat.engine_closing(self.crawler.engine)
        if closing:
            self.close()
        if (closing or not (self._waiting or self.fetches.in_flight or self.parking.count)) \
                and self._close_watch is not None:
            self._close_watch.cancel()
            self._close_watch = None

    def close(self, reason: str = "closing") -> None:
        """Release every waiting request (they are dropped, or handed back to a
        scheduler that keeps its queue) and cancel the fetches in flight: Scrapy's
        close waits for downloads in progress, and a stalled document must not keep
        the crawl open until ``DOWNLOAD_TIMEOUT``. ``reason``: see :class:`Closing`."""
        if self.closing:
            return
        self.closing = True
        self.close_reason = reason
        requeued, discarded = self.parking.close(_compat.scheduler_persists(self.crawler.engine), reason)
        if self.parking.on_requeued is None:  # otherwise each is counted by its verdict, with the others
            self._requeued += requeued
            self._inc("requeued_on_close", requeued)
        self._discarded += discarded
        self._inc("discarded_on_close", discarded)
        self.retries.close()
        for origin in list(self._waiters):
            self._notify(origin, Closing(reason))
        self.fetches.close()
        if self._close_watch is not None:
            self._close_watch.cancel()
            self._close_watch = None

    def summary(self, dropped: dict[str, int], requeued: int) -> str | None:
        """The origins given up and the requests dropped in this crawl, and why, in
        one line (None when there were none). ``dropped``: the requests dropped per
        reason, and ``requeued`` those handed back to the scheduler while they waited
        in the downloader (the verdicts' tally)."""
        return self.given_up_origins.summary(dropped, requeued + self._requeued, self._discarded)
