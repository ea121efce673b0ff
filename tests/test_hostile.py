"""Correct answers on hostile input. No timing assertions here: only the answers."""

from __future__ import annotations

import random
import string
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import RobotsTxt, Rule, parse
from scrapy_rfc9309.core.matcher import Matcher
from scrapy_rfc9309.core.syntax import DEFAULT_MAX_BYTES, MAX_LINE_BYTES, has_long_line, parse_body

URL = "https://www.example.com"


def both_tiers(rt: RobotsTxt, url: str, agent: str = "FooBot") -> bool:
    """The decision (of the C accelerator when it is built), checked against
    ``verdict`` and against the pure-Python matcher on the same file."""
    first = rt.allowed(url, agent)
    assert rt.verdict(url, agent).allowed == first
    body = rt.body
    assert parse(body, max(len(body), DEFAULT_MAX_BYTES), speedups=False).allowed(url, agent) == first
    return first


# -- Wildcards -----------------------------------------------------------------------------


def test_thirty_wildcards_against_a_long_near_miss() -> None:
    pattern = "/" + "a*" * 30 + "b"
    rt = parse(f"User-agent: FooBot\nDisallow: {pattern}\n")
    assert both_tiers(rt, URL + "/" + "a" * 2000)  # no "b": no match
    assert both_tiers(rt, URL + "/" + "a" * 2000 + "c")
    assert not both_tiers(rt, URL + "/" + "a" * 2000 + "b")
    assert not both_tiers(rt, URL + "/" + "a" * 30 + "b")
    assert both_tiers(rt, URL + "/" + "a" * 29 + "b")  # 30 "a" needed
    assert not both_tiers(rt, URL + "/" + "ax" * 30 + "b")


def test_thirty_wildcards_anchored() -> None:
    pattern = "/" + "*a" * 30 + "$"
    rt = parse(f"User-agent: FooBot\nDisallow: {pattern}\n")
    assert both_tiers(rt, URL + "/" + "a" * 2000 + "b")  # does not end in "a"
    assert not both_tiers(rt, URL + "/" + "a" * 2000)
    assert both_tiers(rt, URL + "/" + "a" * 29)
    assert not both_tiers(rt, URL + "/" + "ba" * 30)


def test_many_pieces_with_a_long_near_miss() -> None:
    pattern = "/*" + "ab*" * 30 + "abc"
    rt = parse(f"User-agent: FooBot\nDisallow: {pattern}\n")
    assert both_tiers(rt, URL + "/" + "ab" * 2000)
    assert not both_tiers(rt, URL + "/" + "ab" * 2000 + "c")
    assert both_tiers(rt, URL + "/" + "ab" * 30 + "c")  # the last "ab" of abc must be a 31st
    assert not both_tiers(rt, URL + "/" + "ab" * 31 + "c")


def test_many_wildcard_rules() -> None:
    # More wildcard rules than the single-regex tier takes: the first tier answers.
    rules = [f"Disallow: /*{letter}*{letter}{letter}$" for letter in string.ascii_lowercase]  # 7 octets
    rules += [f"Allow: /*{letter * 4}$" for letter in string.ascii_lowercase]  # 7 octets
    rules += [f"Disallow: /{letter}*/x*" for letter in string.ascii_lowercase * 2]
    rt = parse("User-agent: FooBot\n" + "\n".join(rules) + "\n")
    assert not both_tiers(rt, URL + "/q-long-path-q-qq")
    assert both_tiers(rt, URL + "/q-long-path-qqqq")  # both match with 7 octets: allow wins
    assert both_tiers(rt, URL + "/q-long-path-qq-")
    assert not both_tiers(rt, URL + "/zebra/x")
    assert rt.verdict(URL + "/m-mmmm", "FooBot").rule == Rule(True, "/*mmmm$", 40)


def test_wildcard_rule_with_a_huge_pattern() -> None:
    piece = "p" * 5000
    rt = parse(f"User-agent: FooBot\nDisallow: /{piece}*{piece}$\n")
    assert not both_tiers(rt, f"{URL}/{piece}{piece}")
    assert not both_tiers(rt, f"{URL}/{piece}x{piece}")
    assert both_tiers(rt, f"{URL}/{piece}{piece[:-1]}")
    assert both_tiers(rt, f"{URL}/{piece}{piece}x")


# -- Many rules and groups ----------------------------------------------------------------


