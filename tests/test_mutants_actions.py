"""Acting on a verdict (scrapy_rfc9309/enforcement/actions.py), without a crawl but for the download slot
of a Crawl-delay (a live crawl's): for each kind, the
request's meta keys, the stat, the usage signal, the tellers, and the exception a refused request
raises with what it carries. The verdicts are real ones (:func:`~scrapy_rfc9309.core.verdict.judge`
on real states); the tellers are the crawl's :class:`Tellers` with one more teller that records
(docs/development.md, "Mutation testing")."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.utils.test import get_crawler
from test_judgement import POLICY, PURPOSE_ROBOTS, TDM, TDMREP_URL, TOKEN, parsed, run, unreachable
from test_mutants_waiting import LiveCrawl

from scrapy_rfc9309 import signals as rfc_signals
from scrapy_rfc9309.core.documents import ROBOTS_TXT, TDMREP
from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.core.robotstxt import Verdict
from scrapy_rfc9309.core.verdict import Enforced, Judgement, Kind, at_close, holding, invalid_meta, not_judged
from scrapy_rfc9309.enforcement.actions import Actions
from scrapy_rfc9309.enforcement.crawl_delay import CrawlDelay
from scrapy_rfc9309.enforcement.tellers import Tellers
from scrapy_rfc9309.exceptions import (
    RobotsTxtForbidden,
    RobotsTxtMetaError,
    RobotsTxtTdmReserved,
    RobotsTxtUnreachable,
    RobotsTxtUsageDenied,
)
from scrapy_rfc9309.meta import AGENT_META, TDMREP_META, USAGE_META
from scrapy_rfc9309.runtime import compat as _compat

ORIGIN = Origin.from_url("https://example.com/")
NOW = 1_000_000.0


class Recorder:
    """A teller that records what it is told, by which of the tellers' loops."""

    explains = False
    passed_responses = False

    def __init__(self) -> None:
        self.told: list[tuple[str, Any, Judgement]] = []

    def judged(self, request: Request, origin: Origin | None, judgement: Judgement) -> None:
        self.told.append((request.url, origin, judgement))

    def responded(self, request: Request, status: int, outcome: str) -> None:
        return None

    async def close(self) -> None:
        return None


class Crawl:
    """Actions of a crawl (its stats, signals), with a teller of every verdict and one of every URL."""

    def __init__(self) -> None:
        self.crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True})
        self.tellers = Tellers()
        self.http, self.every = Recorder(), Recorder()
        self.tellers.add(self.http)
        self.tellers.add_any_url(self.every)
        self.actions = Actions(self.crawler, self.tellers, None)
        self.usage: list[tuple[str, Any]] = []

    def listen(self) -> None:
        def received(request: Request, preference: Any) -> None:
            self.usage.append((request.url, preference))
        self._received = received
        self.crawler.signals.connect(received, signal=rfc_signals.robotstxt_content_usage)

    def stats(self) -> dict[str, Any]:
        return {k: v for k, v in self.crawler.stats.get_stats().items()  # type: ignore[union-attr]
                if k.startswith("robotstxt/")}


def _refused(crawl: Crawl, request: Request, judgement: Judgement) -> Any:
    with pytest.raises(Exception) as caught:  # each test checks the exception's class
        crawl.actions.act(request, ORIGIN, judgement)
    return caught.value


def test_an_allowed_request_is_released_with_its_usage_and_tdmrep_entry() -> None:
    crawl = Crawl()
    crawl.listen()
    tdm = parsed(TDM, TDMREP, TDMREP_URL)
    judgement = run("/ai/page", tdm=tdm, enforced=Enforced(POLICY, tdmrep=True))
    assert judgement.kind is Kind.ALLOWED and judgement.usage is not None and judgement.tdm_known
    request = Request("https://example.com/ai/page")
    assert crawl.actions.act(request, ORIGIN, judgement) is None
    assert request.meta[USAGE_META] is judgement.usage
    assert request.meta[TDMREP_META] is judgement.tdm_entry
    assert crawl.usage == [(request.url, judgement.usage)]
    assert crawl.tellers.tally.allowed == 1 and crawl.tellers.tally.counts == {}
    assert crawl.http.told == [(request.url, ORIGIN, judgement)] and crawl.every.told == crawl.http.told
    assert crawl.stats() == {}


