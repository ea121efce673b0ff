"""RobotsTxtMiddleware against real origins: single flight, and requests held while robots.txt is
being fetched or is unreachable (release, backoff, max wait, other origins, closing)."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted
import scrapy
from crawl import ListSpider, run_crawl
from middleware_support import TrackingSpider, mw_settings, page_hits, robots_hits, stat, text, until
from reactorless import is_reactorless
from scrapy.utils.defer import deferred_from_coro
from servers import Delay, Drop, Gate, Page, Sequence, Stall, Static
from twisted.internet import defer

from scrapy_rfc9309 import RobotsTxtMiddleware
from scrapy_rfc9309.exceptions import RobotsTxtForbidden, RobotsTxtUnreachable
from scrapy_rfc9309.lifecycle import parking
from scrapy_rfc9309.lifecycle.waiting import WAKE_BATCH
from scrapy_rfc9309.runtime import compat as _compat

RULES = "User-agent: *\nDisallow: /private\n"


def _failing(status: int = 503) -> Static:
    # An error page that would allow everything if it were parsed.
    return Static(b"User-agent: *\nAllow: /\n", status, {"Content-Type": "text/plain"})


# --------------------------------------------------------------------------- single flight


@pytest.mark.parametrize(
    "middleware",
    [
        "rfc9309",
        pytest.param(
            "builtin",
            marks=pytest.mark.xfail(
                _compat.SCRAPY_VERSION >= (2, 14), strict=True,
                reason="Scrapy's built-in middleware (2.14 and later) hands the parser to one waiting request only",
            ),
        ),
    ],
)
@pytest_twisted.inlineCallbacks
def test_every_request_waiting_for_one_robots_txt_gets_its_verdict(origins, middleware):
    a = origins()
    gate = Gate(text(RULES))
    a["/robots.txt"] = gate
    urls = [a.url(f"/private/{i}") if i % 2 else a.url(f"/public/{i}") for i in range(20)]
    settings = {"CONCURRENT_REQUESTS": 32, "CONCURRENT_REQUESTS_PER_DOMAIN": 32}
    if middleware == "rfc9309":
        settings = mw_settings(**settings)

    crawl = run_crawl(TrackingSpider, settings, urls=urls)
    yield a.wait_for("/robots.txt")
    # All 20 requests leave the scheduler and wait for the one robots.txt fetch.
    spider = TrackingSpider.latest
    assert spider is not None
    yield deferred_from_coro(until(lambda: spider.crawler.stats.get_value("scheduler/dequeued") == 20,
                                   "the 20 requests left the scheduler"))
    assert a.paths() == ["/robots.txt"]
    assert gate.waiting == 1
    gate.open()
    result = yield crawl

    assert len(robots_hits(a)) == 1
    assert stat(result, "request_count") == 1
    assert not [h for h in page_hits(a) if h.path.startswith("/private")]
    assert sorted(h.path for h in page_hits(a)) == sorted(f"/public/{i}" for i in range(0, 20, 2))
    assert len(result.responses) == 10
    assert stat(result, "forbidden") == 10
    assert len(result.errors) == 10
    assert all(isinstance(e.exception, RobotsTxtForbidden) for e in result.errors) == (middleware == "rfc9309")


# --------------------------------------------------------------------------- hold and release


@pytest_twisted.inlineCallbacks
def test_requests_are_held_while_unreachable_and_judged_once_it_is_back(origins):
    a = origins()
    a["/robots.txt"] = Sequence([_failing(), _failing(), text(RULES)])
    urls = [a.url("/private/1"), a.url("/public/1"), a.url("/public/2"), a.url("/private/2")]

    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_RETRY_DELAY=0.2, ROBOTSTXT_RETRY_MAX_DELAY=0.5))

    hits = robots_hits(a)
    assert len(hits) == 3
    # Backoff: 0.2 s after the first failure, then 0.4 s (the doubled delay).
    assert hits[1].time - hits[0].time >= 0.2 * 0.95
    assert hits[2].time - hits[1].time >= 0.4 * 0.95
    assert sorted(h.path for h in page_hits(a)) == ["/public/1", "/public/2"]
    assert all(h.time > hits[2].time for h in page_hits(a))
    assert sorted(result.responses) == sorted([a.url("/public/1"), a.url("/public/2")])
    # Held requests never reached an errback; the only errors are the two verdicts.
    assert [type(e.exception) for e in result.errors] == [RobotsTxtForbidden] * 2
    assert stat(result, "held") == 4
    assert stat(result, "released") == 4
    assert stat(result, "retry") == 2
    assert stat(result, "unreachable") == 2
    assert stat(result, "parsed") == 1
    assert stat(result, "dropped_unreachable") == 0


@pytest.mark.parametrize("failure", ["503", "drop"])
@pytest_twisted.inlineCallbacks
def test_requests_held_longer_than_max_wait_are_dropped(origins, failure):
    a = origins()
    a["/robots.txt"] = _failing() if failure == "503" else Drop()
    urls = [a.url("/public/1"), a.url("/public/2"), a.url("/private/1")]

    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_MAX_WAIT=0.8))

    assert page_hits(a) == []
    assert len(robots_hits(a)) >= 2  # retried meanwhile
    assert result.responses == []
    assert sorted(e.url for e in result.errors) == sorted(urls)
    for error in result.errors:
        assert isinstance(error.exception, RobotsTxtUnreachable), repr(error.exception)
        assert error.exception.reason == "max_wait"
        assert error.exception.robots_url == a.url("/robots.txt")
    assert stat(result, "dropped_unreachable") == 3
    assert stat(result, "held") == 3
    assert stat(result, "released") == 0


@pytest.mark.parametrize("failure", ["503", "stall"])
@pytest_twisted.inlineCallbacks
def test_held_requests_do_not_stall_other_origins(origins, failure):
    bad = origins("127.0.0.1")
    good = origins("127.0.0.2")
    bad["/robots.txt"] = _failing() if failure == "503" else Stall()
    good.robots(RULES)
    urls = [bad.url(f"/page/{i}") for i in range(10)] + [good.url(f"/page/{i}") for i in range(10)]
    # The failing origin's requests are held for an hour at most, but given up once nothing else is left
    # to crawl (ROBOTSTXT_MAX_WAIT_IDLE): only once the good origin's pages are all done.
    settings = mw_settings(
        CONCURRENT_REQUESTS=2,
        ROBOTSTXT_MAX_WAIT=3600,
        ROBOTSTXT_MAX_WAIT_IDLE=0.5,
        DOWNLOAD_TIMEOUT=1,
    )

    result = yield run_crawl(urls, settings)

    assert page_hits(bad) == []
    good_pages = page_hits(good)
    assert sorted(h.path for h in good_pages) == sorted(f"/page/{i}" for i in range(10))
    assert sorted(result.responses) == sorted(good.url(f"/page/{i}") for i in range(10))
    # Held meanwhile, and given up only when nothing else was left: the held requests did not stall the rest.
    bad_errors = [e.exception for e in result.errors if e.url.startswith(bad.url("/"))]
    assert all(isinstance(e, RobotsTxtUnreachable) for e in bad_errors), bad_errors
    assert {e.reason for e in bad_errors} == {"idle"}
    # Every one to its errback, those parked outside the downloader included: none is left to the close.
    assert len(bad_errors) == 10
    assert stat(result, "dropped_idle") == 10 and stat(result, "discarded_on_close") == 0


class FeedsLater(ListSpider):
    """Yields ``later`` from the first response's callback: requests of an origin already held
    come while it is held, and are parked."""

    name = "feeds_later"

    def __init__(self, later: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.later = later

    def parse(self, response: Any, **kwargs: Any) -> Any:
        yield from super().parse(response, **kwargs)
        while self.later:
            yield scrapy.Request(self.later.pop(), callback=self.parse, errback=self.on_error, dont_filter=True)


@pytest.mark.parametrize("failure", ["503", "stall"])
@pytest_twisted.inlineCallbacks
def test_parked_held_requests_given_up_at_idle_all_reach_their_errback(origins, failure):
    """An origin's requests that come while it is unreachable are parked outside the downloader
    (all but those that wait in it for its fetch). Given up once nothing else is left, each
    reaches its errback with reason idle; none is left for the close to discard."""
    bad, good = origins("127.0.0.1"), origins("127.0.0.2")
    bad["/robots.txt"] = _failing() if failure == "503" else Stall()
    good.robots(RULES)
    later = [bad.url(f"/page/{i}") for i in range(1, 24)]
    settings = mw_settings(ROBOTSTXT_MAX_WAIT=3600, ROBOTSTXT_MAX_WAIT_IDLE=0.5, DOWNLOAD_TIMEOUT=1)

    result = yield run_crawl(FeedsLater, settings, urls=[bad.url("/page/0"), good.url("/page/0")],
                                later=list(later))

    assert result.stats["finish_reason"] == "finished"
    assert result.responses == [good.url("/page/0")]
    assert page_hits(bad) == []
    errors = [e for e in result.errors if e.url.startswith(bad.url("/"))]
    assert sorted(e.url for e in errors) == sorted([bad.url("/page/0"), *later])
    assert {type(e.exception) for e in errors} == {RobotsTxtUnreachable}
    assert {e.exception.reason for e in errors} == {"idle"}  # type: ignore[attr-defined]
    assert stat(result, "dropped_idle") == 24 and stat(result, "gave_up_idle") == 1
    assert stat(result, "discarded_on_close") == 0


@pytest_twisted.inlineCallbacks
def test_the_spider_stays_open_while_requests_are_held(origins):
    a = origins()
    a["/robots.txt"] = Sequence([_failing(), _failing(), _failing(), text("User-agent: *\nAllow: /\n")])
    urls = [a.url("/page")]

    result = yield run_crawl(urls, mw_settings())

    hits = robots_hits(a)
    assert len(hits) == 4
    assert hits[3].time - hits[0].time >= (0.2 + 0.4 + 0.5) * 0.95
    assert a.hits("/page") == 1
    assert a.requests_for("/page")[0].time > hits[3].time
    assert result.responses == urls
    assert result.errors == []
    assert result.stats["finish_reason"] == "finished"
    assert stat(result, "released") == 1


@pytest_twisted.inlineCallbacks
def test_released_counts_the_held_requests_only(origins):
    """robotstxt/released counts the held requests judged once their robots.txt came: of an origin
    whose first fetch failed, both those waiting in the downloader and those parked; not the requests
    that waited (in the downloader, or parked) for another origin's first fetch, which was slow but fine."""
    slow, failing = origins("127.0.0.1"), origins("127.0.0.2")
    slow_gate, retry_gate = Gate(text(RULES)), Gate(text(RULES))
    slow["/robots.txt"] = slow_gate
    failing["/robots.txt"] = Sequence([_failing(), retry_gate])
    count = 20  # each origin's; CONCURRENT_REQUESTS_PER_DOMAIN=2 wait in the downloader, the rest are parked
    urls = [site.url(f"/public/{i}") for site in (slow, failing) for i in range(count)]
    TrackingSpider.latest = None

    crawl = run_crawl(TrackingSpider, mw_settings(CONCURRENT_REQUESTS=8, CONCURRENT_REQUESTS_PER_DOMAIN=2), urls=urls)
    yield slow.wait_for("/robots.txt")
    yield failing.wait_for("/robots.txt", count=2)  # its retry, held at the gate
    crawler = TrackingSpider.latest.crawler  # type: ignore[union-attr]
    states = crawler.get_downloader_middleware(RobotsTxtMiddleware).states
    yield defer.ensureDeferred(until(lambda: states.waiting == 2 * count, "every request waits"))
    assert states.parking.count == 2 * (count - 2)
    slow_gate.open()
    yield defer.ensureDeferred(until(lambda: len(page_hits(slow)) == count, "the slow origin crawled"))
    retry_gate.open()
    result = yield crawl

    assert sorted(result.responses) == sorted(urls)
    assert stat(result, "held") == count
    assert stat(result, "released") == count


