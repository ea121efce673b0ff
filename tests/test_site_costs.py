"""What a site's own robots.txt (within the 500 KiB limit) can make the plugin do is bounded, in real
crawls against a local server: the change record, the ledger's audit and the INFO line of a file that
changes at each fetch; the work of a change diff whatever the number of the crawl's agents; the look-up of
path-scoped usage lines (a matcher, not a scan); purpose tokens (the groups they select, not the tokens,
and the per-origin shortcut kept); the agents a crawl's requests name. Sizes and counts are asserted,
never times."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path
from typing import Any

import pytest_twisted
from crawl import run_crawl
from ledger_writer import RUNS_DIR
from middleware_support import mw_settings, page_hits, stat, text
from scrapy import Request
from servers import Sequence
from test_changes import NewsSpider
from test_revalidation import _SHORT, TwoRoundsSpider, _rounds

import scrapy_rfc9309
from scrapy_rfc9309.components import robotstxt_middleware as middleware
from scrapy_rfc9309.core import changes
from scrapy_rfc9309.core import usage_rules as robotstxt_records
from scrapy_rfc9309.core.changes import MAX_AGENTS, MAX_LISTED, MAX_TEXT, AgentChange, RobotsChange, diff
from scrapy_rfc9309.core.robotstxt import RobotsTxt
from scrapy_rfc9309.core.verdict import Ruling
from scrapy_rfc9309.enforcement import request_agents as user_agents
from scrapy_rfc9309.evidence.audit import audit, format_text
from scrapy_rfc9309.exceptions import RobotsTxtUsageDenied

#: A change record holds at most MAX_AGENTS agents' changes of about 12 KiB each.
RECORD_CAP = 128 * 1024
#: The INFO line of a change: at most MAX_AGENTS agents' counts and five categories each.
LINE_CAP = 4 * 1024
#: A verdict record: its URL, rule, and the first ten usage rules that apply (300 characters each).
VERDICT_CAP = 8 * 1024


def _usage_file(version: int, lines: int = 12_000) -> str:
    """``lines`` Content-Usage lines (about 480 KB), every one different in each version."""
    return "User-agent: *\nDisallow: /private\n" + "".join(
        f"Content-Usage: train-ai=n, v{version}x{n:05d}=y\n" for n in range(lines))


def _lines(ledger: Path, kind: str) -> list[bytes]:
    """The ledger's records of ``kind`` as written (raw lines of every segment)."""
    found = []
    for path in sorted((ledger / RUNS_DIR).iterdir()):
        data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        found += [line for line in data.split(b"\n") if f'"k":"{kind}"'.encode() in line]
    return found


@pytest_twisted.inlineCallbacks
def test_a_file_of_12000_usage_lines_that_changes_gives_a_bounded_change_record_that_audits(origins, tmp_path):
    a = origins()
    a["/robots.txt"] = Sequence([text(_usage_file(1)), text(_usage_file(2))])
    ledger = tmp_path / "ledger"

    result = yield run_crawl(NewsSpider, mw_settings(ROBOTSTXT_LEDGER=str(ledger), **_SHORT), **_rounds(a))

    assert stat(result, "changed") == 1
    [news] = result.crawler.spider.told
    [agent] = news["change"].agents
    assert agent.usage_added_count == agent.usage_removed_count == 12_000  # counted in full
    assert len(agent.usage_added) == len(agent.usage_removed) == MAX_LISTED  # the first listed
    assert not agent.added_count and not agent.removed_count
    _first, second = _lines(ledger, "state")
    assert len(second) < RECORD_CAP, len(second)
    assert b'"usage_added_count":12000' in second
    # Each verdict names the 12,000 usage rules that apply to its URL by the first ten and a count.
    verdicts = _lines(ledger, "verdict")
    assert len(verdicts) == 4 and all(len(line) < VERDICT_CAP for line in verdicts), [len(v) for v in verdicts]
    assert [b"; and 11990 more rules" in line for line in verdicts if b'"up"' in line] == [True, True]
    [line] = [m for m in result.messages(logging.INFO) if "changed:" in m]
    assert len(line) < LINE_CAP, len(line)
    assert "usage preferences changed (train-ai, " in line
    # The genuine evidence reads as genuine: every line checked, no segment taken for rewritten.
    report = audit([ledger])
    assert report.exit_status() == 0, format_text(report)


