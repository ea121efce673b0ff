"""A parsed robots.txt keeps only its records after its first decision (see
``RobotsTxt.body``): every answer stays the one of a file that keeps its bytes, in
both tiers; a file made with ``keep_body`` (the ledger's) keeps its bytes as fetched."""

from __future__ import annotations

import tracemalloc
import zlib
from array import array
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy.settings import Settings
from test_properties import LINES, agents, robots_bytes, urls

from scrapy_rfc9309 import RobotsTxt, parse
from scrapy_rfc9309.config import Config
from scrapy_rfc9309.core import matcher, robots_body
from scrapy_rfc9309.core.matcher import Rule
from scrapy_rfc9309.core.product_tokens import product_token
from scrapy_rfc9309.core.robots_body import COMPRESS_AT_READ
from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState, Policy
from scrapy_rfc9309.core.syntax import (
    ALLOW,
    DISALLOW,
    MAX_LINE_BYTES,
    RULE_KEYS,
    SPECIAL,
    _c_records_text,
    first_question,
    prepare,
    records_text,
    reduce_body,
    reduce_octets,
    scan,
    select,
    select_records,
)
from scrapy_rfc9309.core.urls import utf8_octets
from scrapy_rfc9309.lifecycle.change_signal import ChangeNews
from scrapy_rfc9309.stores.record import decode, encode

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SAMPLE = sorted((Path(__file__).resolve().parent.parent / "benchmarks" / "corpus").iterdir())
ASKED = ["FooBot", "*", "", None, "Googlebot/2.1", b"bot\xff", "Scrapy/2.19 (+https://scrapy.org)", "GPTBot"]
NAMES = ["crawl-delay", "content-usage", "content-signal"]
TIERS = [True, False] if _c_records_text is not None else [False]


def answers(robots: RobotsTxt, urls: list[str], asked: list[str | bytes | None]) -> list[object]:
    """Everything a reader can ask of a file (other than its bytes)."""
    found: list[object] = [robots.sitemaps, robots.hosts, robots.agents, robots.size, robots.truncated]
    for agent in asked:
        found += [robots.group_agents(agent), robots.rules(agent), robots.crawl_delay(agent),
                  robots.has_usage(agent), [robots.records(agent, name) for name in NAMES]]
        for url in urls:
            found += [robots.allowed(url, agent), robots.verdict(url, agent), robots.deciding_rule(url, agent),
                      robots.usage(url, agent)]
    return found


def reduced_and_kept(body: bytes, speedups: bool, first: str | bytes | None) -> tuple[RobotsTxt, RobotsTxt]:
    url = "https://example.com/robots.txt"
    reduced = parse(body, speedups=speedups, url=url)
    kept = parse(body, speedups=speedups, url=url, keep_body=True)
    for robots in (reduced, kept):
        robots.allowed("https://example.com/some/page", first)
    assert reduced.reduced and not kept.reduced
    return reduced, kept


@SETTINGS
@given(body=robots_bytes, url_list=st.lists(urls, max_size=4), first=agents, more=st.lists(agents, max_size=3))
def test_a_reduced_file_answers_as_the_file_that_keeps_its_bytes(body, url_list, first, more):
    for speedups in TIERS:
        reduced, kept = reduced_and_kept(body, speedups, first)
        assert answers(reduced, url_list, [first, *more, *ASKED]) == answers(kept, url_list, [first, *more, *ASKED])


@SETTINGS
@given(body=robots_bytes, url_list=st.lists(urls, max_size=4), first=agents, more=st.lists(agents, max_size=3),
       as_read=st.booleans())
def test_a_file_read_for_its_records_first_answers_as_the_file_that_keeps_its_bytes(body, url_list, first, more,
                                                                                    as_read):
    """A body read for its records alone on its first question (from
    ``REDUCE_FIRST_FROM``), or reduced as it is read (from ``COMPRESS_AT_READ``),
    answers as the file that keeps its bytes, and gives back the same records: the
    two sizes made 0 here, so that every body goes that way."""
    with mock.patch.object(robots_body, "REDUCE_FIRST_FROM", 0), \
            mock.patch.object(robots_body, "COMPRESS_AT_READ", 0 if as_read else 10**9):
        for speedups in TIERS:
            reduced, kept = reduced_and_kept(body, speedups, first)
            assert reduced.body == kept.records_body
            asked = [first, *more, *ASKED]
            assert answers(reduced, url_list, asked) == answers(kept, url_list, asked)


