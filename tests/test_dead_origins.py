"""Origins that waiting cannot help, in real crawls: a host name that does not
resolve, a port that refuses connections, and a robots.txt request Scrapy cannot
make at all (no download handler for its scheme, or one that failed to load). Their
requests are dropped soon, each with its reason, the live origins beside them are
crawled in full, and the log says once per origin what happened and, at close, what
was given up."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from crawl import run_crawl
from fast_clock import fast_clock
from middleware_support import ENABLE, BatchSpider, mw_settings, page_hits, robots_hits, stat
from scrapy.exceptions import NotConfigured
from servers import Redirect, free_port

from scrapy_rfc9309.exceptions import RobotsTxtForbidden, RobotsTxtUnreachable

#: A name that never resolves (RFC 6761: resolvers answer NXDOMAIN for .invalid).
DEAD_HOST = "nonexistent-host.invalid"
RULES = "User-agent: *\nDisallow: /private\n"


def _dropped(result: Any, url_prefix: str) -> list[RobotsTxtUnreachable]:
    return [e.exception for e in result.errors
            if e.url.startswith(url_prefix) and isinstance(e.exception, RobotsTxtUnreachable)]


def _lines(result: Any, level: int, text: str) -> list[str]:
    return [m for m in result.messages(level) if text in m]


@pytest_twisted.inlineCallbacks
def test_dead_origins_beside_a_live_one_end_soon_at_default_settings(origins, monkeypatch):
    """The issue's crawl: start URLs on a host that does not resolve and on a port that
    refuses connections, beside a live origin, with every ROBOTSTXT_* setting at its
    default. The unresolvable origin's requests are dropped at once; the refusing one's
    after ROBOTSTXT_MAX_WAIT_REFUSED (30 s), not ROBOTSTXT_MAX_WAIT (900 s). The waits
    run on a clock ten times faster (tests/fast_clock.py): 30 s of it take 3 s."""
    fast_clock(monkeypatch, 10)
    live = origins()
    live.robots(RULES)
    refused = f"http://127.0.0.1:{free_port()}"
    dead = [f"http://{DEAD_HOST}/", f"http://{DEAD_HOST}/page"]
    closed = [f"{refused}/", f"{refused}/page"]
    pages = [live.url(f"/page/{i}") for i in range(5)]

    result = yield run_crawl([*dead, *closed, *pages, live.url("/private/1")], ENABLE)

    assert result.stats["finish_reason"] == "finished"
    assert sorted(result.responses) == sorted(pages)  # the live origin in full
    assert [type(e) for e in result.errors_for(live.url("/private/1"))] == [RobotsTxtForbidden]
    no_host = _dropped(result, f"http://{DEAD_HOST}")
    assert [e.reason for e in no_host] == ["no_host", "no_host"]
    assert all("host name does not resolve" in str(e) for e in no_host)
    assert [e.reason for e in _dropped(result, refused)] == ["max_wait", "max_wait"]
    assert stat(result, "dropped_no_host") == 2
    assert stat(result, "dropped_unreachable") == 2
    assert stat(result, "held") == 2  # the refusing origin's requests only: waiting cannot help the other
    # Held for the refused wait (30 s), never for ROBOTSTXT_MAX_WAIT (900 s), on the clock the waits ran on.
    assert all("unreachable for 30 s" in str(e) for e in _dropped(result, refused)), _dropped(result, refused)
    # One line per origin as it became unreachable, one as it was given up, and the summary.
    assert len(_lines(result, logging.WARNING, f"{DEAD_HOST}")) == 2  # unreachable, then in the summary
    assert len(_lines(result, logging.WARNING, f"robots.txt of {refused} unreachable (")) == 1
    assert len(_lines(result, logging.WARNING, f"robots.txt of {refused} unreachable for 30 s")) == 1
    (summary,) = _lines(result, logging.WARNING, "origins given up")
    assert f"1 whose host name does not resolve (http://{DEAD_HOST})" in summary
    assert f"1 refusing connections ({refused})" in summary
    assert "2 held too long" in summary and "2 for a host name that does not resolve" in summary
    assert result.messages(logging.ERROR) == []


@pytest_twisted.inlineCallbacks
def test_requests_of_an_unresolvable_host_are_dropped_at_once_and_refetched_on_the_backoff(origins):
    """Every request of the dead host is dropped without being held: those that waited for
    its single robots.txt fetch, those that come while its retry is not due (no fetch),
    and, once it is due, a later one waits for one new fetch, then is dropped too."""
    first = [f"http://{DEAD_HOST}/{i}" for i in range(20)]
    soon = [f"http://{DEAD_HOST}/soon"]
    later = [f"http://{DEAD_HOST}/later"]
    settings = mw_settings(ROBOTSTXT_RETRY_DELAY=1, ROBOTSTXT_RETRY_MAX_DELAY=1)

    result = yield run_crawl(BatchSpider, settings, batches=[(0, first), (0.3, soon), (1.5, later)])

    assert [e.reason for e in _dropped(result, f"http://{DEAD_HOST}")] == ["no_host"] * 22
    assert stat(result, "request_count") == 2  # the first fetch, and one after the 1 s backoff
    assert stat(result, "held") == 0
    assert stat(result, "unreachable") == 2
    assert len(_lines(result, logging.WARNING, "its host name does not resolve")) == 1  # not per fetch
    assert result.stats["finish_reason"] == "finished"


@pytest.mark.parametrize(("wait", "dropped_after"), [(0, 0), (1.5, 1.5)])
@pytest_twisted.inlineCallbacks
def test_refused_connections_are_held_for_the_refused_wait(origins, wait, dropped_after):
    refused = f"http://127.0.0.1:{free_port()}"
    urls = [f"{refused}/{i}" for i in range(3)]
    settings = mw_settings(ROBOTSTXT_MAX_WAIT_REFUSED=wait, ROBOTSTXT_RETRY_DELAY=0.2,
                           ROBOTSTXT_RETRY_MAX_DELAY=0.2, ROBOTSTXT_MAX_WAIT=600)

    result = yield run_crawl(urls, settings)

    assert [e.reason for e in _dropped(result, refused)] == ["max_wait"] * 3
    assert stat(result, "held") == (3 if wait else 0)
    if wait:
        assert stat(result, "request_count") >= 2  # retried while held
        assert result.stats["elapsed_time_seconds"] >= dropped_after
    else:
        assert stat(result, "request_count") == 1
    assert result.stats["finish_reason"] == "finished"


@pytest_twisted.inlineCallbacks
def test_the_refused_wait_never_exceeds_max_wait(origins):
    refused = f"http://127.0.0.1:{free_port()}"
    settings = mw_settings(ROBOTSTXT_MAX_WAIT_REFUSED=600, ROBOTSTXT_MAX_WAIT=0.5, ROBOTSTXT_RETRY_DELAY=0.2)

    result = yield run_crawl([f"{refused}/a"], settings)

    (dropped,) = _dropped(result, refused)
    assert "unreachable for 0.5 s" in str(dropped)


# --------------------------------------------------------------------------- requests Scrapy cannot make


class MissingLibraryHandler:
    """A download handler whose library is not installed, as Scrapy's httpx handler
    without httpx2: it refuses to load, and Scrapy answers every request of its scheme
    with NotSupported."""

    lazy = False

    def __init__(self, crawler: Any = None) -> None:
        raise NotConfigured("MissingLibraryHandler requires the frobnicate library")

    @classmethod
    def from_crawler(cls, crawler: Any) -> MissingLibraryHandler:
        return cls(crawler)


@pytest.mark.parametrize("handler", [None, f"{__name__}.MissingLibraryHandler"], ids=["none", "broken"])
@pytest_twisted.inlineCallbacks
def test_a_robots_txt_request_scrapy_cannot_make_drops_the_requests_at_once_with_one_error(origins, handler):
    a, b = origins("127.0.0.1"), origins("127.0.0.2")
    first = [a.url("/1"), a.url("/2"), b.url("/1")]
    later = [a.url("/3"), b.url("/2")]  # after the retry delay: never fetched again
    settings = mw_settings(DOWNLOAD_HANDLERS={"http": handler}, ROBOTSTXT_RETRY_DELAY=0.2)

    result = yield run_crawl(BatchSpider, settings, batches=[(0, first), (0.6, later)])

    assert a.requests == [] and b.requests == []
    dropped = [e for e in _dropped(result, "http://")]
    assert [e.reason for e in dropped] == ["cannot_request"] * 5
    assert all("Scrapy cannot make the request" in str(e) and "NotSupported" in str(e) for e in dropped)
    assert stat(result, "dropped_cannot_request") == 5
    assert stat(result, "request_count") == 2  # once per origin, not retried
    assert stat(result, "held") == 0
    # One ERROR for the cause, naming the setting to fix, not one per origin or per retry.
    (error,) = result.messages(logging.ERROR)
    assert "DOWNLOAD_HANDLERS['http']" in error
    if handler is not None:
        assert "requires the frobnicate library" in error
    (summary,) = _lines(result, logging.WARNING, "origins given up")
    assert "2 that Scrapy cannot request" in summary
    assert result.stats["finish_reason"] == "finished"


@pytest_twisted.inlineCallbacks
def test_a_redirect_to_a_scheme_scrapy_cannot_download_is_unavailable(origins):
    """robots.txt redirects to https, whose handler is off: the redirect leads to no
    usable file (unavailable: allow all); the crawl is told once why."""
    a = origins()
    a["/robots.txt"] = Redirect(f"https://{a.host}:{a.port}/robots.txt")
    pages = [a.url(f"/page/{i}") for i in range(3)]

    result = yield run_crawl(pages, mw_settings(DOWNLOAD_HANDLERS={"https": None}))

    assert sorted(result.responses) == sorted(pages)
    assert len(robots_hits(a)) == 1
    assert stat(result, "unavailable") == 1 and stat(result, "redirect_failed") == 1
    (error,) = result.messages(logging.ERROR)
    assert "DOWNLOAD_HANDLERS['https']" in error and "the redirected robots.txt is unavailable" in error


@pytest_twisted.inlineCallbacks
def test_a_state_scrapy_cannot_make_is_not_shared_through_the_store(origins, tmp_path):
    """A request this process cannot make says nothing of the origin: another process,
    with its own handlers, fetches it."""
    a = origins()
    a.robots(RULES)
    store = {"ROBOTSTXT_STORE": "disk", "ROBOTSTXT_STORE_PATH": str(tmp_path)}

    broken = yield run_crawl([a.url("/page")], mw_settings(DOWNLOAD_HANDLERS={"http": None}, **store))
    working = yield run_crawl([a.url("/page"), a.url("/private/1")], mw_settings(**store))

    assert [e.reason for e in _dropped(broken, a.url("/"))] == ["cannot_request"]
    assert stat(working, "store_hit") == 0
    assert working.responses == [a.url("/page")]
    assert len(robots_hits(a)) == 1
    assert [p.path_only for p in page_hits(a)] == ["/page"]


# --------------------------------------------------------------------------- a slow DNS resolver

DEAD_CRAWL = """
import json, os, sys, time
import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.settings import default_settings