@pytest_twisted.inlineCallbacks
def test_every_request_waiting_for_a_robots_txt_is_woken_in_batches(origins):
    """More requests of one origin wait in the downloader for its robots.txt than one batch of waking
    (WAKE_BATCH) takes: the later batches are woken too, each request judged once."""
    site = origins()
    gate = Gate(text(RULES))
    site["/robots.txt"] = gate
    count = 2 * WAKE_BATCH + 50
    urls = [site.url(f"/public/{i}") for i in range(count)]
    # All wait in the downloader (CONCURRENT_REQUESTS_PER_DOMAIN), none parked; downloaded 8 at a time
    # once woken (the origin's download slot), so that a loaded machine does not time them out.
    settings = mw_settings(CONCURRENT_REQUESTS=count + 10, CONCURRENT_REQUESTS_PER_DOMAIN=count + 10,
                           DOWNLOAD_SLOTS={"127.0.0.1": {"concurrency": 8}})
    TrackingSpider.latest = None

    crawl = run_crawl(TrackingSpider, settings, urls=urls)
    yield site.wait_for("/robots.txt")
    crawler = TrackingSpider.latest.crawler  # type: ignore[union-attr]
    states = crawler.get_downloader_middleware(RobotsTxtMiddleware).states
    yield defer.ensureDeferred(until(lambda: states.waiting == count, f"{count} requests wait in the downloader"))
    assert states.parking.count == 0
    gate.open()
    result = yield crawl

    assert not result.errors, {repr(e.exception) for e in result.errors}
    assert sorted(h.path for h in page_hits(site)) == sorted(f"/public/{i}" for i in range(count))
    assert len(result.responses) == count


