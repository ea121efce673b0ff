"""The parking (scrapy_rfc9309/lifecycle/parking.py) where the crawl tests left mutants alive: a
:class:`Parking` on a live crawl (a real engine, scheduler and signals, the spider kept open by
:class:`test_mutants_waiting.LiveCrawl`), its requests parked as the middleware parks them (returned
from ``process_request``, rescheduled by Scrapy) and what it schedules again read from the
``request_scheduled`` signal (docs/development.md, "Mutation testing")."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
from middleware_support import until
from pydispatch.dispatcher import getAllReceivers
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from test_mutants_waiting import LiveCrawl

from scrapy_rfc9309.core.documents import ROBOTS_TXT, TDMREP
from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.lifecycle import parking as parking_module
from scrapy_rfc9309.lifecycle.parking import RELEASE_BATCH, Parking
from scrapy_rfc9309.meta import GIVEN_UP_META
from scrapy_rfc9309.runtime import compat as _compat
from scrapy_rfc9309.runtime import loop

#: The crawl obeys no robots.txt (no middleware of its own); the test keeps every request from its scheduler.
SETTINGS = {"ROBOTSTXT_OBEY": False}


class Parked:
    """A parking on ``crawler``, with what it tells and what the crawl schedules."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.is_held = False
        self.has_room = True
        self.held: list[tuple[str, Origin, Any]] = []
        self.requeued: list[tuple[str, Origin, str, Any]] = []
        self.parking = Parking(crawler, Origin.from_url, lambda origin, document: self.is_held,
                               lambda: self.has_room,
                               lambda request, origin, document: self.held.append((request.url, origin, document)),
                               lambda request, origin, reason, document: self.requeued.append(
                                   (request.url, origin, reason, document)))
        self.scheduled: list[Request] = []
        crawler.signals.connect(self._scheduled, signal=signals.request_scheduled, weak=False)

    def _scheduled(self, request: Request, spider: Any = None) -> None:
        """Record a scheduled request, and keep it from the scheduler (nothing is downloaded)."""
        self.scheduled.append(request)
        raise IgnoreRequest("recorded")

    def park(self, origin: Origin, request: Request, held: bool = False, document: Any = ROBOTS_TXT) -> None:
        """As the middleware parks a request: returned from ``process_request``, rescheduled by Scrapy."""
        assert self.parking.park(origin, request, held, document) is request
        assert _compat.schedule(self.crawler, request)

    def come_back(self) -> list[Request]:
        """The requests scheduled since the last call."""
        came, self.scheduled = self.scheduled, []
        return came


def _requests(origin: Origin, count: int, start: int = 0) -> list[Request]:
    base = f"{origin.scheme}://{origin.host}:{origin.port}"
    return [Request(f"{base}/page/{i}") for i in range(start, start + count)]


ORIGIN = Origin.from_url("http://127.0.0.9:9/")
OTHER = Origin.from_url("http://127.0.0.10:9/")


@pytest_twisted.ensureDeferred
async def test_a_release_of_more_than_a_batch_schedules_every_request_again_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []

    def call_later(delay: float, func: Any, *args: Any) -> Any:
        delays.append(delay)
        return loop.call_later(delay, func, *args)

    monkeypatch.setattr(parking_module, "call_later", call_later)
    async with LiveCrawl(**SETTINGS) as crawler:
        parked = Parked(crawler)
        count = 2 * RELEASE_BATCH + 7
        requests = _requests(ORIGIN, count)
        for request in requests:
            parked.park(ORIGIN, request)
        assert parked.parking.count == count and parked.parking.parked() == {ORIGIN: count}
        parked.come_back()
        assert parked.parking.release(ORIGIN) == 0  # none was held
        assert parked.come_back() == [] and ORIGIN not in parked.parking  # scheduled from the next loop turn
        await until(lambda: parked.parking.count == 0, "every request scheduled again")
        again = parked.come_back()
        assert sorted(r.url for r in again) == sorted(r.url for r in requests)
        # They had passed the duplicate filter: they go back as copies it lets through, unmarked.
        assert all(r.dont_filter and GIVEN_UP_META not in r.meta for r in again)
        # A batch per loop turn, each in the next turn (no delay): three for 2 * RELEASE_BATCH + 7.
        assert len(delays) == 3 and all(delay <= 0 for delay in delays)
        assert parked.parking.release(ORIGIN) == 0 and parked.come_back() == []


@pytest_twisted.ensureDeferred
async def test_new_requests_of_a_parked_origin_are_parked_while_there_is_room() -> None:
    async with LiveCrawl(**SETTINGS) as crawler:
        parked = Parked(crawler)
        first, second, third, fourth = _requests(ORIGIN, 4)
        parked.park(ORIGIN, first, document=TDMREP)
        other = _requests(OTHER, 1)[0]
        assert _compat.schedule(crawler, other)  # another origin's: not parked
        assert parked.parking.parked() == {ORIGIN: 1} and parked.parking.count == 1
        assert _compat.schedule(crawler, fourth)  # the spider's new request of a parked origin, not held
        parked.is_held = True
        assert _compat.schedule(crawler, second)  # and one held
        assert parked.parking.parked() == {ORIGIN: 3} and parked.parking.count == 3
        assert parked.held == [(second.url, ORIGIN, TDMREP)]
        assert crawler.stats.get_value("robotstxt/tdmrep/held") == 1
        parked.has_room = False
        assert _compat.schedule(crawler, third)  # no room: it goes to the scheduler
        assert parked.parking.parked() == {ORIGIN: 3} and parked.parking.count == 3
        parked.come_back()
        # The one held when it came is counted held; those that waited for a fetch are not.
        assert parked.parking.release(ORIGIN, given_up=True) == 1
        await until(lambda: parked.parking.count == 0, "all scheduled again")
        again = {r.url: r for r in parked.come_back()}
        assert set(again) == {first.url, second.url, fourth.url}
        # Those the spider scheduled had not passed the duplicate filter: they go back as they were.
        assert again[first.url].dont_filter and not again[second.url].dont_filter
        assert not again[fourth.url].dont_filter
        # Only the held one is marked to be dropped as it comes back.
        assert GIVEN_UP_META not in again[first.url].meta and again[second.url].meta[GIVEN_UP_META] is True
        assert GIVEN_UP_META not in again[fourth.url].meta