@pytest.mark.skipif(reduce_octets is None, reason="the C accelerator is not built here")
def test_a_large_body_is_read_without_a_copy_or_its_text():
    """Reading a body of 128 KiB or more allocates little more than its records,
    and the first question on one of 16 KiB or more one buffer of its size, which
    becomes its records: no copy of the body and no text of it (freed, they would
    leave holes in the heap that the small objects allocated meanwhile keep
    resident). The state of the compressor, which its window bounds, is not
    counted."""
    page = "<p>caf\u00e9 \u65e5\u672c</p>\r\n".encode() + b"<div class='x'>" + b"y" * 60 + b"</div>\r\n"
    rules = b"User-agent: *\r\nDisallow: /private\r\nAllow: /private/ok\r\n\xff\xfe\r\n"
    peaks: list[int] = []
    compress = robots_body._compress

    def compress_apart(octets: bytes) -> bytes:
        peaks.append(tracemalloc.get_traced_memory()[1])
        packed = compress(octets)
        tracemalloc.reset_peak()
        return packed

    for size in (robots_body.COMPRESS_AT_READ, robots_body.REDUCE_FIRST_FROM):
        body = rules + page * (size // len(page) + 1)
        peaks.clear()
        tracemalloc.start()
        try:
            with mock.patch.object(robots_body, "_compress", compress_apart):
                robots = RobotsTxt(body)
                assert not robots.allowed("https://e.com/private/x", "bot")
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        bound = len(body) // 4 if size >= robots_body.COMPRESS_AT_READ else len(body) * 3 // 2
        assert max(peaks) < bound, (len(body), peaks)
        assert robots.allowed("https://e.com/private/ok", "bot")


@pytest.mark.skipif(reduce_octets is None, reason="the C accelerator is not built here")
@SETTINGS
@given(body=robots_bytes | st.lists(st.sampled_from([b"\xef\xbb\xbf", b"\xef\xbb", b"\xef", b"\r", b"\n", b"\r\n",
                                                      b"Disallow: /a", b"allow /b#c", b"\xff", b"x" * 9, b" \t"]),
                                     max_size=20).map(b"".join),
       max_bytes=st.integers(0, 400), max_line=st.integers(2, 12))
def test_a_body_is_reduced_alike_in_c_and_in_python(body, max_bytes, max_line):
    """The records read from the body in C are the ones of the parser's text: the
    first ``max_bytes`` octets, a BOM or its start skipped, CR LF, CR and LF each
    ending a line, each line cut at the parser's line limit (made small here)."""
    with mock.patch("scrapy_rfc9309.core.syntax.MAX_LINE_BYTES", max_line):
        for limit in (max_bytes, len(body)):
            assert reduce_body(body, limit) == reduce_body(body, limit, speedups=False)
            assert reduce_body(body, limit) == utf8_octets(records_text(prepare(body, limit)[0], speedups=False))


@SETTINGS
@given(body=robots_bytes, url_list=st.lists(urls, max_size=3), first=agents)
def test_a_reduced_file_gives_back_its_records_with_the_rules_it_left_out(body, url_list, first):
    """The kept records leave out the rules of the first agent's group (its
    matcher has them), and ``body`` writes them back: the records text of the
    file, for a copy too."""
    for speedups in TIERS:
        reduced, kept = reduced_and_kept(body, speedups, first)
        assert reduced.body == kept.records_body
        copy = reduced.copy()
        assert answers(copy, url_list, ["Googlebot", first]) == answers(kept, url_list, ["Googlebot", first])
        assert copy.body == reduced.body


@SETTINGS
@given(body=robots_bytes, data=st.data())
def test_the_records_text_is_the_same_in_c_and_in_python(body, data):
    text = prepare(body, len(body))[0]
    reduced = records_text(text, speedups=False)
    assert records_text(text) == reduced
    assert len(reduced) <= len(text)
    # Rules left out: empty lines, as many, written back as they were by the
    # matcher of those rules, in either tier.
    rules = [(kind % SPECIAL == ALLOW, value, line) for kind, value, line in scan(text, False)
             if kind % SPECIAL in (ALLOW, DISALLOW) and value]
    chosen = data.draw(st.lists(st.sampled_from(rules), unique=True) if rules else st.just([]))
    chosen.sort(key=lambda rule: rule[2])
    omit = array("I", [line << 1 | allow for allow, _value, line in chosen])
    without = records_text(text, speedups=False, omit=omit)
    assert records_text(text, omit=omit) == without
    assert without.count("\n") == reduced.count("\n")
    octets = utf8_octets(without)
    assert all(not octets.split(b"\n")[line - 1] for _allow, _value, line in chosen)
    patterns = [value for _allow, value, _line in chosen]
    for tier in TIERS:
        rules_matcher = matcher.compile_rules(patterns, omit, tier)
        assert rules_matcher.fill(octets, RULE_KEYS) == utf8_octets(reduced)


#: Hostile bytes: records among octets that are not UTF-8, NUL bytes, lines longer than
#: the parser reads (a record cut inside its value), with LF, CR-only or CR LF line ends.
_JUNK = st.one_of(
    st.binary(min_size=1, max_size=40).map(lambda octets: bytes(0x80 | octet for octet in octets)),
    st.integers(1, 300).map(lambda count: b"\x00" * count),
    st.sampled_from(LINES).map(lambda line: line + b"\x00/x\xff"),
    st.tuples(st.sampled_from([b"Disallow: /long", b"# ", b"", b"Allow: /"]),
              st.integers(MAX_LINE_BYTES - 20, MAX_LINE_BYTES + 20),
              st.sampled_from([b"x", b"\xe9", b"\x00", b"*"])).map(lambda t: t[0] + t[2] * t[1]),
)
hostile_bytes = st.lists(st.one_of(st.sampled_from(LINES), _JUNK), max_size=25).flatmap(
    lambda lines: st.sampled_from([b"\n", b"\r", b"\r\n"]).map(lambda eol: eol.join(lines)))


@SETTINGS
@given(body=st.one_of(robots_bytes, hostile_bytes), agent=agents)
def test_a_first_question_from_the_bytes_is_the_same_in_c_and_in_python(body, agent):
    """``first_question``: from the bytes as fetched (in C from their records, in one call;
    in Python from ``prepare``'s text), the groups ``select_records`` gives and its records
    as octets, on any bytes."""
    token = product_token(agent)
    key, groups, records = select_records(prepare(body, len(body))[0], token)
    for tier in TIERS:
        assert first_question(body, token, tier) == (key, groups, utf8_octets(records))


@SETTINGS
@given(body=st.one_of(robots_bytes, hostile_bytes), agent=agents)
def test_the_first_question_selects_and_keeps_the_same_records_in_c_and_in_python(body, agent):
    """``select_records`` (the groups and the records text without their rules, from one
    scan: a first question in pure Python) is ``select`` and ``records_text`` leaving out
    the rules of the groups given, as a first question does them in C, on any bytes."""
    text = prepare(body, len(body))[0]
    token = product_token(agent)
    key, groups, records = select_records(text, token)
    assert (key, groups) == select(text, token, speedups=False)
    omit = array("I", b"".join(group[1] for group in groups))
    assert records == records_text(text, speedups=False, omit=omit)
    if len(TIERS) == 2:
        assert select(text, token) == (key, groups)
        assert records_text(text, omit=omit) == records


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=hostile_bytes, url_list=st.lists(urls, max_size=3), first=agents)
def test_a_reduced_hostile_file_answers_as_the_file_that_keeps_its_bytes(body, url_list, first):
    for speedups in TIERS:
        reduced, kept = reduced_and_kept(body, speedups, first)
        assert answers(reduced, url_list, [first, *ASKED]) == answers(kept, url_list, [first, *ASKED])
        assert reduced.body == kept.records_body