@pytest_twisted.inlineCallbacks
def test_held_requests_are_released_when_the_spider_closes(origins):
    """Five requests wait in the downloader for the robots.txt (it answers once all of
    them wait, so that none comes after and is parked instead), are held by its 503,
    and the spider closes long before ROBOTSTXT_MAX_WAIT: each reaches its errback."""
    a = origins()
    gate = Gate(_failing())
    a["/robots.txt"] = gate
    urls = [a.url(f"/page/{i}") for i in range(5)]
    TrackingSpider.latest = None

    crawl = run_crawl(TrackingSpider, mw_settings(ROBOTSTXT_MAX_WAIT=30), urls=urls)
    yield a.wait_for("/robots.txt")

    def states() -> Any:
        spider = TrackingSpider.latest
        return None if spider is None else spider.crawler.get_downloader_middleware(RobotsTxtMiddleware).states

    yield defer.ensureDeferred(until(lambda: states() is not None and states().waiting == 5, "5 waiting"))
    assert states().parking.count == 0
    gate.open()
    crawler = TrackingSpider.latest.crawler
    yield defer.ensureDeferred(until(lambda: crawler.stats.get_value("robotstxt/held", 0) == 5, "5 held"))
    stop_async = getattr(crawler, "stop_async", None)  # Scrapy 2.14 and later
    yield deferred_from_coro(stop_async()) if stop_async is not None else crawler.stop()
    result = yield crawl

    assert result.stats["finish_reason"] == "shutdown"
    assert page_hits(a) == []
    assert sorted(e.url for e in result.errors) == sorted(urls)
    for error in result.errors:
        assert isinstance(error.exception, RobotsTxtUnreachable), repr(error.exception)
        assert error.exception.reason == "closing"
    assert stat(result, "held_released_on_close") == 5
    assert stat(result, "dropped_unreachable") == 0