@pytest.mark.parametrize(("given_up", "idle", "mark"), [(False, False, None), (True, False, True),
                                                        (False, True, "idle"), (True, True, "idle")])
@pytest_twisted.ensureDeferred
async def test_holding_marks_the_parked_requests_held_once(given_up: bool, idle: bool, mark: Any) -> None:
    async with LiveCrawl(**SETTINGS) as crawler:
        parked = Parked(crawler)
        requests = _requests(ORIGIN, 4)
        parked.park(ORIGIN, requests[0], held=True)
        assert parked.held == [(requests[0].url, ORIGIN, ROBOTS_TXT)]
        parked.park(ORIGIN, requests[1])
        parked.park(ORIGIN, requests[2])
        assert _compat.schedule(crawler, requests[3])  # the spider's, not held when it came
        assert parked.parking.hold(OTHER) == 0
        assert parked.parking.hold(ORIGIN) == 3
        assert parked.held == [(r.url, ORIGIN, ROBOTS_TXT) for r in requests]
        assert parked.parking.hold(ORIGIN) == 0 and len(parked.held) == 4
        parked.come_back()
        # Released as a fetch that succeeded releases them (no flag), or given up (at the deadline, or idle).
        flags = {name: True for name, on in (("given_up", given_up), ("idle", idle)) if on}
        assert parked.parking.release(ORIGIN, **flags) == 4
        await until(lambda: parked.parking.count == 0, "all scheduled again")
        again = {r.url: r for r in parked.come_back()}
        assert [again[r.url].meta.get(GIVEN_UP_META) for r in requests] == [mark] * 4
        assert [again[r.url].dont_filter for r in requests] == [True, True, True, False]


@pytest_twisted.ensureDeferred
async def test_the_parking_stops_listening_once_nothing_is_parked() -> None:
    async with LiveCrawl(**SETTINGS) as crawler:
        parking = Parking(crawler, Origin.from_url, lambda origin, document: False, lambda: True)
        before = _receivers(crawler)
        request = _requests(ORIGIN, 1)[0]
        assert parking.park(ORIGIN, request, False, ROBOTS_TXT) is request
        assert _receivers(crawler) == before + 1
        assert _compat.schedule(crawler, request)
        assert parking.parked() == {ORIGIN: 1}
        parking.release(ORIGIN)
        await until(lambda: parking.count == 0, "the request scheduled again")
        # Every scheduled request would pay for the dispatch otherwise.
        assert _receivers(crawler) == before
        assert parking.close(False) == (0, 0)
        assert _receivers(crawler) == before


def _receivers(crawler: Any) -> int:
    """The receivers of ``request_scheduled`` on the crawl's signals."""
    return len(list(getAllReceivers(crawler.signals.sender, signals.request_scheduled)))


@pytest_twisted.ensureDeferred
async def test_at_close_parked_requests_are_handed_back_to_a_scheduler_that_keeps_its_queue() -> None:
    async with LiveCrawl(**SETTINGS) as crawler:
        parked = Parked(crawler)
        requests = [*_requests(ORIGIN, 2), *_requests(OTHER, 1)]
        for request in requests[:2]:
            parked.park(ORIGIN, request)
        parked.park(OTHER, requests[2], held=True, document=TDMREP)
        parked.come_back()
        assert parked.parking.close(True, "idle") == (3, 0)
        assert sorted(parked.requeued, key=lambda told: told[0]) == sorted([
            (requests[0].url, ORIGIN, "idle", ROBOTS_TXT), (requests[1].url, ORIGIN, "idle", ROBOTS_TXT),
            (requests[2].url, OTHER, "idle", TDMREP)], key=lambda told: told[0])
        assert sorted(r.url for r in parked.come_back()) == sorted(r.url for r in requests)
        assert parked.parking.count == 0 and parked.parking.parked() == {}
        # Closed: a request scheduled now is not parked.
        late = _requests(ORIGIN, 1, start=10)[0]
        assert _compat.schedule(crawler, late)
        assert parked.come_back() == [late] and parked.parking.count == 0


@pytest_twisted.ensureDeferred
async def test_at_close_parked_requests_are_counted_not_crawled_without_such_a_scheduler() -> None:
    async with LiveCrawl(**SETTINGS) as crawler:
        parked = Parked(crawler)
        requests = _requests(ORIGIN, 4)
        for request in requests:
            parked.park(ORIGIN, request)
        parked.come_back()
        parked.parking.release(ORIGIN)  # on their way back when the spider closes
        assert parked.parking.close(False) == (0, 4)
        assert parked.requeued == [] and parked.parking.count == 0
        assert parked.come_back() == []
