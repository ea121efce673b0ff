"""News of a changed robots.txt: the pure diff (``scrapy_rfc9309.changes``), then a real crawl whose
robots.txt changes between two fetches (the stat, the signal once, the INFO line, the ledger's
state record, the new rules obeyed at once) and one whose refetch gives the same file (no news)."""

from __future__ import annotations

from typing import Any

import pytest_twisted
from crawl import run_crawl
from ledger_writer import records
from middleware_support import mw_settings, page_hits, stat, text
from servers import Sequence
from test_revalidation import _SHORT, TwoRoundsSpider, _rounds

import scrapy_rfc9309
from scrapy_rfc9309 import signals as rfc_signals
from scrapy_rfc9309.core.changes import MAX_LISTED, diff
from scrapy_rfc9309.evidence.audit import audit, format_text

OLD = ("User-agent: *\n"
       "Disallow: /a\n"
       "Disallow: /b\n"
       "Crawl-delay: 2\n"
       "Content-Usage: train-ai=y\n"
       "\n"
       "User-agent: OtherBot\n"
       "Disallow: /\n")


def test_rules_added_and_removed_crawl_delay_and_usage():
    new = scrapy_rfc9309.parse("User-agent: *\nDisallow: /b\nDisallow: /c\nAllow: /c/ok\n"
                               "Content-Usage: train-ai=n\nContent-Signal: search=yes\n")
    change = diff(scrapy_rfc9309.parse(OLD), new, ["MyBot/1.0"])
    assert change is not None
    [agent] = change.agents
    assert agent.token == "mybot"
    assert agent.added == (("Disallow", "/c"), ("Allow", "/c/ok"))
    assert agent.removed == (("Disallow", "/a"),)
    assert agent.crawl_delay == (2.0, None)
    assert agent.usage_added == ("content-usage: train-ai=n", "content-signal: search=yes")
    assert agent.usage_removed == ("content-usage: train-ai=y",)
    assert agent.categories == ("search", "train-ai")
    assert str(change) == ("'mybot': 2 rules added, 1 rules removed, Crawl-delay 2 -> none, "
                           "usage preferences changed (search, train-ai)")
    assert change.as_dict()["agents"][0]["added"] == [["Disallow", "/c"], ["Allow", "/c/ok"]]  # type: ignore[index]


def test_moved_lines_and_other_agents_groups_are_no_change():
    moved = scrapy_rfc9309.parse("# a comment\n\nUser-agent: OtherBot\nDisallow: /x\n\nUser-agent: *\n"
                                 "Content-Usage: train-ai=y\nDisallow: /b\nCrawl-delay: 2\nDisallow: /a\n")
    assert diff(scrapy_rfc9309.parse(OLD), moved, ["MyBot", "mybot/2.0"]) is None
    # OtherBot's group changed: news for it only when it is one of the crawl's agents.
    change = diff(scrapy_rfc9309.parse(OLD), moved, ["MyBot", "OtherBot"])
    assert change is not None and [a.token for a in change.agents] == ["otherbot"]
    assert change.agents[0].added == (("Disallow", "/x"),) and change.agents[0].removed == (("Disallow", "/"),)


def test_a_group_of_the_agents_own_is_a_change_of_group():
    own = scrapy_rfc9309.parse(OLD + "\nUser-agent: MyBot\nDisallow: /a\nDisallow: /b\nCrawl-delay: 2\n"
                                     "Content-Usage: train-ai=y\n")
    change = diff(scrapy_rfc9309.parse(OLD), own, ["MyBot"])
    assert change is not None
    assert change.agents[0].group == ("*", "mybot")
    assert not change.agents[0].added_count and not change.agents[0].removed_count


def test_the_rules_listed_are_bounded():
    big = scrapy_rfc9309.parse("User-agent: *\n" + "".join(f"Disallow: /p{n}\n" for n in range(MAX_LISTED + 50)))
    change = diff(scrapy_rfc9309.parse("User-agent: *\nDisallow:\n"), big, ["Bot"])
    assert change is not None
    assert change.agents[0].added_count == MAX_LISTED + 50
    assert len(change.agents[0].added) == MAX_LISTED


# --------------------------------------------------------------------------- crawls

NEW = "User-agent: *\nDisallow: /public\nContent-Usage: train-ai=n\n"


class NewsSpider(TwoRoundsSpider):
    """Records the ``robotstxt_changed`` signals."""

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.told = []
        crawler.signals.connect(lambda **kw: spider.told.append(kw), signal=rfc_signals.robotstxt_changed, weak=False)
        return spider