@pytest.mark.skipif(is_reactorless(), reason=(
    "Scrapy's aiohttp download handler (the default without a reactor) opens at most CONCURRENT_REQUESTS "
    "connections: a robots.txt download that hangs holds one of them (docs/troubleshooting.md, run modes)"))
@pytest_twisted.inlineCallbacks
def test_a_pending_robots_txt_does_not_take_a_concurrent_requests_place(origins):
    """With CONCURRENT_REQUESTS=1, an origin whose robots.txt is still being fetched (and the requests
    waiting for it) leave the one place to other origins."""
    slow = origins("127.0.0.1")
    fast = origins("127.0.0.2")
    gate = Gate(text(RULES))
    slow["/robots.txt"] = gate
    urls = [slow.url(f"/page/{i}") for i in range(5)] + [fast.url(f"/page/{i}") for i in range(5)]

    # Two robots.txt downloads may run at once (by default, as many as CONCURRENT_REQUESTS).
    crawl = run_crawl(urls, mw_settings(CONCURRENT_REQUESTS=1, ROBOTSTXT_CONCURRENT_FETCHES=2))
    yield slow.wait_for("/robots.txt")
    # Every page of the other origin arrives while robots.txt is still held back (in whatever order
    # the scheduler hands them out: LIFO before Scrapy 2.14).
    for i in range(5):
        yield fast.wait_for(f"/page/{i}")
    assert len(page_hits(fast)) == 5
    assert page_hits(slow) == []
    assert gate.waiting == 1
    gate.open()
    result = yield crawl

    assert sorted(h.path for h in page_hits(slow)) == sorted(f"/page/{i}" for i in range(5))
    assert len(result.responses) == 10
    assert stat(result, "request_count") == 2


