"""``ROBOTSTXT_PARSER = "scrapy_rfc9309.RobotParser"`` for Scrapy's built-in middleware."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.robotstxt import RobotParser as _ScrapyRobotParser

from .robotstxt import RobotsTxt

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

__all__ = ["RobotParser"]


class RobotParser:
    """Scrapy's ``RobotParser`` interface on the RFC 9309 parser.

    A registered subclass of ``scrapy.robotstxt.RobotParser`` (``isinstance`` and
    ``issubclass`` hold) rather than an inheriting one, so that it can have
    ``__slots__``: a parser is made per robots.txt, and one without an instance
    dict costs less to make and to keep."""

    __slots__ = ("allowed", "robots", "spider")

    def __init__(self, robotstxt_body: bytes | str, spider: Any = None) -> None:
        self.spider = spider
        self.robots = robots = RobotsTxt(robotstxt_body)
        # The hot path: the file's own method, one call less (it takes bytes URLs too).
        self.allowed: Callable[[str | bytes, str | bytes | None], bool] = robots.allowed

    @classmethod
    def from_robots(cls, robots: RobotsTxt, spider: Any = None) -> RobotParser:
        """Wrap an already parsed file (no second parse)."""
        parser = cls.__new__(cls)
        parser.spider = spider
        parser.robots = robots
        parser.allowed = robots.allowed
        return parser

    @classmethod
    def from_crawler(cls, crawler: Crawler | None, robotstxt_body: bytes | str) -> RobotParser:
        return cls(robotstxt_body, None if crawler is None else getattr(crawler, "spider", None))

    @property
    def sitemaps(self) -> list[str]:
        """The file's Sitemap URLs (read from the file when asked)."""
        return self.robots.sitemaps

    def crawl_delay(self, user_agent: str | bytes | None) -> float | None:
        return self.robots.crawl_delay(user_agent)


_ScrapyRobotParser.register(RobotParser)
