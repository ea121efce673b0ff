"""A document's fetches (lifecycle.fetches): one at a time per origin, and a fetch cancelled
once, however often it is asked to be."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest_twisted
from middleware_support import until
from scrapy import Request
from scrapy.utils.test import get_crawler
from twisted.internet import defer

from scrapy_rfc9309.config import Config
from scrapy_rfc9309.core.documents import ROBOTS_TXT
from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.core.state import Access, FetchOutcome
from scrapy_rfc9309.lifecycle.fetch_report import FetchReport
from scrapy_rfc9309.lifecycle.fetches import Fetches
from scrapy_rfc9309.lifecycle.given_up import GivenUp
from scrapy_rfc9309.lifecycle.states import DocumentStates

ORIGIN = Origin.from_url("http://a.example/")


class SlowToEnd:
    """A fetcher whose first fetch stalls and, once cancelled, takes until ``let_end`` is set to
    end (as a download gives its connection back): the window in which a second cancel could
    fail the fetch's Deferred early. Later fetches answer at once."""

    def __init__(self) -> None:
        self.calls = 0
        self.ending = asyncio.Event()
        self.let_end = asyncio.Event()
        self.ended = False

    async def fetch(self, origin: Origin, document: Any = ROBOTS_TXT, *, validators: Any = None) -> FetchOutcome:
        self.calls += 1
        if self.calls > 1:
            return FetchOutcome(Access.PARSED, document.url(origin), 200, b"User-agent: *\nDisallow: /x\n")
        try:
            await asyncio.Event().wait()  # never set: only a cancel ends it
        except asyncio.CancelledError:
            self.ending.set()
            await self.let_end.wait()
            self.ended = True
            raise
        raise AssertionError("not reached")


def _fetches(fetcher: SlowToEnd) -> Fetches:
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "ROBOTSTXT_CONCURRENT_FETCHES": 1})
    config = Config.from_settings(crawler.settings)
    states = DocumentStates(crawler, config)
    report = FetchReport(crawler, states, GivenUp(ROBOTS_TXT), shared=False)
    return Fetches(config, fetcher, states, report)  # type: ignore[arg-type]


@pytest_twisted.ensureDeferred
async def test_a_fetch_cancelled_twice_ends_once_its_download_has_ended():
    """Cancelled twice while its download still ends: the fetch runs (no second fetch of the
    origin starts, its place is still taken) until it has ended, and then fails with a
    cancellation; the one place (ROBOTSTXT_CONCURRENT_FETCHES=1) is free again after."""
    fetcher = SlowToEnd()
    fetches = _fetches(fetcher)
    first = fetches.fetch(ORIGIN, Request("http://a.example/robots.txt"))
    assert first is not None
    failures: list[Any] = []
    first.addErrback(failures.append)
    await until(lambda: fetcher.calls == 1, "the fetch to start")

    fetches.cancel(ORIGIN)
    await until(fetcher.ending.is_set, "the cancelled download to be ending")
    fetches.cancel(ORIGIN)

    assert failures == []  # its Deferred waits for the coroutine's end
    assert fetches.fetching(ORIGIN) and fetches.in_flight == 1
    assert fetches.fetch(ORIGIN, Request("http://a.example/robots.txt")) is None
    fetcher.let_end.set()
    await until(lambda: bool(failures), "the cancelled fetch to end")
    assert fetcher.ended and len(failures) == 1
    assert failures[0].check(defer.CancelledError, asyncio.CancelledError)
    assert not fetches.fetching(ORIGIN) and fetches.states.cache.get(ORIGIN) is None

    second = fetches.fetch(ORIGIN, Request("http://a.example/robots.txt"))
    assert second is not None
    state = await second
    assert fetcher.calls == 2 and state.access is Access.PARSED


@pytest_twisted.ensureDeferred
async def test_cancelling_a_fetch_that_has_ended_changes_nothing():
    fetcher = SlowToEnd()
    fetcher.calls = 1  # its fetches answer at once
    fetches = _fetches(fetcher)
    fetching = fetches.fetch(ORIGIN, Request("http://a.example/robots.txt"))
    assert fetching is not None
    state = await fetching

    fetches.cancel(ORIGIN)
    fetches.cancel(ORIGIN)

    assert not fetches.fetching(ORIGIN)
    assert fetches.states.cache.get(ORIGIN) is state and state.access is Access.PARSED
    again = fetches.fetch(ORIGIN, Request("http://a.example/robots.txt"))
    assert again is not None
    assert (await again).access is Access.PARSED
