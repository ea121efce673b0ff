"""Run a real Scrapy crawl inside a pytest-twisted test and collect what happened.

Usage (the test must run in the reactor, see ``tests/test_servers.py``)::

    @pytest_twisted.inlineCallbacks
    def test_something(origins):
        a = origins("127.0.0.1")
        result = yield run_crawl([a.url("/x")], {"ROBOTSTXT_OBEY": True})
        assert result.responses == [a.url("/x")]
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

import deadline
import scrapy
from scrapy import signals
from scrapy.core.engine import ExecutionEngine
from scrapy.crawler import Crawler
from scrapy.http import Request, Response
from scrapy.utils.test import get_crawler
from twisted.internet import defer
from twisted.python.failure import Failure

__all__ = ["BASE_SETTINGS", "CrawlDidNotEnd", "CrawlError", "CrawlResult", "ListSpider", "describe_crawl", "run_crawl"]

#: Log lines of the crawl told when it did not end.
_TOLD_LINES = 40

BASE_SETTINGS: dict[str, Any] = {
    "REMOTE_CONTROL_ENABLED": False,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "DEBUG",
    "DOWNLOAD_DELAY": 0,
    "ROBOTSTXT_OBEY": True,
    "CONCURRENT_REQUESTS": 4,
    "RETRY_ENABLED": False,
    # A stalled server must not hold a test for Scrapy's default 180 s.
    "DOWNLOAD_TIMEOUT": 5,
    # Never route loopback test traffic through a proxy from the environment.
    "HTTPPROXY_ENABLED": False,
    "COOKIES_ENABLED": False,
}


class CrawlDidNotEnd(AssertionError):
    """A crawl that a test expected to end by itself did not: it was closed by ``CLOSESPIDER_TIMEOUT``,
    or it was still running at the test's deadline (tests/deadline.py)."""


@dataclass
class CrawlError:
    """A failure that reached a spider errback."""

    url: str
    exception: BaseException
    failure: Failure


@dataclass
class CrawlResult:
    crawler: Crawler
    stats: dict[str, Any] = field(default_factory=dict)
    items: list[Any] = field(default_factory=list)
    errors: list[CrawlError] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)  # URLs that reached a spider callback
    statuses: dict[str, int] = field(default_factory=dict)  # callback URL -> HTTP status
    downloaded: list[tuple[str, int]] = field(default_factory=list)  # every response, robots.txt too
    log_records: list[logging.LogRecord] = field(default_factory=list)

    def messages(self, level: int = logging.NOTSET, logger: str | None = None) -> list[str]:
        """Formatted messages at ``level`` or above, optionally from ``logger`` (or its children)."""
        return [
            r.getMessage()
            for r in self.log_records
            if r.levelno >= level
            and (logger is None or r.name == logger or r.name.startswith(logger + "."))
        ]

    def logged(self, text: str, level: int = logging.NOTSET, logger: str | None = None) -> bool:
        """Whether some message at ``level`` or above contains ``text``."""
        return any(text in m for m in self.messages(level, logger))

    def error_types(self) -> list[type[BaseException]]:
        return [type(e.exception) for e in self.errors]

    def errors_for(self, url: str) -> list[BaseException]:
        return [e.exception for e in self.errors if e.url == url]


class _ListHandler(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.DEBUG)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class ListSpider(scrapy.Spider):
    """Requests ``urls`` (or the ``start_urls`` class attribute) and records what comes back.

    * Entries may be URL strings or :class:`~scrapy.Request` objects; a Request without a callback
      gets :meth:`parse` and :meth:`on_error`. Start requests are sent with ``dont_filter=True``
      (so a URL can be listed twice) unless ``dont_filter=False`` is passed.
    * Every callback response is recorded and yields an item ``{"url", "status", "length"}``.
    * ``follow=True`` follows the ``<a href>`` links of each response (dupefilter on).
    * ``crawl_result`` (a :class:`CrawlResult`) is passed in by :func:`run_crawl`.
    """

    name = "list"
    start_urls: list[str] = []

    def __init__(
        self,
        urls: Iterable[str | Request] | None = None,
        follow: bool = False,
        dont_filter: bool = True,
        meta: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.urls = list(self.start_urls if urls is None else urls)
        self.follow = follow
        self.dont_filter = dont_filter
        self.request_meta = dict(meta or {})
        if not hasattr(self, "crawl_result"):
            self.crawl_result: CrawlResult | None = None

    async def start(self):  # type: ignore[override]
        for entry in self.urls:
            if isinstance(entry, Request):
                if entry.callback is None and entry.errback is None:
                    entry = entry.replace(callback=self.parse, errback=self.on_error)
                yield entry
            else:
                yield Request(
                    entry,
                    callback=self.parse,
                    errback=self.on_error,
                    dont_filter=self.dont_filter,
                    meta=dict(self.request_meta),
                )

    def parse(self, response: Response, **kwargs: Any) -> Generator[Any, None, None]:
        if self.crawl_result is not None:
            self.crawl_result.responses.append(response.url)
            self.crawl_result.statuses[response.url] = response.status
        yield {"url": response.url, "status": response.status, "length": len(response.body)}
        if self.follow and isinstance(response, scrapy.http.TextResponse):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse, errback=self.on_error)

    def on_error(self, failure: Failure) -> None:
        if self.crawl_result is not None:
            request = getattr(failure, "request", None)
            url = request.url if request is not None else ""
            self.crawl_result.errors.append(CrawlError(url, failure.value, failure))


