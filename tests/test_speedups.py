"""The C accelerator: built where a compiler is (required in CI), and in step
with the pure-Python tiers (the property tests run both)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import matcher, parse, parser

BODY = (
    "User-agent: *\nDisallow: /private\nAllow: /private/ok\nDisallow: /*.php$\nDisallow: /*?s=\n"
    "Allow: /a*b*c$\nDisallow: /a\n"
)
URLS = [
    "http://h/private/x", "http://h/private/ok", "http://h/a.php", "http://h/a.php?x", "http://h/x?s=1",
    "http://h/abc", "http://h/abcd", "http://h/ab/c", "http://h/robots.txt", "http://h/%41bc", "http://h/é",
    "http://h/x#frag", "http://h", "http://h?q", "//h/private", "/private", "http://h;p/private",
    b"http://h/private/x", "HTTPS://h:8080/private/ok",
]


def test_built_in_ci() -> None:
    if os.environ.get("CI") == "true":
        assert matcher.FastMatcher is not None, "the C accelerator did not build"


@pytest.mark.skipif(matcher.FastMatcher is None, reason="the C accelerator is not built here")
def test_accelerated_agrees_with_pure_python() -> None:
    fast = parse(BODY)
    assert type(fast._group_for("bot").matcher.allowed) is matcher.FastMatcher
    slow = parse(BODY, speedups=False)
    assert type(slow._group_for("bot").matcher.allowed) is not matcher.FastMatcher
    for url in URLS:
        assert fast.allowed(url, "bot") == slow.allowed(url, "bot") == slow.verdict(url, "bot").allowed, url


@pytest.mark.skipif(matcher.FastMatcher is None, reason="the C accelerator is not built here")
def test_accelerator_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        matcher.FastMatcher(["/é"], b"\x01", [], lambda url: True)
    with pytest.raises(ValueError):
        matcher.FastMatcher(["/a"], b"", [], lambda url: True)
    with pytest.raises(TypeError):
        matcher.FastMatcher(["/a"], b"\x01", [], lambda url: True)("a", "b")


# -- The C line scanner against the regex one -----------------------------------------------

FIELDS = ["User-agent", "user-agents", "USER AGENT", "useragent", "Allow", "Disallow", "disalow", "DISSALLOW",
          "Sitemap", "site-map", "Crawl-delay", "crawl delay", "Content-Usage", "Content-Signal", "Host", "Other",
          "allowance", "user-agentx"]
SEPARATORS = [":", " :", "\t:", " ", "\t", "  ", ":\t", ""]
VALUES = ["", " ", "/a", "/a b", "*", "Foo Bar", "/x # c", "#c", "/é", "\x00", "/a\t", "\x0b/v\x0c", "train-ai=n"]
line_text = st.tuples(
    st.sampled_from(["", " ", "\t", "\x0b"]), st.sampled_from(FIELDS), st.sampled_from(SEPARATORS),
    st.sampled_from(VALUES),
).map("".join)
body_text = st.lists(st.one_of(line_text, st.text(max_size=12)), max_size=25).map("\n".join)


def shape(result: parser.ParseResult) -> object:
    groups = [(g.agents, g.rules, g.records, list(g.special or ())) for g in result.groups]
    return groups, result.sitemaps, result.hosts, sorted(result.by_token), result.truncated


@pytest.mark.skipif(parser.scan_lines is None, reason="the C accelerator is not built here")
@settings(max_examples=500, deadline=None)
@given(body=st.one_of(body_text, body_text.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=500)))
def test_c_scanner_parses_like_the_regex(body: str | bytes) -> None:
    assert shape(parser.parse_body(body)) == shape(parser.parse_body(body, speedups=False))
