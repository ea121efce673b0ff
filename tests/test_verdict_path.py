"""One path to a verdict: ``process_request`` dispatches every request to the release memo or to the
:class:`~scrapy_rfc9309.components.verdict_path.VerdictPath`, whose verdicts are the origin's
:class:`~scrapy_rfc9309.core.verdict.Ruling`'s (or a pure constructor's); a held verdict is never a
return value that sends the request (acting on one raises); a request whose URL is not http(s) gets a
``not_judged`` verdict (``not_http``) that the tally and ``robotstxt_verdict`` see and the ledger does not
record. On a middleware whose states are put in its cache, and in a real crawl with the ledger on."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from crawl import ListSpider, run_crawl
from ledger_writer import records
from middleware_support import mw_settings, text
from scrapy import Request, signals
from scrapy.utils.test import get_crawler

from scrapy_rfc9309.components.robotstxt_middleware import RobotsTxtMiddleware
from scrapy_rfc9309.components.wiring import VerdictParts
from scrapy_rfc9309.config import Config
from scrapy_rfc9309.core.documents import ROBOTS_TXT
from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome, OriginState, Policy
from scrapy_rfc9309.core.verdict import Judgement, Kind
from scrapy_rfc9309.exceptions import RobotsTxtForbidden, RobotsTxtMetaError, RobotsTxtUsageDenied
from scrapy_rfc9309.meta import AGENT_META
from scrapy_rfc9309.signals import robotstxt_verdict

ROBOTS = b"User-agent: *\nDisallow: /private\nContent-Usage: /ai/ train-ai=n\n"
ORIGIN = Origin("https", "example.com", 443)


def _middleware(**settings: Any) -> tuple[Any, list[Judgement]]:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "ROBOTSTXT_USAGE_DENY": ["train-ai"],
                                         "DOWNLOADER_MIDDLEWARES": {
                                             "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None},
                                         **settings})
    mw = RobotsTxtMiddleware.from_crawler(crawler)
    told: list[Judgement] = []
    crawler.signals.connect(lambda request, judgement: told.append(judgement), signal=robotstxt_verdict, weak=False)
    crawler.signals.send_catch_log(signals.spider_opened, spider=None)  # the verdict receiver is found then
    return mw, told


def _put(mw: Any, access: Access, body: bytes = ROBOTS, cause: Cause = Cause.TRANSIENT) -> None:
    status = {Access.PARSED: 200, Access.UNREACHABLE: 503}[access]
    state = OriginState.initial(FetchOutcome(access, "https://example.com/robots.txt", status, body, cause=cause),
                                time.time(), Policy(ttl=3600.0))
    mw.states.cache.put(ORIGIN, state)


def test_each_kind_of_verdict_on_the_path_is_acted_on_as_its_kind_says():
    mw, told = _middleware()
    _put(mw, Access.PARSED)
    assert mw.process_request(Request("https://example.com/a")) is None
    with pytest.raises(RobotsTxtForbidden):
        mw.process_request(Request("https://example.com/private/x"))
    with pytest.raises(RobotsTxtUsageDenied):
        mw.process_request(Request("https://example.com/ai/x"))
    assert mw.process_request(Request("https://example.com/p", meta={"dont_obey_robotstxt": True})) is None
    with pytest.raises(RobotsTxtMetaError):
        mw.process_request(Request("https://example.com/q", meta={AGENT_META: 3}))
    assert [(j.kind, j.reason) for j in told] == [
        (Kind.ALLOWED, None), (Kind.FORBIDDEN, None), (Kind.USAGE_DENIED, None),
        (Kind.NOT_JUDGED, "dont_obey_robotstxt"), (Kind.DROPPED, "invalid_meta")]


@pytest.mark.parametrize("url", ["data:,x", "ftp://example.com/f", "s3://bucket/key", "file:///etc/hosts"])
def test_a_request_that_is_not_http_is_released_with_a_not_judged_verdict(url):
    mw, told = _middleware()
    for meta in ({}, {AGENT_META: "OtherBot/1"}):  # the plain path and the one of requests with meta keys
        assert mw.process_request(Request(url, meta=meta)) is None
    assert [(j.kind, j.reason, j.url) for j in told] == [(Kind.NOT_JUDGED, "not_http", url)] * 2
    assert mw.tellers.tally.count(Kind.NOT_JUDGED, reason="not_http") == 2
    assert "2 not judged (not http(s))" in mw.parts.verdicts.close_summary.verdicts()


def test_a_request_whose_robots_txt_is_unreachable_waits_it_is_not_released():
    mw, told = _middleware()
    _put(mw, Access.UNREACHABLE, b"")
    request = Request("https://example.com/a")
    try:
        result = mw.process_request(request)
        if asyncio.iscoroutine(result):  # awaited by Scrapy: released or refused only by a final verdict
            result.close()
        else:  # handed back to the scheduler, parked outside the downloader while its origin is held
            assert result is request
        assert [(j.kind, j.url) for j in told] == [(Kind.HELD, request.url)]
    finally:  # the origin's retry and fetch, which this crawl without an engine cannot make, end with the test
        mw.states.retries.close()
        mw.states.fetches.close()


def test_acting_on_a_held_verdict_raises_and_hold_tells_it():
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True})
    parts = VerdictParts(crawler, Config.from_settings(crawler.settings))
    held = Judgement(Kind.HELD, "https://example.com/a", "bot", document=ROBOTS_TXT, detail="status 503")
    request = Request(held.url)
    with pytest.raises(RuntimeError, match="not final"):
        parts.actions.act(request, ORIGIN, held)
    assert parts.tellers.tally.count(Kind.HELD) == 0
    parts.actions.hold(request, ORIGIN, held)
    parts.actions.hold(request, ORIGIN, held, counted=True)  # a parked request: the parking counted it
    assert parts.tellers.tally.count(Kind.HELD) == 2
    assert crawler.stats.get_value("robotstxt/held") == 1
    with pytest.raises(ValueError, match="not a held verdict"):
        parts.actions.hold(request, ORIGIN, held._replace(kind=Kind.ALLOWED))


class _Verdicts(ListSpider):
    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.verdicts = []
        crawler.signals.connect(spider.judged, signal=robotstxt_verdict)
        return spider

    def judged(self, request: Any, judgement: Judgement) -> None:
        self.verdicts.append(judgement)


@pytest_twisted.inlineCallbacks
def test_a_crawl_with_the_ledger_tells_a_not_http_verdict_to_all_but_the_ledger(origins, tmp_path: Path):
    site = origins("127.0.0.1")
    site["/robots.txt"] = text("User-agent: *\nDisallow: /private\n")
    data = "data:text/plain,hello"
    result = yield run_crawl(_Verdicts, mw_settings(ROBOTSTXT_LEDGER=str(tmp_path)),
                             urls=[site.url("/a"), data])
    spider = result.crawler.spider
    assert sorted(result.responses) == sorted([site.url("/a"), data])
    assert {(j.url, j.kind, j.reason) for j in spider.verdicts} == {
        (site.url("/a"), Kind.ALLOWED, None), (data, Kind.NOT_JUDGED, "not_http")}
    assert [r["u"] for r in records(tmp_path, "verdict")] == [site.url("/a")]
    assert result.logged("robots.txt verdicts: 1 allowed, 1 not judged (not http(s))")