def test_an_allowed_request_without_usage_or_known_tdmrep_gets_no_meta_key_and_no_signal() -> None:
    crawl = Crawl()
    crawl.listen()
    judgement = run("/page", enforced=Enforced(POLICY))
    assert judgement.usage is None and not judgement.tdm_known
    request = Request("https://example.com/page")
    assert crawl.actions.act(request, ORIGIN, judgement) is None
    assert USAGE_META not in request.meta and TDMREP_META not in request.meta
    assert crawl.usage == []
    assert crawl.tellers.tally.allowed == 1


def test_a_tdmrep_known_to_apply_no_rule_sets_its_meta_key_to_none() -> None:
    crawl = Crawl()
    tdm = parsed(b'[{"location": "/r/*", "tdm-reservation": 1}]', TDMREP, TDMREP_URL)
    judgement = run("/page", tdm=tdm)
    assert judgement.kind is Kind.ALLOWED and judgement.tdm_known and judgement.tdm_entry is None
    request = Request("https://example.com/page")
    crawl.actions.act(request, ORIGIN, judgement)
    assert TDMREP_META in request.meta and request.meta[TDMREP_META] is None


def test_not_judged_requests_are_released_and_told_to_the_tellers_of_their_urls() -> None:
    crawl = Crawl()
    http = Request("https://example.com/x", meta={"dont_obey_robotstxt": True})
    judgement = not_judged(http.url, TOKEN)
    assert crawl.actions.act(http, ORIGIN, judgement) is None
    assert crawl.http.told == [(http.url, ORIGIN, judgement)] and crawl.every.told == crawl.http.told
    other = Request("data:,x")
    other_judgement = not_judged(other.url, TOKEN, "not_http")
    assert crawl.actions.act(other, None, other_judgement) is None
    # Only the tellers of every URL are told of a request that is not http(s).
    assert crawl.http.told == [(http.url, ORIGIN, judgement)]
    assert crawl.every.told[-1] == (other.url, None, other_judgement)
    assert crawl.tellers.tally.count(Kind.NOT_JUDGED) == 2 and crawl.tellers.tally.allowed == 0
    assert crawl.stats() == {}


def test_a_held_verdict_is_not_final() -> None:
    crawl = Crawl()
    judgement = holding("https://example.com/x", TOKEN, unreachable(), TDMREP, NOW, POLICY, None)
    assert judgement is not None and judgement.kind is Kind.HELD
    with pytest.raises(RuntimeError, match="not final"):
        crawl.actions.act(Request("https://example.com/x"), ORIGIN, judgement)
    assert crawl.http.told == [] and crawl.stats() == {}
    # A refusing verdict needs the request's origin.
    with pytest.raises(RuntimeError, match="not http"):
        crawl.actions.act(Request("https://example.com/private"), None, run("/private"))


def test_holding_counts_and_logs_a_request_unless_the_parking_counted_it(caplog: pytest.LogCaptureFixture) -> None:
    crawl = Crawl()
    judgement = holding("https://example.com/x", TOKEN, unreachable(document=TDMREP), TDMREP, NOW, POLICY, None)
    assert judgement is not None and judgement.kind is Kind.HELD
    request = Request("https://example.com/x")
    with caplog.at_level(logging.DEBUG, logger="scrapy_rfc9309.enforcement.actions"):
        assert crawl.actions.hold(request, ORIGIN, judgement) is None
    assert crawl.stats() == {"robotstxt/tdmrep/held": 1}
    assert [r.getMessage() for r in caplog.records] == [
        f"Holding {request}: tdmrep.json of {ORIGIN} is unreachable ({judgement.detail})"]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="scrapy_rfc9309.enforcement.actions"):
        crawl.actions.hold(request, ORIGIN, judgement, counted=True)
    assert crawl.stats() == {"robotstxt/tdmrep/held": 1} and caplog.records == []
    assert crawl.http.told == [(request.url, ORIGIN, judgement)] * 2
    with pytest.raises(ValueError, match="not a held verdict"):
        crawl.actions.hold(request, ORIGIN, run("/page"))
    robots = holding("https://example.com/x", TOKEN, unreachable(), TDMREP, NOW, POLICY, None)
    assert robots is not None
    crawl.actions.hold(request, ORIGIN, robots._replace(document=None))
    assert crawl.stats() == {"robotstxt/tdmrep/held": 1, "robotstxt/held": 1}


