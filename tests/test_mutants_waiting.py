"""The requests that wait for a document (scrapy_rfc9309/lifecycle/waiting.py) and the watch of
the held ones (scrapy_rfc9309/lifecycle/idle_watch.py) where the crawl tests left mutants alive:
real objects of one crawler (its settings, stats and signals), the states put in as a fetch would
put them, the clock passed in (docs/development.md, "Mutation testing")."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from typing import Any

import pytest
import pytest_twisted
from crawl import ListSpider, run_crawl
from middleware_support import until
from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.test import get_crawler
from twisted.internet import defer

from scrapy_rfc9309.config import Config
from scrapy_rfc9309.core.documents import ROBOTS_TXT
from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome, OriginState
from scrapy_rfc9309.lifecycle.idle_watch import HeldWatch
from scrapy_rfc9309.lifecycle.states import Closing
from scrapy_rfc9309.lifecycle.waiting import WAKE_BATCH, for_crawl
from scrapy_rfc9309.meta import GIVEN_UP_META
from scrapy_rfc9309.runtime import compat as _compat

NOW = 1_000_000.0
IDLE = 120.0


class NoFetcher:
    """The crawl's fetcher, never asked here: the states are put in as a fetch puts them."""

    async def fetch(self, *args: Any, **kwargs: Any) -> FetchOutcome:
        raise AssertionError("no fetch in these tests")


class OpenSpider(ListSpider):
    """A spider that stays open (its start requests not consumed) until the test lets it close:
    the test's objects run on its live crawler (a running engine, its signals and stats)."""

    name = "open"
    latest: OpenSpider | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.done: defer.Deferred[None] = defer.Deferred()
        OpenSpider.latest = self

    async def start(self):  # type: ignore[override]
        await maybe_deferred_to_future(self.done)
        for request in ():
            yield request


class LiveCrawl:
    """``async with LiveCrawl(**settings) as crawler``: a real crawl kept open while the block runs
    (without Scrapy's robots.txt middleware: the test's objects are the plugin's part)."""

    def __init__(self, spider: type[OpenSpider] = OpenSpider, **settings: Any) -> None:
        self.spider = spider
        self.settings = settings
        self.crawl: Any = None

    async def __aenter__(self) -> Any:
        OpenSpider.latest = None
        self.crawl = run_crawl(self.spider, {"ROBOTSTXT_OBEY": False, **self.settings})
        await until(lambda: OpenSpider.latest is not None and OpenSpider.latest.crawler.engine is not None
                    and OpenSpider.latest.crawler.engine.running, "the spider to open")
        assert OpenSpider.latest is not None
        return OpenSpider.latest.crawler

    async def __aexit__(self, *exc: Any) -> None:
        assert OpenSpider.latest is not None
        OpenSpider.latest.done.callback(None)
        await self.crawl


class Crawl:
    """The waiting requests of one crawler's robots.txt, and its watch of the held ones."""

    def __init__(self, crawler: Any = None, fetcher: Any = None, **settings: Any) -> None:
        self.crawler = crawler or get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, **settings})
        self.config = Config.from_settings(self.crawler.settings)
        self.waiting, _ = for_crawl(self.crawler, self.config, fetcher or NoFetcher(), _origin_of,
                                    store=None, warmup=None, on_settled=None, on_held=lambda *_: None,
                                    tdm_holds=False, news=None)
        self.now = NOW
        self.watch = HeldWatch(self.crawler, [self.waiting], self.config.policy, IDLE, clock=lambda: self.now)

    def unreachable(self, host: str, since: float, retry_in: float = 5.0) -> Origin:
        """An origin whose robots.txt was unreachable from ``since`` (a 503), fetched again in ``retry_in`` s."""
        origin = Origin.from_url(f"http://{host}/")
        outcome = FetchOutcome(Access.UNREACHABLE, origin.robots_url, 503, cause=Cause.TRANSIENT)
        state = OriginState.initial(outcome, since, self.config.policy)
        state = replace(state, expires_at=NOW + retry_in)
        self.waiting.document_states.put(origin, state)
        return origin

    def park(self, origin: Origin, count: int) -> None:
        """Park ``count`` held requests of ``origin``, as the middleware and the scheduler do."""
        for i in range(count):
            request = Request(f"{origin.robots_url[:-len('/robots.txt')]}/page/{i}")
            assert self.waiting.parking.park(origin, request, True, ROBOTS_TXT) is request
            self.crawler.signals.send_catch_log(signals.request_scheduled, request=request, spider=None,
                                                dont_log=IgnoreRequest)


