"""Verdicts with their deciding rule, and the other records: Crawl-delay,
Sitemap and group records such as Content-Usage."""

from __future__ import annotations

import pytest

from scrapy_rfc9309 import Rule, Verdict, parse

URL = "https://www.example.com"

BODY_LINES = [
    "# robots.txt for www.example.com",  # 1
    "",  # 2
    "User-agent: FooBot",  # 3
    "Disallow: /private/  # keep out",  # 4
    "Allow: /private/%70ublic",  # 5
    "Disallow: /*.PDF$",  # 6
    "",  # 7
    "User-agent: *",  # 8
    "Disallow: /tmp",  # 9
]


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("bom", ["", "\ufeff"], ids=["no-bom", "bom"])
def test_verdict_reports_the_rule_as_written_with_its_line(eol: str, bom: str) -> None:
    rt = parse((bom + eol.join(BODY_LINES) + eol).encode())
    verdict = rt.verdict(URL + "/private/secret", "FooBot")
    assert verdict == Verdict(False, Rule(False, "/private/", 4), "foobot", "/private/secret")
    verdict = rt.verdict(URL + "/private/public/page", "FooBot")
    assert verdict == Verdict(True, Rule(True, "/private/%70ublic", 5), "foobot", "/private/public/page")
    verdict = rt.verdict(URL + "/docs/a.PDF", "FooBot")
    assert verdict == Verdict(False, Rule(False, "/*.PDF$", 6), "foobot", "/docs/a.PDF")
    verdict = rt.verdict(URL + "/tmp/x", "OtherBot")
    assert verdict == Verdict(False, Rule(False, "/tmp", 9), "*", "/tmp/x")


def test_verdict_without_a_matching_rule() -> None:
    rt = parse("\n".join(BODY_LINES))
    verdict = rt.verdict(URL + "/public", "FooBot")
    assert verdict.allowed is True
    assert verdict.rule is None
    assert verdict.token == "foobot"
    assert verdict.path == "/public"
    assert bool(verdict) is True
    assert str(verdict) == "no rule matched"


def test_verdict_when_no_group_applies() -> None:
    rt = parse("User-agent: FooBot\nDisallow: /\n")
    verdict = rt.verdict(URL + "/x", "BarBot")
    assert verdict == Verdict(True, None, "", "/x")
    assert str(verdict) == "no group applies"


def test_verdict_for_robots_txt() -> None:
    rt = parse("User-agent: *\nDisallow: /\n")
    verdict = rt.verdict(URL + "/robots.txt", "FooBot")
    assert verdict == Verdict(True, None, "*", "/robots.txt")
    assert "always allowed" in str(verdict)


def test_verdict_is_falsy_when_disallowed() -> None:
    rt = parse("User-agent: *\nDisallow: /x\n")
    verdict = rt.verdict(URL + "/x", "FooBot")
    assert not verdict
    assert str(verdict) == "Disallow: /x, line 2"
    assert verdict.rule is not None
    assert verdict.rule.directive == "Disallow"
    assert str(parse("User-agent: *\nAllow: /y\n").verdict(URL + "/y", "FooBot")) == "Allow: /y, line 2"


def test_verdict_line_numbers_count_comments_and_blank_lines() -> None:
    body = "# one\n\n#three\n   \nUser-agent: FooBot # five\n# six\nDisallow: /seven\n\n\nAllow: /seven/ten\n"
    rt = parse(body)
    assert rt.verdict(URL + "/seven", "FooBot").rule == Rule(False, "/seven", 7)
    assert rt.verdict(URL + "/seven/ten", "FooBot").rule == Rule(True, "/seven/ten", 10)


def test_verdict_line_numbers_with_invalid_lines_and_long_lines() -> None:
    body = b"User-agent: FooBot\n\xff\xfe garbage\n" + b"#" * 20_000 + b"\nnot a record\nDisallow: /five\n"
    rt = parse(body)
    assert rt.verdict(URL + "/five", "FooBot").rule == Rule(False, "/five", 5)


def test_verdict_for_merged_groups_reports_the_line_in_its_own_group() -> None:
    body = "User-agent: FooBot\nDisallow: /a\n\nUser-agent: BarBot\nDisallow: /\n\nUser-agent: foobot\nDisallow: /b\n"
    rt = parse(body)
    assert rt.verdict(URL + "/a", "FooBot").rule == Rule(False, "/a", 2)
    assert rt.verdict(URL + "/b", "FooBot").rule == Rule(False, "/b", 8)