def test_a_forbidden_request_raises_with_its_rule_and_robots_txt() -> None:
    crawl = Crawl()
    judgement = run("/private/x")
    request = Request("https://example.com/private/x")
    error = _refused(crawl, request, judgement)
    assert type(error) is RobotsTxtForbidden and error.judgement is judgement
    assert error.verdict == judgement.verdict and error.robots_url == ORIGIN.robots_url
    assert str(error) == (f"Forbidden by robots.txt: {request} (Disallow: /private, line 2 of "
                          f"{ORIGIN.robots_url})")
    assert crawl.stats() == {"robotstxt/forbidden": 1}
    assert crawl.http.told == [(request.url, ORIGIN, judgement)]
    assert crawl.tellers.tally.count(Kind.FORBIDDEN) == 1


def test_a_forbidden_request_of_a_purpose_tokens_group_names_the_token() -> None:
    crawl = Crawl()
    judgement = run("/articles/1", parsed(PURPOSE_ROBOTS), enforced=Enforced(POLICY, purpose_tokens=("gptbot",)))
    assert judgement.purpose == "gptbot"
    error = _refused(crawl, Request("https://example.com/articles/1"), judgement)
    assert str(error).endswith(
        f"(Disallow: /articles/, line 5, in the group of purpose token 'gptbot' of {ORIGIN.robots_url})")
    assert error.verdict == Verdict(False, judgement.rule, "gptbot", "/articles/1")


def test_a_forbidden_request_without_a_rule_says_so() -> None:
    crawl = Crawl()
    judgement = run("/private/x")._replace(rule=None)
    error = _refused(crawl, Request("https://example.com/private/x"), judgement)
    assert str(error).endswith(f"(no rule of {ORIGIN.robots_url})")


def test_a_usage_denied_request_raises_with_its_preference_and_signals_it() -> None:
    crawl = Crawl()
    crawl.listen()
    judgement = run("/ai/x")
    assert judgement.kind is Kind.USAGE_DENIED
    request = Request("https://example.com/ai/x")
    error = _refused(crawl, request, judgement)
    assert type(error) is RobotsTxtUsageDenied and error.judgement is judgement
    assert error.preference is judgement.usage and error.robots_url == ORIGIN.robots_url
    assert str(error) == (f"Usage preference denies train-ai: {request} ({judgement.usage} of "
                          f"{ORIGIN.robots_url})")
    assert request.meta[USAGE_META] is judgement.usage
    assert crawl.usage == [(request.url, judgement.usage)]
    assert crawl.stats() == {"robotstxt/usage_denied": 1}
    assert crawl.http.told == [(request.url, ORIGIN, judgement)]


def test_a_tdm_reserved_request_raises_with_its_entry() -> None:
    crawl = Crawl()
    crawl.listen()
    tdm = parsed(TDM, TDMREP, TDMREP_URL)
    judgement = run("/r/x", tdm=tdm)
    assert judgement.kind is Kind.TDM_RESERVED and judgement.usage is None
    request = Request("https://example.com/r/x")
    error = _refused(crawl, request, judgement)
    assert type(error) is RobotsTxtTdmReserved and error.judgement is judgement
    assert error.entry is judgement.tdm_entry and error.tdmrep_url == TDMREP_URL
    assert str(error) == f"TDM rights reserved (train-ai denied): {request} ({judgement.tdm_entry})"
    assert request.meta[TDMREP_META] is judgement.tdm_entry and USAGE_META not in request.meta
    assert crawl.usage == []
    assert crawl.stats() == {"robotstxt/tdm_reserved": 1}
    # With a usage preference of robots.txt that applies, it is set and signalled too.
    robots = parsed(b"User-agent: *\nAllow: /\nContent-Usage: /r/ train-ai=y\n")
    judgement = run("/r/x", robots, tdm=tdm)
    assert judgement.kind is Kind.TDM_RESERVED and judgement.usage is not None
    request = Request("https://example.com/r/x")
    _refused(crawl, request, judgement)
    assert request.meta[USAGE_META] is judgement.usage and crawl.usage == [(request.url, judgement.usage)]