def _origin_of(url: str) -> Origin | None:
    return Origin.from_url(url)


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if r.name == "scrapy_rfc9309.lifecycle.idle_watch"]
    caplog.clear()
    return lines


def test_the_progress_line_names_the_three_origins_with_most_held_requests_and_counts_the_rest() -> None:
    crawl = Crawl()
    counts = {"a.example": 1, "b.example": 4, "c.example": 2, "d.example": 5, "e.example": 3}
    origins = {host: crawl.unreachable(host, since=NOW - 100 - i, retry_in=10.4 + i)
               for i, host in enumerate(counts)}
    for host, count in counts.items():
        crawl.park(origins[host], count)
    held = crawl.waiting.held(NOW)
    assert sorted((str(origin), count) for origin, count, _ in held) == sorted(
        (str(origins[host]), count) for host, count in counts.items())
    line = crawl.watch.progress([(crawl.waiting, *entry) for entry in held], NOW)
    # The earliest deadline: e.example, unreachable since NOW - 104, given up 900 s after.
    assert line == (
        f"robots.txt: 15 requests held for 5 unreachable origins ({origins['d.example']} (robots.txt status 503, "
        f"next fetch in 13 s); {origins['b.example']} (robots.txt status 503, next fetch in 11 s); "
        f"{origins['e.example']} (robots.txt status 503, next fetch in 14 s) and 2 more): complete disallow until a "
        "fetch succeeds; given up in 796 s at the latest (ROBOTSTXT_MAX_WAIT)")


def test_the_progress_line_of_an_overdue_fetch_says_zero_and_when_idle_gives_up() -> None:
    crawl = Crawl()
    origin = crawl.unreachable("a.example", since=NOW - 10, retry_in=-3.0)
    crawl.park(origin, 2)
    held = [(crawl.waiting, *entry) for entry in crawl.waiting.held(NOW)]
    crawl.watch.idle_since = NOW - 20.2
    assert crawl.watch.progress(held, NOW) == (
        f"robots.txt: 2 requests held for 1 unreachable origins ({origin} (robots.txt status 503, next fetch in "
        "0 s)): complete disallow until a fetch succeeds; given up in 890 s at the latest (ROBOTSTXT_MAX_WAIT), "
        "or in 100 s: nothing else is left to crawl (ROBOTSTXT_MAX_WAIT_IDLE)")
    crawl.watch.idle_since = NOW - IDLE - 5
    assert crawl.watch.progress(held, NOW).endswith(", or in 0 s: nothing else is left to crawl "
                                                    "(ROBOTSTXT_MAX_WAIT_IDLE)")


@pytest_twisted.ensureDeferred
async def test_the_progress_line_comes_once_every_logstats_interval_while_requests_are_held(
        caplog: pytest.LogCaptureFixture) -> None:
    async with LiveCrawl(LOGSTATS_INTERVAL=10) as crawler:
        _progress_every_interval(Crawl(crawler), caplog)


def _progress_every_interval(crawl: Crawl, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="scrapy_rfc9309.lifecycle.idle_watch")
    crawl.watch.tick()  # nothing waits
    assert crawl.watch._held_since is None and _lines(caplog) == []
    origin = crawl.unreachable("a.example", since=NOW - 10)
    crawl.park(origin, 3)
    for offset, logged in ((0.0, False), (9.9, False), (10.0, True), (15.0, False), (19.9, False),
                           (20.0, True), (30.5, True)):
        crawl.now = NOW + offset
        crawl.watch.tick()
        lines = _lines(caplog)
        assert len(lines) == (1 if logged else 0), (offset, lines)
        if logged:
            assert lines[0].startswith("robots.txt: 3 requests held for 1 unreachable origins")
        # Scrapy's idle test is false here (the start requests are not consumed): no idle time.
        assert crawl.watch.idle_since is None
    # Once nothing waits any more, the next hold counts its interval from its own start.
    crawl.waiting.parking.release(origin)
    crawl.watch.tick()
    assert crawl.watch._held_since is None