class Dead(scrapy.Spider):
    name = "dead"

    async def start(self):
        for i in range(int(os.environ["DEAD"])):
            yield scrapy.Request(f"http://dead{i}.invalid/page", callback=self.parse, errback=self.failed)

    def parse(self, response):
        pass

    def failed(self, failure):
        pass

resolver = "TWISTED_DNS_RESOLVER" if hasattr(default_settings, "TWISTED_DNS_RESOLVER") else "DNS_RESOLVER"
settings = json.loads(os.environ["SETTINGS"])
settings[resolver] = "slow_dns.SilentDnsResolver"
process = CrawlerProcess(settings=settings)
crawler = process.create_crawler(Dead)
closed = {}
crawler.signals.connect(lambda spider, reason: closed.update(at=time.time(), reason=reason),
                        signal=signals.spider_closed, weak=False)
process.crawl(crawler)
process.start()
stats = {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("robotstxt/")}
print(json.dumps({"closed_at": closed["at"], "reason": closed["reason"], "stopped_at": time.time(), "stats": stats}))
"""


@pytest.mark.requires_reactor("a resolver of the reactor's threads; without a reactor Scrapy's aiohttp "
                              "handler resolves names itself")
def test_unresolvable_hosts_behind_a_slow_resolver_end_in_no_host_and_the_process_exits_at_once(tmp_path):
    """Many origins whose names a slow resolver fails (each lookup holds one of the
    reactor's 10 threads for 1 s): robots.txt downloads run ROBOTSTXT_CONCURRENT_FETCHES
    at a time, so their lookups do not queue for the threads until DOWNLOAD_TIMEOUT cuts
    them (which would hold their requests as unreachable): each origin is found
    unresolvable and its request dropped. When the spider closes no lookup is left
    queued, so the process does not sit joining resolver threads."""
    import json
    import os
    import socket
    import subprocess
    import sys

    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # reads queries, never answers
    silent.bind(("127.0.0.1", 0))
    log = tmp_path / "lookups.log"
    (tmp_path / "crawl.py").write_text(DEAD_CRAWL)
    dead = 60
    settings = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "LOG_LEVEL": "INFO", "DOWNLOAD_TIMEOUT": 3,
                "TELNETCONSOLE_ENABLED": False, "RETRY_ENABLED": False}
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env.update(DEAD=str(dead), SETTINGS=json.dumps(settings), SILENT_DNS=f"127.0.0.1:{silent.getsockname()[1]}",
               SILENT_DNS_LOG=str(log), PYTHONPATH=os.pathsep.join([str(Path(__file__).parent),
                                                                     env.get("PYTHONPATH", "")]))
    try:
        run = subprocess.run([sys.executable, "crawl.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=300, check=False)
    finally:
        silent.close()

    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    stats = found["stats"]
    assert found["reason"] == "finished"
    assert stats.get("robotstxt/dropped_no_host") == dead, stats  # none timed out waiting for a thread
    assert stats.get("robotstxt/dropped_unreachable", 0) == 0 and stats.get("robotstxt/held", 0) == 0
    assert stats.get("robotstxt/fetch_queued", 0) > 0  # the bound was reached
    lookups = [line.split() for line in log.read_text().splitlines()]
    assert sorted(name for _, name in lookups) == sorted(f"dead{i}.invalid" for i in range(dead))
    assert not [name for at, name in lookups if float(at) >= found["closed_at"]]


def test_an_origin_given_up_does_not_hold_the_requests_parked_for_it():
    """The parking's test for a new request of an origin with parked requests: held only while
    waiting can help. A host name that does not resolve is given up at once (its requests wait for
    the next fetch, or are dropped): a request parked then is not held (told ``held`` and counted in
    ``robotstxt/held``), as a 503's are."""
    from scrapy.utils.test import get_crawler

    from scrapy_rfc9309.components.robotstxt_middleware import RobotsTxtMiddleware
    from scrapy_rfc9309.core.origins import Origin
    from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome, OriginState

    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True, "DOWNLOADER_MIDDLEWARES": {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None}})
    mw = RobotsTxtMiddleware.from_crawler(crawler)
    states = mw.states.document_states
    for host, status, cause, holds in (("dead.example", None, Cause.NO_HOST, False),
                                       ("busy.example", 503, Cause.TRANSIENT, True)):
        origin = Origin.from_url(f"http://{host}/")
        outcome = FetchOutcome(Access.UNREACHABLE, f"http://{host}/robots.txt", status, cause=cause)
        states.cache.put(origin, OriginState.initial(outcome, time.time(), states.policy))
        assert states.holds_now(origin) is holds, host