def test_twenty_thousand_rules() -> None:
    lines = ["User-agent: FooBot"]
    lines += [f"Disallow: /p{index}/" for index in range(20_000)]
    lines += [f"Allow: /p{index}/ok" for index in range(0, 20_000, 7)]
    rt = parse("\n".join(lines) + "\n")
    assert not rt.truncated
    assert not both_tiers(rt, URL + "/p0/x")
    assert not both_tiers(rt, URL + "/p19999/x")
    assert both_tiers(rt, URL + "/p20000/x")
    assert both_tiers(rt, URL + "/p1/ok") is False  # 1 is not a multiple of 7
    assert both_tiers(rt, URL + "/p7/ok")
    assert both_tiers(rt, URL + "/p19999/ok")  # 19999 = 7 * 2857
    assert both_tiers(rt, URL + "/p19998/ok") is False
    assert both_tiers(rt, URL + "/p19600/ok/more")
    assert both_tiers(rt, URL + "/p1")
    assert both_tiers(rt, URL + "/q")
    assert rt.verdict(URL + "/p19999/x", "FooBot").rule == Rule(False, "/p19999/", 20_001)
    assert rt.verdict(URL + "/p14/ok", "FooBot").rule == Rule(True, "/p14/ok", 20_004)


def test_nested_literal_rules() -> None:
    # Each rule is a prefix of the next (900 of them fill 400 KB), Disallow and Allow in turn.
    lines = ["User-agent: FooBot"]
    lines += [f"{'Disallow' if depth % 2 else 'Allow'}: /{'d' * depth}" for depth in range(1, 901)]
    rt = parse("\n".join(lines) + "\n")
    assert not rt.truncated
    assert not both_tiers(rt, URL + "/d")
    assert both_tiers(rt, URL + "/dd")
    assert not both_tiers(rt, URL + "/" + "d" * 899 + "x")
    assert both_tiers(rt, URL + "/" + "d" * 900)
    assert both_tiers(rt, URL + "/" + "d" * 30_000)
    assert both_tiers(rt, URL + "/x")
    assert rt.verdict(URL + "/" + "d" * 777, "FooBot").rule == Rule(False, "/" + "d" * 777, 778)


def test_deep_literal_rules_in_the_single_regex_tier() -> None:
    # Few, long rules: deep tries, close to and beyond the depth the fast tier takes.
    rules = [f"Disallow: /{'ab' * n}" for n in range(1, 100, 3)]
    rules += [f"Allow: /{'ab' * n}c" for n in range(1, 100, 3)]
    rt = parse("User-agent: FooBot\n" + "\n".join(rules) + "\n")
    for n in range(100):
        path = "/" + "ab" * n
        assert both_tiers(rt, URL + path) is (n == 0), n
        # "/ab...abc" is allowed by its own Allow rule, else disallowed by the longest "/ab...ab".
        assert both_tiers(rt, URL + path + "c") is (n == 0 or n % 3 == 1), n


def letters(index: int) -> str:
    """``index`` written with letters only (product tokens cannot hold digits)."""
    out = ""
    while True:
        index, digit = divmod(index, 26)
        out += string.ascii_lowercase[digit]
        if index == 0:
            return out


def test_twenty_thousand_groups() -> None:
    lines = []
    for index in range(20_000):
        lines += [f"User-agent: bot{letters(index)}x", f"Disallow: /{index}/", ""]
    lines += ["User-agent: *", "Disallow: /star/"]
    rt = parse("\n".join(lines), max_bytes=4_000_000)  # about 700 KB
    assert not rt.truncated
    assert len(rt.agents) == 20_001
    for index in (0, 1, 25, 26, 9_999, 19_999):
        agent = f"bot{letters(index)}x"
        assert not both_tiers(rt, f"{URL}/{index}/page", agent)
        assert both_tiers(rt, f"{URL}/{index + 1}/page", agent)
        assert both_tiers(rt, f"{URL}/star/", agent)
    assert not both_tiers(rt, f"{URL}/star/", "OtherBot")
    assert both_tiers(rt, f"{URL}/0/", "OtherBot")


def test_twenty_thousand_groups_of_one_agent_are_merged() -> None:
    lines = []
    for index in range(20_000):
        lines += ["User-agent: FooBot", f"Disallow: /{index}/", "User-agent: BarBot", f"Allow: /{index}/"]
    rt = parse("\n".join(lines) + "\n", max_bytes=4_000_000)  # about 1.4 MB
    assert not rt.truncated
    assert rt.agents == ["foobot", "barbot"]
    assert not both_tiers(rt, f"{URL}/19999/")
    assert both_tiers(rt, f"{URL}/20000/")
    assert rt.verdict(f"{URL}/19999/", "FooBot").rule == Rule(False, "/19999/", 79_998)