def test_a_requests_wait_is_not_held_when_its_origins_state_does_not_hold() -> None:
    crawl = Crawl()
    held_origin = crawl.unreachable("a.example", since=NOW - 10)
    given_up = crawl.unreachable("b.example", since=NOW - 1000)
    crawl.park(held_origin, 2)
    crawl.park(given_up, 1)
    # A request given up still counts as held until it is dropped (holding, not held).
    assert sorted(str(o) for o, _, _ in crawl.waiting.held(NOW)) == [str(held_origin), str(given_up)]
    good = Origin.from_url("http://c.example/")
    crawl.waiting.document_states.put(good, OriginState.initial(
        FetchOutcome(Access.PARSED, good.robots_url, 200, b"User-agent: *\nAllow: /\n"), NOW, crawl.config.policy))
    crawl.park(good, 1)
    assert str(good) not in [str(o) for o, _, _ in crawl.waiting.held(NOW)]
    assert crawl.waiting.waiting == 4 and crawl.waiting.downloading == 0



class GatedFetcher:
    """The crawl's fetcher for one origin's robots.txt: each fetch answers ``outcome`` once the test
    opens the gate (the download itself is the crawl tests')."""

    def __init__(self) -> None:
        self.calls = 0
        self.gate = asyncio.Event()
        self.outcome: FetchOutcome | None = None

    async def fetch(self, origin: Origin, document: Any = ROBOTS_TXT, *, validators: Any = None) -> FetchOutcome:
        self.calls += 1
        await self.gate.wait()
        assert self.outcome is not None
        return self.outcome


def _live_waiting(crawler: Any, fetcher: Any) -> Any:
    config = Config.from_settings(crawler.settings)
    waiting, _ = for_crawl(crawler, config, fetcher, _origin_of, store=None, warmup=None, on_settled=None,
                           on_held=lambda *_: None, tdm_holds=False, news=None)
    return waiting


def _start(coroutine: Any) -> asyncio.Future[Any]:
    """Run ``coroutine`` as an asyncio task (the middleware's coroutines run so: they await futures)."""
    return asyncio.ensure_future(coroutine)


async def _result(future: asyncio.Future[Any]) -> Any:
    """Await ``future`` from the test's coroutine (driven by Deferreds)."""
    return await defer.Deferred.fromFuture(future)


@pytest_twisted.ensureDeferred
async def test_more_waiters_of_one_origin_than_a_wake_batch_are_all_woken_and_give_their_places_back() -> None:
    async with LiveCrawl(CONCURRENT_REQUESTS=4, ROBOTSTXT_MAX_WAITING=10_000) as crawler:
        fetcher = GatedFetcher()
        waiting = _live_waiting(crawler, fetcher)
        origin = Origin.from_url("http://a.example/")
        downloader = crawler.engine.downloader
        places = downloader.total_concurrency
        count = 2 * WAKE_BATCH + 5
        waiters = [_start(waiting.current(origin, Request(f"http://a.example/{i}"))) for i in range(count)]
        await until(lambda: waiting.waiting == count, f"{count} requests waiting")
        # Waiting takes no CONCURRENT_REQUESTS place: each widens the downloader by one while it waits.
        assert downloader.total_concurrency == places + count and waiting.downloading == count + 1
        assert fetcher.calls == 1  # one fetch for them all
        fetcher.outcome = FetchOutcome(Access.PARSED, origin.robots_url, 200, b"User-agent: *\nDisallow: /x\n")
        fetcher.gate.set()
        states = await _result(asyncio.gather(*waiters))
        assert all(state is states[0] and state.access is Access.PARSED for state in states)
        assert waiting.waiting == 0 and waiting.downloading == 0 and waiting.room.waiting == 0
        assert downloader.total_concurrency == places


@pytest_twisted.ensureDeferred
async def test_requests_waiting_when_the_spider_closes_are_let_go_with_its_reason() -> None:
    async with LiveCrawl() as crawler:
        fetcher = GatedFetcher()
        waiting = _live_waiting(crawler, fetcher)
        origin = Origin.from_url("http://a.example/")
        waiters = [_start(waiting.current(origin, Request(f"http://a.example/{i}"))) for i in range(3)]
        await until(lambda: waiting.waiting == 3, "3 requests waiting")
        waiting.close("idle")
        for waiter in waiters:
            with pytest.raises(Closing) as closing:
                await _result(waiter)
            assert closing.value.reason == "idle"
        assert waiting.waiting == 0 and waiting.fetches.in_flight == 0
        with pytest.raises(Closing):
            await _result(_start(waiting.wait(origin, Request("http://a.example/late"), None)))


