"""How long a fetched robots.txt holds (``scrapy_rfc9309.access``): the Cache-Control
directives read one by one (RFC 9111, 5.2), the ``Age`` subtracted (RFC 9111, 4.2.3),
and the TTL settings (``Policy.lifetime``). Pure: no crawl."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309.core.http_cache import cache_directives, max_age_of
from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState, Policy


@pytest.mark.parametrize(
    ("header", "directives"),
    [
        ("max-age=60", {"max-age": "60"}),
        ("Public, MAX-AGE=60", {"public": None, "max-age": "60"}),
        ('no-cache="Set-Cookie, Set-Cookie2", max-age=300', {"no-cache": "Set-Cookie, Set-Cookie2", "max-age": "300"}),
        ('max-age="30"', {"max-age": "30"}),
        ('ext="a\\"b", no-store', {"ext": 'a"b', "no-store": None}),
        ("max-age=5, max-age=100", {"max-age": "5"}),  # the first of a repeated directive
        (" , ,private ,", {"private": None}),
        ("", {}),
    ],
)
def test_cache_directives_one_by_one(header: str, directives: dict[str, str | None]) -> None:
    assert cache_directives(header) == directives


@pytest.mark.parametrize(
    ("header", "age", "lifetime"),
    [
        ("max-age=3600", None, 3600.0),
        ("public, max-age=3600", None, 3600.0),
        ('max-age="3600"', None, 3600.0),
        # The order of max-age and s-maxage does not matter: the shorter one.
        ("max-age=3600, s-maxage=100", None, 100.0),
        ("s-maxage=100, max-age=3600", None, 100.0),
        ("s-maxage=7200, max-age=3600", None, 3600.0),
        ("max-age=3600, s-maxage=7200", None, 3600.0),
        ("s-maxage=50", None, 50.0),
        # A no-cache naming header fields concerns those fields only.
        ('no-cache="Set-Cookie", max-age=3600', None, 3600.0),
        ('max-age=3600, no-cache="Set-Cookie, Set-Cookie2"', None, 3600.0),
        ('private="Set-Cookie", max-age=3600', None, 3600.0),
        # Stale at once.
        ("no-cache", None, 0.0),
        ("max-age=3600, no-cache", None, 0.0),
        ("no-store", None, 0.0),
        ("max-age=3600, no-store", None, 0.0),
        ("max-age=0", None, 0.0),
        ("max-age=abc", None, 0.0),  # RFC 9111, 4.2.1: invalid freshness information
        ("max-age=-5", None, 0.0),
        # Directives that give no lifetime.
        ("public", None, None),
        ("private, must-revalidate", None, None),
        ('no-cachex, x-max-age=5, "max-age=5"', None, None),
        ("", None, None),
        # Age is subtracted; a malformed Age is ignored; never below 0.
        ("max-age=3600", "600", 3000.0),
        ("max-age=3600", b"600", 3000.0),
        ("max-age=3600, s-maxage=1000", "600", 400.0),
        ("max-age=60", "100", 0.0),
        ("max-age=3600", "soon", 3600.0),
        ("max-age=3600", "-5", 3600.0),
        ("public", "600", None),
        # A value too large to represent is 2^31 (RFC 9111, 1.2.2).
        ("max-age=99999999999999999999", None, float(2**31)),
    ],
)
def test_max_age_of(header: str, age: str | bytes | None, lifetime: float | None) -> None:
    assert max_age_of(header, age) == lifetime


def test_max_age_of_several_field_lines() -> None:
    """Field lines are one comma-separated list (RFC 9110, 5.3), as Scrapy's
    ``headers.getlist`` gives them."""
    assert max_age_of([b"public", b"max-age=40"]) == 40.0
    assert max_age_of(["max-age=40", "no-store"]) == 0.0
    assert max_age_of(["s-maxage=10", "max-age=40"], "4") == 6.0
    assert max_age_of([]) is None
    assert max_age_of(None, "5") is None


@settings(max_examples=300, deadline=None)
@given(directives=st.lists(st.sampled_from(["max-age=100", "s-maxage=40", "public", 'no-cache="Set-Cookie"',
                                            "private", "must-revalidate", "max-age=300", "s-maxage=500"]),
                           max_size=6))
def test_the_lifetime_does_not_depend_on_the_order_of_distinct_directives(directives: list[str]) -> None:
    firsts = list({d.split("=")[0]: d for d in reversed(directives)}.values())  # one of each name
    assert max_age_of(", ".join(firsts)) == max_age_of(", ".join(reversed(firsts)))


# -- Policy.lifetime: the TTL and its floor ---------------------------------------------------


def test_the_ttl_applies_without_cache_control() -> None:
    assert Policy(ttl=3600).lifetime(None) == 3600
    assert Policy(ttl=2).lifetime(None) == 2  # the floor (60 by default) is not involved


@pytest.mark.parametrize(("max_age", "lifetime"), [(0.0, 60.0), (30.0, 60.0), (600.0, 600.0), (10**9, 86400.0)])
def test_a_cache_control_lifetime_is_bounded_by_the_floor_and_the_ttl(max_age: float, lifetime: float) -> None:
    assert Policy().lifetime(max_age) == lifetime


@pytest.mark.parametrize("max_age", [None, 0.0, 1.0, 30.0, 3600.0])
def test_the_floor_never_exceeds_a_short_ttl(max_age: float | None) -> None:
    """``ROBOTSTXT_CACHE_TTL = 2`` alone: every lifetime is at most 2 s, whatever the header."""
    policy = Policy(ttl=2)
    assert policy.min_ttl > policy.ttl
    assert policy.lifetime(max_age) == 2


def test_a_short_ttl_alone_expires_a_parsed_state() -> None:
    policy = Policy(ttl=2)
    outcome = FetchOutcome(Access.PARSED, "https://h/robots.txt", 200, b"User-agent: *\nDisallow: /x\n", max_age=0.0)
    state = OriginState.initial(outcome, 1000.0, policy)
    assert state.expires_at == 1002.0
    assert not state.expired(1001.9)
    assert state.expired(1002.0)


@settings(max_examples=300, deadline=None)
@given(ttl=st.floats(0.001, 1e7), min_ttl=st.floats(0, 1e7),
       max_age=st.one_of(st.none(), st.floats(0, 1e8)))
def test_lifetime_bounds(ttl: float, min_ttl: float, max_age: float | None) -> None:
    lifetime = Policy(ttl=ttl, min_ttl=min_ttl).lifetime(max_age)
    assert lifetime <= ttl
    if max_age is None:
        assert lifetime == ttl
    else:
        assert lifetime >= min(min_ttl, ttl)
        assert lifetime == max_age or lifetime in (ttl, min_ttl)