def test_the_kept_records_leave_out_the_first_groups_rules():
    body = (b"User-agent: *\nDisallow: /private\nAllow: /private/%41\nDisallow: /private\n"
            b"User-agent: FooBot\nUser-agent: *\nDisallow: /shared*x$\n"
            b"User-agent: Other\nDisallow: /other\nSitemap: https://e.com/s.xml\n" + b"# padding\n" * 40)
    for speedups in TIERS:
        robots = parse(body, speedups=speedups)
        assert not robots.allowed("https://e.com/private/x", "bot")
        stored = zlib.decompress(robots._source, -15) if robots._flags & 1 else robots._source
        assert stored == (b"useragent:*\n\n\n\nuseragent:FooBot\nuseragent:*\n\n"
                          b"useragent:Other\ndisalow:/other\nsitemap:https://e.com/s.xml")
        assert robots.body == parse(body).records_body
        assert robots.rules("bot") == [Rule(False, "/private", 2), Rule(True, "/private/%41", 3),
                                       Rule(False, "/private", 4), Rule(False, "/shared*x$", 7)]
        assert robots.verdict("https://e.com/private/A", "bot").rule == Rule(True, "/private/%41", 3)
        assert robots.rules("FooBot") == [Rule(False, "/shared*x$", 7)]
        assert robots.rules("Other") == [Rule(False, "/other", 9)]
        assert robots.sitemaps == ["https://e.com/s.xml"]