@pytest_twisted.ensureDeferred
async def test_a_request_of_a_held_origin_is_parked_and_counted_held() -> None:
    async with LiveCrawl(ROBOTSTXT_MAX_WAIT=900) as crawler:
        fetcher = GatedFetcher()
        waiting = _live_waiting(crawler, fetcher)
        policy = waiting.policy
        held = Origin.from_url("http://a.example/")
        outcome = FetchOutcome(Access.UNREACHABLE, held.robots_url, 503, cause=Cause.TRANSIENT)
        waiting.document_states.put(held, OriginState.initial(outcome, time.time(), policy))
        request = Request("http://a.example/page")
        assert waiting.park(held, request) is request
        assert waiting.parking.count == 1 and crawler.stats.get_value("robotstxt/held") == 1
        assert fetcher.calls == 0  # its retry comes when due, not now
        # A reachable origin's request, with nothing waiting, waits in the downloader for its fetch.
        good = Origin.from_url("http://b.example/")
        good_outcome = FetchOutcome(Access.PARSED, good.robots_url, 200, b"User-agent: *\nAllow: /\n")
        waiting.document_states.put(good, OriginState.initial(good_outcome, time.time() - 10 * 86400, policy))
        assert waiting.park(good, Request("http://b.example/page")) is None
        assert waiting.parking.count == 1 and crawler.stats.get_value("robotstxt/held") == 1


@pytest_twisted.ensureDeferred
async def test_requests_wait_in_the_downloader_up_to_their_origins_share_of_the_fetches_places() -> None:
    """``CONCURRENT_REQUESTS_PER_DOMAIN`` requests of an origin wait in the downloader for its fetch,
    and as many for each of the ``ROBOTSTXT_CONCURRENT_FETCHES`` fetches in all: the next are parked."""
    async with LiveCrawl(CONCURRENT_REQUESTS_PER_DOMAIN=2, ROBOTSTXT_CONCURRENT_FETCHES=3,
                         ROBOTSTXT_MAX_WAITING=100) as crawler:
        fetcher = GatedFetcher()
        waiting = _live_waiting(crawler, fetcher)
        assert (waiting.in_downloader, waiting.in_downloader_max) == (2, 6)
        waiters = []
        for host in ("a.example", "b.example", "c.example"):
            origin = Origin.from_url(f"http://{host}/")
            for i in range(2):
                request = Request(f"http://{host}/{i}")
                assert waiting.park(origin, request) is None, request
                waiters.append(_start(waiting.current(origin, request)))
                count = len(waiters)
                await until(lambda: waiting.waiting == count, f"{count} waiting")  # noqa: B023 - awaited here
        assert fetcher.calls == 3
        # A third request of a fetched origin, and any of another origin, are parked now.
        third = Request("http://a.example/2")
        assert waiting.park(Origin.from_url("http://a.example/"), third) is third
        other = Request("http://d.example/0")
        assert waiting.park(Origin.from_url("http://d.example/"), other) is other
        assert waiting.parking.count == 2 and waiting.waiting == 8
        fetcher.outcome = FetchOutcome(Access.UNAVAILABLE, "http://a.example/robots.txt", 404)
        fetcher.gate.set()
        await _result(asyncio.gather(*waiters))


class IdleSpider(OpenSpider):
    """A spider whose start requests are consumed at once and that stays open, when idle, until
    the test lets it close: its ``spider_idle`` receiver is passed to the watch as one of its own."""

    name = "idle"

    async def start(self):  # type: ignore[override]
        for request in ():
            yield request

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.keep_open, signal=signals.spider_idle)
        return spider

    def keep_open(self) -> None:
        if not self.done.called:
            raise DontCloseSpider


@pytest_twisted.ensureDeferred
async def test_held_requests_are_given_up_once_idle_for_the_bound_and_the_warning_says_how_long(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="scrapy_rfc9309.lifecycle.idle_watch")
    async with LiveCrawl(spider=IdleSpider) as crawler:
        crawl = _idle_watch(crawler)
        origin = crawl.unreachable("a.example", since=NOW - 10)
        crawl.park(origin, 2)
        again: list[Request] = []

        def scheduled(request: Request, spider: Any = None) -> None:  # what comes back is kept from the crawl
            again.append(request)
            raise IgnoreRequest("recorded")

        crawler.signals.connect(scheduled, signal=signals.request_scheduled, weak=False)
        await until(lambda: _compat.only_these_left(crawler.engine, 1), "nothing but the keeper left")
        crawl.watch.tick()
        assert crawl.watch.idle_since == NOW
        crawl.now = NOW + IDLE - 0.5
        crawl.watch.tick()
        assert crawl.watch.idle_since == NOW and crawler.stats.get_value("robotstxt/gave_up_idle") is None
        crawl.now = NOW + IDLE
        crawl.watch.tick()
        assert crawler.stats.get_value("robotstxt/gave_up_idle") == 1 and crawl.watch.idle_since is None
        assert _lines(caplog) == [
            "robots.txt: nothing left to crawl for 120 s but 2 requests held for 1 unreachable origins "
            "(ROBOTSTXT_MAX_WAIT_IDLE): they are dropped"]
        await until(lambda: crawl.waiting.parking.count == 0, "the held requests scheduled again, to be dropped")
        assert sorted(request.url for request in again) == ["http://a.example/page/0", "http://a.example/page/1"]
        assert all(request.meta[GIVEN_UP_META] == "idle" for request in again)


