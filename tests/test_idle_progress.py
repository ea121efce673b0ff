"""The idle give-up (``ROBOTSTXT_MAX_WAIT_IDLE``) gives held requests up only when nothing
else can make progress: a robots.txt fetch still answering, a retry in flight, a page
waiting out its slot's delay, and a spider (or scrapy-redis) that keeps itself open from
``spider_idle`` all keep it from giving up, and nothing of theirs is cancelled. Real
crawls against local servers; each origin plays the site of one case."""

from __future__ import annotations

import logging
import re
from collections import Counter
from typing import Any

import pytest_twisted
import redis
import scrapy
from crawl import ListSpider, run_crawl
from middleware_support import TrackingSpider, page_hits, stat, text, until
from scrapy import signals
from scrapy.exceptions import CloseSpider, DontCloseSpider
from scrapy.utils.defer import deferred_from_coro
from scrapy_redis.spiders import RedisSpider
from servers.origins import Delay, Gate, Sequence, Stall
from twisted.internet import defer

from scrapy_rfc9309 import RobotsTxtMiddleware
from scrapy_rfc9309.exceptions import RobotsTxtUnreachable
from scrapy_rfc9309.lifecycle import idle_watch

IDLE = 1
#: A bound far below the slow answers of the sites below, so that a give-up that ignores them
#: happens during them. A regression's crawl that does not end fails at the test's deadline (tests/crawl.py).
SETTINGS: dict[str, Any] = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "ROBOTSTXT_MAX_WAIT_IDLE": IDLE,
                            "LOGSTATS_INTERVAL": 1}
#: How long the slow answers take: several idle bounds.
SLOW = 4 * IDLE
ALLOW = "User-agent: *\nAllow: /\n"


def _busy(origins: Any, host: str = "127.0.0.2") -> tuple[Any, list[str]]:
    busy = origins(host)
    busy["/robots.txt"] = text("busy", status=503)
    return busy, [busy.url(f"/held/{i}") for i in range(3)]


def _no_errors(result: Any) -> None:
    assert not result.messages(logging.ERROR), result.messages(logging.ERROR)


def _given_up_idle(result: Any, urls: list[str]) -> None:
    dropped = [e for url in urls for e in result.errors_for(url)]
    assert [type(e) for e in dropped] == [RobotsTxtUnreachable] * len(urls)
    assert {e.reason for e in dropped} == {"idle"}
    assert stat(result, "dropped_idle") == len(urls) and stat(result, "gave_up_idle") == 1


@pytest_twisted.inlineCallbacks
def test_a_slow_robots_txt_of_another_origin_is_waited_for(origins):
    slow = origins("127.0.0.1")
    slow["/robots.txt"] = Delay(SLOW, text(ALLOW))
    busy, held = _busy(origins)
    pages = [slow.url(f"/page/{i}") for i in range(10)]

    result = yield run_crawl(held + pages, SETTINGS)

    assert result.stats["finish_reason"] == "finished"
    assert sorted(result.responses) == sorted(pages)  # its fetch was not cancelled
    assert page_hits(busy) == []
    _given_up_idle(result, held)
    _no_errors(result)


@pytest_twisted.inlineCallbacks
def test_a_slow_robots_txt_under_a_scaled_download_timeout_is_waited_for(origins):
    """The default bounds scaled down: a robots.txt answering after more than
    ``ROBOTSTXT_MAX_WAIT_IDLE`` but within ``DOWNLOAD_TIMEOUT``."""
    slow = origins("127.0.0.1")
    slow["/robots.txt"] = Delay(SLOW, text(ALLOW))
    _, held = _busy(origins)
    pages = [slow.url(f"/page/{i}") for i in range(3)]

    result = yield run_crawl(held + pages, {**SETTINGS, "DOWNLOAD_TIMEOUT": 6 * IDLE})

    assert sorted(result.responses) == sorted(pages)
    _given_up_idle(result, held)
    _no_errors(result)