def test_a_change_record_stays_within_its_cap_whatever_the_file():
    # The largest record the bounds allow: long patterns, usage rules and labels, for many agents.
    long = "x" * 16_000
    rules = "".join(f"Disallow: /{n}{long}\n" for n in range(30))
    usage = "".join(f"Content-Usage: /{n}{long[:5000]} l{n}{long[:3000]}=n\n" for n in range(30))
    old = scrapy_rfc9309.parse("User-agent: *\n" + rules + usage)
    new = scrapy_rfc9309.parse("User-agent: *\nDisallow: /other\n")
    change = diff(old, new, [f"bot{chr(97 + n)}" for n in range(20)])
    assert change is not None and len(change.agents) == 20
    record = change.as_dict()
    assert record["agents_count"] == 20 and len(record["agents"]) == MAX_AGENTS  # type: ignore[arg-type]
    assert len(json.dumps(record)) < RECORD_CAP
    assert len(str(change)) < LINE_CAP
    assert all(len(pattern) <= MAX_TEXT + 3 for _, pattern in change.agents[0].removed)


def test_the_work_of_a_change_diff_does_not_grow_with_the_number_of_agents(monkeypatch):
    # 5,000 rules renamed: the tokens a file does not name share '*''s group, compared once.
    old = scrapy_rfc9309.parse("User-agent: *\n" + "".join(f"Disallow: /old/{n}\n" for n in range(5000)))
    new = scrapy_rfc9309.parse("User-agent: *\n" + "".join(f"Disallow: /new/{n}\n" for n in range(5000))
                               + "\nUser-agent: botb\nDisallow: /b\n")
    calls = {"diff_agent": 0, "groups": 0}
    diff_agent, merged_for = changes.diff_agent, RobotsTxt._merged_for

    def counted_diff(*args: Any) -> AgentChange:
        calls["diff_agent"] += 1
        return diff_agent(*args)

    def counted_groups(self: RobotsTxt, agent: Any) -> Any:
        calls["groups"] += 1
        return merged_for(self, agent)

    monkeypatch.setattr(changes, "diff_agent", counted_diff)
    monkeypatch.setattr(RobotsTxt, "_merged_for", counted_groups)
    work = []
    for count in (3, 300):
        agents = ["BotB/1.0", *(f"bot{chr(97 + n % 26)}{chr(97 + n // 26)}" for n in range(count - 1))]
        calls.update(diff_agent=0, groups=0)
        change = diff(old.copy(), new.copy(), agents)
        assert isinstance(change, RobotsChange) and len(change.agents) == count
        assert change.agents[0].group == ("*", "botb") and change.agents[1].removed_count == 5000
        work.append(dict(calls))
    assert work[0] == work[1] == {"diff_agent": 2, "groups": 4}, work  # botb's and '*''s, in each copy


CONTENT_SIGNALS = 9_500


def _signal_file() -> str:
    """9,500 path-scoped Content-Signal lines (a few with wildcards), each path its own."""
    lines = [f"Content-Signal: /s{n}/ ai-train={'no' if n % 2 else 'yes'}\n" for n in range(CONTENT_SIGNALS)]
    lines += ["Content-Signal: /w*/deep$ ai-train=no\n", "Content-Signal: /*.pdf$ ai-train=no\n"]
    return "User-agent: *\nDisallow: /private\n" + "".join(lines)


@pytest_twisted.inlineCallbacks
def test_path_scoped_usage_lines_are_looked_up_with_one_compiled_matcher(origins, monkeypatch):
    a = origins()
    a["/robots.txt"] = text(_signal_file())
    calls = {"compiled": 0, "globbed": 0}
    compile_rules, glob_match = robotstxt_records.compile_rules, robotstxt_records.glob_match

    def counted_compile(*args: Any) -> Any:
        calls["compiled"] += 1
        return compile_rules(*args)

    def counted_glob(*args: Any) -> bool:
        calls["globbed"] += 1
        return glob_match(*args)

    monkeypatch.setattr(robotstxt_records, "compile_rules", counted_compile)
    monkeypatch.setattr(robotstxt_records, "glob_match", counted_glob)
    pages = [a.url(f"/s{n}/page") for n in range(0, CONTENT_SIGNALS, 97)] + [a.url("/w1/x/deep"), a.url("/d.pdf")]

    result = yield run_crawl(pages, mw_settings(ROBOTSTXT_USAGE_DENY=["train-ai"]))

    denied = [url for url in pages if any(isinstance(e, RobotsTxtUsageDenied) for e in result.errors_for(url))]
    expected = [a.url(f"/s{n}/page") for n in range(0, CONTENT_SIGNALS, 97) if n % 2]
    assert sorted(denied) == sorted([*expected, a.url("/w1/x/deep"), a.url("/d.pdf")])
    assert sorted(h.path for h in page_hits(a)) == sorted(f"/s{n}/page" for n in range(0, CONTENT_SIGNALS, 97)
                                                          if not n % 2)
    assert calls["compiled"] == 1  # one matcher for the group's Content-Signal paths
    # Per request, only the two wildcard patterns, when of the deciding priority, are matched one by one
    # (a scan matched all 9,502 patterns for every request).
    assert calls["globbed"] <= 2 * len(pages), calls


