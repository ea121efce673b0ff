"""Sitemaps from robots.txt: the ``robotstxt_sitemaps`` and ``robotstxt_fetched`` signals, the
middleware's ``sitemaps_for``/``state_for``, and the SitemapSpider that takes robots.txt sitemaps from
the middleware instead of downloading robots.txt a second time."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import pytest_twisted
import scrapy
from crawl import ListSpider, run_crawl
from middleware_support import text
from scrapy import Request
from scrapy.spiders import SitemapSpider as ScrapySitemapSpider
from servers import Origin, Redirect, Sequence, Static, server_reactor
from twisted.internet.task import deferLater

import scrapy_rfc9309
from scrapy_rfc9309 import RobotsTxtMiddleware
from scrapy_rfc9309 import signals as rfc_signals
from scrapy_rfc9309.components.sitemap_spider import SitemapSpider
from scrapy_rfc9309.core.state import Access, OriginState

ADDON: dict[str, Any] = {"ADDONS": {"scrapy_rfc9309.Addon": 0}}
BUILTIN_ONLY: dict[str, Any] = {"ROBOTSTXT_OBEY": True}


def robots_with_sitemaps(origin: Origin, *paths: str, extra: str = "") -> list[str]:
    """Serve a robots.txt listing sitemaps at ``paths`` (the first one twice); return their URLs."""
    sitemaps = [origin.url(p) for p in paths]
    lines = ["User-agent: *", "Disallow: /private", *(f"Sitemap: {u}" for u in sitemaps)]
    if sitemaps:
        lines.append(f"Sitemap: {sitemaps[0]}")  # a duplicate is listed once
    origin.robots("\n".join(lines) + "\n" + extra)
    return sitemaps


def urlset(*urls: str) -> Static:
    entries = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>\n'
    )
    return Static(body.encode(), headers={"Content-Type": "application/xml"})


def page_paths(origin: Origin) -> list[str]:
    return sorted(h.path for h in origin.requests if h.path_only != "/robots.txt")


class _RecordsRobotstxtSignals:
    """Spider mix-in: ``events`` lists ``(signal name, kwargs)`` of the middleware's signals."""

    @classmethod
    def from_crawler(cls, crawler, *args: Any, **kwargs: Any):
        spider = super().from_crawler(crawler, *args, **kwargs)  # type: ignore[misc]
        spider.events = []
        crawler.signals.connect(spider.on_fetched, signal=rfc_signals.robotstxt_fetched)
        crawler.signals.connect(spider.on_sitemaps, signal=rfc_signals.robotstxt_sitemaps)
        return spider

    def on_fetched(self, origin, state, request, **kwargs: Any) -> None:
        self.events.append(("fetched", {"origin": origin, "state": state, "request": request}))

    def on_sitemaps(self, origin, sitemaps, request, **kwargs: Any) -> None:
        self.events.append(("sitemaps", {"origin": origin, "sitemaps": sitemaps, "request": request}))


class SignalSpider(_RecordsRobotstxtSignals, ListSpider):
    name = "robotstxt_signals"


def events(result: Any, kind: str | None = None) -> list[Any]:
    recorded = result.crawler.spider.events
    return [e for e in recorded if kind is None or e[0] == kind]


# --------------------------------------------------------------------------- signals


