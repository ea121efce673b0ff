"""Crawl-delay (``ROBOTSTXT_CRAWL_DELAY``) against real origins.

What is under test is the spacing of the requests as the *server* saw them (``Hit.time``, monotonic,
taken when the request arrived). Lower bounds are the Crawl-delay minus a small tolerance; upper bounds
are only used to tell "not slowed at all" (milliseconds) from "slowed by a Crawl-delay" (half a second
or more), or a capped delay from an uncapped one (5 s), and are generous.
"""

from __future__ import annotations

import logging
from itertools import pairwise
from typing import Any

import pytest
import pytest_twisted
from crawl import run_crawl
from scrapy.settings import default_settings
from servers import Delay, Origin

MW_LOGGER = "scrapy_rfc9309"
TOLERANCE = 0.05
PAGES = ("/p/1", "/p/2", "/p/3")

#: The add-on, plus enough concurrency that only a delay can space the requests of one origin.
SETTINGS: dict[str, Any] = {
    "ADDONS": {"scrapy_rfc9309.Addon": 0},
    "CONCURRENT_REQUESTS": 32,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "DOWNLOAD_DELAY": 0,
}


def settings(**overrides: Any) -> dict[str, Any]:
    return {**SETTINGS, **overrides}


def _jitter(jitter: float) -> dict[str, Any]:
    """The setting of the download delay's jitter: ``DOWNLOAD_DELAY_JITTER`` (Scrapy 2.19), or before
    it ``RANDOMIZE_DOWNLOAD_DELAY`` (no jitter or ±50 %), which 2.19 deprecates."""
    if hasattr(default_settings, "DOWNLOAD_DELAY_JITTER"):
        return {"DOWNLOAD_DELAY_JITTER": jitter}
    return {"RANDOMIZE_DOWNLOAD_DELAY": bool(jitter)}


def page_times(origin: Origin) -> list[float]:
    """Arrival times of every request but /robots.txt, in arrival order."""
    return [h.time for h in origin.requests if h.path_only != "/robots.txt"]


def gaps(origin: Origin) -> list[float]:
    times = page_times(origin)
    return [later - earlier for earlier, later in pairwise(times)]


def span(origin: Origin) -> float:
    times = page_times(origin)
    return times[-1] - times[0]


def urls(origin: Origin, paths: tuple[str, ...] = PAGES) -> list[str]:
    return [origin.url(p) for p in paths]


def assert_all_fetched(result: Any, *origins: Origin, paths: tuple[str, ...] = PAGES) -> None:
    for origin in origins:
        assert sorted(h.path for h in origin.requests if h.path_only != "/robots.txt") == sorted(paths)
        assert origin.hits("/robots.txt") == 1
    assert sorted(result.responses) == sorted(u for o in origins for u in urls(o, paths))
    assert result.errors == []


# --------------------------------------------------------------------------- the delay applies


@pytest_twisted.inlineCallbacks
def test_crawl_delay_spaces_the_pages_of_its_origin_and_not_of_another(origins):
    slow = origins("127.0.0.1")
    fast = origins("127.0.0.2")
    slow.robots("User-agent: *\nCrawl-delay: 0.5\nDisallow: /private\n")
    fast.robots("User-agent: *\nDisallow: /private\n")

    result = yield run_crawl(urls(slow) + urls(fast), settings(ROBOTSTXT_CRAWL_DELAY=True))

    assert_all_fetched(result, slow, fast)
    slow_gaps = gaps(slow)
    assert len(slow_gaps) == len(PAGES) - 1
    assert min(slow_gaps) >= 0.5 - TOLERANCE, slow_gaps
    # The other origin is a different download slot: its pages are not held back at all.
    assert span(fast) < 0.45, gaps(fast)
    assert result.stats.get("robotstxt/crawl_delay_applied") == 1
    assert "robotstxt/crawl_delay_capped" not in result.stats


@pytest_twisted.inlineCallbacks
def test_crawl_delay_is_ignored_by_default(origins):
    a = origins()
    a.robots("User-agent: *\nCrawl-delay: 0.5\n")

    result = yield run_crawl(urls(a), settings())

    assert_all_fetched(result, a)
    assert span(a) < 0.45, gaps(a)
    assert "robotstxt/crawl_delay_applied" not in result.stats


@pytest_twisted.inlineCallbacks
def test_crawl_delay_false_is_ignored(origins):
    a = origins()
    a.robots("User-agent: *\nCrawl-delay: 0.5\n")

    result = yield run_crawl(urls(a), settings(ROBOTSTXT_CRAWL_DELAY=False))

    assert_all_fetched(result, a)
    assert span(a) < 0.45, gaps(a)