def test_twenty_thousand_user_agent_lines_in_one_group() -> None:
    lines = [f"User-agent: bot{letters(index)}x" for index in range(20_000)]
    lines += ["Disallow: /shared/"]
    rt = parse("\n".join(lines) + "\n", max_bytes=4_000_000)
    assert not rt.truncated
    assert not both_tiers(rt, f"{URL}/shared/", "botax")
    assert not both_tiers(rt, f"{URL}/shared/", f"bot{letters(19_999)}x")
    assert both_tiers(rt, f"{URL}/shared/", "OtherBot")


# -- Odd bytes ------------------------------------------------------------------------------


def test_nul_bytes() -> None:
    body = (
        b"\x00\x00\x00\n"
        b"User-agent: FooBot\x00\n"
        b"Disallow: /a\x00b\n"
        b"Disa\x00llow: /d\n"
        b"Disallow: /c\n"
        b"\x00User-agent: BarBot\n"
        b"Disallow: /no-bar\n"
    )
    rt = parse(body)
    assert not both_tiers(rt, URL + "/a%00b")
    assert both_tiers(rt, URL + "/a")
    assert both_tiers(rt, URL + "/d")  # the line with a NUL in its field name is no rule
    assert not both_tiers(rt, URL + "/c")
    assert rt.verdict(URL + "/c", "FooBot").rule == Rule(False, "/c", 5)
    # "\x00User-agent" is no user-agent line: the rule after it is FooBot's.
    assert both_tiers(rt, URL + "/no-bar", "BarBot")
    assert not both_tiers(rt, URL + "/no-bar")
    assert rt.agents == ["foobot"]
    assert parse(b"\x00" * 100_000).allowed(URL + "/", "FooBot")


def test_cr_only_file() -> None:
    lines = ["User-agent: FooBot"] + [f"Disallow: /r{index}" for index in range(5_000)] + ["Allow: /r1/ok"]
    rt = parse("\r".join(lines))
    assert not both_tiers(rt, URL + "/r4999")
    assert not both_tiers(rt, URL + "/r1/x")
    assert both_tiers(rt, URL + "/r1/ok")
    assert both_tiers(rt, URL + "/s")
    assert rt.verdict(URL + "/r4999", "FooBot").rule == Rule(False, "/r4999", 5_001)


def test_only_line_ends() -> None:
    for body in (b"\r" * 100_000, b"\n" * 100_000, b"\r\n" * 50_000, b"\n\r" * 50_000):
        rt = parse(body)
        assert rt.agents == []
        assert rt.allowed(URL + "/", "FooBot")


def test_lone_surrogates_in_str_input_do_not_raise() -> None:
    # A str body or URL may hold lone surrogates (e.g. from a lenient JSON or
    # "surrogatepass" decoder); parse() is documented never to raise on any content.
    rt = parse("User-agent: FooBot\nDisallow: /\ud800\nDisallow: /x\n")
    assert not rt.allowed(URL + "/x", "FooBot")
    rt = parse("User-agent: FooBot\nDisallow: /x\n")
    assert rt.allowed(URL + "/\udfff", "FooBot")
    assert rt.verdict(URL + "/\ud800", "FooBot").allowed


# -- Huge inputs -----------------------------------------------------------------------------


def test_one_megabyte_url() -> None:
    body = "User-agent: FooBot\nDisallow: /a\nAllow: /*b$\nDisallow: /*c*d$\n"
    rt = parse(body)
    long_a = "a" * 1_000_000
    long_e = "\u00e9" * 300_000
    assert not both_tiers(rt, f"{URL}/{long_a}")
    assert both_tiers(rt, f"{URL}/{long_a}b")
    assert not both_tiers(rt, f"{URL}/{long_a}bx")
    assert not both_tiers(rt, f"{URL}/{long_a}c{long_a}d")
    assert both_tiers(rt, f"{URL}/x{long_a}")
    assert not both_tiers(rt, f"{URL}/{'%61' * 333_333}")  # canonical "/aaa..."
    assert not both_tiers(rt, f"{URL}/{long_a}?{long_a}#{long_a}")
    assert both_tiers(rt, f"{URL}/{long_a}b#{long_a}")  # the fragment is not part of the path
    assert both_tiers(rt, f"{URL}/{long_e}")
    assert not both_tiers(rt, f"{URL}/{long_e}c{long_e}d")