def _purpose_tokens(count: int) -> list[str]:
    return [f"purpose-{chr(97 + n % 26)}{chr(97 + n // 26 % 26)}{chr(97 + n // 676)}" for n in range(count)]


@pytest_twisted.inlineCallbacks
def test_purpose_tokens_cost_the_groups_they_select_and_keep_the_shortcut(origins, monkeypatch):
    a = origins()
    a["/robots.txt"] = text("User-agent: *\nDisallow: /private\n\nUser-agent: gptbot\nDisallow: /articles/\n")
    counted: dict[str, int] = {}
    judge, merged_for = Ruling.judge, RobotsTxt._merged_for

    def counted_judge(*args: Any, **kwargs: Any) -> Any:
        counted["judged"] += 1
        return judge(*args, **kwargs)

    def counted_groups(self: RobotsTxt, agent: Any) -> Any:
        counted["groups"] += 1
        return merged_for(self, agent)

    monkeypatch.setattr(Ruling, "judge", counted_judge)
    monkeypatch.setattr(RobotsTxt, "_merged_for", counted_groups)
    # One page first (its request waits for the robots.txt and is judged in full), then the others.
    first = [a.url("/news/0")]
    pages = [a.url(f"/news/{n}") for n in range(1, 40)] + [a.url("/articles/1"), a.url("/private/1")]
    seen = []
    for tokens in (["gptbot", "ccbot", "otherbot"], ["gptbot", *_purpose_tokens(1000)]):
        counted.update(judged=0, groups=0)
        settings = mw_settings(ROBOTSTXT_USER_AGENT="MyBot", ROBOTSTXT_PURPOSE_TOKENS=tokens)
        result = yield run_crawl(TwoRoundsSpider, settings, first=first, second=pages, gap=0)
        assert sorted(result.responses) == sorted(first + pages[:39])
        assert stat(result, "forbidden") == 2
        seen.append(dict(counted))
    # The same work for 1,000 tokens as for 3: '*''s group and gptbot's, built once. The allowed pages of
    # the second round go through the per-origin release memo: only the first page, the first page of the
    # second round (which makes the release) and the two refused ones are judged in full, not each of the 42.
    assert seen[0] == seen[1] == {"groups": 2, "judged": 4}, seen


@pytest_twisted.inlineCallbacks
def test_many_agents_log_a_bounded_number_of_info_lines_and_are_remembered_boundedly(origins, monkeypatch):
    monkeypatch.setattr(user_agents, "MAX_SEEN", 64)
    a = origins()
    a["/robots.txt"] = text("User-agent: *\nDisallow: /\n")
    count = user_agents.MAX_LOGGED + 50
    requests = [Request(a.url(f"/p{n}"), meta={"robotstxt_user_agent": f"agent{chr(97 + n % 26)}{n}"})
                for n in range(count)]

    result = yield run_crawl(requests, mw_settings())

    assert stat(result, "forbidden") == count
    info = [m for m in result.messages(logging.INFO, "scrapy_rfc9309") if "obeying the groups" in m]
    assert len(info) == user_agents.MAX_LOGGED  # the crawl's default agent, then MAX_LOGGED - 1 of the requests'
    [summary] = [m for m in result.messages(logging.INFO) if "further ones are logged at DEBUG" in m]
    assert f"{user_agents.MAX_LOGGED} agents" in summary
    # Each agent logged, the later ones at DEBUG (one forgotten, here beyond 64, and seen again by a request
    # judged again after waiting for the robots.txt, is logged again: at DEBUG, past the first 100).
    debug = [m for m in result.messages(logging.DEBUG, "scrapy_rfc9309") if "obeying the groups" in m]
    assert {f"'agent{chr(97 + n % 26)}{n}'" for n in range(count)} <= {m.rsplit(" ", 1)[-1].rstrip(")")
                                                                         for m in debug}
    mw = next(m for m in result.crawler.engine.downloader.middleware.middlewares
              if isinstance(m, middleware.RobotsTxtMiddleware))
    assert len(mw.agents.seen) <= 64
