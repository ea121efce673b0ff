"""``ROBOTSTXT_PARSER = "scrapy_rfc9309.RobotParser"`` for Scrapy's built-in middleware."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.robotstxt import RobotParser as _ScrapyRobotParser

from .robotstxt import RobotsTxt

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["RobotParser"]


class RobotParser(_ScrapyRobotParser):
    """Scrapy's ``RobotParser`` interface on the RFC 9309 parser."""

    def __init__(self, robotstxt_body: bytes | str, spider: Any = None) -> None:
        self.spider = spider
        self.robots = RobotsTxt(robotstxt_body)
        # The hot path: skip a layer of calls (``allowed`` accepts bytes URLs too).
        self.allowed = self.robots.allowed  # type: ignore[method-assign]

    @classmethod
    def from_robots(cls, robots: RobotsTxt, spider: Any = None) -> RobotParser:
        """Wrap an already parsed file (no second parse)."""
        parser = cls.__new__(cls)
        parser.spider = spider
        parser.robots = robots
        parser.allowed = robots.allowed  # type: ignore[method-assign]
        return parser

    @classmethod
    def from_crawler(cls, crawler: Crawler | None, robotstxt_body: bytes | str) -> RobotParser:
        spider = None if crawler is None else getattr(crawler, "spider", None)
        return cls(robotstxt_body, spider)

    @property
    def sitemaps(self) -> list[str]:
        """The file's Sitemap URLs (read from the file when asked)."""
        return self.robots.sitemaps

    def allowed(self, url: str | bytes, user_agent: str | bytes | None) -> bool:
        return self.robots.allowed(url, user_agent)

    def crawl_delay(self, user_agent: str | bytes | None) -> float | None:
        return self.robots.crawl_delay(user_agent)