def test_verdict_for_duplicate_rules_reports_a_rule_as_written() -> None:
    body = "User-agent: FooBot\nDisallow: /a\nDisallow: /%61\nAllow: /%61\n"
    rt = parse(body)
    verdict = rt.verdict(URL + "/a", "FooBot")
    assert verdict.allowed
    assert verdict.rule == Rule(True, "/%61", 4)


def test_verdict_reports_the_longest_match() -> None:
    body = "User-agent: *\nDisallow: /\nAllow: /a\nDisallow: /a*c\nAllow: /a*c$\nDisallow: /abcd\n"
    rt = parse(body)
    assert rt.verdict(URL + "/x", "Bot").rule == Rule(False, "/", 2)
    assert rt.verdict(URL + "/ab", "Bot").rule == Rule(True, "/a", 3)
    assert rt.verdict(URL + "/abcx", "Bot").rule == Rule(False, "/a*c", 4)
    assert rt.verdict(URL + "/abc", "Bot").rule == Rule(True, "/a*c$", 5)
    assert rt.verdict(URL + "/abcde", "Bot").rule == Rule(False, "/abcd", 6)



@pytest.mark.parametrize("speedups", [True, False])
@pytest.mark.parametrize(
    ("path", "agent"),
    [("/x", "Bot"), ("/ab", "Bot"), ("/abcx", "Bot"), ("/abc", "Bot"), ("/abcde", "Bot"), ("/robots.txt", "Bot"),
     ("/private/secret", "FooBot"), ("/private/public/page", "FooBot"), ("/docs/a.PDF", "FooBot"),
     ("/docs/a.pdf", "FooBot"), ("/tmp/x", "OtherBot"), ("/open", "OtherBot")],
)
def test_deciding_rule_is_the_verdicts_rule(path: str, agent: str, speedups: bool) -> None:
    """The ledger records ``deciding_rule``'s answer for each request it allows: it is
    the rule of ``verdict``, None where none matched, for str and bytes URLs."""
    body = ("User-agent: *\nDisallow: /\nAllow: /a\nDisallow: /a*c\nAllow: /a*c$\nDisallow: /abcd\n"
            if agent == "Bot" else "\n".join(BODY_LINES))
    rt = parse(body, speedups=speedups)
    verdict = rt.verdict(URL + path, agent)
    assert rt.deciding_rule(URL + path, agent) == verdict.rule
    assert rt.deciding_rule((URL + path).encode(), agent) == verdict.rule
    assert verdict.allowed is (verdict.rule is None or verdict.rule.allow)

@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://www.example.com", "/"),
        ("https://www.example.com/", "/"),
        ("https://www.example.com?q=1", "/?q=1"),
        ("https://www.example.com/a/b?q=1#frag", "/a/b?q=1"),
        ("https://www.example.com#frag", "/"),
        ("https://www.example.com:8080/a", "/a"),
        ("https://user:pw@www.example.com/a", "/a"),
        ("//www.example.com/a", "/a"),
        ("/a/b", "/a/b"),
        ("https://www.example.com/%7Euser/%e3%83%84", "/~user/%E3%83%84"),
        ("https://www.example.com/caf\u00e9", "/caf%C3%A9"),
        ("https://www.example.com/a%2Fb?x=%2F%3A", "/a%2Fb?x=/:"),
        ("https://www.example.com/a%zz", "/a%25zz"),
    ],
)
def test_verdict_path_is_the_canonical_path(url: str, path: str) -> None:
    rt = parse("User-agent: *\nDisallow: /nothing-here\n")
    assert rt.verdict(url, "Bot").path == path