# --------------------------------------------------------------------------- the cap


@pytest_twisted.inlineCallbacks
def test_crawl_delay_max_caps_a_long_crawl_delay(origins):
    a = origins()
    a.robots("User-agent: *\nCrawl-delay: 5\n")

    result = yield run_crawl(urls(a), settings(ROBOTSTXT_CRAWL_DELAY=True, ROBOTSTXT_CRAWL_DELAY_MAX=0.3))

    assert_all_fetched(result, a)
    page_gaps = gaps(a)
    assert min(page_gaps) >= 0.3 - TOLERANCE, page_gaps
    # Capped: nowhere near the 5 s asked for (the default jitter keeps gaps within 0.3 s .. 0.9 s).
    assert max(page_gaps) < 2.5, page_gaps
    assert result.stats.get("robotstxt/crawl_delay_capped") == 1
    capped = [
        m for m in result.messages(logging.INFO, logger=MW_LOGGER) if "ROBOTSTXT_CRAWL_DELAY_MAX" in m
    ]
    assert len(capped) == 1, capped
    assert "Crawl-delay 5 s" in capped[0]
    assert "0.3" in capped[0]
    assert a.base in capped[0]


@pytest_twisted.inlineCallbacks
def test_a_crawl_delay_below_the_cap_is_not_capped(origins):
    a = origins()
    a.robots("User-agent: *\nCrawl-delay: 0.3\n")

    result = yield run_crawl(urls(a, PAGES[:2]), settings(ROBOTSTXT_CRAWL_DELAY=True, ROBOTSTXT_CRAWL_DELAY_MAX=1))

    assert_all_fetched(result, a, paths=PAGES[:2])
    assert min(gaps(a)) >= 0.3 - TOLERANCE
    assert "robotstxt/crawl_delay_capped" not in result.stats
    assert not result.logged("ROBOTSTXT_CRAWL_DELAY_MAX", logging.INFO, logger=MW_LOGGER)


# --------------------------------------------------------------------------- with DOWNLOAD_DELAY and AutoThrottle


@pytest.mark.parametrize(("jitter", "shortest"), [(0, 0.8), (None, 0.8 * (1 - 0.5))])
@pytest_twisted.inlineCallbacks
def test_a_larger_download_delay_wins_over_the_crawl_delay(origins, jitter, shortest):
    a = origins()
    a.robots("User-agent: *\nCrawl-delay: 0.3\n")
    overrides: dict[str, Any] = {"ROBOTSTXT_CRAWL_DELAY": True, "DOWNLOAD_DELAY": 0.8}
    if jitter is not None:
        overrides.update(_jitter(jitter))

    result = yield run_crawl(urls(a, PAGES[:2]), settings(**overrides))

    assert_all_fetched(result, a, paths=PAGES[:2])
    assert min(gaps(a)) >= shortest - TOLERANCE, gaps(a)


@pytest_twisted.inlineCallbacks
def test_a_larger_crawl_delay_wins_over_download_delay(origins):
    a = origins()
    a.robots("User-agent: *\nCrawl-delay: 0.6\n")

    result = yield run_crawl(
        urls(a), settings(ROBOTSTXT_CRAWL_DELAY=True, DOWNLOAD_DELAY=0.1, DOWNLOAD_DELAY_JITTER=0)
    )

    assert_all_fetched(result, a)
    assert min(gaps(a)) >= 0.6 - TOLERANCE, gaps(a)


@pytest_twisted.inlineCallbacks
def test_autothrottle_does_not_lower_the_delay_below_the_crawl_delay(origins):
    a = origins()
    a.robots("User-agent: *\nCrawl-delay: 0.5\n")
    autothrottle = {
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 0.1,
        "AUTOTHROTTLE_MAX_DELAY": 0.2,
    }

    result = yield run_crawl(urls(a), settings(ROBOTSTXT_CRAWL_DELAY=True, **autothrottle))

    assert_all_fetched(result, a)
    assert min(gaps(a)) >= 0.5 - TOLERANCE, gaps(a)


# --------------------------------------------------------------------------- which group


# Each group has a rule: a Crawl-delay alone does not end a group's user-agent lines (as in Google's
# parser, only Allow/Disallow do), so "User-agent: SlowBot / Crawl-delay / User-agent: FastBot" would be
# one group for both.
AGENT_GROUPS = (
    "User-agent: SlowBot\n"
    "Disallow: /private\n"
    "Crawl-delay: 0.6\n"
    "\n"
    "User-agent: FastBot\n"
    "Disallow: /private\n"
    "\n"
    "User-agent: *\n"
    "Disallow: /private\n"
    "Crawl-delay: 5\n"
)


