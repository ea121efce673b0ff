"""The ``demo`` spider: crawls the local demo site (``demo_site.py``).

It starts from each origin's home page, follows links within the same origin and
keeps a record of what happened to every request, including the ones robots.txt
stopped: those reach the errback as ``RobotsTxtForbidden`` (with the deciding
rule) or ``RobotsTxtUnreachable`` (the robots.txt could not be fetched for too
long, or the spider closed while the request was held).

From the project directory (the one with ``scrapy.cfg``)::

    scrapy crawl demo                  # starts the demo site on 127.0.0.x itself, offline
    scrapy crawl demo -O pages.jsonl   # the pages fetched, as items
    python -m example_project.demo     # the same crawl, then a summary per origin

Without start URLs the spider serves the demo site in the crawl's own reactor, with
the settings of ``demo_site.DEMO_SETTINGS`` (short retry delays, no download delay)
so that the crawl takes seconds, and stops it when the crawl ends. It can also
crawl other sites: ``scrapy crawl demo -a start_urls=https://a.example/,https://b.example/``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response
from twisted.python.failure import Failure

from scrapy_rfc9309.exceptions import RobotsTxtForbidden, RobotsTxtUnreachable

from ..demo_site import DEMO_SETTINGS, DemoSite, build_site


@dataclass(frozen=True)
class Blocked:
    """A request robots.txt stopped."""

    url: str
    reason: str  # "Disallow: /private/, line 6", or why the robots.txt was unreachable
    robots_url: str
    group: str | None = None  # the product token whose group decided ("*" for the global one)


class DemoSpider(scrapy.Spider):
    name = "demo"

    def __init__(self, start_urls: str | list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(start_urls, str):
            start_urls = [url for url in start_urls.split(",") if url]
        self.start_urls = list(start_urls or [])
        self.site: DemoSite | None = None  # the demo site this spider serves itself
        self.fetched: list[str] = []  # URLs whose response reached parse()
        self.blocked: list[Blocked] = []  # RobotsTxtForbidden
        self.unreachable: list[Blocked] = []  # RobotsTxtUnreachable
        self.failed: list[tuple[str, str]] = []  # any other error
        self.preferences: dict[str, Any] = {}  # URL -> response.meta["robotstxt_preferences"], where set
        #: The tdmrep.json rule that applied to each page fetched (ROBOTSTXT_TDMREP), None for none.
        self.tdmrep: dict[str, Any] = {}

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> DemoSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if not spider.start_urls:
            # The settings are not frozen yet: the demo's own (short delays) go over the
            # project's, below anything given with -s.
            crawler.settings.setdict(DEMO_SETTINGS, priority="spider")
        return spider

    async def start(self) -> AsyncIterator[Any]:
        if not self.start_urls:
            # The demo site's servers run in this crawl's reactor, which is running now.
            self.site = build_site().start()
            self.start_urls = self.site.home_pages()
            self.logger.info("Serving the demo site: %s",
                             ", ".join(f"{origin.name} {origin.base}" for origin in self.site.origins))
        for url in self.start_urls:
            yield self.request(url)

    def closed(self, reason: str) -> None:
        if self.site is None:
            return
        self.site.stop()
        self.logger.info("Demo site stopped. %d pages fetched, %d requests blocked by robots.txt, %d dropped while "
                         "their robots.txt was unreachable (`python -m example_project.demo` prints a summary per "
                         "origin).", len(self.fetched), len(self.blocked), len(self.unreachable))

    def parse(self, response: Response) -> Iterator[Any]:
        self.fetched.append(response.url)
        preferences = response.meta.get("robotstxt_preferences")
        if preferences is not None:
            self.preferences[response.url] = preferences
        if "robotstxt_tdmrep" in response.meta:
            self.tdmrep[response.url] = response.meta["robotstxt_tdmrep"]
        yield {"url": response.url, "status": response.status, "title": response.css("title::text").get()}
        here = urlsplit(response.url)[:2]
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if urlsplit(url)[:2] == here:  # same scheme and host:port
                yield self.request(url)

    def request(self, url: str) -> scrapy.Request:
        # A download slot per origin, as robots.txt is per origin: Scrapy's default is
        # one per host, which the demo's origins share where they all listen on
        # 127.0.0.1 (a port each), and one origin's Crawl-delay would slow them all.
        return scrapy.Request(url, callback=self.parse, errback=self.on_error,
                              meta={"download_slot": urlsplit(url).netloc})

    def on_error(self, failure: Failure) -> None:
        url = failure.request.url  # type: ignore[attr-defined]
        error = failure.value
        if isinstance(error, RobotsTxtForbidden):
            # error.verdict.rule is the deciding Rule(allow, pattern, line); str() of the
            # verdict reads "Disallow: /private/, line 6".
            self.blocked.append(Blocked(url, str(error.verdict), error.robots_url, error.verdict.token))
            self.logger.info("Blocked by %s of %s: %s", error.verdict, error.robots_url, url)
        elif isinstance(error, RobotsTxtUnreachable):
            self.unreachable.append(Blocked(url, error.reason, error.robots_url))
            self.logger.warning("Dropped, robots.txt unreachable (%s): %s", error.reason, url)
        else:
            self.failed.append((url, f"{type(error).__name__}: {error}"))
            self.logger.warning("Failed: %s: %r", url, error)
