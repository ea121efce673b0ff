"""TDMRep's /.well-known/tdmrep.json in real crawls (ROBOTSTXT_TDMREP): fetched once
per origin through the robots.txt lifecycle, matched against each request, put in
its meta, and enforced with ROBOTSTXT_USAGE_DENY; every way its fetch can fail ends
in a recorded state with a next step in time."""

from __future__ import annotations

import logging
from typing import Any

import pytest_twisted
from crawl import run_crawl
from middleware_support import mw_settings, stat

from scrapy_rfc9309.exceptions import RobotsTxtTdmReserved, RobotsTxtUnreachable
from scrapy_rfc9309.middleware import TDMREP_META
from scrapy_rfc9309.tdmrep import TdmEntry
from scrapy_rfc9309.testing import Delay, Redirect, Static

TDMREP = "/.well-known/tdmrep.json"
RULES = [
    {"location": "/reserved/", "tdm-reservation": 1, "tdm-policy": "https://example.com/policy.json"},
    {"location": "/*.jpg$", "tdm-reservation": 0},
]


def crawl(urls: list[str], **settings: Any) -> Any:
    from crawl import ListSpider

    class Spider(ListSpider):
        name = "tdm"
        tdm_meta: dict[str, Any]

        def parse(self, response: Any, **kwargs: Any) -> Any:
            if not hasattr(self, "tdm_meta"):
                self.tdm_meta = {}
            self.tdm_meta[response.url] = response.meta.get(TDMREP_META, "unset")
            yield from super().parse(response, **kwargs)

    return run_crawl(Spider, mw_settings(**settings), urls=urls)


def tdm_meta(result: Any) -> dict[str, Any]:
    return dict(getattr(result.crawler.spider, "tdm_meta", {}))


@pytest_twisted.inlineCallbacks
def test_reserved_and_not_reserved_urls_with_enforcement(origins):
    site = origins()
    site.tdmrep(RULES)
    urls = [site.url("/reserved/a"), site.url("/reserved/b"), site.url("/open/x.jpg"), site.url("/open/page")]
    result = yield crawl(urls, ROBOTSTXT_TDMREP=True, ROBOTSTXT_USAGE_DENY=["train-ai"])

    assert sorted(result.responses) == sorted(urls[2:])
    meta = tdm_meta(result)
    assert meta[site.url("/open/x.jpg")] == TdmEntry(False, None, "/*.jpg$", 1, site.url(TDMREP))
    assert meta[site.url("/open/page")] is None
    for url in urls[:2]:
        [error] = result.errors_for(url)
        assert isinstance(error, RobotsTxtTdmReserved)
        assert error.entry == TdmEntry(True, "https://example.com/policy.json", "/reserved/", 0, site.url(TDMREP))
        assert error.tdmrep_url == site.url(TDMREP)
    assert stat(result, "tdm_reserved") == 2
    assert len(site.requests_for(TDMREP)) == 1  # once for the origin
    assert stat(result, "tdmrep/parsed") == 1
    assert not [u for u in result.downloaded if "/reserved/" in u[0]]  # dropped before download


@pytest_twisted.inlineCallbacks
def test_without_enforcement_the_entry_is_in_meta_and_nothing_is_dropped(origins):
    site = origins()
    site.tdmrep(RULES)
    urls = [site.url("/reserved/a"), site.url("/open/page")]
    result = yield crawl(urls, ROBOTSTXT_TDMREP=True, ROBOTSTXT_USAGE_DENY=["search"])

    assert sorted(result.responses) == sorted(urls)
    meta = tdm_meta(result)
    assert meta[urls[0]].reserved and meta[urls[0]].index == 0
    assert meta[urls[1]] is None
    assert stat(result, "tdm_reserved") == 0


@pytest_twisted.inlineCallbacks
def test_with_the_setting_off_no_tdmrep_json_is_requested(origins):
    site = origins()
    site.tdmrep([{"location": "/", "tdm-reservation": 1}])
    urls = [site.url("/a"), site.url("/b")]
    result = yield crawl(urls, ROBOTSTXT_USAGE_DENY=["train-ai"])

    assert sorted(result.responses) == sorted(urls)
    assert site.requests_for(TDMREP) == []
    assert tdm_meta(result) == {url: "unset" for url in urls}


@pytest_twisted.inlineCallbacks
def test_a_missing_file_is_no_reservation(origins):
    site = origins()  # /.well-known/tdmrep.json: 404
    urls = [site.url("/a"), site.url("/b")]
    result = yield crawl(urls, ROBOTSTXT_TDMREP=True, ROBOTSTXT_USAGE_DENY=["train-ai"])

    assert sorted(result.responses) == sorted(urls)
    assert tdm_meta(result) == {url: None for url in urls}
    assert len(site.requests_for(TDMREP)) == 1
    assert stat(result, "tdmrep/unavailable") == 1