@pytest_twisted.inlineCallbacks
def test_an_origin_waiting_out_a_shared_slots_delay_is_crawled(origins, monkeypatch):
    # Two origins on one host (two ports), so one download slot (its key is the host), whose delay
    # (at least half of DOWNLOAD_DELAY, with Scrapy's jitter) is longer than the idle bound: the healthy
    # origin's robots.txt fetch and pages wait for it while the other's requests are held. The idle
    # bound, the watch's look interval and the delay are scaled down together (a quarter of a second,
    # a twentieth, one second), so that each wait for the slot spans two idle bounds and ten looks at least.
    monkeypatch.setattr(idle_watch, "TICK", IDLE / 20)
    busy, held = _busy(origins, "127.0.0.1")
    healthy = origins("127.0.0.1")
    healthy["/robots.txt"] = text(ALLOW)
    pages = [healthy.url(f"/page/{i}") for i in range(2)]
    settings = {**SETTINGS, "ROBOTSTXT_MAX_WAIT_IDLE": IDLE / 4, "DOWNLOAD_DELAY": IDLE}

    result = yield run_crawl(held + pages, settings)

    assert result.stats["finish_reason"] == "finished"
    assert sorted(result.responses) == sorted(pages)
    assert page_hits(busy) == []
    _given_up_idle(result, held)
    _no_errors(result)
    # Given up (dropped: no scheduler keeps them) only once the pages were crawled: nothing else was left.
    messages = result.messages()
    given_up = [i for i, message in enumerate(messages) if "(ROBOTSTXT_MAX_WAIT_IDLE): they are dropped" in message]
    crawled = [i for i, message in enumerate(messages) if message.startswith("Crawled (200)") and "/page/" in message]
    assert len(given_up) == 1 and len(crawled) == len(pages) and max(crawled) < given_up[0], messages
    # The progress line while they were held: the give-up at the latest is ROBOTSTXT_MAX_WAIT (900 s)
    # after the first failure, less the seconds held so far (fewer than the test's timeout).
    latest = [int(found) for message in messages
              for found in re.findall(r"given up in (\d+) s at the latest \(ROBOTSTXT_MAX_WAIT\)", message)]
    assert latest and all(600 <= seconds <= 900 for seconds in latest), latest


@pytest_twisted.inlineCallbacks
def test_a_retry_in_flight_that_succeeds_is_waited_for(origins):
    site = origins("127.0.0.2")
    # Unreachable at first; its retry (after ROBOTSTXT_RETRY_DELAY) answers after several idle bounds.
    site["/robots.txt"] = Sequence([text("busy", status=503), Delay(SLOW, text(ALLOW))])
    pages = [site.url(f"/page/{i}") for i in range(3)]
    settings = {**SETTINGS, "ROBOTSTXT_MAX_WAIT_IDLE": 2 * IDLE, "ROBOTSTXT_RETRY_DELAY": IDLE / 2}

    result = yield run_crawl(pages, settings)

    assert result.stats["finish_reason"] == "finished"
    assert sorted(result.responses) == sorted(pages)
    assert stat(result, "dropped_idle") == 0 and stat(result, "gave_up_idle") == 0
    _no_errors(result)


class IdleSpider(ListSpider):
    """A ListSpider whose ``idle`` method receives ``spider_idle``."""

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.idle, signal=signals.spider_idle)
        return spider

    def idle(self) -> None:
        raise NotImplementedError


