"""A SitemapSpider that takes robots.txt sitemaps from the middleware's state
instead of downloading robots.txt a second time (Scrapy pull requests 3967 and
8069 ask for this)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request
from scrapy.spiders import SitemapSpider as _ScrapySitemapSpider

from .robotstxt_middleware import RobotsTxtMiddleware

__all__ = ["SitemapSpider"]

logger = logging.getLogger(__name__)


class SitemapSpider(_ScrapySitemapSpider):
    """Scrapy's ``SitemapSpider``, except that a ``sitemap_urls`` entry ending in
    ``/robots.txt`` is answered from the robots.txt middleware (fetched once, for
    both purposes, with the RFC's status and redirect rules). Relative Sitemap
    values are joined with the robots.txt URL (after its redirects), as Scrapy's
    spider does; a value that still cannot be requested is logged and skipped.
    Without the middleware it behaves exactly like Scrapy's."""

    async def start(self) -> AsyncIterator[Any]:
        middleware = self.crawler.get_downloader_middleware(RobotsTxtMiddleware) if self.crawler else None
        for url in self.sitemap_urls:
            if middleware is None or not url.endswith("/robots.txt"):
                yield Request(url, self._parse_sitemap)
                continue
            state = await middleware.fetch_state(url)
            robots = None if state is None else state.robots
            if robots is None:
                logger.info("No sitemaps from %s (%s)", url, "no robots.txt" if state is None else state.access.value,
                            extra={"spider": self})
                continue
            for sitemap in robots.sitemaps:
                try:
                    request = Request(sitemap, callback=self._parse_sitemap)
                except ValueError as exc:  # not a URL Scrapy can request: the other sitemaps still count
                    logger.warning("Ignoring Sitemap %r of %s: %s", sitemap, url, exc, extra={"spider": self})
                    continue
                yield request