# -- Crawl-delay ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "delay"),
    [
        ("User-agent: FooBot\nCrawl-delay: 5\n", 5.0),
        ("User-agent: FooBot\nCrawl-delay: 2.5\nDisallow: /\n", 2.5),
        ("User-agent: FooBot\nCrawl-delay: 0\n", 0.0),
        ("User-agent: FooBot\nCrawl-delay: 10 # seconds\n", 10.0),
        ("User-agent: FooBot\nCrawl-delay: 10 seconds\n", 10.0),
        ("User-agent: FooBot\ncrawl-delay 7\n", 7.0),
        ("User-agent: FooBot\nCRAWL-DELAY: 3\n", 3.0),
        ("User-agent: FooBot\nCrawldelay: 4\n", 4.0),
        # The largest valid value of the merged groups.
        ("User-agent: FooBot\nCrawl-delay: 5\n\nUser-agent: FooBot\nCrawl-delay: 10\n", 10.0),
        ("User-agent: FooBot\nCrawl-delay: 10\nCrawl-delay: 5\n", 10.0),
        ("User-agent: FooBot\nCrawl-delay: 3\nCrawl-delay: abc\nCrawl-delay: -20\nCrawl-delay: inf\n", 3.0),
        ("User-agent: FooBot\nCrawl-delay: nan\nCrawl-delay: 1\n", 1.0),
        # Invalid values only.
        ("User-agent: FooBot\nCrawl-delay: abc\n", None),
        ("User-agent: FooBot\nCrawl-delay:\n", None),
        ("User-agent: FooBot\nCrawl-delay: -1\n", None),
        ("User-agent: FooBot\nCrawl-delay: inf\n", None),
        ("User-agent: FooBot\nCrawl-delay: nan\n", None),
        # Absent.
        ("User-agent: FooBot\nDisallow: /\n", None),
        ("", None),
        # Another group's delay does not apply; a delay before any group applies to nothing.
        ("User-agent: BarBot\nDisallow: /b\nCrawl-delay: 5\n\nUser-agent: FooBot\nDisallow: /\n", None),
        ("Crawl-delay: 5\nUser-agent: FooBot\nDisallow: /\n", None),
        # The "*" group's delay applies when the agent has no group of its own.
        ("User-agent: *\nDisallow: /s\nCrawl-delay: 8\n\nUser-agent: BarBot\nCrawl-delay: 1\n", 8.0),
        ("User-agent: *\nDisallow: /s\nCrawl-delay: 8\n\nUser-agent: FooBot\nCrawl-delay: 1\n", 1.0),
        # Between user-agent lines: the delay belongs to the user-agent lines of its block only,
        # though the two share the group's rules (see test_crawl_delay_belongs_to_its_block).
        ("User-agent: BarBot\nCrawl-delay: 6\nUser-agent: FooBot\nDisallow: /\n", None),
        ("User-agent: BarBot\nCrawl-delay: 6\n\nUser-agent: FooBot\nDisallow: /\n", None),
        ("User-agent: BarBot\nCrawl-delay: 6\n\nUser-agent: FooBot\nCrawl-delay: 2\n", 2.0),
        ("User-agent: FooBot\nCrawl-delay: 6\n\nUser-agent: BarBot\nCrawl-delay: 2\n", 6.0),
        ("User-agent: BarBot\nUser-agent: FooBot\nCrawl-delay: 6\nUser-agent: BazBot\nCrawl-delay: 2\n", 6.0),
        ("User-agent: FooBot\nUser-agent: BarBot\nCrawl-delay: 6\nDisallow: /\n", 6.0),
        # After the rules, it belongs to the block of the group's last user-agent lines.
        ("User-agent: BarBot\nCrawl-delay: 1\nUser-agent: FooBot\nDisallow: /\nCrawl-delay: 3\n", 3.0),
        # After the rules, before the next group.
        ("User-agent: FooBot\nDisallow: /\nCrawl-delay: 9\n\nUser-agent: BarBot\nCrawl-delay: 1\n", 9.0),
    ],
)
def test_crawl_delay(body: str, delay: float | None) -> None:
    assert parse(body).crawl_delay("FooBot") == delay


def test_crawl_delay_by_agent() -> None:
    body = "User-agent: FooBot\nDisallow: /f\nCrawl-delay: 1\n\nUser-agent: BarBot\nDisallow: /b\nCrawl-delay: 2\n"
    rt = parse(body)
    assert rt.crawl_delay("FooBot") == 1.0
    assert rt.crawl_delay(b"BarBot") == 2.0
    assert rt.crawl_delay("Mozilla/5.0 (compatible; BarBot/1.0)") == 2.0
    assert rt.crawl_delay("BazBot") is None
    assert rt.crawl_delay(None) is None


# -- Sitemaps --------------------------------------------------------------------------


def test_sitemaps_from_anywhere_in_file_order_deduplicated() -> None:
    body = (
        "Sitemap: https://www.example.com/one.xml\n"
        "User-agent: FooBot\n"
        "sitemap: https://www.example.com/two.xml\n"
        "Disallow: /\n"
        "SITEMAP: https://www.example.com/one.xml\n"
        "\n"
        "User-agent: *\n"
        "Disallow: /x\n"
        "Sitemap:https://www.example.com/three.xml # comment\n"
        "Site-map: https://www.example.com/four.xml\n"
        "Sitemap: https://www.example.com/two.xml\n"
        "Sitemap:\n"
        "Sitemap: https://www.example.com/five.xml"
    )
    rt = parse(body)
    assert rt.sitemaps == [
        "https://www.example.com/one.xml",
        "https://www.example.com/two.xml",
        "https://www.example.com/three.xml",
        "https://www.example.com/four.xml",
        "https://www.example.com/five.xml",
    ]
    # Sitemap lines do not disturb the groups.
    assert not rt.allowed(URL + "/a", "FooBot")
    assert not rt.allowed(URL + "/x", "BarBot")
    assert rt.allowed(URL + "/a", "BarBot")