def test_a_requeued_request_goes_back_past_the_duplicate_filter() -> None:
    crawl = Crawl()
    state = unreachable(since=NOW - 30)
    judgement = at_close("https://example.com/x", TOKEN, ROBOTS_TXT, True, "closing", state, NOW)
    assert judgement.kind is Kind.REQUEUED
    request = Request("https://example.com/x", meta={"k": 1})
    again = crawl.actions.act(request, ORIGIN, judgement)
    assert again is not None and again is not request
    assert again.url == request.url and again.dont_filter and not request.dont_filter and again.meta["k"] == 1
    assert crawl.stats() == {"robotstxt/requeued_on_close": 1}
    assert crawl.http.told == [(request.url, ORIGIN, judgement)]


@pytest.mark.parametrize(("reason", "stat"), [
    ("max_wait", "dropped_unreachable"), ("closing", "held_released_on_close"), (None, "dropped_unreachable")])
def test_a_dropped_request_raises_unreachable_with_its_reason(reason: str | None, stat: str) -> None:
    crawl = Crawl()
    state = unreachable(since=NOW - 30)
    judgement = at_close("https://example.com/x", TOKEN, TDMREP, False, "closing", state, NOW)._replace(reason=reason)
    request = Request("https://example.com/x")
    error = _refused(crawl, request, judgement)
    assert type(error) is RobotsTxtUnreachable and error.judgement is judgement
    assert error.robots_url == TDMREP.url(ORIGIN)
    assert error.reason == (reason or "max_wait")
    assert str(error).startswith(f"Dropped: tdmrep.json of {ORIGIN} ") and str(error).endswith(f": {request}")
    assert crawl.stats() == {f"robotstxt/tdmrep/{stat}": 1}
    # Without a document, it is robots.txt's.
    error = _refused(crawl, request, judgement._replace(document=None))
    assert error.robots_url == ORIGIN.robots_url and str(error).startswith(f"Dropped: robots.txt of {ORIGIN} ")


def test_an_invalid_meta_key_is_logged_once_per_type(caplog: pytest.LogCaptureFixture) -> None:
    crawl = Crawl()
    caplog.set_level(logging.ERROR, logger="scrapy_rfc9309.enforcement.actions")
    errors = []
    for value in (1, 2, b"x"):
        request = Request("https://example.com/x", meta={AGENT_META: value})
        judgement = invalid_meta(request.url, TOKEN, f"robotstxt_user_agent is {type(value).__name__}")
        error = _refused(crawl, request, judgement)
        assert type(error) is RobotsTxtMetaError and error.key == AGENT_META and error.judgement is judgement
        assert str(error) == f"Dropped {request}: {judgement.detail}"
        errors.append(str(error))
    assert [r.getMessage() for r in caplog.records] == [errors[0], errors[2]]
    assert crawl.stats() == {"robotstxt/invalid_meta": 3}
    assert crawl.tellers.tally.dropped("robots.txt") == {"invalid_meta": 3}


@pytest_twisted.ensureDeferred
async def test_an_allowed_requests_crawl_delay_is_applied_to_its_download_slot() -> None:
    judgement = run("/page", enforced=Enforced(POLICY, crawl_delay=True))
    assert judgement.kind is Kind.ALLOWED and judgement.crawl_delay == 2
    async with LiveCrawl() as crawler:
        request = Request("https://example.com/page")
        # Without ROBOTSTXT_CRAWL_DELAY, the crawl has no Crawl-delay to apply: nothing is.
        Actions(crawler, Tellers(), None).act(request, ORIGIN, judgement)
        assert crawler.stats.get_value("robotstxt/crawl_delay_applied") is None
        Actions(crawler, Tellers(), CrawlDelay(crawler, 10.0)).act(request, ORIGIN, judgement)
        assert crawler.stats.get_value("robotstxt/crawl_delay_applied") == 1
        _, slot = _compat.download_slot(crawler, request)
        assert _compat.slot_delay(slot) >= 2  # widened by the slot's jitter (see enforcement/crawl_delay.py)