@pytest.mark.parametrize(("setting", "concurrency", "in_flight"), [(None, 3, 3), (2, 16, 2)])
@pytest_twisted.inlineCallbacks
def test_robots_txt_downloads_in_flight_are_bounded(origins, setting, concurrency, in_flight):
    """A broad crawl's robots.txt downloads go ROBOTSTXT_CONCURRENT_FETCHES at a time (by
    default CONCURRENT_REQUESTS): the others wait for a place, and go as places free up."""
    sites = [origins(f"127.0.0.{i}") for i in range(2, 10)]
    gates = []
    for site in sites:
        gate = Gate(text(RULES))
        site["/robots.txt"] = gate
        gates.append(gate)
    urls = [site.url(f"/page/{i}") for site in sites for i in range(3)]
    extra = {} if setting is None else {"ROBOTSTXT_CONCURRENT_FETCHES": setting}

    crawl = run_crawl(urls, mw_settings(CONCURRENT_REQUESTS=concurrency, **extra))
    yield defer.ensureDeferred(until(lambda: sum(gate.waiting for gate in gates) == in_flight, "fetches"))
    asked = [site for site in sites if robots_hits(site)]
    assert len(asked) == in_flight
    # One answers: one more goes, never more than the bound.
    gates[sites.index(asked[0])].open()
    yield defer.ensureDeferred(until(lambda: len([s for s in sites if robots_hits(s)]) == in_flight + 1, "one more"))
    assert sum(gate.waiting for gate in gates) == in_flight
    for gate in gates:
        gate.open()
    result = yield crawl

    assert len(result.responses) == len(urls)
    assert all(len(robots_hits(site)) == 1 for site in sites)
    # The downloads that found every place taken waited (how many depends on when each origin's
    # first request came: one that came after a place freed up did not wait).
    assert 1 <= stat(result, "fetch_queued") <= len(sites) - in_flight


@pytest.mark.parametrize("stalled", ["first-fetch", "retry"])
@pytest_twisted.inlineCallbacks
def test_the_crawl_stops_promptly_while_a_robots_txt_fetch_stalls(origins, stalled):
    """Closing (as Ctrl-C does) while the origin's robots.txt fetch hangs, before any answer or on a
    retry of a 503, once the three requests wait for it: they are released and the crawl ends without
    waiting for the hung fetch to time out (DOWNLOAD_TIMEOUT and ROBOTSTXT_MAX_WAIT an hour: a crawl
    that waited for either would run into the test's deadline, and fail with "this crawl did not end")."""
    a = origins()
    a["/robots.txt"] = Stall() if stalled == "first-fetch" else Sequence([_failing(), Stall()])
    urls = [a.url(f"/page/{i}") for i in range(3)]
    fetches = 1 if stalled == "first-fetch" else 2
    TrackingSpider.latest = None

    crawl = run_crawl(TrackingSpider, mw_settings(DOWNLOAD_TIMEOUT=3600, ROBOTSTXT_MAX_WAIT=3600), urls=urls)
    yield a.wait_for("/robots.txt", count=fetches)  # the fetch that hangs
    crawler = TrackingSpider.latest.crawler  # type: ignore[union-attr]
    states = crawler.get_downloader_middleware(RobotsTxtMiddleware).states
    yield defer.ensureDeferred(until(lambda: states.waiting == 3, "the 3 requests wait"))
    stop_async = getattr(crawler, "stop_async", None)  # Scrapy 2.14 and later
    yield deferred_from_coro(stop_async()) if stop_async is not None else crawler.stop()
    result = yield crawl

    assert result.stats["finish_reason"] == "shutdown"
    assert len(robots_hits(a)) == fetches
    assert page_hits(a) == []
    assert sorted(e.url for e in result.errors) == sorted(urls)
    assert all(isinstance(e.exception, RobotsTxtUnreachable) for e in result.errors), result.errors
    assert stat(result, "held_released_on_close") == 3


