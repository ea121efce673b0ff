"""The C accelerator: built where a compiler is (required in CI), and in step
with the pure-Python tiers (the property tests run both)."""

from __future__ import annotations

import os

import pytest

from scrapy_rfc9309 import matcher, parse

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
