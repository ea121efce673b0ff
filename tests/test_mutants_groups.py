"""A file's first question as `GroupSelector._merged_for` does it (from a campaign of mutation
testing on it): which path builds the groups (the one C call on the bytes as fetched, the text's
passes otherwise, the Python tier when asked), what the file keeps after it (its records without
the rules of every group given, for a file read for its records as it was read too), and groups
with records but no rules."""

from __future__ import annotations

from typing import Any

import pytest

from scrapy_rfc9309 import parse
from scrapy_rfc9309.core import groups, matcher, syntax
from scrapy_rfc9309.core.robots_body import _RULES_OUT, COMPRESS_AT_READ
from scrapy_rfc9309.core.urls import utf8_octets

TIERS = [True, False] if syntax._c_first_question is not None else [False]


class Calls:
    """Counts the calls of the functions `_merged_for` builds groups with."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[str] = []
        for name in ("first_question", "select", "select_records", "records_text"):
            monkeypatch.setattr(groups, name, self._counted(name, getattr(groups, name)))

    def _counted(self, name: str, function: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.made.append(name)
            return function(*args, **kwargs)
        return counted


@pytest.mark.parametrize("speedups", TIERS)
def test_a_fresh_files_first_question_is_one_call_on_its_bytes_and_later_ones_read_its_records(
        monkeypatch: pytest.MonkeyPatch, speedups: bool) -> None:
    calls = Calls(monkeypatch)
    robots = parse(b"User-agent: *\nDisallow: /x\nUser-agent: bot\nDisallow: /y\n", speedups=speedups)
    assert not robots.allowed("https://e.com/x", "Other")
    assert calls.made == ["first_question"]
    assert not robots.allowed("https://e.com/y", "bot")  # another agent: the kept records, read
    assert calls.made == ["first_question", "select"]


@pytest.mark.parametrize("speedups", TIERS)
def test_a_file_that_keeps_its_bytes_reads_their_text(monkeypatch: pytest.MonkeyPatch, speedups: bool) -> None:
    calls = Calls(monkeypatch)
    robots = parse(b"User-agent: *\nDisallow: /x\n" + b"# padding\n" * 40, speedups=speedups, keep_body=True)
    assert not robots.allowed("https://e.com/x", "bot")
    assert calls.made == ["select"]
    assert robots.body.startswith(b"User-agent: *\nDisallow: /x\n")


def test_a_file_parsed_without_the_accelerator_never_uses_it() -> None:
    robots = parse(b"User-agent: *\nDisallow: /x\nAllow: /x/ok\n", speedups=False)
    assert not robots.allowed("https://e.com/x/1", "bot")
    assert type(robots._group_for("bot").matcher) is matcher.Matcher


def _large(groups_text: str) -> bytes:
    """A body read for its records as it is read (128 KiB or more): the groups, then comments."""
    body, padding = groups_text.encode(), b"# padding padding padding\n"
    return body + padding * ((COMPRESS_AT_READ - len(body)) // len(padding) + 1)


@pytest.mark.parametrize("speedups", TIERS)
def test_a_large_file_keeps_its_records_without_the_rules_of_every_group_given(speedups: bool) -> None:
    # Two groups for the agent: the kept records leave out the rules of both, which its matcher gives back.
    body = _large("User-agent: bot\nDisallow: /a\nSitemap: /s.xml\nUser-agent: *\nDisallow: /z\n"
                  "User-agent: bot\nDisallow: /b\nAllow: /b/ok\n")
    robots = parse(body, speedups=speedups)
    assert robots.reduced  # as it was read
    records = utf8_octets(syntax.records_text(syntax.prepare(body, len(body))[0], speedups=False))
    assert not robots.allowed("https://e.com/a", "bot") and not robots.allowed("https://e.com/b/1", "bot")
    assert robots._flags & _RULES_OUT and robots._rules is robots._group_for("bot")
    assert robots.body == records  # written back once each, where they were
    assert not robots.allowed("https://e.com/z", "other") and robots.allowed("https://e.com/a", "other")


@pytest.mark.parametrize("speedups", TIERS)
def test_a_second_agents_question_leaves_the_kept_records_as_the_first_made_them(speedups: bool) -> None:
    robots = parse(b"User-agent: *\nDisallow: /x\nUser-agent: bot\nDisallow: /y\nAllow: /y/ok\n" * 3,
                   speedups=speedups)
    robots.allowed("https://e.com/x", "Other")
    first, kept = robots._group_for("Other"), robots._source
    robots.allowed("https://e.com/y", "bot")
    assert robots._rules is first and robots._source == kept


@pytest.mark.parametrize("speedups", TIERS)
def test_a_group_with_records_but_no_rules_keeps_its_records(speedups: bool) -> None:
    robots = parse(b"User-agent: *\nDisallow: /x\nUser-agent: bot\nCrawl-delay: 5\n", speedups=speedups)
    assert robots.crawl_delay("bot") == 5.0 and robots.allowed("https://e.com/x", "bot")
    assert robots.body == b"useragent:*\ndisalow:/x\nuseragent:bot\ncrawldelay:5"  # the shortest keys


@pytest.mark.parametrize("speedups", TIERS)
def test_two_groups_whose_first_has_no_rule_keep_the_rules_of_the_second(speedups: bool) -> None:
    # An empty Disallow ends the agents' lines without a rule: the agent has two groups, the first empty.
    body = (b"User-agent: bot\nDisallow:\nUser-agent: *\nDisallow: /z\n"
            b"User-agent: bot\nDisallow: /b\nAllow: /b/ok\n")
    robots = parse(body, speedups=speedups)
    assert not robots.allowed("https://e.com/b/1", "bot") and robots.allowed("https://e.com/b/ok", "bot")
    assert robots.allowed("https://e.com/z", "bot")
    assert robots._flags & _RULES_OUT
    assert robots.body == utf8_octets(syntax.records_text(syntax.prepare(body, len(body))[0], speedups=False))
    assert not robots.allowed("https://e.com/z", "other") and robots.allowed("https://e.com/b/1", "other")


@pytest.mark.parametrize("speedups", TIERS)
def test_two_groups_with_records_and_no_rules_make_a_group(speedups: bool) -> None:
    robots = parse(b"User-agent: bot\nDisallow:\nUser-agent: *\nDisallow: /z\nUser-agent: bot\nCrawl-delay: 5\n",
                   speedups=speedups)
    assert robots.crawl_delay("bot") == 5.0 and robots.group_agents("bot") == "bot"
    assert robots.allowed("https://e.com/z", "bot") and not robots.allowed("https://e.com/z", "other")