def describe_crawl(crawler: Crawler, records: list[logging.LogRecord]) -> str:
    """What a crawl holds and what it last logged: the text of a "this crawl did not end" failure."""
    lines = []
    engine = crawler.engine
    if engine is not None:
        slot = getattr(engine, "_slot", None)
        downloader = getattr(engine, "downloader", None)
        active = len(getattr(downloader, "active", ()) or ())
        scheduler = getattr(engine, "scheduler", None) or getattr(slot, "scheduler", None)
        pending = len(scheduler) if scheduler is not None and hasattr(scheduler, "__len__") else "?"
        lines.append(f"engine: running={engine.running}, {active} requests in the downloader, "
                     f"{pending} in the scheduler, start requests {'not ' if getattr(engine, '_start', None) else ''}"
                     "consumed")
    from scrapy_rfc9309 import RobotsTxtMiddleware

    try:
        middleware = crawler.get_downloader_middleware(RobotsTxtMiddleware)
    except Exception:  # not enabled, or the crawl not started
        middleware = None
    if middleware is not None:
        now = time.time()
        for waiting in (middleware.states, middleware.tdm):
            if waiting is None:
                continue
            held = ", ".join(f"{origin}: {count} ({state.detail})" for origin, count, state in waiting.held(now))
            lines.append(f"{waiting.document.name}: {waiting.waiting} requests waiting ({waiting.parking.count} "
                         f"parked), {waiting.fetches.in_flight} fetches in flight; held: {held or 'none'}")
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    lines.append("robotstxt stats: " + ", ".join(f"{k}={v}" for k, v in sorted(stats.items())
                                                 if str(k).startswith("robotstxt/")))
    tail = [f"  {r.levelname} {r.name}: {r.getMessage()}" for r in records[-_TOLD_LINES:]]
    return "\n".join([*lines, f"its last {len(tail)} log lines:", *tail])


@defer.inlineCallbacks
def run_crawl(
    spider_cls_or_urls: type[scrapy.Spider] | Iterable[str | Request],
    settings: dict[str, Any] | None = None,
    *,
    heartbeat: float | None = 0.1,
    closed_by_timeout: bool = False,
    **spider_kwargs: Any,
) -> Generator[Any, Any, CrawlResult]:
    """Crawl with :data:`BASE_SETTINGS` updated by ``settings``; fires with a :class:`CrawlResult`.

    ``spider_cls_or_urls`` is a Spider class or a list of URLs/Requests for :class:`ListSpider`.
    ``spider_kwargs`` go to the spider (``follow=True``, ``meta={...}``, ...); the spider also gets
    ``crawl_result``. ``heartbeat`` shortens the engine's idle-check interval (Scrapy's own tests use
    0.1 s) so that crawls held open by ``DontCloseSpider`` end promptly; ``None`` keeps 5 s.
    Log records of every logger at DEBUG and above are captured while the crawl runs.

    A crawl must end by itself: the test's deadline (tests/deadline.py) is its only bound, and when
    it passes the failure says "this crawl did not end" with what the crawl holds and its last log
    lines (:func:`describe_crawl`), and the crawl is stopped. A crawl closed by ``CLOSESPIDER_TIMEOUT``
    fails the same way (:class:`CrawlDidNotEnd`), unless the test closes it so on purpose
    (``closed_by_timeout=True``).
    """
    if isinstance(spider_cls_or_urls, type) and issubclass(spider_cls_or_urls, scrapy.Spider):
        spider_cls = spider_cls_or_urls
    else:
        if isinstance(spider_cls_or_urls, (str, Request)):
            raise TypeError("pass a list of URLs, not a single URL")
        spider_cls = ListSpider
        spider_kwargs = {"urls": list(spider_cls_or_urls), **spider_kwargs}

    crawler = get_crawler(spider_cls, {**BASE_SETTINGS, **(settings or {})})
    result = CrawlResult(crawler=crawler)

    def item_scraped(item: Any, response: Response, spider: scrapy.Spider) -> None:
        result.items.append(item)

    def response_received(response: Response, request: Request, spider: scrapy.Spider) -> None:
        result.downloaded.append((response.url, response.status))

    crawler.signals.connect(item_scraped, signal=signals.item_scraped, weak=False)
    crawler.signals.connect(response_received, signal=signals.response_received, weak=False)

    root = logging.getLogger()
    handler = _ListHandler(result.log_records)
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    old_heartbeat = ExecutionEngine._SLOT_HEARTBEAT_INTERVAL
    if heartbeat is not None:
        ExecutionEngine._SLOT_HEARTBEAT_INTERVAL = heartbeat

    def tell() -> str:
        told = f"this crawl did not end: {describe_crawl(crawler, result.log_records)}"
        if crawler.crawling:
            crawler.stop()
        return told

    unregister = deadline.on_timeout(tell)
    try:
        yield crawler.crawl(crawl_result=result, **spider_kwargs)
    finally:
        unregister()
        ExecutionEngine._SLOT_HEARTBEAT_INTERVAL = old_heartbeat
        root.removeHandler(handler)
        root.setLevel(old_level)
    result.stats = dict(crawler.stats.get_stats())
    if result.stats.get("finish_reason") == "closespider_timeout" and not closed_by_timeout:
        raise CrawlDidNotEnd(f"this crawl did not end: closed by CLOSESPIDER_TIMEOUT "
                             f"({crawler.settings.getfloat('CLOSESPIDER_TIMEOUT'):g} s)\n"
                             f"{describe_crawl(crawler, result.log_records)}")
    return result