def test_sitemaps_keep_case_and_query() -> None:
    rt = parse("Sitemap: https://www.Example.com/Map.xml?Page=2\n")
    assert rt.sitemaps == ["https://www.Example.com/Map.xml?Page=2"]


@pytest.mark.parametrize(
    ("value", "joined"),
    [
        ("/sitemap.xml", "https://www.example.com/sitemap.xml"),
        ("sitemap.xml", "https://www.example.com/sitemap.xml"),
        ("/maps/../s.xml?p=1", "https://www.example.com/s.xml?p=1"),
        ("//cdn.example.net/s.xml", "https://cdn.example.net/s.xml"),
        ("https://other.example.org/s.xml", "https://other.example.org/s.xml"),
        ("HTTP://Other.example.org/S.xml", "HTTP://Other.example.org/S.xml"),
        ("ftp://files.example.org/s.xml", "ftp://files.example.org/s.xml"),
        # Cannot be joined: kept as written, never an exception.
        ("//[::1/s.xml", "//[::1/s.xml"),
    ],
)
def test_relative_sitemaps_are_joined_with_the_robots_txt_url(value: str, joined: str) -> None:
    rt = parse(f"User-agent: *\nDisallow: /x\nSitemap: {value}\n", url=URL + "/robots.txt")
    assert rt.url == URL + "/robots.txt"
    assert rt.sitemaps == [joined]


def test_relative_sitemaps_without_a_url_are_kept_as_written() -> None:
    rt = parse("Sitemap: /sitemap.xml\nSitemap: https://www.example.com/a.xml\n")
    assert rt.url is None
    assert rt.sitemaps == ["/sitemap.xml", "https://www.example.com/a.xml"]


def test_joined_sitemaps_are_deduplicated() -> None:
    body = "Sitemap: /s.xml\nSitemap: https://www.example.com/s.xml\nSitemap: s.xml\n"
    assert parse(body, url=URL + "/robots.txt").sitemaps == [URL + "/s.xml"]
    assert parse(body).sitemaps == ["/s.xml", URL + "/s.xml", "s.xml"]


@pytest.mark.parametrize("speedups", [True, False])
def test_sitemap_bytes_that_are_not_utf8_are_percent_encoded(speedups: bool) -> None:
    body = b"Sitemap: https://www.example.com/s\xe9.xml\nSitemap: https://www.example.com/caf\xc3\xa9.xml\n" \
           b"Sitemap: /r\xff\xfe.xml\n"
    rt = parse(body, url=URL + "/robots.txt", speedups=speedups)
    # A Latin-1 byte is sent as the byte it is; valid UTF-8 stays a character (requested as UTF-8).
    assert rt.sitemaps == [URL + "/s%E9.xml", URL + "/café.xml", URL + "/r%FF%FE.xml"]
    for sitemap in rt.sitemaps:
        sitemap.encode("utf-8")  # no lone surrogate: any URL library can encode it


def test_no_sitemaps() -> None:
    assert parse("User-agent: *\nDisallow: /\n").sitemaps == []
    assert parse(b"").sitemaps == []


def test_hosts() -> None:
    rt = parse("Host: www.example.com\nUser-agent: *\nDisallow: /\nHost: mirror.example.com\n")
    assert rt.hosts == ["www.example.com", "mirror.example.com"]
    assert not rt.allowed(URL + "/", "Bot")


# -- Group records ---------------------------------------------------------------------