def test_one_megabyte_url_with_many_wildcard_rules() -> None:
    rules = "\n".join(f"Disallow: /*{'x' * n}*y{'x' * n}$" for n in range(1, 40))
    rt = parse(f"User-agent: FooBot\n{rules}\n")
    assert both_tiers(rt, f"{URL}/{'x' * 1_000_000}")
    assert not both_tiers(rt, f"{URL}/{'x' * 500_000}y{'x' * 39}")
    assert both_tiers(rt, f"{URL}/{'x' * 500_000}y")


def test_five_megabyte_body() -> None:
    head = b"User-agent: FooBot\nDisallow: /top\nAllow: /top/open\n"
    filler = b"Disallow: /filler/" + b"f" * 80 + b"\n"
    body = head + filler * (5 * 1024 * 1024 // len(filler)) + b"User-agent: BarBot\nDisallow: /bottom\n"
    assert len(body) > 5_000_000
    rt = parse(body)
    assert rt.truncated is True
    assert rt.size == len(body)
    assert not both_tiers(rt, URL + "/top/x")
    assert both_tiers(rt, URL + "/top/open")
    assert not both_tiers(rt, URL + "/filler/" + "f" * 80)
    assert both_tiers(rt, URL + "/bottom", "BarBot")  # past the limit
    assert rt.agents == ["foobot"]


def test_five_megabyte_single_line() -> None:
    body = b"User-agent: FooBot\nDisallow: /top\nDisallow: /" + b"z" * (5 * 1024 * 1024)
    rt = parse(body)
    assert rt.truncated is True
    assert not both_tiers(rt, URL + "/top")
    assert not both_tiers(rt, URL + "/" + "z" * 20_000)  # the long rule, cut
    assert both_tiers(rt, URL + "/" + "z" * 100)


def test_thousands_of_user_agent_lines_then_thousands_of_crawl_delays() -> None:
    """One block of 15,000 user-agent lines followed by as many Crawl-delay lines
    (under the 500 KiB limit): every token of the block gets the delay, others do not."""
    names = [a + b + c for a in string.ascii_lowercase for b in string.ascii_lowercase for c in string.ascii_lowercase]
    names = names[:15000]
    body = "".join(f"User-agent: x{name}\n" for name in names) + "Crawl-delay: 3\n" * len(names) + "Disallow: /x\n"
    rt = parse(body)
    assert not rt.truncated
    assert rt.crawl_delay("xaaa") == 3.0
    assert rt.crawl_delay(f"x{names[-1]}") == 3.0
    assert rt.crawl_delay("OtherBot") is None
    assert len(rt.records("xmmm", "crawl-delay")) == len(names)
    assert not rt.allowed(URL + "/x", "xmmm")


def test_long_lines_are_found_wherever_they_are() -> None:
    """The long-line check looks at a few blocks only; it must find every line over
    the limit, and only those (the reference: split the body and measure)."""
    rng = random.Random(9309)
    for _ in range(400):
        size = rng.randrange(MAX_LINE_BYTES, 4 * MAX_LINE_BYTES)
        body = bytearray(b"a" * size)
        for _ in range(rng.randrange(0, 6)):
            body[rng.randrange(size)] = 10
        want = max(map(len, bytes(body).split(b"\n"))) > MAX_LINE_BYTES
        assert has_long_line(bytes(body)) == want


PIECES = [b"User-agent: a\n", b"User-agent: *\r", b"Disallow: /x\r\n", b"Allow: /x/y\n", b"\xef\xbb\xbf", b"\r",
          b"#" * 9000, b"Disallow: /" + b"z" * 9000, b"Disallow: /zz\n", b"\n"]


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), max_size=14))
def test_a_file_kept_as_the_parser_reads_it_answers_as_the_whole_parse(parts: list[bytes]) -> None:
    """Long lines (and CR-only line ends, BOMs) make the file be kept as the parser
    reads it: its answers, and those of its kept bytes parsed again, are the
    answers of one whole parse of the original bytes."""
    body = b"".join(parts)
    rt = parse(body)
    again = parse(rt.body)
    whole = parse_body(body)
    for path in ("/x", "/x/y", "/zz", "/" + "z" * 9000, "/" + "z" * 20000):
        for agent in ("a", "b"):
            key = "a" if agent == "a" and "a" in whole.by_token else "*" if "*" in whole.by_token else ""
            groups = whole.by_token.get(key, [])
            patterns = [p for group in groups for p in group.patterns]
            codes = array("I", [c for group in groups for c in group.codes])
            want = Matcher(patterns, codes).allowed(URL + path)
            assert rt.allowed(URL + path, agent) == again.allowed(URL + path, agent) == want, (path, agent)