@pytest_twisted.ensureDeferred
async def test_the_held_origins_count_their_requests_waiting_in_the_downloader_and_parked() -> None:
    async with LiveCrawl() as crawler:
        waiting = _live_waiting(crawler, GatedFetcher())
        policy = waiting.policy
        in_downloader, both = Origin.from_url("http://a.example/"), Origin.from_url("http://b.example/")
        for origin in (in_downloader, both):
            outcome = FetchOutcome(Access.UNREACHABLE, origin.robots_url, 503, cause=Cause.TRANSIENT)
            waiting.document_states.put(origin, OriginState.initial(outcome, time.time(), policy))
        # Held requests wait in the downloader for their origin's retry, as the middleware has them wait.
        waiters = [_start(waiting.wait(origin, Request(f"{origin.robots_url[:-11]}/{i}"), None))
                   for origin, count in ((in_downloader, 3), (both, 1)) for i in range(count)]
        await until(lambda: waiting.waiting == 4, "4 requests waiting")
        request = Request("http://b.example/parked")
        assert waiting.park(both, request) is request
        assert _compat.schedule(crawler, request)
        held = {origin: count for origin, count, _ in waiting.held(time.time())}
        assert held == {in_downloader: 3, both: 2}
        waiting.close()
        results = await _result(asyncio.gather(*waiters, return_exceptions=True))
        assert all(isinstance(result, Closing) for result in results)


@pytest_twisted.ensureDeferred
async def test_parked_requests_handed_back_at_close_are_counted_when_no_verdict_counts_them(tmp_path: Any) -> None:
    async with LiveCrawl(JOBDIR=str(tmp_path / "job")) as crawler:
        waiting = _live_waiting(crawler, GatedFetcher())  # no on_requeued: the waiting requests count them
        origin = Origin.from_url("http://127.0.0.9:9/")  # what is handed back is refused at once, if crawled
        outcome = FetchOutcome(Access.UNREACHABLE, origin.robots_url, 503, cause=Cause.TRANSIENT)
        waiting.document_states.put(origin, OriginState.initial(outcome, time.time(), waiting.policy))
        for i in range(3):
            request = Request(f"http://127.0.0.9:9/{i}")
            assert waiting.park(origin, request) is request
            assert _compat.schedule(crawler, request)
        assert waiting.parking.count == 3
        waiting.close()
        assert crawler.stats.get_value("robotstxt/requeued_on_close") == 3
        assert crawler.stats.get_value("robotstxt/discarded_on_close") is None
        assert waiting.summary({}, 2) == (
            "origins given up: none. Requests dropped: none. Put back in the scheduler for the next run: "
            "5 requests that waited for a robots.txt")


def _idle_watch(crawler: Any, fetcher: Any = None) -> Crawl:
    """The waiting requests on a live crawl left idle, watched with the spider's own ``spider_idle``
    receiver as the watch's (the plugin's receivers are its own: their ``DontCloseSpider`` is the hold)."""
    crawl = Crawl(crawler, fetcher)
    crawl.watch = HeldWatch(crawler, [crawl.waiting], crawl.config.policy, IDLE, clock=lambda: crawl.now,
                            own_receivers=[crawler.spider.keep_open])
    return crawl