class KeepsItselfOpen(IdleSpider):
    """Keeps itself open from ``spider_idle`` (DontCloseSpider) for a few idle signals, then
    feeds itself more URLs, as a spider that reads its work from elsewhere does."""

    name = "keeps_open"

    def __init__(self, later: list[str], rounds: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.later = later
        self.rounds = rounds
        self.idle_signals = 0

    def idle(self) -> None:
        self.idle_signals += 1
        if self.idle_signals < self.rounds:
            raise DontCloseSpider
        if self.later:
            assert self.crawler.engine is not None
            for url in self.later:
                self.crawler.engine.crawl(scrapy.Request(url, callback=self.parse, errback=self.on_error))
            self.later = []
            raise DontCloseSpider


@pytest_twisted.inlineCallbacks
def test_a_spider_that_keeps_itself_open_is_not_closed(origins):
    live = origins("127.0.0.1")
    live["/robots.txt"] = text(ALLOW)
    busy, held = _busy(origins)
    later = [live.url(f"/later/{i}") for i in range(3)]

    # More idle signals kept open than the idle bound has seconds, at the engine's pace or ours.
    result = yield run_crawl(KeepsItselfOpen, SETTINGS, urls=held, later=later, rounds=2 * IDLE + 1)

    assert result.stats["finish_reason"] == "finished"
    assert sorted(result.responses) == sorted(later)  # what it fed itself after the idle bound, crawled
    assert page_hits(busy) == []
    _given_up_idle(result, held)
    _no_errors(result)


class ClosesWhenIdle(IdleSpider):
    """Closes itself from ``spider_idle`` with its own reason (``CloseSpider``)."""

    name = "closes_when_idle"

    def idle(self) -> None:
        raise CloseSpider("nothing_more_to_do")


@pytest_twisted.inlineCallbacks
def test_a_spider_that_closes_itself_when_idle_is_closed_with_its_reason(origins):
    """A ``CloseSpider`` from ``spider_idle`` closes the spider with its reason, as the engine
    does, while requests are held (the engine's own idle is kept back by them); the held
    requests are given up at that close, not after ``ROBOTSTXT_MAX_WAIT_IDLE``."""
    busy, held = _busy(origins)
    settings = {**SETTINGS, "ROBOTSTXT_MAX_WAIT_IDLE": 3600}  # only the spider's own close ends this crawl

    result = yield run_crawl(ClosesWhenIdle, settings, urls=held)

    assert result.stats["finish_reason"] == "nothing_more_to_do"
    assert page_hits(busy) == []
    dropped = [e for url in held for e in result.errors_for(url)]
    assert [type(e) for e in dropped] == [RobotsTxtUnreachable] * len(held)
    assert {e.reason for e in dropped} == {"closing"}
    assert stat(result, "gave_up_idle") == 0
    _no_errors(result)


@pytest_twisted.inlineCallbacks
def test_a_robots_txt_fetch_cancelled_at_close_is_no_error(origins):
    """A spider closed (here by CLOSESPIDER_TIMEOUT, as by Ctrl-C) while a robots.txt fetch
    stalls: the fetch serves nobody and is cancelled, said at DEBUG, not as an ERROR."""
    stalled = origins("127.0.0.1")
    stalled["/robots.txt"] = Stall()
    settings = {**SETTINGS, "CLOSESPIDER_TIMEOUT": IDLE, "DOWNLOAD_TIMEOUT": 60}

    result = yield run_crawl([stalled.url("/page")], settings, closed_by_timeout=True)

    assert result.stats["finish_reason"] == "closespider_timeout"
    assert result.logged("the fetch was cancelled (the spider closes)", logging.DEBUG)
    _no_errors(result)


class Worker(RedisSpider):  # type: ignore[misc]
    """A scrapy-redis worker: it reads its URLs from Redis at each ``spider_idle`` and never
    closes on its own (``MAX_IDLE_TIME_BEFORE_CLOSE`` 0)."""

    name = "idle_worker"
    redis_key = "idle_worker:start_urls"
    latest: Worker | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.idle_signals = 0
        self.crawled: list[str] = []
        Worker.latest = self

    def spider_idle(self) -> None:
        self.idle_signals += 1
        super().spider_idle()

    def parse(self, response: Any, **kwargs: Any) -> Any:
        self.crawled.append(response.url)
        return []


@pytest_twisted.inlineCallbacks
def test_a_scrapy_redis_worker_is_not_closed_and_gets_the_urls_pushed_later(origins, redis_url):
    live = origins("127.0.0.1")
    live["/robots.txt"] = text(ALLOW)
    busy, held = _busy(origins)
    later = [live.url(f"/later/{i}") for i in range(3)]
    client = redis.Redis.from_url(redis_url)
    client.rpush(Worker.redis_key, *held)
    Worker.latest = None

    crawl = run_crawl(Worker, {**SETTINGS, "REDIS_URL": redis_url})
    # Idle (nothing but the held requests) through several idle bounds: one idle signal per look.
    yield defer.ensureDeferred(until(lambda: crawl.called or (Worker.latest is not None
                                                              and Worker.latest.idle_signals > 2 * IDLE + 1),
                                     "the worker idle"))
    assert not crawl.called, "the worker was closed"
    client.rpush(Worker.redis_key, *later)
    yield defer.ensureDeferred(until(lambda: crawl.called or len(Worker.latest.crawled) == len(later),
                                     "the later URLs crawled"))
    assert not crawl.called, "the worker was closed"
    crawler = Worker.latest.crawler
    stop_async = getattr(crawler, "stop_async", None)  # Scrapy 2.14 and later
    yield deferred_from_coro(stop_async()) if stop_async is not None else crawler.stop()
    result = yield crawl
    client.close()

    assert result.stats["finish_reason"] == "shutdown"
    assert sorted(Worker.latest.crawled) == sorted(later)
    assert page_hits(busy) == []
    assert stat(result, "gave_up_idle") == 0
    _no_errors(result)


def _requeued_records(ledger: Any) -> int:
    from scrapy_rfc9309.evidence.audit import audit

    return sum(report.requests.get("requeued", 0) for report in audit([str(ledger)]).origins.values())


@pytest_twisted.inlineCallbacks
def test_requests_handed_back_at_idle_are_counted_once_by_every_teller(origins, tmp_path):
    """20 held requests (some waiting in the downloader, the others parked) handed back to a JOBDIR
    scheduler at the idle give-up, twice: the stat, the close summary, the verdicts line
    and the ledger count each of them once per run; the resumed crawl gets each once."""
    busy = origins("127.0.0.2")
    busy["/robots.txt"] = text("busy", status=503)
    urls = [busy.url(f"/held/{i}") for i in range(20)]
    ledger = tmp_path / "ledger"
    settings = {**SETTINGS, "JOBDIR": str(tmp_path / "job"), "ROBOTSTXT_LEDGER": str(ledger)}

    for run, start in enumerate((urls, [])):
        result = yield run_crawl(start, settings, dont_filter=False)

        assert result.stats["finish_reason"] == "finished"
        assert stat(result, "requeued_on_close") == 20, run
        (summary,) = [m for m in result.messages(logging.WARNING) if "Put back in the scheduler" in m]
        assert "Put back in the scheduler for the next run: 20 requests" in summary, summary
        (verdicts,) = [m for m in result.messages(logging.INFO) if m.startswith("robots.txt verdicts:")]
        assert "20 requeued for their robots.txt" in verdicts, verdicts
        assert _requeued_records(ledger) == 20 * (run + 1)
    assert page_hits(busy) == []

    busy["/robots.txt"] = text(ALLOW)
    resumed = yield run_crawl([], settings)

    assert sorted(resumed.responses) == sorted(urls)
    assert Counter(hit.path for hit in page_hits(busy)) == Counter({f"/held/{i}": 1 for i in range(20)})


@pytest_twisted.inlineCallbacks
def test_requests_given_up_at_idle_are_told_their_true_reason_and_durations(origins):
    """The exception, the close summary and the verdict of a request given up at idle name
    the origin, its last fetch and how long it was unreachable."""
    busy, held = _busy(origins)

    result = yield run_crawl(held, SETTINGS)

    _given_up_idle(result, held)
    origin = busy.url("/")[:-1]
    for error in (e for url in held for e in result.errors_for(url)):
        text_ = str(error)
        assert f"robots.txt of {origin} unreachable for " in text_ and "()" not in text_, text_
        waited = float(text_.split("unreachable for ")[1].split(" s ")[0])
        assert waited >= IDLE  # held through the idle bound at least
        assert "(status 503" in text_ and "nothing else was left to crawl" in text_, text_
        assert error.judgement.detail and error.judgement.waited >= IDLE
    (summary,) = [m for m in result.messages(logging.WARNING) if "origins given up" in m]
    assert "origins given up: none" not in summary and origin in summary, summary


@pytest_twisted.inlineCallbacks
def test_requests_handed_back_at_close_say_what_their_robots_txt_answered(origins, tmp_path):
    _, held = _busy(origins)

    result = yield run_crawl(held, {**SETTINGS, "JOBDIR": str(tmp_path / "job")})

    put_back = [m for m in result.messages(logging.DEBUG) if m.startswith("Put back in the scheduler")]
    assert len(put_back) == len(held)
    for line in put_back:
        assert "was not known" not in line and "(status 503" in line, line


@pytest_twisted.inlineCallbacks
def test_parked_held_requests_are_given_up_once_nothing_else_is_left(origins):
    """20 requests of an unreachable origin: up to 8 wait in the downloader for its
    robots.txt, the others are parked outside it (the parking's keeper waits in the
    downloader for them). Once nothing else is left they are all given up at idle, parked ones included,
    each to its errback; the crawl ends by the idle bound, not by its safety net."""
    busy = origins("127.0.0.2")
    busy["/robots.txt"] = text("busy", status=503)
    urls = [busy.url(f"/held/{i}") for i in range(20)]
    TrackingSpider.latest = None

    def parked() -> int:
        spider = TrackingSpider.latest
        if spider is None or spider.crawler.engine is None:
            return 0
        return int(spider.crawler.get_downloader_middleware(RobotsTxtMiddleware).states.parking.count)

    crawl = run_crawl(TrackingSpider, SETTINGS, urls=urls)
    yield defer.ensureDeferred(until(lambda: crawl.called or parked() > 0, "requests parked"))
    assert not crawl.called, "nothing was parked"
    result = yield crawl

    assert result.stats["finish_reason"] == "finished"
    _given_up_idle(result, urls)
    assert page_hits(busy) == []
    _no_errors(result)



@pytest_twisted.inlineCallbacks
def test_a_retry_cancelled_when_its_origin_is_given_up_is_no_error(origins):
    """An unreachable origin whose retry stalls: its requests are dropped at
    ROBOTSTXT_MAX_WAIT while the retry is in flight, which then serves nobody and is
    cancelled: said at DEBUG, not as an ERROR traceback."""
    busy, held = _busy(origins)
    busy["/robots.txt"] = Sequence([text("busy", status=503), Stall()])
    settings = {**SETTINGS, "ROBOTSTXT_MAX_WAIT": IDLE, "ROBOTSTXT_RETRY_DELAY": IDLE / 4,
                "ROBOTSTXT_MAX_WAIT_IDLE": 60, "DOWNLOAD_TIMEOUT": 60}

    result = yield run_crawl(held, settings)

    dropped = [e for url in held for e in result.errors_for(url)]
    assert [e.reason for e in dropped] == ["max_wait"] * len(held)
    assert len(busy.requests_for("/robots.txt")) == 2  # the retry was made, and stalled
    assert result.logged("the fetch was cancelled (it serves no request)", logging.DEBUG)
    _no_errors(result)


class ThenLater(TrackingSpider):
    """Yields its ``urls``, then, once ``ready()`` holds, ``later``."""

    name = "then_later"

    def __init__(self, later: list[str], ready: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.later = later
        self.ready = ready

    async def start(self):  # type: ignore[override]
        async for request in super().start():
            yield request
        await until(self.ready, "the first origin's robots.txt fetch under way")
        for url in self.later:
            yield scrapy.Request(url, callback=self.parse, errback=self.on_error, dont_filter=True)


@pytest_twisted.inlineCallbacks
def test_a_retry_waiting_for_a_fetch_place_cancelled_when_its_origin_is_given_up_is_no_error(origins):
    """One fetch place (ROBOTSTXT_CONCURRENT_FETCHES=1), taken by another origin's slow robots.txt:
    the unreachable origin's retry waits for it, its requests are dropped at ROBOTSTXT_MAX_WAIT
    meanwhile, and the retry, which then serves nobody, is cancelled before it is sent: said at
    DEBUG, not as an ERROR traceback."""
    busy_gate = Gate(text("busy", status=503))
    busy, held = _busy(origins)
    busy["/robots.txt"] = busy_gate
    slow = origins("127.0.0.1")
    slow_gate = Gate(text(ALLOW))
    slow["/robots.txt"] = slow_gate
    pages = [slow.url(f"/page/{i}") for i in range(2)]
    settings = {**SETTINGS, "ROBOTSTXT_CONCURRENT_FETCHES": 1, "ROBOTSTXT_MAX_WAIT": IDLE,
                "ROBOTSTXT_RETRY_DELAY": IDLE / 4, "ROBOTSTXT_MAX_WAIT_IDLE": 60, "DOWNLOAD_TIMEOUT": 60}
    TrackingSpider.latest = None

    def stats(key: str) -> int:
        spider = TrackingSpider.latest
        return 0 if spider is None else int(spider.crawler.stats.get_value(f"robotstxt/{key}", 0))

    # The busy origin's first fetch takes the place; the slow origin's waits for it, and takes it next.
    crawl = run_crawl(ThenLater, settings, urls=held, later=pages, ready=lambda: busy_gate.waiting > 0)
    yield deferred_from_coro(until(lambda: stats("fetch_queued") == 1, "the slow origin's fetch waiting for the place"))
    busy_gate.open()
    # The busy origin's retry waits for the place too, until its requests are dropped.
    yield deferred_from_coro(until(lambda: stats("dropped_unreachable") == len(held), "the held requests dropped"))
    assert stats("fetch_queued") == 2
    slow_gate.open()
    result = yield crawl

    dropped = [e for url in held for e in result.errors_for(url)]
    assert [e.reason for e in dropped] == ["max_wait"] * len(held)
    assert len(busy.requests_for("/robots.txt")) == 1  # the retry was never sent
    assert sorted(result.responses) == sorted(pages)
    assert result.logged("the fetch was cancelled (it serves no request)", logging.DEBUG)
    _no_errors(result)


@pytest_twisted.inlineCallbacks
def test_requests_let_go_at_close_say_what_their_robots_txt_answered(origins):
    """Closed (as Ctrl-C does) once requests are held: each is dropped with reason ``closing``
    and says its robots.txt answered 503 and for how long, not that it was not known."""
    _, held = _busy(origins)
    settings = {**SETTINGS, "ROBOTSTXT_MAX_WAIT_IDLE": 60}
    TrackingSpider.latest = None

    crawl = run_crawl(TrackingSpider, settings, urls=held)
    yield defer.ensureDeferred(until(lambda: TrackingSpider.latest is not None and TrackingSpider.latest.crawler.stats
                                     .get_value("robotstxt/held", 0) == len(held), "the requests held"))
    crawler = TrackingSpider.latest.crawler  # type: ignore[union-attr]
    stop_async = getattr(crawler, "stop_async", None)  # Scrapy 2.14 and later
    yield deferred_from_coro(stop_async()) if stop_async is not None else crawler.stop()
    result = yield crawl

    assert result.stats["finish_reason"] == "shutdown"
    dropped = [e for url in held for e in result.errors_for(url)]
    assert [e.reason for e in dropped] == ["closing"] * len(held)
    for error in dropped:
        assert "(status 503) when the spider closed" in str(error) and "not known" not in str(error), str(error)


@pytest_twisted.inlineCallbacks
def test_the_progress_line_comes_every_logstats_interval_and_says_when_idle_gives_up(origins):
    """Requests held with nothing else left: the line says when the idle bound gives them up (within
    it); with an interval longer than any test, no line at all."""
    _, held = _busy(origins)
    result = yield run_crawl(held, {**SETTINGS, "ROBOTSTXT_MAX_WAIT_IDLE": 3 * IDLE})
    _given_up_idle(result, held)
    idle = [int(found) for message in result.messages()
            for found in re.findall(r", or in (\d+) s: nothing else is left to crawl", message)]
    assert idle and all(0 <= seconds <= 3 * IDLE for seconds in idle), idle

    _, held = _busy(origins, "127.0.0.3")
    result = yield run_crawl(held, {**SETTINGS, "LOGSTATS_INTERVAL": 3600})
    _given_up_idle(result, held)
    assert not [message for message in result.messages() if "complete disallow until a fetch succeeds" in message]
