"""``scrapy_rfc9309.RobotParser`` on Scrapy's ``RobotParser`` interface."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from scrapy.robotstxt import RobotParser as ScrapyRobotParser
from scrapy.utils.misc import load_object

from scrapy_rfc9309 import RobotParser, RobotsTxt, parse

BODY = b"""\
User-agent: *
Disallow: /private/
Crawl-delay: 2

User-agent: Scrapy
Disallow: /no-scrapy/
Allow: /no-scrapy/but-this
Crawl-delay: 7.5

User-agent: ExampleBot
Disallow: /
Disallow: /caf\xc3\xa9
Disallow: /raw\xff

Sitemap: https://www.example.com/sitemap.xml
Sitemap: https://www.example.com/news.xml
"""
URL = "https://www.example.com"
SCRAPY_UA = "Scrapy/2.19 (+https://scrapy.org)"
EXAMPLE_UA = "Mozilla/5.0 (compatible; ExampleBot/0.1; +https://www.example.com/bot.html)"


@pytest.fixture
def parser() -> RobotParser:
    return RobotParser.from_crawler(None, BODY)  # type: ignore[arg-type]


def test_is_a_scrapy_robot_parser(parser: RobotParser) -> None:
    assert issubclass(RobotParser, ScrapyRobotParser)
    assert isinstance(parser, ScrapyRobotParser)


def test_loadable_by_its_setting_value() -> None:
    assert load_object("scrapy_rfc9309.RobotParser") is RobotParser


def test_from_crawler_without_a_crawler(parser: RobotParser) -> None:
    assert parser.spider is None
    assert isinstance(parser.robots, RobotsTxt)


def test_is_the_parsed_file_itself(parser: RobotParser) -> None:
    """A parser is kept per cached origin: it is the file (no wrapper object, no
    bound method per parser), and a parser of an already parsed file shares its
    bytes and built groups."""
    assert isinstance(parser, RobotsTxt) and parser.robots is parser
    assert type(parser).allowed is RobotsTxt.allowed and not hasattr(parser, "__dict__")
    robots = parse(BODY)
    assert not robots.allowed(URL + "/no-scrapy/x", SCRAPY_UA)
    wrapped = RobotParser.from_robots(robots, "spider")
    assert wrapped.spider == "spider" and wrapped._group is robots._group and wrapped.body == robots.body
    assert not wrapped.allowed(URL + "/no-scrapy/x", SCRAPY_UA) and wrapped.allowed(URL + "/private/", SCRAPY_UA)
    assert wrapped.crawl_delay(SCRAPY_UA) == 7.5 and wrapped.sitemaps == robots.sitemaps


def test_from_crawler_keeps_the_spider() -> None:
    spider = object()
    parser = RobotParser.from_crawler(SimpleNamespace(spider=spider), BODY)  # type: ignore[arg-type]
    assert parser.spider is spider
    assert not parser.allowed(URL + "/private/", "OtherBot")


@pytest.mark.parametrize(
    ("url", "agent", "expected"),
    [
        (URL + "/", SCRAPY_UA, True),
        (URL + "/no-scrapy/x", SCRAPY_UA, False),
        (URL + "/no-scrapy/but-this", SCRAPY_UA, True),
        (URL + "/private/", SCRAPY_UA, True),  # Scrapy's own group replaces "*"
        (URL + "/no-scrapy/x", "Scrapy", False),
        (URL + "/private/x", "OtherBot", False),
        (URL + "/private/x", None, False),
        (URL + "/no-scrapy/x", "OtherBot", True),
        (URL + "/anything", EXAMPLE_UA, False),
        (URL + "/robots.txt", EXAMPLE_UA, True),
    ],
)
def test_allowed_with_str_and_bytes(url: str, agent: str | None, expected: bool, parser: RobotParser) -> None:
    assert parser.allowed(url, agent) is expected
    assert parser.allowed(url.encode(), agent) is expected
    if agent is not None:
        assert parser.allowed(url, agent.encode()) is expected
        assert parser.allowed(url.encode(), agent.encode()) is expected


def test_allowed_with_non_ascii_urls() -> None:
    body = b"User-agent: *\nDisallow: /caf\xc3\xa9\nDisallow: /raw\xff\n"
    parser = RobotParser.from_crawler(None, body)  # type: ignore[arg-type]
    for url in (URL + "/caf%C3%A9", URL + "/caf\u00e9/menu"):
        assert not parser.allowed(url, SCRAPY_UA)
        assert not parser.allowed(url.encode(), SCRAPY_UA)
    assert not parser.allowed(b"https://www.example.com/raw\xff", SCRAPY_UA)  # not UTF-8
    assert not parser.allowed(URL + "/raw%FF", SCRAPY_UA)
    assert parser.allowed(URL + "/cafe", SCRAPY_UA)


def test_body_as_str() -> None:
    body = BODY.replace(b"\xff", b"").decode()
    parser = RobotParser.from_crawler(None, body)  # type: ignore[arg-type]
    assert not parser.allowed(URL + "/no-scrapy/", SCRAPY_UA)
    assert parser.allowed(URL + "/no-scrapy/but-this", SCRAPY_UA)
    assert not parser.allowed(URL + "/caf%C3%A9", "ExampleBot")
    assert parser.crawl_delay(SCRAPY_UA) == 7.5


@pytest.mark.parametrize("body", [b"", b"\xff\xfe\x00garbage", b"<html><body>Not found</body></html>"])
def test_empty_or_garbage_body_allows_everything(body: bytes) -> None:
    parser = RobotParser.from_crawler(None, body)  # type: ignore[arg-type]
    assert parser.allowed(URL + "/", SCRAPY_UA)
    assert parser.allowed(URL + "/private/", b"OtherBot")
    assert parser.crawl_delay(SCRAPY_UA) is None
    assert parser.sitemaps == []


@pytest.mark.parametrize(
    ("agent", "delay"),
    [
        (SCRAPY_UA, 7.5),
        (SCRAPY_UA.encode(), 7.5),
        ("scrapy", 7.5),
        ("OtherBot", 2.0),
        (b"OtherBot", 2.0),
        (None, 2.0),
        (EXAMPLE_UA, None),
    ],
)
def test_crawl_delay(agent: str | bytes | None, delay: float | None, parser: RobotParser) -> None:
    assert parser.crawl_delay(agent) == delay  # type: ignore[arg-type]


def test_sitemaps(parser: RobotParser) -> None:
    assert list(parser.sitemaps) == ["https://www.example.com/sitemap.xml", "https://www.example.com/news.xml"]


def test_agrees_with_the_core(parser: RobotParser) -> None:
    robots = parse(BODY)
    for path in ("/", "/private/x", "/no-scrapy/", "/no-scrapy/but-this", "/caf%C3%A9", "/robots.txt"):
        for agent in (SCRAPY_UA, EXAMPLE_UA, "OtherBot"):
            assert parser.allowed(URL + path, agent) == robots.allowed(URL + path, agent) == robots.verdict(
                URL + path, agent
            ).allowed


def test_many_decisions_stay_correct(parser: RobotParser) -> None:
    # Enough decisions for the matcher to switch to its single-regex tier on its own.
    for _ in range(600):
        assert not parser.allowed(URL + "/no-scrapy/x", SCRAPY_UA)
        assert parser.allowed(URL + "/no-scrapy/but-this/too", SCRAPY_UA)
        assert parser.allowed(URL + "/private/", SCRAPY_UA)
        assert not parser.allowed(URL + "/private/", "OtherBot")
        assert parser.allowed(URL + "/public", "OtherBot")
