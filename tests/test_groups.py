"""The per-file memos of a parsed robots.txt (agents' merged groups, purpose plans) and the
shared empty groups stay within their bounds however many agents a crawl asks about, and
every answer stays the one of a file asked for the first time."""

from __future__ import annotations

from scrapy_rfc9309 import RobotParser, parse
from scrapy_rfc9309.core import groups, robotstxt
from scrapy_rfc9309.core.caches import BoundedDict

BODY = (b"User-agent: *\nDisallow: /private\n"
        + b"".join(b"User-agent: bot%d\nDisallow: /only%d\nCrawl-delay: %d\n" % (n, n, n) for n in range(40)))
URLS = ["https://e.com/private/x", "https://e.com/only3/x", "https://e.com/only37/y", "https://e.com/free"]


def fresh_answers(agent: str) -> list[object]:
    robots = parse(BODY)
    return [robots.allowed(url, agent) for url in URLS] + [robots.crawl_delay(agent), robots.group_agents(agent)]


def test_the_memo_of_agents_stays_within_its_bound_and_answers_as_a_fresh_file() -> None:
    robots = parse(BODY)
    asked = [f"bot{n % 40}" if n % 3 else f"Other{n}/1.0" for n in range(300)]
    for agent in asked:
        answers = [robots.allowed(url, agent) for url in URLS] + [robots.crawl_delay(agent),
                                                                   robots.group_agents(agent)]
        assert answers == fresh_answers(agent), agent
        assert robots._memo is None or len(robots._memo) <= groups._MAX_MEMO
    assert isinstance(robots._memo, BoundedDict)
    # Asked again after their entries were dropped, agents get the same answers.
    for agent in asked[:20]:
        assert [robots.allowed(url, agent) for url in URLS] == fresh_answers(agent)[:len(URLS)]


def test_the_shared_empty_groups_stay_within_their_bound() -> None:
    for n in range(200):  # a group of the agent's own, without rules or records
        token = "tok" + chr(97 + n % 26) + chr(97 + n // 26)
        robots = parse(f"User-agent: *\nDisallow: /x\nUser-agent: {token}\n")
        assert robots.group_agents(f"{token.upper()}/1.0") == token
        assert robots.allowed("https://e.com/x", token)
        assert len(groups._EMPTY_GROUPS) <= groups._MAX_MEMO
    empty = parse(b"")
    assert empty.rules("AnyBot") == [] and empty.allowed("https://e.com/x", "AnyBot")


def test_purpose_plans_stay_within_their_bound_and_match_a_fresh_file() -> None:
    robots = parse(BODY)
    for n in range(40):
        purposes = (f"bot{n}", f"bot{(n + 1) % 40}", "absent")
        plan = robots.purpose_groups("Scrapy/2.19", purposes)
        fresh = parse(BODY).purpose_groups("Scrapy/2.19", purposes)
        assert [token for token, _ in plan] == [token for token, _ in fresh]
        assert robots.purpose_groups("Scrapy/2.19", purposes) is plan  # remembered
        assert len(robots._purposes or ()) <= robotstxt._MAX_PLANS


def test_a_copy_and_a_parser_from_a_file_have_every_part() -> None:
    robots = parse(BODY)
    robots.allowed("https://e.com/only3/x", "bot3")
    robots.allowed("https://e.com/only3/x", "bot4")
    copy = robots.copy()
    assert copy._memo is None and copy._purposes is None
    assert copy.body == robots.body and not copy.allowed("https://e.com/only3/x", "bot3")
    parser = RobotParser.from_robots(robots, spider="s")
    assert parser._memo is robots._memo and parser._source is robots._source and parser.spider == "s"
    assert not parser.allowed("https://e.com/only4/x", "bot4")


def test_crawl_delay_of_the_merged_group() -> None:
    body = (b"User-agent: a\nCrawl-delay: 0\nCrawl-delay: x\nDisallow: /a\n"
            b"User-agent: b\nCrawl-delay: 2.5 seconds\nCrawl-delay: -1\nCrawl-delay: inf\n"
            b"User-agent: *\nDisallow: /s\n")
    robots = parse(body)
    assert robots.crawl_delay("a") == 0.0  # zero is a delay; "x" is not
    assert robots.crawl_delay("b") == 2.5  # neither a negative one nor infinity
    assert robots.crawl_delay("c") is None
    assert robots.records("a", "crawl-delay") == [("0", 2), ("x", 3)]


def test_groups_merged_keep_each_groups_wildcard_rules() -> None:
    """Two groups of one token merged: the second group's wildcard rules are found at
    their place among all the patterns."""
    body = (b"User-agent: bot\nDisallow: /one\nDisallow: /two\nDisallow: /three\n"
            b"User-agent: other\nDisallow: /\n"
            b"User-agent: bot\nAllow: /one/*.ok$\nDisallow: /*.pdf$\nDisallow: /x*y\n")
    for speedups in (True, False):
        robots = parse(body, speedups=speedups)
        assert robots.allowed("https://e.com/one/a.ok", "bot")
        assert not robots.allowed("https://e.com/one/a.ok2", "bot")
        assert not robots.allowed("https://e.com/doc.pdf", "bot")
        assert not robots.allowed("https://e.com/xzzy", "bot")
        assert robots.allowed("https://e.com/xzz", "bot")
        assert [rule.line for rule in robots.rules("bot")] == [2, 3, 4, 8, 9, 10]


def test_a_file_that_keeps_its_body_compresses_it_on_its_first_question_only() -> None:
    body = b"User-agent: *\nDisallow: /private\n" + b"# a comment line\n" * 40
    robots = parse(body, keep_body=True)
    assert robots._source == body
    assert not robots.allowed("https://e.com/private", "bot")
    assert robots._source != body and robots.body == body and not robots.reduced
    source = robots._source
    assert robots.allowed("https://e.com/x", "Other")
    assert robots._source is source  # compressed once