@pytest_twisted.ensureDeferred
async def test_another_origins_fetch_beside_a_held_origins_retry_is_not_idle() -> None:
    async with LiveCrawl(spider=IdleSpider) as crawler:
        fetcher = GatedFetcher()
        crawl = _idle_watch(crawler, fetcher)
        held = crawl.unreachable("a.example", since=NOW - 10)  # its retry is due (on the crawl's clock)
        crawl.park(held, 2)
        crawl.waiting.prefetch(held, Request("http://a.example/0"))
        other = Origin.from_url("http://b.example/")
        crawl.waiting.prefetch(other, Request("http://b.example/0"))
        await until(lambda: fetcher.calls == 2, "both fetches to start")
        assert crawl.waiting.fetches.in_flight == 2
        await until(lambda: _compat.only_these_left(crawler.engine, 3), "nothing but the keeper and the fetches")
        crawl.watch.tick()
        # The other origin's requests wait for its fetch: the crawl is not idle.
        assert crawl.watch.idle_since is None
        fetcher.outcome = FetchOutcome(Access.UNAVAILABLE, other.robots_url, 404)
        fetcher.gate.set()
        await until(lambda: crawl.waiting.fetches.in_flight == 0, "the fetches to end")


@pytest_twisted.ensureDeferred
async def test_with_a_jobdir_held_requests_given_up_at_idle_are_handed_back_as_idle(tmp_path: Any) -> None:
    async with LiveCrawl(spider=IdleSpider, JOBDIR=str(tmp_path / "job")) as crawler:
        crawl = _idle_watch(crawler)
        origin = crawl.unreachable("127.0.0.9:9", since=NOW - 10)
        crawl.park(origin, 2)
        await until(lambda: _compat.only_these_left(crawler.engine, 1), "nothing but the keeper left")
        crawl.watch.tick()
        crawl.now = NOW + IDLE
        crawl.watch.tick()
        # Handed back at close, said to be given up at idle; the spider closes as Scrapy would close it.
        assert crawl.waiting.closing and crawl.waiting.close_reason == "idle"
        assert crawler.stats.get_value("robotstxt/requeued_on_close") == 2
    assert crawler.stats.get_value("finish_reason") == "finished"


@pytest_twisted.ensureDeferred
async def test_at_most_max_waiting_requests_wait_without_taking_a_concurrent_requests_place() -> None:
    async with LiveCrawl(CONCURRENT_REQUESTS=4, CONCURRENT_REQUESTS_PER_DOMAIN=8, ROBOTSTXT_MAX_WAITING=2) as crawler:
        fetcher = GatedFetcher()
        waiting = _live_waiting(crawler, fetcher)
        origin = Origin.from_url("http://a.example/")
        downloader = crawler.engine.downloader
        places = downloader.total_concurrency
        waiters = []
        for i in range(4):
            waiters.append(_start(waiting.current(origin, Request(f"http://a.example/{i}"))))
            count = len(waiters)
            await until(lambda: waiting.waiting == count, f"{count} waiting")  # noqa: B023 - awaited here
            # The first two wait outside CONCURRENT_REQUESTS; the others take a place as they wait.
            assert downloader.total_concurrency == places + min(count, 2)
            assert waiting.room.room() is (count < 2)
        fetcher.outcome = FetchOutcome(Access.UNAVAILABLE, origin.robots_url, 404)
        fetcher.gate.set()
        await _result(asyncio.gather(*waiters))
        assert downloader.total_concurrency == places and waiting.room.room()


@pytest_twisted.ensureDeferred
async def test_a_held_origins_state_is_judged_at_once_while_its_retry_runs_and_one_given_up_waits_for_it() -> None:
    """The state of an unreachable origin whose retry is due: held, the request gets the state at hand
    (held, or judged by a good copy) while the retry runs; past ROBOTSTXT_MAX_WAIT, it waits for the
    retry, which may succeed, rather than being dropped with the state at hand."""
    async with LiveCrawl(ROBOTSTXT_MAX_WAIT=60) as crawler:
        fetcher = GatedFetcher()
        waiting = _live_waiting(crawler, fetcher)
        policy = waiting.policy
        results = {}
        for host, since in (("a.example", time.time() - 10), ("b.example", time.time() - 600)):
            origin = Origin.from_url(f"http://{host}/")
            outcome = FetchOutcome(Access.UNREACHABLE, origin.robots_url, 503, cause=Cause.TRANSIENT)
            waiting.document_states.put(origin, OriginState.initial(outcome, since, policy))  # its retry is due
            results[host] = _start(waiting.current(origin, Request(f"http://{host}/page")))
        await until(lambda: fetcher.calls == 2, "both retries to start")
        fetcher.outcome = FetchOutcome(Access.UNAVAILABLE, "http://a.example/robots.txt", 404)
        fetcher.gate.set()
        held, given_up = await _result(asyncio.gather(results["a.example"], results["b.example"]))
        assert held.access is Access.UNREACHABLE
        assert given_up.access is Access.UNAVAILABLE
