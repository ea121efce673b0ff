"""The change news of scrapy_rfc9309/lifecycle/change_signal.py called directly, with states made
by the state model from real fetch outcomes: which pairs of copies are news, for which agents, and
what telling it does (the stat, the INFO line, the signal with its four arguments). Kills the
mutants the crawl tests leave alive (docs/development.md, "Mutation testing")."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import pytest_twisted
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.test import get_crawler

from scrapy_rfc9309 import signals as rfc_signals
from scrapy_rfc9309.core.changes import diff
from scrapy_rfc9309.core.documents import TDMREP
from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState, Policy
from scrapy_rfc9309.lifecycle.change_signal import ChangeNews

URL = "https://h.example/robots.txt"
ORIGIN = Origin.from_url(URL)
POLICY = Policy()
OLD = b"User-agent: *\nDisallow: /private\n\nUser-agent: OtherBot\nDisallow: /\n"
NEW = b"User-agent: *\nDisallow: /public\n\nUser-agent: OtherBot\nDisallow: /\n"


def _state(body: bytes, now: float = 1000.0, previous: OriginState | None = None) -> OriginState:
    outcome = FetchOutcome(Access.PARSED, URL, 200, body)
    return OriginState.initial(outcome, now, POLICY) if previous is None else previous.apply(outcome, now, POLICY)


def _news(agents: Any = (), default: str = "mybot") -> ChangeNews:
    return ChangeNews(get_crawler(settings_dict={}), agents, default)


def test_a_new_copy_with_other_rules_is_news_for_the_default_agent() -> None:
    old = _state(OLD)
    new = _state(NEW, 2000.0, old)
    change = _news().between(old, new)
    assert change is not None
    assert change == diff(old.robots, new.robots, ["mybot"])  # type: ignore[arg-type]
    assert [agent.token for agent in change.agents] == ["mybot"]
    assert change.agents[0].added == (("Disallow", "/public"),)


def test_the_agents_asked_are_those_of_the_crawl_at_the_time() -> None:
    agents: set[str] = set()
    news = _news(agents)
    old = _state(OLD)
    new = _state(b"User-agent: *\nDisallow: /private\n\nUser-agent: OtherBot\nDisallow: /x\n", 2000.0, old)
    assert news.between(old, new) is None  # only OtherBot's group changed: no news for the default agent
    agents.add("OtherBot/2.0")
    change = news.between(old, new)
    assert change is not None and [agent.token for agent in change.agents] == ["otherbot"]


def test_news_leaves_the_new_file_as_fetched() -> None:
    old = _state(OLD)
    new = _state(NEW, 2000.0, old)
    assert new.robots is not None and not new.robots.reduced
    assert _news().between(old, new) is not None
    assert not new.robots.reduced and new.robots.body == NEW  # its bytes as fetched, for the store


def test_a_first_copy_or_a_failed_fetch_is_no_news() -> None:
    old = _state(OLD)
    assert _news().between(None, old) is None
    failed = old.apply(FetchOutcome(Access.UNREACHABLE, URL, 503), 2000.0, POLICY)
    assert failed.robots is old.robots  # the copy stands in
    assert _news().between(old, failed) is None
    gone = old.apply(FetchOutcome(Access.UNAVAILABLE, URL, 404), 2000.0, POLICY)
    assert _news().between(gone, _state(NEW, 3000.0, gone)) is None  # no copy before


def test_a_renewed_copy_is_no_news() -> None:
    old = _state(OLD)
    renewed = old.apply(FetchOutcome(Access.PARSED, URL, 304, not_modified=True), 2000.0, POLICY)
    assert renewed.robots is old.robots
    assert _news().between(old, renewed) is None


def test_the_same_records_in_another_layout_are_no_news() -> None:
    old = _state(OLD)
    moved = _state(b"# edited\n" + OLD.replace(b"\n\n", b"\n\n\n"), 2000.0, old)
    assert _news().between(old, moved) is None


def test_a_tdmrep_json_is_no_robots_txt_news() -> None:
    def tdmrep(body: bytes, now: float) -> OriginState:
        url = "https://h.example/.well-known/tdmrep.json"
        return OriginState.initial(FetchOutcome(Access.PARSED, url, 200, body, document=TDMREP), now, POLICY)

    old = tdmrep(b'[{"location": "/", "tdm-reservation": 1}]', 1000.0)
    new = tdmrep(b'[{"location": "/", "tdm-reservation": 0}]', 2000.0)
    assert _news().between(old, new) is None


@pytest_twisted.inlineCallbacks
def test_telling_a_change_counts_logs_and_signals_it(caplog: pytest.LogCaptureFixture) -> Any:
    news = _news()
    old = _state(OLD)
    new = _state(NEW, 2000.0, old)
    change = news.between(old, new)
    assert change is not None
    told: list[dict[str, Any]] = []
    news.crawler.signals.connect(lambda **kwargs: told.append(kwargs), signal=rfc_signals.robotstxt_changed,
                                 weak=False)
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        yield deferred_from_coro(news.tell(ORIGIN, old, new, change))
        yield deferred_from_coro(news.tell(ORIGIN, old, new, change))
    assert news.crawler.stats is not None
    assert news.crawler.stats.get_value("robotstxt/changed") == 2
    assert [(kwargs["origin"], kwargs["old"], kwargs["new"], kwargs["change"]) for kwargs in told] == [
        (ORIGIN, old, new, change)] * 2
    lines = [record for record in caplog.records if record.name == "scrapy_rfc9309.lifecycle.change_signal"]
    assert [(record.levelno, record.getMessage()) for record in lines] == [
        (logging.INFO, f"robots.txt of {ORIGIN} changed: {change}")] * 2
