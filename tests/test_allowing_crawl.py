"""The shortcut for a bare allowed verdict (``Enforcement.allows``), in real crawls with the add-on:
taken where nothing reads more than the count (the close summary still counts every request), and
bypassed for ``judge`` where an allowed verdict carries something (a usage preference set in the
request's meta) or a teller reads every verdict (a ``robotstxt_verdict`` receiver gets each one, with
the rule that allowed it)."""

from __future__ import annotations

from typing import Any

import pytest_twisted
from crawl import ListSpider, run_crawl
from scrapy import Request

from scrapy_rfc9309.exceptions import RobotsTxtForbidden
from scrapy_rfc9309.judgement import Judgement, Kind
from scrapy_rfc9309.matcher import Rule
from scrapy_rfc9309.meta import USAGE_META
from scrapy_rfc9309.signals import robotstxt_verdict

SETTINGS: dict[str, Any] = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "LOG_LEVEL": "INFO"}
PAGES = [f"/p/{n}" for n in range(6)]


class MetaSpider(ListSpider):
    """Records the usage preference each response's request carries. Starts with the first page of
    each origin, and asks for the others of the origin (``then``) from its response: those find its
    robots.txt known."""

    name = "meta"
    usage: dict[str, Any]
    then: dict[str, list[str]]

    def parse(self, response: Any, **kwargs: Any) -> Any:
        self.usage[response.url] = response.meta.get(USAGE_META)
        yield from super().parse(response, **kwargs)
        for url in self.then.pop(response.url, []):
            yield Request(url, callback=self.parse, errback=self.on_error)


class VerdictSpider(MetaSpider):
    """Also records every verdict told (the ``robotstxt_verdict`` signal)."""

    name = "verdicts"

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.verdicts = []
        crawler.signals.connect(spider.judged, signal=robotstxt_verdict)
        return spider

    def judged(self, request: Any, judgement: Judgement) -> None:
        self.verdicts.append(judgement)


def _sites(origins: Any) -> tuple[Any, Any]:
    plain = origins("127.0.0.1")
    plain.robots("User-agent: *\nDisallow: /private\nAllow: /\n")
    usage = origins("127.0.0.2")
    usage.robots("User-agent: *\nDisallow: /private\nContent-Usage: train-ai=n\n")
    return plain, usage


def _urls(spider: type[MetaSpider], plain: Any, usage: Any) -> list[str]:
    spider.usage = {}
    spider.then = {o.url(PAGES[0]): [o.url(p) for p in [*PAGES[1:], "/private/x"]] for o in (plain, usage)}
    return list(spider.then)


@pytest_twisted.inlineCallbacks
def test_without_a_teller_every_verdict_is_counted_and_usage_is_still_set(origins):
    plain, usage = _sites(origins)
    result = yield run_crawl(MetaSpider, SETTINGS, urls=_urls(MetaSpider, plain, usage))
    assert sorted(result.responses) == sorted(o.url(p) for o in (plain, usage) for p in PAGES)
    assert sorted(e.url for e in result.errors) == sorted(o.url("/private/x") for o in (plain, usage))
    assert {type(e.exception) for e in result.errors} == {RobotsTxtForbidden}
    # Allowed requests judged by the shortcut are counted as those judged in full.
    assert result.logged("robots.txt verdicts: 12 allowed, 2 disallowed by robots.txt")
    # An allowed verdict that carries a usage preference is judged in full: the request carries it.
    assert all(MetaSpider.usage[plain.url(p)] is None for p in PAGES)
    assert all(MetaSpider.usage[usage.url(p)].denies("train-ai") for p in PAGES), MetaSpider.usage


@pytest_twisted.inlineCallbacks
def test_a_verdict_receiver_gets_every_allowed_verdict_with_its_rule(origins):
    plain, usage = _sites(origins)
    result = yield run_crawl(VerdictSpider, SETTINGS, urls=_urls(VerdictSpider, plain, usage))
    spider = result.crawler.spider
    allowed = [j for j in spider.verdicts if j.kind is Kind.ALLOWED]
    assert sorted(j.url for j in allowed) == sorted(result.responses) and len(allowed) == 12
    assert {j.rule for j in allowed if j.url.startswith(plain.url("/"))} == {Rule(True, "/", 3)}
    assert sum(j.kind is Kind.FORBIDDEN for j in spider.verdicts) == 2
    assert result.logged("robots.txt verdicts: 12 allowed, 2 disallowed by robots.txt")