@pytest_twisted.inlineCallbacks
def test_the_crawl_delay_of_the_agents_own_group_applies(origins):
    a = origins()
    a.robots(AGENT_GROUPS)

    result = yield run_crawl(urls(a), settings(ROBOTSTXT_CRAWL_DELAY=True, ROBOTSTXT_USER_AGENT="SlowBot"))

    assert_all_fetched(result, a)
    page_gaps = gaps(a)
    assert min(page_gaps) >= 0.6 - TOLERANCE, page_gaps
    # Not the '*' group's 5 s.
    assert max(page_gaps) < 3, page_gaps


@pytest_twisted.inlineCallbacks
def test_a_group_without_crawl_delay_is_not_slowed_by_the_star_groups(origins):
    a = origins()
    a.robots(AGENT_GROUPS)

    result = yield run_crawl(urls(a), settings(ROBOTSTXT_CRAWL_DELAY=True, ROBOTSTXT_USER_AGENT="FastBot"))

    assert_all_fetched(result, a)
    assert span(a) < 0.45, gaps(a)
    assert "robotstxt/crawl_delay_applied" not in result.stats


@pytest_twisted.inlineCallbacks
def test_the_star_groups_crawl_delay_applies_to_other_agents(origins):
    a = origins()
    a.robots(AGENT_GROUPS)

    result = yield run_crawl(
        urls(a, PAGES[:2]),
        settings(ROBOTSTXT_CRAWL_DELAY=True, ROBOTSTXT_USER_AGENT="OtherBot", ROBOTSTXT_CRAWL_DELAY_MAX=0.4),
    )

    assert_all_fetched(result, a, paths=PAGES[:2])
    assert min(gaps(a)) >= 0.4 - TOLERANCE, gaps(a)
    assert result.stats.get("robotstxt/crawl_delay_capped") == 1


BLOCKS = (
    "User-agent: SlowBot\n"
    "Crawl-delay: 30\n"
    "\n"
    "User-agent: *\n"
    "Crawl-delay: 0.2\n"
    "Disallow: /admin\n"
)


@pytest.mark.parametrize(("agent", "applied"), [("OtherBot", "0.2"), ("SlowBot", "0.3")])
@pytest_twisted.inlineCallbacks
def test_a_crawl_delay_applies_to_the_user_agent_lines_of_its_block(origins, agent, applied):
    """The two user-agent lines are one group (a Crawl-delay does not end it): both
    obey ``Disallow: /admin``, but ``*`` gets its own 0.2 s, not SlowBot's 30 s (capped
    to 0.3 s here), which only SlowBot gets."""
    a = origins()
    a.robots(BLOCKS)

    result = yield run_crawl(
        [a.url("/page"), a.url("/admin")],
        settings(ROBOTSTXT_CRAWL_DELAY=True, ROBOTSTXT_USER_AGENT=agent, ROBOTSTXT_CRAWL_DELAY_MAX=0.3),
    )

    assert result.responses == [a.url("/page")]
    assert [e.url for e in result.errors] == [a.url("/admin")]
    (line,) = [m for m in result.messages(logging.DEBUG, logger=MW_LOGGER) if m.startswith("Crawl-delay ")]
    assert line.startswith(f"Crawl-delay {applied} s of {a.base} applied to download slot"), line
    assert ("robotstxt/crawl_delay_capped" in result.stats) == (agent == "SlowBot")


# --------------------------------------------------------------------------- origins sharing a download slot


@pytest_twisted.inlineCallbacks
def test_a_shorter_crawl_delay_of_another_origin_on_the_same_host_does_not_lower_this_ones(origins):
    slow = origins("127.0.0.1")
    quick = origins("127.0.0.1")  # same host, another port: another origin, the same download slot
    slow.robots("User-agent: *\nCrawl-delay: 0.6\n")
    # quick's robots.txt arrives a little later, so its Crawl-delay is the one applied last.
    quick["/robots.txt"] = Delay(0.2, quick.robots("User-agent: *\nCrawl-delay: 0.1\n"))

    result = yield run_crawl(
        urls(slow) + urls(quick), settings(ROBOTSTXT_CRAWL_DELAY=True, DOWNLOAD_DELAY_JITTER=0)
    )

    assert_all_fetched(result, slow, quick)
    assert min(gaps(slow)) >= 0.6 - TOLERANCE, gaps(slow)