# -- A first question's own steps in C (issue 42) ----------------------------------------------


def test_literal_rules_written_with_escapes_or_undecodable_bytes_key_the_c_matcher_as_urls_does() -> None:
    """The C matcher makes the key of a literal rule written with ``%`` or non-ASCII
    text itself (no Python call on a file's first question): the same key as
    ``urls.canonical_path``, for escapes kept or decoded, in the path and the query,
    raw UTF-8, bytes that are not UTF-8, and a ``%`` that starts no escape."""
    from scrapy_rfc9309.core import matcher
    from scrapy_rfc9309.core.urls import canonical_path

    if matcher.FastMatcher is None:  # the pure-Python matcher keys them with canonical_path itself
        return
    patterns = ["/caf\udce9", "/a%2fb%41", "/\u00e9t\u00e9?x=%2F&y=%2f", "/%zz%4", "/\udcff\udcfe/bad",
                "/%7Euser/%e9", "/\u65e5\u672c?q=%3a%3F", "/p%", "/x%2", "/q?%23%25"]
    codes = array("I", [(line << 1) | (line % 2) for line in range(1, len(patterns) + 1)])
    fast = matcher.compile_rules(patterns, codes)
    assert type(fast) is matcher.FastMatcher
    for pattern, code in zip(patterns, codes, strict=True):
        key = canonical_path(pattern)
        rule = Rule(bool(code & 1), pattern, code >> 1)
        assert fast.best_rule(key) == rule, pattern
        assert fast.best_rule(key + "/more") == rule, pattern  # a literal prefixes the path
        assert fast.best_rule(key[:-1]) != rule, pattern  # ... and only a path it prefixes


def test_codes_as_octets_or_as_an_array_give_one_matcher_and_one_records_text() -> None:
    """A first question hands the C matcher and the records writer a group's codes as
    ``select`` gives them (octets), without an array: the same answers as with one."""
    from scrapy_rfc9309.core import matcher, syntax

    text = syntax.prepare(b"User-agent: *\nDisallow: /a\nAllow: /a/b\n# c\nDisallow: /c*d\nSitemap: /s\n",
                          DEFAULT_MAX_BYTES)[0]
    key, groups = syntax.select(text, "foo")
    patterns, codes, special, _records = groups[0]
    assert key == "*" and type(codes) is bytes
    as_array = array("I", codes)
    for speedups in (True, False):
        from_octets = matcher.compile_rules(patterns, codes, speedups, special)
        from_array = matcher.compile_rules(patterns, as_array, speedups, array("I", special))
        assert from_octets.written() == from_array.written() == [
            Rule(False, "/a", 2), Rule(True, "/a/b", 3), Rule(False, "/c*d", 5)]
        for path in ("/a", "/a/b", "/a/c", "/cxd", "/x"):
            assert from_octets.best_rule(path) == from_array.best_rule(path), path
        records = syntax.records_text(text, speedups, None, codes)
        assert records == syntax.records_text(text, speedups, None, as_array) == "useragent:*\n\n\n\n\nsitemap:/s"


def test_the_scanner_reads_a_changed_key_list_again() -> None:
    """The C scanner keeps the table of the key list it read last (a file's first
    question scans three times with one list); a different list, or the same list
    changed, is read again."""
    from scrapy_rfc9309.core import syntax

    if syntax.scan_lines is None:
        return
    text = "Disallow: /x\nAllow: /y\n"
    keys = list(syntax._KEY_LIST)
    assert syntax.scan_lines(text, keys) == [(syntax.DISALLOW, "/x", 1), (syntax.ALLOW, "/y", 2)]
    keys[keys.index(("allow", syntax.ALLOW))] = ("allow", syntax.HOST)  # the same list, one pair changed
    assert syntax.scan_lines(text, keys) == [(syntax.DISALLOW, "/x", 1), (syntax.HOST, "/y", 2)]
    swapped = [(name, {syntax.ALLOW: syntax.DISALLOW, syntax.DISALLOW: syntax.ALLOW}.get(kind, kind))
               for name, kind in syntax._KEY_LIST]
    assert syntax.scan_lines(text, swapped) == [(syntax.ALLOW, "/x", 1), (syntax.DISALLOW, "/y", 2)]
    assert syntax.scan_lines(text, syntax._KEY_LIST) == [(syntax.DISALLOW, "/x", 1), (syntax.ALLOW, "/y", 2)]