@pytest_twisted.inlineCallbacks
def test_a_robots_txt_that_changes_mid_crawl_is_news_once_and_obeyed_at_once(origins, tmp_path):
    a = origins()
    a["/robots.txt"] = Sequence([text("User-agent: *\nDisallow: /private\n"), text(NEW)])
    ledger = tmp_path / "ledger"

    result = yield run_crawl(NewsSpider, mw_settings(ROBOTSTXT_LEDGER=str(ledger), **_SHORT), **_rounds(a))

    assert sorted(h.path for h in page_hits(a)) == ["/private/2", "/public/1"]  # the new rules at once
    assert stat(result, "changed") == 1
    [news] = result.crawler.spider.told
    change = news["change"]
    assert [agent.token for agent in change.agents] == ["scrapy"]
    assert change.agents[0].added == (("Disallow", "/public"),)
    assert change.agents[0].removed == (("Disallow", "/private"),)
    assert change.agents[0].categories == ("train-ai",)
    assert news["old"].robots is not news["new"].robots
    assert news["origin"].robots_url == a.url("/robots.txt")
    [line] = [m for m in result.messages() if "changed:" in m]
    assert line == (f"robots.txt of {news['origin']} changed: 'scrapy': 1 rules added, 1 rules removed, "
                    "usage preferences changed (train-ai)")
    first, second = records(ledger, "state")
    assert "chg" not in first
    assert second["was"] == first["ver"] and second["ver"] != first["ver"]
    assert second["chg"] == change.as_dict()
    report = audit([ledger])
    assert report.exit_status() == 0, format_text(report)


@pytest_twisted.inlineCallbacks
def test_a_refetch_that_gives_the_same_rules_is_no_news(origins):
    a = origins()
    a["/robots.txt"] = Sequence([text("User-agent: *\nDisallow: /private\n"),
                                 text("# edited\nUser-agent: *\n\nDisallow: /private\n")])

    result = yield run_crawl(NewsSpider, mw_settings(**_SHORT), **_rounds(a))

    assert stat(result, "refetch") == 1
    assert stat(result, "changed") == 0
    assert result.crawler.spider.told == []


def test_the_rules_of_a_group_are_the_same_through_the_c_and_python_paths():
    from pathlib import Path

    corpus = Path(__file__).resolve().parent.parent / "benchmarks" / "corpus"
    files = sorted(path for path in corpus.iterdir() if path.is_file()) if corpus.is_dir() else []
    for path in files:
        body = path.read_bytes()
        fast, slow = scrapy_rfc9309.parse(body), scrapy_rfc9309.parse(body, speedups=False)
        for agent in ("Googlebot", "GPTBot", "Bot", *fast.agents[:5]):
            assert fast.rules(agent) == slow.rules(agent), (path.name, agent)
        lines = body.decode("utf-8", "replace").splitlines()
        for rule in fast.rules("Bot"):  # each rule is on its line, as written
            assert rule.directive.lower() in lines[rule.line - 1].lower(), (path.name, rule)


@pytest_twisted.inlineCallbacks
def test_a_change_of_the_usage_records_alone_is_a_change(origins, tmp_path):
    # The Allow/Disallow rules are the same in both copies; only a Content-Usage line differs.
    a = origins()
    rules = "User-agent: *\nDisallow: /private\n"
    a["/robots.txt"] = Sequence([text(rules + "Content-Usage: train-ai=y\n"),
                                 text(rules + "Content-Usage: train-ai=n\n")])
    ledger = tmp_path / "ledger"

    result = yield run_crawl(NewsSpider, mw_settings(ROBOTSTXT_LEDGER=str(ledger), **_SHORT), **_rounds(a))

    assert stat(result, "changed") == 1
    [news] = result.crawler.spider.told
    [agent] = news["change"].agents
    assert not agent.added_count and not agent.removed_count and agent.crawl_delay is None
    assert agent.usage_added == ("content-usage: train-ai=n",) and agent.usage_removed == ("content-usage: train-ai=y",)
    assert agent.usage_added_count == agent.usage_removed_count == 1
    _first, second = records(ledger, "state")
    assert second["chg"] == {"agents": [{"token": "scrapy", "usage_added": ["content-usage: train-ai=n"],
                                         "usage_added_count": 1, "usage_removed": ["content-usage: train-ai=y"],
                                         "usage_removed_count": 1, "categories": ["train-ai"]}]}
    assert audit([ledger]).exit_status() == 0