def test_content_usage_records() -> None:
    body = (
        "Content-Usage: train-ai=n\n"  # 1: before any group
        "User-agent: FooBot\n"  # 2
        "Content-Usage: train-ai=y\n"  # 3
        "Disallow: /private\n"  # 4
        "content-usage: /news/ train-ai=n # comment\n"  # 5
        "\n"  # 6
        "User-agent: *\n"  # 7
        "Content-Usage: search=y\n"  # 8
        "Content-Signal: ai-train=no\n"  # 9
        "Disallow: /star\n"  # 10
        "User-agent: foobot\n"  # 11
        "CONTENT-USAGE: train-genai=n\n"  # 12
    )
    rt = parse(body)
    assert rt.records("FooBot", "content-usage") == [
        ("train-ai=y", 3),
        ("/news/ train-ai=n", 5),
        ("train-genai=n", 12),
    ]
    assert rt.records("OtherBot", "content-usage") == [("search=y", 8)]
    assert rt.records("OtherBot", "content-signal") == [("ai-train=no", 9)]
    assert rt.records("FooBot", "content-signal") == []
    assert not rt.allowed(URL + "/private", "FooBot")


def test_crawl_delay_records_keep_raw_values() -> None:
    body = "User-agent: FooBot\nCrawl-delay: abc\nCrawl-delay: 5\n"
    rt = parse(body)
    assert rt.records("FooBot", "crawl-delay") == [("abc", 2), ("5", 3)]
    assert rt.records("BarBot", "crawl-delay") == []


def test_records_between_user_agent_lines_belong_to_the_group() -> None:
    body = "User-agent: FooBot\nContent-Usage: train-ai=n\nUser-agent: BarBot\nDisallow: /\n"
    rt = parse(body)
    assert rt.records("FooBot", "content-usage") == [("train-ai=n", 2)]
    assert rt.records("BarBot", "content-usage") == [("train-ai=n", 2)]
    assert not rt.allowed(URL + "/", "FooBot")


def test_groups_without_rules_share_the_next_groups_rules() -> None:
    """RFC 9309, 2.1: a group is user-agent lines followed by rules, so a group of
    user-agent and Crawl-delay lines only is continued by the next user-agent line:
    its rules apply to both. The Crawl-delay applies to its own block only."""
    body = "User-agent: BarBot\nCrawl-delay: 5\n\nUser-agent: FooBot\nDisallow: /private\n"
    rt = parse(body)
    assert rt.crawl_delay("BarBot") == 5.0
    assert rt.crawl_delay("FooBot") is None
    assert not rt.allowed(URL + "/private", "BarBot")
    assert not rt.allowed(URL + "/private", "FooBot")


def test_crawl_delay_belongs_to_its_block() -> None:
    """A Crawl-delay between user-agent lines does not end the group (the rules stay
    Google's), but it applies to the user-agent lines written before it, not to the
    ones after it: ``*`` gets its own 1 s, bingbot its 10 s."""
    body = "User-agent: bingbot\nCrawl-delay: 10\n\nUser-agent: *\nCrawl-delay: 1\nDisallow: /admin\n"
    rt = parse(body)
    assert rt.crawl_delay("bingbot") == 10.0
    assert rt.crawl_delay("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)") == 10.0
    assert rt.crawl_delay("Googlebot") == 1.0
    assert rt.crawl_delay(None) == 1.0
    assert rt.records("bingbot", "crawl-delay") == [("10", 2)]
    assert rt.records("Googlebot", "crawl-delay") == [("1", 5)]
    # The rules are the group's: both lines are one group, as Google reads them.
    assert not rt.allowed(URL + "/admin", "bingbot")
    assert not rt.allowed(URL + "/admin", "Googlebot")
    assert rt.allowed(URL + "/page", "bingbot")


def test_crawl_delay_blocks_of_merged_groups() -> None:
    body = (
        "User-agent: FooBot\n"  # 1
        "User-agent: BarBot\n"  # 2
        "Crawl-delay: 4\n"  # 3: FooBot and BarBot
        "User-agent: BazBot\n"  # 4
        "Crawl-delay: 8\n"  # 5: BazBot
        "Disallow: /shared\n"  # 6: all three
        "\n"
        "User-agent: foobot\n"  # 8
        "Crawl-delay: 6\n"  # 9: FooBot again, merged
        "User-agent: BarBot\n"  # 10
        "Disallow: /bar\n"  # 11
    )
    rt = parse(body)
    assert rt.crawl_delay("FooBot") == 6.0
    assert rt.records("FooBot", "crawl-delay") == [("4", 3), ("6", 9)]
    assert rt.crawl_delay("BarBot") == 4.0
    assert rt.crawl_delay("BazBot") == 8.0
    assert rt.crawl_delay("QuxBot") is None
    for agent in ("FooBot", "BarBot", "BazBot"):
        assert not rt.allowed(URL + "/shared", agent)
    assert not rt.allowed(URL + "/bar", "FooBot")  # line 8's group has BarBot's line 10 too
    assert rt.allowed(URL + "/bar", "BazBot")