@pytest_twisted.inlineCallbacks
def test_robotstxt_sitemaps_fires_once_per_fetch_with_the_origins_sitemaps(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    c = origins("127.0.0.3")
    sitemaps = robots_with_sitemaps(a, "/sitemap.xml", "/news/sitemap.xml")
    robots_with_sitemaps(b)  # parsed, no Sitemap lines
    # c has no robots.txt (404)
    urls = [a.url("/page/1"), a.url("/page/2"), b.url("/page"), c.url("/page")]

    result = yield run_crawl(SignalSpider, ADDON, urls=urls)

    assert sorted(result.responses) == sorted(urls)
    (sitemap_event,) = [payload for _, payload in events(result, "sitemaps")]
    assert sitemap_event["sitemaps"] == sitemaps  # file order, the duplicate once
    assert str(sitemap_event["origin"]) == a.base
    assert isinstance(sitemap_event["request"], Request)
    assert sitemap_event["request"].url in (a.url("/page/1"), a.url("/page/2"))


@pytest_twisted.inlineCallbacks
def test_robotstxt_fetched_fires_after_every_fetch_with_the_state(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    sitemaps = robots_with_sitemaps(a, "/sitemap.xml")
    # b: no robots.txt

    result = yield run_crawl(SignalSpider, ADDON, urls=[a.url("/page"), b.url("/page")])

    fetched = {str(p["origin"]): p for _, p in events(result, "fetched")}
    assert sorted(fetched) == sorted([a.base, b.base])
    state_a, state_b = fetched[a.base]["state"], fetched[b.base]["state"]
    assert isinstance(state_a, OriginState)
    assert state_a.access is Access.PARSED
    assert state_a.robots is not None
    assert state_a.robots.sitemaps == sitemaps
    assert state_a.outcome.status == 200
    assert state_b.access is Access.UNAVAILABLE
    assert state_b.robots is None
    assert state_b.outcome.status == 404
    assert fetched[a.base]["request"].url == a.url("/page")
    assert fetched[b.base]["request"].url == b.url("/page")
    # The fetch is announced before its sitemaps.
    kinds = [(kind, str(p["origin"])) for kind, p in events(result)]
    assert kinds.index(("fetched", a.base)) < kinds.index(("sitemaps", a.base))


@pytest_twisted.inlineCallbacks
def test_robotstxt_fetched_fires_for_an_unreachable_fetch_and_again_for_the_retry(origins):
    a = origins()
    sitemap = a.url("/sitemap.xml")
    a["/robots.txt"] = Sequence(
        [
            Static(b"busy", status=503),
            Static(f"User-agent: *\nSitemap: {sitemap}\n".encode(), headers={"Content-Type": "text/plain"}),
        ]
    )
    settings = {**ADDON, "ROBOTSTXT_RETRY_DELAY": 0.2, "ROBOTSTXT_RETRY_MAX_DELAY": 0.5, "ROBOTSTXT_MAX_WAIT": 5}

    result = yield run_crawl(SignalSpider, settings, urls=[a.url("/page")])

    assert result.responses == [a.url("/page")]
    assert a.hits("/robots.txt") == 2
    fetched = [p["state"] for _, p in events(result, "fetched")]
    assert [s.access for s in fetched] == [Access.UNREACHABLE, Access.PARSED]
    assert [s.outcome.status for s in fetched] == [503, 200]
    # Sitemaps only from the parsed file.
    assert [p["sitemaps"] for _, p in events(result, "sitemaps")] == [[sitemap]]
    assert [kind for kind, _ in events(result)] == ["fetched", "fetched", "sitemaps"]


class _TwoVisitsSpider(SignalSpider):
    """Requests ``urls[0]``, then ``urls[1]`` after ``pause`` seconds."""

    name = "two_visits"
    pause = 0.6

    async def start(self):  # type: ignore[override]
        from scrapy.utils.defer import maybe_deferred_to_future

        first, second = self.urls
        yield Request(first, callback=self.parse, errback=self.on_error, dont_filter=True)
        await maybe_deferred_to_future(deferLater(server_reactor(), self.pause, lambda: None))
        yield Request(second, callback=self.parse, errback=self.on_error, dont_filter=True)


@pytest_twisted.inlineCallbacks
def test_robotstxt_fetched_and_sitemaps_fire_again_when_the_file_is_refetched(origins):
    a = origins()
    robots_with_sitemaps(a, "/sitemap.xml")
    settings = {**ADDON, "ROBOTSTXT_CACHE_TTL": 0.3, "ROBOTSTXT_CACHE_MIN_TTL": 0}

    result = yield run_crawl(_TwoVisitsSpider, settings, urls=[a.url("/one"), a.url("/two")])

    assert a.hits("/robots.txt") == 2
    assert [kind for kind, _ in events(result)] == ["fetched", "sitemaps", "fetched", "sitemaps"]
    assert [p["request"].url for _, p in events(result, "fetched")] == [a.url("/one"), a.url("/two")]


# --------------------------------------------------------------------------- the middleware's API


@pytest_twisted.inlineCallbacks
def test_sitemaps_for_and_state_for_after_a_crawl(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    sitemaps = robots_with_sitemaps(a, "/sitemap.xml", "/other.xml")
    # b: no robots.txt

    result = yield run_crawl([a.url("/page"), b.url("/page")], ADDON)

    middleware = result.crawler.get_downloader_middleware(RobotsTxtMiddleware)
    assert isinstance(middleware, RobotsTxtMiddleware)
    # Any URL of the origin, however spelled, finds the origin's file.
    assert middleware.sitemaps_for(a.url("/anything/else?q=1")) == sitemaps
    assert middleware.sitemaps_for(a.url("/robots.txt")) == sitemaps
    assert middleware.sitemaps_for(f"HTTP://127.0.0.1:{a.port}/x") == sitemaps
    # No file, an unknown origin, a URL without an origin: no sitemaps, no fetch.
    assert middleware.sitemaps_for(b.url("/page")) == []
    assert middleware.sitemaps_for("http://127.0.0.9:1/") == []
    assert middleware.sitemaps_for("data:text/plain,x") == []
    assert middleware.state_for(a.url("/")).access is Access.PARSED
    assert middleware.state_for(b.url("/")).access is Access.UNAVAILABLE
    assert middleware.state_for("http://127.0.0.9:1/") is None
    assert a.hits("/robots.txt") == b.hits("/robots.txt") == 1
    # The returned list is a copy.
    middleware.sitemaps_for(a.url("/")).append("http://x/")
    assert middleware.sitemaps_for(a.url("/")) == sitemaps


# --------------------------------------------------------------------------- SitemapSpider


class RobotsSitemapSpider(SitemapSpider):
    """``scrapy_rfc9309``'s SitemapSpider, recording into the crawl result."""

    name = "rfc9309_sitemap"

    def parse(self, response, **kwargs: Any):
        self.crawl_result.responses.append(response.url)
        yield {"url": response.url}


class ScrapysSitemapSpider(ScrapySitemapSpider):
    """Scrapy's own SitemapSpider, for contrast."""

    name = "scrapy_sitemap"

    def parse(self, response, **kwargs: Any):
        self.crawl_result.responses.append(response.url)
        yield {"url": response.url}


def sitemap_site(origin: Origin) -> None:
    robots_with_sitemaps(origin, "/sitemap.xml")
    origin["/sitemap.xml"] = urlset(origin.url("/page/1"), origin.url("/page/2"), origin.url("/private/secret"))


@pytest_twisted.inlineCallbacks
def test_sitemap_spider_crawls_the_sitemap_with_a_single_robots_txt_fetch(origins):
    a = origins()
    sitemap_site(a)

    result = yield run_crawl(RobotsSitemapSpider, ADDON, sitemap_urls=[a.url("/robots.txt")])

    assert a.hits("/robots.txt") == 1
    assert a.hits("/sitemap.xml") == 1
    assert page_paths(a) == ["/page/1", "/page/2", "/sitemap.xml"]
    assert sorted(result.responses) == [a.url("/page/1"), a.url("/page/2")]
    # The disallowed entry was judged by the same robots.txt and never requested.
    assert a.hits("/private/secret") == 0
    assert result.stats.get("robotstxt/forbidden") == 1
    assert result.stats.get("robotstxt/request_count") == 1
    assert a.requests[0].path == "/robots.txt"


@pytest.mark.parametrize(
    ("settings", "spider"),
    [(BUILTIN_ONLY, ScrapysSitemapSpider), (ADDON, ScrapysSitemapSpider)],
    ids=["builtin-middleware", "rfc9309-middleware"],
)
@pytest_twisted.inlineCallbacks
def test_scrapys_sitemap_spider_fetches_robots_txt_twice(origins, settings, spider):
    """The contrast: the spider's robots.txt request and the middleware's are two downloads."""
    a = origins()
    sitemap_site(a)

    result = yield run_crawl(spider, settings, sitemap_urls=[a.url("/robots.txt")])

    assert a.hits("/robots.txt") == 2
    assert sorted(result.responses) == [a.url("/page/1"), a.url("/page/2")]
    assert a.hits("/private/secret") == 0


@pytest_twisted.inlineCallbacks
def test_sitemap_spider_without_the_middleware_behaves_like_scrapys(origins):
    a = origins()
    sitemap_site(a)

    result = yield run_crawl(RobotsSitemapSpider, {"ROBOTSTXT_OBEY": False}, sitemap_urls=[a.url("/robots.txt")])

    # The spider fetched robots.txt itself, and nothing was checked against it.
    assert a.hits("/robots.txt") == 1
    assert sorted(result.responses) == [a.url("/page/1"), a.url("/page/2"), a.url("/private/secret")]


@pytest_twisted.inlineCallbacks
def test_sitemap_spider_with_a_direct_sitemap_url_and_sitemaps_on_another_origin(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    # a's robots.txt points at a sitemap on b, which lists pages of b.
    a.robots(f"User-agent: *\nSitemap: {b.url('/sitemap.xml')}\n")
    b.robots("User-agent: *\nDisallow: /private\n")
    b["/sitemap.xml"] = urlset(b.url("/page/1"), b.url("/private/2"))
    a["/direct.xml"] = urlset(a.url("/page/3"))

    result = yield run_crawl(
        RobotsSitemapSpider, ADDON, sitemap_urls=[a.url("/robots.txt"), a.url("/direct.xml")]
    )

    assert sorted(result.responses) == [a.url("/page/3"), b.url("/page/1")]
    assert a.hits("/robots.txt") == 1
    assert b.hits("/robots.txt") == 1
    assert b.hits("/private/2") == 0


@pytest_twisted.inlineCallbacks
def test_sitemap_spider_joins_relative_sitemaps_and_skips_one_it_cannot_request(origins):
    """``Sitemap: /sitemap.xml`` is joined with the robots.txt URL (Scrapy's spider does the
    same); a value no Request can be made of is logged and skipped, and the start goes on:
    every later sitemap is still crawled, the one with a Latin-1 byte percent-encoded."""
    a = origins()
    a.robots(
        b"User-agent: *\nDisallow: /private\n"
        b"Sitemap: /sitemap.xml\n"
        b"Sitemap: http://[::1\n"
        b"Sitemap: /s\xe9.xml\n"
        b"Sitemap: news.xml\n"
    )
    a["/sitemap.xml"] = urlset(a.url("/page/1"), a.url("/private/2"))
    a["/s%E9.xml"] = urlset(a.url("/page/3"))
    a["/news.xml"] = urlset(a.url("/page/4"))

    result = yield run_crawl(RobotsSitemapSpider, ADDON, sitemap_urls=[a.url("/robots.txt")])

    assert sorted(result.responses) == [a.url("/page/1"), a.url("/page/3"), a.url("/page/4")]
    assert a.hits("/sitemap.xml") == a.hits("/s%E9.xml") == a.hits("/news.xml") == 1
    assert a.hits("/private/2") == 0
    assert a.hits("/robots.txt") == 1
    assert result.logged(f"Ignoring Sitemap 'http://[::1' of {a.url('/robots.txt')}", logging.WARNING)
    assert not result.logged("Traceback")
    assert "log_count/ERROR" not in result.stats


@pytest_twisted.inlineCallbacks
def test_relative_sitemaps_are_joined_with_the_url_after_redirects(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    a["/robots.txt"] = Redirect(b.url("/real/robots.txt"))
    b["/real/robots.txt"] = text("User-agent: *\nDisallow: /private\nSitemap: /sitemap.xml\nSitemap: more.xml\n")
    b["/sitemap.xml"] = urlset(a.url("/page/1"))
    b["/real/more.xml"] = urlset(a.url("/page/2"))

    result = yield run_crawl(SignalSpider, ADDON, urls=[a.url("/page/0")])

    (payload,) = [p for _, p in events(result, "sitemaps")]
    assert payload["sitemaps"] == [b.url("/sitemap.xml"), b.url("/real/more.xml")]
    middleware = result.crawler.get_downloader_middleware(RobotsTxtMiddleware)
    assert middleware.sitemaps_for(a.url("/")) == payload["sitemaps"]


@pytest.mark.parametrize(("status", "access"), [(404, "unavailable"), (500, "unreachable")])
@pytest_twisted.inlineCallbacks
def test_sitemap_spider_without_a_robots_txt_logs_and_yields_nothing(origins, status, access):
    a = origins()
    a["/robots.txt"] = Static(b"no", status=status)

    result = yield run_crawl(RobotsSitemapSpider, ADDON, sitemap_urls=[a.url("/robots.txt")])

    assert result.responses == []
    assert page_paths(a) == []
    assert a.hits("/robots.txt") == 1
    assert result.logged(f"No sitemaps from {a.url('/robots.txt')} ({access})", logging.INFO)


def test_sitemap_spider_is_a_scrapy_sitemap_spider():
    assert issubclass(SitemapSpider, ScrapySitemapSpider)
    assert issubclass(SitemapSpider, scrapy.Spider)


def test_sitemap_spider_is_exported_from_the_package():
    assert scrapy_rfc9309.SitemapSpider is SitemapSpider
