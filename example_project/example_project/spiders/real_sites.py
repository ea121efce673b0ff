"""The ``real_sites`` spider: the middleware against real robots.txt files (needs the
network; the offline demo is ``make demo``).

    cd example_project && scrapy crawl real_sites -O real_sites.jsonl

It obeys robots.txt as ``ExampleBot`` (its own ``ROBOTSTXT_USER_AGENT``, set in
``custom_settings``, overriding the project's ``DemoBot``), fetches each site's home
page and the first few same-site links on it (``DEPTH_LIMIT = 1``), and logs every
request robots.txt stopped with the rule that stopped it. Each item is a page that
was fetched. Run with ``-L DEBUG`` to see the held requests, the robots.txt fetches
and which group each file's rules came from.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response
from twisted.python.failure import Failure

from scrapy_rfc9309 import signals as rfc_signals
from scrapy_rfc9309.access import OriginState
from scrapy_rfc9309.exceptions import RobotsTxtForbidden, RobotsTxtUnreachable

#: Links followed from each home page: enough to meet some robots.txt rules, few enough to be polite.
LINKS_PER_SITE = 10


class RealSitesSpider(scrapy.Spider):
    name = "real_sites"
    start_urls = [
        "https://www.python.org/",
        "https://en.wikipedia.org/wiki/Main_Page",
    ]
    custom_settings = {
        "ROBOTSTXT_USER_AGENT": "ExampleBot",
        "USER_AGENT": "Mozilla/5.0 (compatible; ExampleBot/0.1; +https://www.example.com/bot.html)",
        "DEPTH_LIMIT": 1,
        "CLOSESPIDER_PAGECOUNT": 40,
    }

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> RealSitesSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        # The plugin's own signal: sent on every Scrapy release (robots_parsed exists from 2.18).
        crawler.signals.connect(spider.robotstxt_fetched, signal=rfc_signals.robotstxt_fetched)
        return spider

    def robotstxt_fetched(self, origin: Any, state: OriginState, request: Any = None) -> None:
        robots = state.robots
        if robots is None:
            self.logger.info("robots.txt of %s: %s", origin, state.access.value)
            return
        self.logger.info(
            "robots.txt of %s: %d bytes%s, groups for %s, crawl-delay for us %s, sitemaps %s",
            origin, robots.size, " (truncated)" if robots.truncated else "",
            robots.agents, robots.crawl_delay("ExampleBot"), robots.sitemaps[:3],
        )

    async def start(self) -> AsyncIterator[Any]:
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse, errback=self.on_error)

    def parse(self, response: Response) -> Iterator[Any]:
        yield {"url": response.url, "status": response.status, "title": response.css("title::text").get()}
        if response.meta.get("depth", 0) >= 1:
            return
        site = urlsplit(response.url).netloc
        links = [response.urljoin(href) for href in response.css("a::attr(href)").getall()]
        same_site = [url for url in dict.fromkeys(links) if urlsplit(url).netloc == site]
        for url in same_site[:LINKS_PER_SITE]:
            yield scrapy.Request(url, callback=self.parse, errback=self.on_error)

    def on_error(self, failure: Failure) -> None:
        url = failure.request.url  # type: ignore[attr-defined]
        error = failure.value
        if isinstance(error, RobotsTxtForbidden):
            self.logger.info("Blocked by %s of %s: %s", error.verdict, error.robots_url, url)
        elif isinstance(error, RobotsTxtUnreachable):
            self.logger.warning("Dropped, robots.txt unreachable (%s): %s", error.reason, url)
        else:
            self.logger.warning("Failed: %s: %r", url, error)
