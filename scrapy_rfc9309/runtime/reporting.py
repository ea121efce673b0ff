"""Stats and log context shared by the classes of the Scrapy layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["Reporting"]


class Reporting:
    """A part of the middleware that counts ``robotstxt/<key>`` stats and logs with
    the spider in ``extra`` (as Scrapy's own middlewares do)."""

    crawler: Crawler

    def _inc(self, key: str, count: int = 1) -> None:
        if count and self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"robotstxt/{key}", count)

    @property
    def _log_extra(self) -> dict[str, Any]:
        return {"spider": self.crawler.spider}