@pytest.mark.parametrize("speedups", TIERS)
@pytest.mark.parametrize("path", SAMPLE, ids=lambda path: path.name)
def test_real_files_answer_the_same_reduced(path, speedups):
    body = path.read_bytes()
    reduced, kept = reduced_and_kept(body, speedups, "Scrapy/2.19 (+https://scrapy.org)")
    url_list = [f"https://{path.name}/", f"https://{path.name}/wp-admin/x?y=1", f"https://{path.name}/search?q=a"]
    assert answers(reduced, url_list, ASKED) == answers(kept, url_list, ASKED)
    assert kept.body == body
    assert len(reduced.body) < len(body)


def test_the_body_is_the_records_only_after_the_first_decision():
    body = (b"# A comment\r\nUser-Agent : FooBot  # a bot\r\nDISALLOW /private\r\n\r\nfoo: bar\r\n"
            b"Sitemap: https://e.com/s.xml\r\nuser-agent: *\r\nAllow: /a*b$\r\nCrawl-delay: 5\r\n")
    robots = parse(body)
    assert robots.body == body and not robots.reduced
    assert not robots.allowed("https://e.com/private", "FooBot")
    assert robots.reduced
    assert robots.body == (b"\nuseragent:FooBot\ndisalow:/private\n\n\nsitemap:https://e.com/s.xml\n"
                           b"useragent:*\nallow:/a*b$\ncrawldelay:5")
    assert str(robots.verdict("https://e.com/private", "FooBot").rule) == "Disallow: /private, line 3"


def test_a_file_made_to_keep_its_body_keeps_its_bytes_as_fetched():
    body = b"# comment\nUser-agent: *\nDisallow: /x\n" * 20
    robots = parse(body, keep_body=True)
    assert not robots.allowed("https://e.com/x", "bot")
    assert robots.body == body and not robots.reduced


@pytest.mark.parametrize("keep_body", [False, True])
def test_a_large_file_is_reduced_as_it_is_read_unless_it_keeps_its_body(keep_body):
    filler = COMPRESS_AT_READ // 9 + 1
    body = b"User-agent: *\nDisallow: /x\n" + b"# filler\n" * filler + b"Sitemap: /s.xml\n"
    robots = RobotsTxt(body, keep_body=keep_body, url="https://e.com/robots.txt")
    assert robots.reduced is not keep_body
    assert len(robots._source) < 2000  # compressed either way
    if keep_body:
        assert robots.body == body
    else:
        assert robots.body == b"useragent:*\ndisalow:/x" + b"\n" * (filler + 1) + b"sitemap:/s.xml"
    assert not robots.allowed("https://e.com/x", "bot")
    assert robots.sitemaps == ["https://e.com/s.xml"]