@pytest_twisted.inlineCallbacks
def test_requests_waiting_outside_the_active_set_are_bounded(origins):
    """Beyond ROBOTSTXT_MAX_WAITING, waiting requests count against
    CONCURRENT_REQUESTS again, so the scheduler stops handing out more."""
    a = origins()
    gate = Gate(text(RULES))
    a["/robots.txt"] = gate
    urls = [a.url(f"/public/{i}") for i in range(60)]
    settings = mw_settings(ROBOTSTXT_MAX_WAITING=5, CONCURRENT_REQUESTS=3, CONCURRENT_REQUESTS_PER_DOMAIN=3)

    crawl = run_crawl(TrackingSpider, settings, urls=urls)
    yield a.wait_for("/robots.txt")
    spider = TrackingSpider.latest
    assert spider is not None
    # 5 wait without taking a place (in the downloader, or parked), then 3 fill the places (the
    # robots.txt fetch takes none either); the other 52 stay in the scheduler.
    states = spider.crawler.get_downloader_middleware(RobotsTxtMiddleware).states
    yield deferred_from_coro(until(lambda: states.waiting >= 5 + 3, "8 requests wait"))
    # The 3 in the downloader fill CONCURRENT_REQUESTS: the engine backs out, so its next turns hand
    # out nothing more, whenever they come.
    assert spider.crawler.engine.downloader.needs_backout()
    assert states.waiting == 5 + 3
    gate.open()
    result = yield crawl

    assert len(robots_hits(a)) == 1
    assert len(page_hits(a)) == 60
    assert len(result.responses) == 60


@pytest.mark.parametrize("delay", [0.0, 0.05])
@pytest_twisted.inlineCallbacks
def test_requests_parked_as_their_robots_txt_arrives_are_all_crawled_once(origins, monkeypatch, delay):
    """One page links to 300 pages of another origin, which the scheduler hands out in a
    burst while that origin's robots.txt is fetched: all but a few are parked, both those
    returned from process_request and those scheduled while the origin has parked requests,
    and released in several batches when it arrives. Each is crawled once (with the duplicate
    filter on), and the crawl ends: none stays parked.

    The links reach the scheduler a few at a time (CONCURRENT_ITEMS), so that later ones are
    scheduled while earlier ones are parked, and a release batch is 16 requests: 300 links
    take the paths that 1,500 took with Scrapy's defaults, in a fifth of the time."""
    monkeypatch.setattr(parking, "RELEASE_BATCH", 16)
    a, b = origins("127.0.0.1"), origins("127.0.0.2", links=[])
    links = [b.url(f"/public/{i}") for i in range(300)]
    a["/"] = Page(links)
    b["/robots.txt"] = Delay(delay, text(RULES))
    settings = mw_settings(CONCURRENT_REQUESTS=64, CONCURRENT_REQUESTS_PER_DOMAIN=2, CONCURRENT_ITEMS=4)

    result = yield run_crawl([a.url("/")], settings, follow=True, dont_filter=False)

    assert result.stats["finish_reason"] == "finished"
    assert sorted(h.path for h in page_hits(b)) == sorted(f"/public/{i}" for i in range(300))
    assert len(robots_hits(b)) == 1




@pytest_twisted.inlineCallbacks
def test_the_middleware_counts_the_requests_waiting_and_those_held(origins):
    """``waiting_count`` and ``held_count`` (read by the benchmarks' probe): 20 requests of an
    origin whose robots.txt answers 503, some waiting in the downloader and the others parked,
    are all waiting and all held; a request waiting for a robots.txt being fetched waits without
    being held. Once a retry succeeds, none is left."""
    busy, slow = origins(), origins("127.0.0.2")
    busy["/robots.txt"] = _failing()
    gate = Gate(text(RULES))
    slow["/robots.txt"] = gate
    urls = [busy.url(f"/public/{i}") for i in range(20)] + [slow.url("/public/0")]
    settings = mw_settings(ROBOTSTXT_RETRY_DELAY=0.5, ROBOTSTXT_RETRY_MAX_DELAY=0.5, ROBOTSTXT_MAX_WAIT=600)
    TrackingSpider.latest = None
    crawl = run_crawl(TrackingSpider, settings, urls=urls)
    yield slow.wait_for("/robots.txt")
    spider = TrackingSpider.latest
    assert spider is not None
    mw = spider.crawler.get_downloader_middleware(RobotsTxtMiddleware)
    yield deferred_from_coro(until(lambda: mw.held_count == 20 and mw.waiting_count == 21, "20 held, 21 waiting"))

    assert mw.states.parking.count > 0  # parked ones are counted too
    busy["/robots.txt"] = text(RULES)
    gate.open()
    result = yield crawl

    assert sorted(result.responses) == sorted(urls)
    assert mw.held_count == 0 and mw.waiting_count == 0
