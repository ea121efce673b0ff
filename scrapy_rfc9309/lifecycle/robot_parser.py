"""``ROBOTSTXT_PARSER = "scrapy_rfc9309.RobotParser"`` for Scrapy's built-in middleware."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.robotstxt import RobotParser as _ScrapyRobotParser

from ..core.robotstxt import RobotsTxt

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["RobotParser"]


class RobotParser(RobotsTxt):
    """Scrapy's ``RobotParser`` interface on the RFC 9309 parser: the parsed file
    itself (a :class:`~scrapy_rfc9309.RobotsTxt`), with the spider.

    A registered subclass of ``scrapy.robotstxt.RobotParser`` (``isinstance`` and
    ``issubclass`` hold) rather than an inheriting one, so that it can have
    ``__slots__``, and a subclass of the file rather than a wrapper: a parser is
    made per robots.txt and kept while its origin is cached, and ``allowed``,
    ``sitemaps`` and ``crawl_delay`` are the file's own, with no object between."""

    __slots__ = ("spider",)

    def __init__(self, robotstxt_body: bytes | str, spider: Any = None) -> None:
        RobotsTxt.__init__(self, robotstxt_body)  # no super object: a file's parse is its first call
        self.spider = spider

    @property
    def robots(self) -> RobotsTxt:
        """The parsed file: the parser itself."""
        return self

    @classmethod
    def from_robots(cls, robots: RobotsTxt, spider: Any = None) -> RobotParser:
        """Wrap an already parsed file (no second parse): a parser sharing its
        kept bytes and built groups."""
        parser = cls.__new__(cls)
        for name in (name for kind in RobotsTxt.__mro__ for name in getattr(kind, "__slots__", ())):
            setattr(parser, name, getattr(robots, name))
        parser.spider = spider
        return parser

    @classmethod
    def from_crawler(cls, crawler: Crawler | None, robotstxt_body: bytes | str) -> RobotParser:
        return cls(robotstxt_body, None if crawler is None else getattr(crawler, "spider", None))


_ScrapyRobotParser.register(RobotParser)
