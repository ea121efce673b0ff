"""Requests waiting for a robots.txt when the crawl stops (Ctrl-C, ``crawler.stop()``,
``CloseSpider``): with a scheduler that keeps its queue (``JOBDIR``, a persistent
scrapy-redis queue) they are handed back to it, and the resumed crawl crawls each of
them once; without one they are dropped, counted and summed up in the log. Real
crawls, a real ``JOBDIR``, and a real SIGINT to a ``scrapy crawl`` process."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from crawl import run_crawl
from middleware_support import TrackingSpider, mw_settings, page_hits, stat, text, until
from reactorless import command_options
from scrapy.utils.defer import deferred_from_coro
from servers import ThreadedOrigin
from twisted.internet import defer

from scrapy_rfc9309.exceptions import RobotsTxtUnreachable

PAGES = 300


def _settings(**extra: Any) -> dict[str, Any]:
    # Held until stopped: the retry of the unreachable robots.txt is far away.
    return mw_settings(CONCURRENT_REQUESTS=16, ROBOTSTXT_RETRY_DELAY=60, ROBOTSTXT_RETRY_MAX_DELAY=60,
                       ROBOTSTXT_MAX_WAIT=600, **extra)


def _stop_once_held(crawling: Any, held: int) -> Any:
    return defer.ensureDeferred(_stopping(crawling, held))


async def _stopping(crawling: Any, held: int) -> Any:
    """Wait until ``held`` requests wait for the robots.txt, stop the crawl as Ctrl-C does
    (``crawler.stop()``), and return its result."""
    await until(lambda: TrackingSpider.latest is not None and TrackingSpider.latest.crawler.stats.get_value(
        "robotstxt/held", 0) >= held, f"{held} requests held")
    assert TrackingSpider.latest is not None
    crawler = TrackingSpider.latest.crawler
    stop_async = getattr(crawler, "stop_async", None)  # Scrapy 2.14 and later
    await (deferred_from_coro(stop_async()) if stop_async is not None else crawler.stop())
    return await crawling


@pytest_twisted.inlineCallbacks
def test_requests_held_when_the_crawl_stops_are_crawled_once_after_a_resume(origins, tmp_path):
    a = origins()
    a["/robots.txt"] = text("busy", status=503)
    urls = [a.url(f"/page/{i}") for i in range(PAGES)]
    settings = _settings(JOBDIR=str(tmp_path / "job"))
    TrackingSpider.latest = None

    stopped = yield _stop_once_held(run_crawl(TrackingSpider, settings, urls=urls, dont_filter=False), PAGES)

    assert stopped.stats["finish_reason"] == "shutdown"
    assert page_hits(a) == []
    assert stat(stopped, "requeued_on_close") == PAGES
    assert stat(stopped, "held_released_on_close") == 0
    assert not [e for e in stopped.errors if isinstance(e.exception, RobotsTxtUnreachable)]  # no errback
    (summary,) = [m for m in stopped.messages(logging.WARNING) if "Put back in the scheduler" in m]
    assert f"{PAGES} requests that waited for a robots.txt" in summary

    a.robots("User-agent: *\nDisallow: /private\n")
    resumed = yield run_crawl(TrackingSpider, settings, urls=urls, dont_filter=False)

    assert resumed.stats["finish_reason"] == "finished"
    assert sorted(resumed.responses) == sorted(urls)
    hits = Counter(hit.path for hit in page_hits(a))
    assert hits == Counter({f"/page/{i}": 1 for i in range(PAGES)})  # every one, exactly once


@pytest_twisted.inlineCallbacks
def test_without_a_persistent_scheduler_held_requests_are_dropped_and_counted(origins):
    a = origins()
    a["/robots.txt"] = text("busy", status=503)
    urls = [a.url(f"/page/{i}") for i in range(20)]
    TrackingSpider.latest = None

    stopped = yield _stop_once_held(run_crawl(TrackingSpider, _settings(), urls=urls), 20)

    # Those waiting in the downloader are dropped (their errback is told); those parked outside
    # it are not crawled, as the rest of the scheduler's queue: each is counted.
    dropped = [e.exception for e in stopped.errors if isinstance(e.exception, RobotsTxtUnreachable)]
    assert {e.reason for e in dropped} == {"closing"}
    released, discarded = stat(stopped, "held_released_on_close"), stat(stopped, "discarded_on_close")
    assert released == len(dropped) and released + discarded == 20 and discarded > 0
    assert stat(stopped, "requeued_on_close") == 0
    (summary,) = [m for m in stopped.messages(logging.WARNING) if "origins given up" in m]
    assert f"{released} held when the spider closed" in summary
    assert f"Not crawled: {discarded} requests that waited for a robots.txt" in summary


@pytest_twisted.inlineCallbacks
def test_a_persistent_scrapy_redis_queue_gets_the_held_requests_back(origins, redis_url):
    a = origins()
    a["/robots.txt"] = text("busy", status=503)
    urls = [a.url(f"/page/{i}") for i in range(30)]
    settings = _settings(SCHEDULER="scrapy_redis.scheduler.Scheduler",
                         DUPEFILTER_CLASS="scrapy_redis.dupefilter.RFPDupeFilter",
                         SCHEDULER_PERSIST=True, REDIS_URL=redis_url)
    TrackingSpider.latest = None

    stopped = yield _stop_once_held(run_crawl(TrackingSpider, settings, urls=urls, dont_filter=False), 30)

    assert stat(stopped, "requeued_on_close") == 30
    a.robots("User-agent: *\nAllow: /\n")
    resumed = yield run_crawl(TrackingSpider, settings, urls=urls, dont_filter=False)

    assert sorted(resumed.responses) == sorted(urls)
    assert Counter(hit.path for hit in page_hits(a)) == Counter({f"/page/{i}": 1 for i in range(30)})


# --------------------------------------------------------------------------- a real Ctrl-C

SPIDER = textwrap.dedent('''
    import json
    import os
    import scrapy

    class Pages(scrapy.Spider):
        name = "pages"

        async def start(self):
            base = os.environ["SITE"]
            for i in range(int(os.environ["PAGES"])):
                yield scrapy.Request(f"{base}/page/{i}")

        def parse(self, response):
            yield {"url": response.url}

        def closed(self, reason):
            stats = {key: value for key, value in self.crawler.stats.get_stats().items()
                     if isinstance(value, (int, str))}
            with open(os.environ["STATS"], "w") as file:
                json.dump({**stats, "finish_reason": reason}, file)
''')


def _crawl(tmp_path: Path, site: ThreadedOrigin, items: str) -> subprocess.Popen[str]:
    """A ``scrapy runspider`` process that writes its stats to ``items``'s name with ``.stats``.

    It logs at WARNING: the INFO line Scrapy's SIGINT handler logs, if the signal comes while
    the process writes a line to the same stream, raises ``RuntimeError: reentrant call inside
    <_io.BufferedWriter>`` inside the handler and the crawl never stops (CPython's buffered
    streams; seen on Python 3.10 with Scrapy 2.13.4). The stats are read from the file the
    spider writes when it closes."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("SCRAPY_")}
    env.update(SITE=site.base, PAGES=str(PAGES), PYTHONFAULTHANDLER="1",  # SIGABRT dumps its threads' stacks
               STATS=str(tmp_path / f"{items}.stats"))
    args = [sys.executable, "-m", "scrapy", "runspider", "spider.py", "-O", items, "-L", "WARNING",
            "-s", "ADDONS={\"scrapy_rfc9309.Addon\": 0}", "-s", f"JOBDIR={tmp_path / 'job'}",
            "-s", "CONCURRENT_REQUESTS=16", "-s", "ROBOTSTXT_RETRY_DELAY=20", "-s", "ROBOTSTXT_RETRY_MAX_DELAY=20",
            "-s", "TELNETCONSOLE_ENABLED=False", *command_options()]  # without a reactor in the reactorless run
    return subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_ctrl_c_with_a_jobdir_loses_no_held_request(tmp_path):
    (tmp_path / "spider.py").write_text(SPIDER)
    with ThreadedOrigin(default=(200, {"Content-Type": "text/html"}, b"<html>ok</html>")) as site:
        site.route("/robots.txt", 503, "busy")
        first = _crawl(tmp_path, site, "first.jsonl")
        log = _Log(first)
        # The robots.txt answered 503 and the request that asked for it is held: Ctrl-C now.
        assert log.wait_for("complete disallow. Its requests are held"), log.text()
        first.send_signal(signal.SIGINT)
        assert _ended(first, log, 60) == 0, log.text()
        stats = json.loads((tmp_path / "first.jsonl.stats").read_text())
        assert stats["finish_reason"] == "shutdown", log.text()
        assert stats.get("robotstxt/requeued_on_close", 0) > 0, stats

        site.route("/robots.txt", 200, "User-agent: *\nAllow: /\n")
        second = _crawl(tmp_path, site, "second.jsonl")
        log = _Log(second)
        assert _ended(second, log, 120) == 0, log.text()
        assert json.loads((tmp_path / "second.jsonl.stats").read_text())["finish_reason"] == "finished"

    pages = Counter(path for path in site.paths() if path.startswith("/page/"))
    assert pages == Counter({f"/page/{i}": 1 for i in range(PAGES)})


def _ended(process: subprocess.Popen[str], log: _Log, limit: float) -> int:
    """The exit status of ``process`` once it ends; past ``limit`` seconds, the test fails with its
    log, which ends with every thread's stack (``SIGABRT``, with the fault handler on)."""
    try:
        return process.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        pytest.fail(f"the crawl did not end within {limit:.0f} s:\n{log.text()}")


class _Log:
    """The stderr of a running process, read by a thread as it is written."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            with self._changed:
                self._lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._lines.append("")  # the end
            self._changed.notify_all()

    def wait_for(self, text: str, limit: float = 60) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: any(text in line for line in self._lines)
                                          or (self._lines and self._lines[-1] == ""), limit) and \
                any(text in line for line in self._lines)

    def text(self) -> str:
        self._thread.join(timeout=60)
        with self._changed:
            return "".join(self._lines)