# -- What an origin's state keeps: the ledger's bytes and header lines only with the ledger --------------

HEADERS = ((b"Content-Type", b"text/plain"), (b"Server", b"test"))
BODY = b"# comment\nUser-agent: *\nDisallow: /private\nSitemap: https://h/s.xml\n" * 12


def fetched(access: Access = Access.PARSED, status: int = 200) -> FetchOutcome:
    return FetchOutcome(access, "https://h/robots.txt", status, BODY if access is Access.PARSED else b"",
                        headers=HEADERS)


@pytest.mark.parametrize("access,status", [(Access.PARSED, 200), (Access.UNAVAILABLE, 404),
                                           (Access.UNREACHABLE, 503)])
def test_a_state_keeps_the_response_header_lines_only_for_the_ledger(access, status):
    kept = OriginState.initial(fetched(access, status), 1.0, Policy(keep_fetched=True))
    assert kept.outcome is not None and kept.outcome.headers == HEADERS
    state = OriginState.initial(fetched(access, status), 1.0, Policy())
    assert state.outcome is not None and state.outcome.headers == ()
    if access is Access.PARSED:
        assert state.good_fetch is not None and state.good_fetch.headers == ()
        assert kept.good_fetch is not None and kept.good_fetch.headers == HEADERS


@pytest.mark.parametrize("keep_fetched", [False, True])
def test_a_good_copy_keeps_its_bytes_as_fetched_only_for_the_ledger(keep_fetched):
    policy = Policy(keep_fetched=keep_fetched)
    state = OriginState.initial(fetched(), 1.0, policy)
    assert state.good_body == BODY
    assert state.robots is not None and not state.robots.allowed("https://h/private", "bot")
    assert (state.good_body == BODY) is keep_fetched
    # A copy read back from a store keeps its bytes as this process needs them.
    loaded = decode(encode(state, policy), policy, state.fetched_at)
    assert loaded.robots is not None and not loaded.robots.allowed("https://h/private", "bot")
    assert loaded.robots.reduced is not keep_fetched
    assert loaded.robots.sitemaps == ["https://h/s.xml"]


@pytest.mark.parametrize("ledger,keep", [(None, False), ("", False), ("/tmp/ledger", True)])
def test_the_policy_keeps_what_was_fetched_when_the_ledger_is_on(ledger, keep):
    assert Config.from_settings(Settings({"ROBOTSTXT_LEDGER": ledger})).policy.keep_fetched is keep


# -- A refetch compared with the reduced copy it replaces ------------------------------------------------


def refetched(body: bytes, previous: OriginState) -> OriginState:
    return previous.apply(FetchOutcome(Access.PARSED, "https://h/robots.txt", 200, body), 2.0, Policy())


def test_a_changed_refetch_is_told_against_the_reduced_copy_and_stays_unasked():
    news = ChangeNews(None, ["bot"], "bot")  # type: ignore[arg-type]
    old = OriginState.initial(fetched(), 1.0, Policy())
    assert old.robots is not None and not old.robots.allowed("https://h/private", "bot") and old.robots.reduced
    same = refetched(BODY.replace(b"# comment", b"# another comment"), old)
    assert news.between(old, same) is None  # the same records
    changed = refetched(BODY.replace(b"/private", b"/secret"), old)
    change = news.between(old, changed)
    assert change is not None
    assert [(agent.added, agent.removed) for agent in change.agents] == [
        ((("Disallow", "/secret"),), (("Disallow", "/private"),))]
    # The new copy is as fetched still, for the store that keeps it next.
    assert changed.robots is not None and not changed.robots.reduced
    assert changed.good_body == BODY.replace(b"/private", b"/secret")


def test_a_copy_is_asked_without_changing_its_file():
    robots = parse(BODY)
    copy = robots.copy()
    assert not copy.allowed("https://h/private", "bot") and copy.reduced
    assert not robots.reduced and robots.body == BODY
    assert robots.records_body == copy.body == copy.records_body
    assert copy.sitemaps == robots.sitemaps and copy.size == robots.size
