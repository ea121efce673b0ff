"""A crawl that ends when its work is done: once requests held for an unreachable
robots.txt are all that is left, they are given up after ``ROBOTSTXT_MAX_WAIT_IDLE``
(dropped with reason ``idle``, or handed back to a ``JOBDIR`` scheduler for the next
run), and while they are held an INFO line says what the crawl waits for. Nothing of
the unreachable origin is crawled. Real crawls against local servers."""

from __future__ import annotations

import logging
from typing import Any

import pytest_twisted
from crawl import run_crawl
from middleware_support import page_hits, stat, text

from scrapy_rfc9309.exceptions import RobotsTxtUnreachable

IDLE = 3
#: The add-on with its defaults (ROBOTSTXT_MAX_WAIT 900 s, retries from 5 s), but a short idle bound and
#: progress interval, so that the test takes seconds.
SETTINGS: dict[str, Any] = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "ROBOTSTXT_MAX_WAIT_IDLE": IDLE,
                            "LOGSTATS_INTERVAL": 1}


def _sites(origins: Any) -> tuple[Any, Any, list[str], list[str]]:
    live, busy = origins("127.0.0.1"), origins("127.0.0.2")
    live["/robots.txt"] = text("User-agent: *\nDisallow: /private\n")
    busy["/robots.txt"] = text("busy", status=503)
    live_urls = [live.url(f"/page/{i}") for i in range(3)] + [live.url("/private/x")]
    busy_urls = [busy.url(f"/page/{i}") for i in range(3)]
    return live, busy, live_urls, busy_urls


@pytest_twisted.inlineCallbacks
def test_held_requests_are_given_up_once_nothing_else_is_left(origins):
    _, busy, live_urls, busy_urls = _sites(origins)

    result = yield run_crawl(live_urls + busy_urls, SETTINGS)

    assert result.stats["finish_reason"] == "finished"
    assert sorted(result.responses) == sorted(live_urls[:3])
    assert page_hits(busy) == []  # complete disallow: nothing of the unreachable origin was crawled
    # Ended by the idle bound (reason "idle"), not after ROBOTSTXT_MAX_WAIT (900 s: the test's deadline
    # would have ended it first).
    dropped = [e for url in busy_urls for e in result.errors_for(url)]
    assert [type(e) for e in dropped] == [RobotsTxtUnreachable] * 3
    assert {e.reason for e in dropped} == {"idle"}
    assert {e.judgement.reason for e in dropped} == {"idle"}
    assert stat(result, "dropped_idle") == 3 and stat(result, "gave_up_idle") == 1
    # What it waited for, said while it waited.
    progress = [m for m in result.messages(logging.INFO) if m.startswith("robots.txt: 3 requests held for")]
    assert progress, result.messages(logging.INFO)
    assert f"3 requests held for 1 unreachable origins ({busy.url('/')[:-1]} (robots.txt status 503" in progress[0]
    assert "nothing else is left to crawl (ROBOTSTXT_MAX_WAIT_IDLE)" in progress[-1]
    (gave_up,) = [m for m in result.messages(logging.WARNING) if "nothing left to crawl" in m]
    assert "3 requests held for 1 unreachable origins" in gave_up and "dropped" in gave_up
    # The summaries count every kind.
    (summary,) = [m for m in result.messages(logging.INFO) if m.startswith("robots.txt verdicts:")]
    assert summary == ("robots.txt verdicts: 3 allowed, 1 disallowed by robots.txt, 3 dropped for their robots.txt "
                       "(3 held when nothing else was left to crawl), 3 held for their robots.txt")
    (origins_line,) = [m for m in result.messages(logging.WARNING) if "origins given up" in m]
    assert "3 held when nothing else was left to crawl" in origins_line


@pytest_twisted.inlineCallbacks
def test_the_progress_line_names_the_origins_with_the_most_held_requests_first(origins):
    counts = [2, 9, 5, 1, 7]  # requests per unreachable origin, in no order
    sites = [origins(f"127.0.0.{n + 1}") for n in range(len(counts))]
    for site in sites:
        site["/robots.txt"] = text("busy", status=503)
    urls = [site.url(f"/page/{i}") for site, count in zip(sites, counts, strict=True) for i in range(count)]

    result = yield run_crawl(urls, SETTINGS)

    assert stat(result, "held") == sum(counts)
    full = [m for m in result.messages(logging.INFO) if m.startswith(f"robots.txt: {sum(counts)} requests held for 5 ")]
    assert full, result.messages(logging.INFO)
    # The three named (NAMED) are those holding 9, 7 and 5 requests, in that order; the other two are counted.
    by_count = sorted(zip(counts, sites, strict=True), key=lambda entry: -entry[0])
    named = [full[-1].find(f"{site.url('/')[:-1]} (robots.txt") for _, site in by_count[:3]]
    assert -1 not in named and named == sorted(named), full[-1]
    assert all(f"{site.url('/')[:-1]} (" not in full[-1] for _, site in by_count[3:]), full[-1]
    assert "and 2 more)" in full[-1]


@pytest_twisted.inlineCallbacks
def test_with_a_jobdir_held_requests_are_handed_back_for_the_next_run(origins, tmp_path):
    _, busy, live_urls, busy_urls = _sites(origins)
    settings = {**SETTINGS, "JOBDIR": str(tmp_path / "job")}

    first = yield run_crawl(live_urls + busy_urls, settings)

    assert first.stats["finish_reason"] == "finished"
    assert page_hits(busy) == []
    assert not [e for url in busy_urls for e in first.errors_for(url)]  # handed back, not dropped
    assert stat(first, "requeued_on_close") == 3
    (summary,) = [m for m in first.messages(logging.WARNING) if "Put back in the scheduler" in m]
    assert "3 requests that waited for a robots.txt" in summary

    busy["/robots.txt"] = text("User-agent: *\nAllow: /\n")
    resumed = yield run_crawl([], settings)

    assert sorted(resumed.responses) == sorted(busy_urls)  # crawled in the next run
