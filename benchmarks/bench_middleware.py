"""Benchmark: the cost and the crawl behaviour of ``scrapy_rfc9309.RobotsTxtMiddleware``.

Two measurements, each crawl in a fresh subprocess, every HTTP server in another
subprocess (so that its CPU is not counted), all traffic on 127.0.0.0/8:

(a) **CPU overhead.** One local origin, a robots.txt of ~30 realistic rules (some
    wildcards), a few thousand pages ``/p/<n>`` (all allowed, so every
    configuration does the same work), crawled as 16 chains (each page's callback
    yields the next). The same crawl runs with ``ROBOTSTXT_OBEY=False``, with this
    middleware, with this middleware and ``ROBOTSTXT_TDMREP`` (the origin serves a
    tdmrep.json of 5 rules, none matching) and with Scrapy's built-in middleware, several repetitions in
    alternating order. The crawler measures its own CPU time
    (``getrusage(RUSAGE_SELF)``, user + sys, from creating the crawler to the end
    of the crawl) and wall time; the medians are compared. One more instrumented
    run per middleware times its hooks directly (its own time per request), and
    the unmeasured warm-up runs sample where the requests wait.

(b) **Broad crawl with failing robots.txt.** 30 origins (127.0.0.2-127.0.0.31),
    6 of which have a robots.txt that stalls (never answers) or fails (503,
    connection reset). The crawl runs with all 30 origins and with only the 24
    healthy ones; the cumulative number of healthy-origin pages fetched over
    time (spider response timestamps) and the time to fetch them all are
    compared. The same is run with Scrapy's built-in middleware for reference.
    The crawler also samples, every 50 ms, how many requests are in the
    downloader, waiting in the middleware and in the scheduler.

(c) **Memory over a broad crawl** (``--only origins``). At least 20,000 origins,
    ``http://o<i>.bench.test:<port>``, all answered by one server on 127.0.0.1 by
    their Host (the crawl resolves every ``*.bench.test`` name to 127.0.0.1; every
    response closes its connection, so that no origin keeps one): origin i serves
    file i of a corpus of real robots.txt files (cycled) and one page, ``/p/<i>``,
    which the crawl requests (64 at a time). The same crawl runs with
    ``ROBOTSTXT_OBEY=False``, with this middleware (``ROBOTSTXT_CACHE_SIZE`` above
    the number of origins, so that every origin's state is kept) and with Scrapy's
    built-in middleware, in alternating order; the crawler's resident memory is read
    when the spider opens and when it closes (after a garbage collection). The
    growth over the ``ROBOTSTXT_OBEY=False`` crawl's, per origin, is what each
    middleware keeps per origin (its parsed files and every other per-origin state).
The report ends with a markdown summary for benchmarks/README.md. The package's commit and
a hash of its sources are printed, with a warning if they changed during the run.

Usage::

    python benchmarks/bench_middleware.py [--quick] [--json results.json]
    python benchmarks/bench_middleware.py --only origins [--origins 20000] [--origins-reps 3] [--corpus DIR]

The script always exits 0 unless it cannot run at all: it measures, it does
not gate. Every subprocess has a hard time limit and every server stops by
itself.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import resource
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from common import commit, tests_on_path
from common import fmt as _fmt
from common import median as _median
from common import rss_kb as _rss_kb
from common import table as _table

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve()

OFF = "off"
OURS = "ours"
TDM = "tdmrep"
BUILTIN = "builtin"
LABELS = {
    OFF: "ROBOTSTXT_OBEY=False",
    OURS: "scrapy-rfc9309",
    TDM: "scrapy-rfc9309 + ROBOTSTXT_TDMREP",
    BUILTIN: "Scrapy built-in",
}
BUILTIN_MW = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
OURS_MW = "scrapy_rfc9309.RobotsTxtMiddleware"

GOAL_CPU_OVERHEAD = 1.0  # percent, ours vs ROBOTSTXT_OBEY=False
GOAL_TDM_OVERHEAD = 2.0  # percent, ours with ROBOTSTXT_TDMREP vs without
GOAL_HOOK_RATIO = 0.5  # ours (the add-on, every default on) / the built-in's own time in their hooks per page

#: The CPU benchmark origin's tdmrep.json (ROBOTSTXT_TDMREP): rules of the usual shapes, none of which
#: matches /p/<n>, so every request walks them all.
TDMREP_JSON = json.dumps([
    {"location": "/private/", "tdm-reservation": 1, "tdm-policy": "https://www.example.com/tdm-policy.json"},
    {"location": "/archive/*.pdf$", "tdm-reservation": 1},
    {"location": "/images/*.jpg", "tdm-reservation": 1},
    {"location": "/news/", "tdm-reservation": 0},
    {"location": "/*.zip$", "tdm-reservation": 1},
])
GOAL_BROAD_RATIO = 1.1  # healthy-origin completion time, with / without failing origins

# A server stops when its parent closes its stdin (or dies); after this many seconds it stops by
# itself all the same, a safety net longer than the longest benchmark (bench_ledger's pairs of crawls).
SERVER_MAX_LIFE = 6 * 3600.0
CRAWL_TIMEOUT = 240.0  # a crawl subprocess is killed after this many seconds
CLOSESPIDER_TIMEOUT = 180  # and closes itself before that

ROBOTS_TXT = """\
# robots.txt for www.example.com
# Crawlers: please respect the rules below.

User-agent: *
Disallow: /admin/
Disallow: /cart
Disallow: /checkout/
Disallow: /account/
Disallow: /login
Disallow: /logout
Disallow: /register
Disallow: /search
Disallow: /cgi-bin/
Disallow: /tmp/
Disallow: /print/
Disallow: /api/
Allow: /api/public/
Disallow: /wp-admin/
Allow: /wp-admin/admin-ajax.php
Disallow: /*?sessionid=
Disallow: /*&sessionid=
Disallow: /*?sort=
Disallow: /*&sort=
Disallow: /*?filter=
Disallow: /*.json$
Disallow: /*.xml$
Disallow: /*/print$
Disallow: /private*/
Disallow: /p/*/edit
Disallow: /p/*?replytocom=
Disallow: /tag/*/feed/
Disallow: /comments/feed/
Disallow: /trackback/

User-agent: Googlebot
User-agent: Bingbot
Disallow: /nogoogle/
Allow: /

User-agent: GPTBot
User-agent: CCBot
Disallow: /

Sitemap: https://www.example.com/sitemap.xml
Sitemap: https://www.example.com/news-sitemap.xml
"""

def _page(path: str, head: str = "") -> bytes:
    """A small HTML page (about 1.5 KB) with a few links, and ``head`` in its head."""
    try:
        n = int(path.rsplit("/", 1)[-1])
    except ValueError:
        n = 0
    links = "".join(f'<li><a href="/p/{n + k}">page {n + k}</a></li>' for k in range(1, 11))
    text = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 10
    return (
        f"<!DOCTYPE html><html><head><title>Page {n}</title>{head}</head>"
        f"<body><h1>Page {n}</h1><p>{text}</p><ul>{links}</ul></body></html>"
    ).encode()


# --------------------------------------------------------------------------------------
# Server mode (a subprocess): the test suite's origins (tests/servers) in a reactor of their own
# --------------------------------------------------------------------------------------
def _robots_behaviour(spec: dict[str, Any]) -> Any:
    """What an origin's robots.txt does: ``ok`` (the rules above, after
    ``robots_delay`` seconds), ``stall`` (never answers: the client's
    DOWNLOAD_TIMEOUT cuts it), ``503``, ``reset`` (the connection aborted)."""
    from servers import Delay, Drop, Stall, Static

    kind = spec.get("robots", "ok")
    if kind == "stall":
        return Stall()
    if kind == "reset":
        return Drop()
    if kind == "503":
        answer = Static(b"<html><body><h1>503 Service Unavailable</h1></body></html>", status=503)
    else:
        answer = Static(ROBOTS_TXT.encode(), headers={"Content-Type": "text/plain"})
    delay = float(spec.get("robots_delay", 0.0))
    return Delay(delay, answer) if delay > 0 else answer


def _pages_behaviour(delay: float, headers: dict[str, str] | None = None, head: str = "") -> Any:
    """``/p/<n>``: a page (:func:`_page`, with ``head`` in its head and ``headers``) after ``delay``
    seconds; anything else: 404."""
    from servers import Delay, Dynamic, Static

    not_found = Static(b"not found", status=404, headers={"Content-Type": "text/plain"})

    def answer(origin: Any, hit: Any) -> Any:
        if not hit.path.startswith("/p/"):
            return not_found
        page = Static(_page(hit.path_only, head), headers=dict(headers or {}))
        return Delay(delay, page) if delay > 0 else page

    return Dynamic(answer)


def _run_until_stdin_closes(reactor: Any, max_life: float) -> None:
    """Run a server process's reactor until its parent closes our stdin (or dies, which closes it
    too), or for ``max_life`` seconds at the most."""

    def wait_stdin() -> None:
        with contextlib.suppress(Exception):
            sys.stdin.buffer.read()
        reactor.callFromThread(reactor.stop)

    threading.Thread(target=wait_stdin, daemon=True).start()
    reactor.callLater(max_life, reactor.stop)
    reactor.run()


def serve_main(spec_path: str, log_path: str) -> int:
    """Serve every site of the spec with :class:`servers.Origin` in a
    Twisted reactor of this process, print the ports, and stop when the parent
    closes stdin (or after ``max_life`` seconds); then write the request log:
    ``(wall time, site index, path)`` per request received."""
    spec = json.loads(Path(spec_path).read_text())
    if "cpu" in spec:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setaffinity(0, {spec["cpu"]})
    tests_on_path()
    from servers import Origin, Static
    from twisted.internet import reactor

    origins = []
    for site in spec["sites"]:
        origin = Origin(site["host"], {
            "/robots.txt": _robots_behaviour(site),
            "/.well-known/tdmrep.json": Static(TDMREP_JSON.encode(), headers={"Content-Type": "application/json"}),
        })
        origin.default = _pages_behaviour(float(site.get("delay", 0.0)), site.get("headers"), site.get("head", ""))
        origins.append(origin.start())
    print(json.dumps({"ports": [origin.port for origin in origins]}), flush=True)
    _run_until_stdin_closes(reactor, float(spec.get("max_life", SERVER_MAX_LIFE)))
    # Hits carry monotonic times; the crawls measure wall time.
    offset = time.time() - time.monotonic()
    log = sorted((hit.time + offset, index, hit.path)
                 for index, origin in enumerate(origins) for hit in origin.requests)
    Path(log_path).write_text(json.dumps(log))
    return 0


# --------------------------------------------------------------------------------------
# Crawl mode (a subprocess): one Scrapy crawl, measured from inside
# --------------------------------------------------------------------------------------
def crawl_main(spec_path: str, out_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    if "cpu" in spec:
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setaffinity(0, {spec["cpu"]})
    # The snapshot of the package taken when the benchmark started (see snapshot_package), else the checkout.
    package_root = spec.get("package_root") or str(ROOT)
    if package_root not in sys.path:
        sys.path.insert(0, package_root)

    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    urls: list[str] = spec["urls"]
    record: bool = spec.get("record", False)
    # chain=K: start() yields the first K URLs and the callback of URL i yields URL i+K, so that the
    # requests come from callbacks through the scheduler, K at a time (a crawl's steady state).
    chain: int = spec.get("chain") or len(urls)
    marks: dict[str, float] = {}
    responses: list[tuple[float, str]] = []
    errors: list[tuple[float, str, str]] = []
    counts = {"ok": 0, "error": 0}
    # parse=True: the spider reads each page's title and links (and yields them as an item).
    parsing = bool(spec.get("parse"))
    # rss_at=[N, ...]: the process's resident memory when the Nth response reaches its callback.
    rss_at = set(spec.get("rss_at") or ())
    rss: list[tuple[int, int]] = []

    class BenchSpider(scrapy.Spider):
        name = "bench"

        async def start(self) -> Any:
            for i, url in enumerate(urls[:chain]):
                yield scrapy.Request(url, callback=self.parse, errback=self.failed, meta={"i": i})

        def parse(self, response: Any) -> Any:
            counts["ok"] += 1
            if counts["ok"] in rss_at:
                rss.append((counts["ok"], _rss_kb()))
            if record:
                responses.append((time.time(), response.url))
            if parsing:  # what a crawl does with a page at the least: its title and links, as an item
                yield {"url": response.url, "title": response.css("title::text").get(),
                       "links": response.css("a::attr(href)").getall()}
            following = response.meta["i"] + chain
            if following < len(urls):
                yield scrapy.Request(urls[following], callback=self.parse, errback=self.failed, meta={"i": following})

        def failed(self, failure: Any) -> Any:
            counts["error"] += 1
            request = getattr(failure, "request", None)
            errors.append((time.time(), request.url if request is not None else "", type(failure.value).__name__))
            # chain_on_error: a request refused (robots.txt) or failed yields the next one too, so
            # that every URL of the chain is requested.
            if spec.get("chain_on_error") and request is not None:
                following = request.meta["i"] + chain
                if following < len(urls):
                    yield scrapy.Request(urls[following], callback=self.parse, errback=self.failed,
                                         meta={"i": following})

    # gc=True: the time spent in garbage collection (gc.callbacks), per generation, and the
    # resident memory every second of the crawl.
    gc_stats = _GcStats(spec.get("gc") == "census") if spec.get("gc") else None
    timings: dict[str, list[float]] = {}
    settings = spec["settings"]
    if spec.get("instrument"):
        settings = _instrumented(settings, timings, spec.get("instrument") == "cpu")
    process = CrawlerProcess(settings=settings, install_root_handler=True)
    before = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.perf_counter()
    crawler = process.create_crawler(BenchSpider)

    usage: dict[str, resource.struct_rusage] = {}

    def opened(spider: Any = None) -> None:
        marks["opened"] = time.time()
        usage["opened"] = resource.getrusage(resource.RUSAGE_SELF)
        if spec.get("rss_ends"):
            gc.collect()
            marks["rss_opened_kb"] = _rss_kb()

    def closed(spider: Any = None, reason: str = "") -> None:
        if spec.get("rss_ends"):
            gc.collect()
            marks["rss_closed_kb"] = _rss_kb()
        usage["closed"] = resource.getrusage(resource.RUSAGE_SELF)
        marks["closed"] = time.time()
        marks["reason"] = reason  # type: ignore[assignment]

    crawler.signals.connect(opened, signal=signals.spider_opened)
    crawler.signals.connect(closed, signal=signals.spider_closed)
    samples: list[list[float]] = []
    if spec.get("probe"):
        _install_probe(crawler, samples)
    process.crawl(crawler)
    start = time.time()
    process.start()
    wall = time.perf_counter() - wall0
    after = resource.getrusage(resource.RUSAGE_SELF)
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    u0, u1 = usage.get("opened", before), usage.get("closed", after)
    result = {
        "cpu_user": after.ru_utime - before.ru_utime,
        "cpu_sys": after.ru_stime - before.ru_stime,
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "cpu_crawl": (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime),
        "wall": wall,
        "start": start,
        "end": time.time(),
        "opened": marks.get("opened", start),
        "closed": marks.get("closed"),
        "reason": marks.get("reason"),
        "maxrss_kb": after.ru_maxrss,
        "ok": counts["ok"],
        "errors_n": counts["error"],
        "responses": responses,
        "errors": errors,
        "samples": samples,
        "rss": rss,
        "rss_opened_kb": marks.get("rss_opened_kb"),
        "rss_closed_kb": marks.get("rss_closed_kb"),
        "gc": gc_stats.summary() if gc_stats is not None else None,
        "package_file": getattr(sys.modules.get("scrapy_rfc9309"), "__file__", None),
        "timings": _timing_summary(timings, counts["ok"]),
        "stats": {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in stats.items()},
    }
    Path(out_path).write_text(json.dumps(result))
    return 0


class _GcStats:
    """Garbage collections of the crawl process (``gc.callbacks``): count, CPU time and wall
    time per generation, objects collected; and the resident memory sampled every second."""

    def __init__(self, census: bool = False) -> None:
        self.census: dict[str, int] | None = {} if census else None
        self.census_size = 0
        self.count = [0, 0, 0]
        self.cpu = [0.0, 0.0, 0.0]
        self.wall = [0.0, 0.0, 0.0]
        self.collected = [0, 0, 0]
        self.gen2_sizes: list[int] = []
        self.rss: list[tuple[float, int]] = []
        self._started = (0.0, 0.0)
        self._t0 = time.monotonic()
        gc.callbacks.append(self._callback)
        threading.Thread(target=self._sample, name="bench-rss", daemon=True).start()

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = (time.thread_time(), time.perf_counter())
            return
        generation = info["generation"]
        self.count[generation] += 1
        self.cpu[generation] += time.thread_time() - self._started[0]
        self.wall[generation] += time.perf_counter() - self._started[1]
        self.collected[generation] += info.get("collected", 0)
        if generation == 2:  # what a full collection left in the oldest generation (not in its time above)
            objects = gc.get_objects(2)
            self.gen2_sizes.append(len(objects))
            if self.census is not None and len(objects) > self.census_size:
                self.census_size = len(objects)
                counts: dict[str, int] = {}
                for obj in objects:
                    name = type(obj).__qualname__
                    counts[name] = counts.get(name, 0) + 1
                self.census = dict(sorted(counts.items(), key=lambda kv: -kv[1])[:25])
            del objects

    def _sample(self) -> None:
        while True:
            self.rss.append((round(time.monotonic() - self._t0, 1), _rss_kb()))
            time.sleep(1.0)

    def summary(self) -> dict[str, Any]:
        return {"count": self.count, "cpu": self.cpu, "wall": self.wall, "collected": self.collected,
                "gen2_sizes": self.gen2_sizes, "census": self.census,
                "total_cpu": sum(self.cpu), "total_wall": sum(self.wall), "rss": self.rss,
                "objects": len(gc.get_objects()), "threshold": gc.get_threshold()}


_WAITED = 0.002  # a process_request call longer than this waited (for robots.txt): not self time


def _instrumented(settings: dict[str, Any], timings: dict[str, list[float]], cpu: bool = False) -> dict[str, Any]:
    """The settings with the robots.txt middleware replaced by a subclass that times
    its hooks and signal handlers (in this subprocess only; the package is not changed).
    ``cpu``: a ``process_request`` call that returns at once is timed in CPU time of the
    thread (as ``process_response`` always is), not wall time, which on a loaded
    machine counts the moments the process was descheduled."""
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as Builtin

    # The public names, so that the same harness times another commit's package (bench-compare).
    from scrapy_rfc9309 import RobotsTxtMiddleware as Ours
    from scrapy_rfc9309 import UsageMiddleware as Usage

    clock = time.perf_counter
    # What reading the thread's CPU clock costs inside a timed window (a system call: some µs on a
    # virtual machine), taken off each CPU-time measurement, so that a middleware with more hooks is
    # not charged for the timing itself.
    tick = time.thread_time
    pairs = []
    for _ in range(2001):
        first = tick()
        pairs.append(tick() - first)
    overhead = statistics.median(pairs)

    def cpu_since(started: float) -> float:
        return max(0.0, tick() - started - overhead)

    def add(name: str, started: float) -> None:
        spent = clock() - started  # before anything allocates: a collection it set off would be counted
        timings.setdefault(name, []).append(spent)

    # The lists the CPU times go to, made before any timed window: an allocation inside one may set
    # off a garbage collection, which would be counted as the hook's time.
    request_times = timings.setdefault("process_request", [])

    # Ours is timed in place (its classes' hooks wrapped in this subprocess), so that the add-on,
    # which enables RobotsTxtMiddleware and UsageMiddleware itself, runs them as a user's crawl does.
    original_request = Ours.process_request

    def timed_request(self: Any, request: Any, spider: Any = None) -> Any:
        # Ours judges cached origins synchronously and returns a coroutine only
        # for requests that must wait: time both shapes.
        t = clock()
        t_cpu = time.thread_time()
        try:
            result = original_request(self, request)
        except BaseException:
            add("process_request", t)
            raise
        if result is None:
            if cpu:
                spent = cpu_since(t_cpu)
                request_times.append(spent)
            else:
                add("process_request", t)
            return None

        async def waiting() -> Any:
            try:
                return await result
            finally:
                add("process_request", t)

        return waiting()

    def timed_response(name: str, original: Any) -> Any:
        times = timings.setdefault(name, [])

        def timed(self: Any, request: Any, response: Any, spider: Any = None) -> Any:
            # CPU time of this thread: it never waits, and on a loaded machine wall time counts the
            # moments the process was descheduled.
            t = time.thread_time()
            try:
                return original(self, request, response)
            finally:
                spent = cpu_since(t)
                times.append(spent)

        return timed

    Ours.process_request = timed_request  # type: ignore[method-assign]
    # Scrapy calls RobotsTxtMiddleware.process_response only when a teller reads responses (the ledger):
    # the middleware gives Scrapy its ``_responded`` method then.
    Ours._responded = timed_response("process_response", Ours._responded)  # type: ignore[method-assign]
    Usage.process_response = timed_response(  # type: ignore[method-assign]
        "UsageMiddleware.process_response", Usage.process_response)

    class TimedBuiltin(Builtin):
        async def process_request(self, request: Any, spider: Any = None) -> None:
            # A call that did not wait for its robots.txt runs in one go: timed in CPU time of the
            # thread with ``cpu``, as ours is; one that waited keeps its wall time (counted as waited).
            t = clock()
            t_cpu = time.thread_time()
            try:
                return await super().process_request(request)
            finally:
                spent = cpu_since(t_cpu)
                wall = clock() - t
                request_times.append(spent if cpu and wall <= _WAITED else wall)

    settings = dict(settings)
    middlewares = dict(settings.get("DOWNLOADER_MIDDLEWARES") or {})
    if settings.get("ROBOTSTXT_OBEY") and not settings.get("ADDONS"):
        middlewares[BUILTIN_MW] = None
        middlewares[TimedBuiltin] = 100
    settings["DOWNLOADER_MIDDLEWARES"] = middlewares
    return settings


def _timing_summary(timings: dict[str, list[float]], pages: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    total = 0.0
    for name, values in timings.items():
        own = [v for v in values if not (name == "process_request" and v > _WAITED)]
        median = statistics.median(own) if own else 0.0
        own_sorted = sorted(own)
        # A call that waited for the robots.txt is counted at the median of those that did not.
        spent = sum(own) + median * (len(values) - len(own))
        total += spent
        out[name] = {
            "calls": len(values),
            "waited_calls": len(values) - len(own),
            "median_us": 1e6 * median if own else None,
            "p90_us": 1e6 * own_sorted[int(0.9 * (len(own_sorted) - 1))] if own else None,
            "top1pct_ms": 1e3 * sum(own_sorted[len(own_sorted) - max(1, len(own_sorted) // 100):]) if own else 0.0,
            "total_ms": 1e3 * spent,
        }
    out["total_us_per_page"] = 1e6 * total / pages if pages else None
    return out


PROBE_INTERVAL = 0.05
PROBE_FIELDS = (
    "t",
    "downloader_active",
    "slots_active",
    "slots_queued",
    "slots_transferring",
    "mw_waiting",
    "mw_held",
    "scheduler_pending",
)


def _install_probe(crawler: Any, samples: list[list[float]]) -> None:
    """Sample, every PROBE_INTERVAL s, where the crawl's requests are: the downloader's
    active set (what CONCURRENT_REQUESTS limits), its slots (queued, transferring), the
    requests waiting in our middleware (its ``waiting_count`` and ``held_count``) and the scheduler."""
    from scrapy import signals

    from scrapy_rfc9309 import RobotsTxtMiddleware

    def sample() -> None:
        engine = crawler.engine
        if engine is None or len(samples) > 20000:
            return
        downloader = engine.downloader
        slots = list(downloader.slots.values())
        waiting = held = 0
        for mw in downloader.middleware.middlewares:
            if isinstance(mw, RobotsTxtMiddleware):
                waiting += mw.waiting_count
                held += mw.held_count
        pending = 0
        slot = getattr(engine, "_slot", None)
        scheduler = getattr(slot, "scheduler", None)
        with contextlib.suppress(Exception):
            pending = len(scheduler)  # type: ignore[arg-type]
        samples.append(
            [
                time.time(),
                len(downloader.active),
                sum(len(s.active) for s in slots),
                sum(len(s.queue) for s in slots),
                sum(len(s.transferring) for s in slots),
                waiting,
                held,
                pending,
            ]
        )

    loops: list[Any] = []

    def started(spider: Any = None) -> None:
        from twisted.internet import task  # only once Scrapy has installed its reactor

        loops.append(task.LoopingCall(sample))
        loops[0].start(PROBE_INTERVAL, now=True)

    def stopped(spider: Any = None, reason: str = "") -> None:
        for loop in loops:
            if loop.running:
                loop.stop()

    crawler.signals.connect(started, signal=signals.spider_opened, weak=False)
    crawler.signals.connect(stopped, signal=signals.spider_closed, weak=False)


def _probe_timeline(samples: list[list[float]], t0: float, step: float) -> list[list[float]]:
    """Per ``step`` seconds after ``t0``: the window's end and the largest value of each probe field."""
    windows: dict[int, list[float]] = {}
    for sample in samples:
        k = max(0, int((sample[0] - t0) / step))
        row = windows.setdefault(k, [0.0] * (len(sample) - 1))
        for i, value in enumerate(sample[1:]):
            row[i] = max(row[i], value)
    return [[round((k + 1) * step, 2), *windows[k]] for k in sorted(windows)]


def _probe_max(samples: list[list[float]]) -> dict[str, float]:
    if not samples:
        return {}
    return {name: max(s[i] for s in samples) for i, name in enumerate(PROBE_FIELDS) if i > 0}


# --------------------------------------------------------------------------------------
# Orchestration
# --------------------------------------------------------------------------------------
def _cpus() -> tuple[int | None, int | None]:
    """(crawler CPU, server CPU) to pin to, when there are at least two."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None, None
    if len(cpus) < 2:
        return None, None
    return cpus[0], cpus[1]


class Server:
    """The HTTP server subprocess; ``ports`` once started, ``log`` once stopped."""

    def __init__(self, sites: list[dict[str, Any]], workdir: Path, cpu: int | None) -> None:
        self.workdir = workdir
        spec: dict[str, Any] = {"sites": sites, "max_life": SERVER_MAX_LIFE}
        if cpu is not None:
            spec["cpu"] = cpu
        self.spec_path = workdir / f"server-{id(self)}.json"
        self.log_path = workdir / f"server-{id(self)}.log.json"
        self.spec_path.write_text(json.dumps(spec))
        self.proc: subprocess.Popen[bytes] | None = None
        self.ports: list[int] = []
        self.log: list[tuple[float, int, str]] = []

    def __enter__(self) -> Server:
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), "--serve", str(self.spec_path), str(self.log_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 20)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            self._kill()
            raise RuntimeError("the benchmark server did not start")
        self.ports = json.loads(line)["ports"]
        return self

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self._kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.log_path.exists():
            self.log = [tuple(x) for x in json.loads(self.log_path.read_text())]  # type: ignore[misc]


_RUN: dict[str, str] = {}  # "package_root": the package snapshot the crawls import


def run_crawl(spec: dict[str, Any], workdir: Path, tag: str, timeout: float = CRAWL_TIMEOUT) -> dict[str, Any]:
    if "package_root" in _RUN:
        spec = {**spec, "package_root": _RUN["package_root"]}
    spec_path = workdir / f"crawl-{tag}.json"
    out_path = workdir / f"crawl-{tag}.out.json"
    spec_path.write_text(json.dumps(spec))
    if out_path.exists():
        out_path.unlink()
    # Byte-compiled modules are cached in the work directory (not next to the sources), so that no
    # configuration pays for compiling its modules on every run (PYTHONDONTWRITEBYTECODE may be set).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--crawl", str(spec_path), str(out_path)],
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0 or not out_path.exists():
        sys.stderr.write(proc.stderr.decode(errors="replace")[-4000:])
        raise RuntimeError(f"crawl {tag} failed with exit code {proc.returncode}")
    result = json.loads(out_path.read_text())
    stderr = proc.stderr.decode(errors="replace")
    result["stderr_tail"] = stderr[-3000:]
    result["log_counts"], result["log_errors"] = _log_counts(stderr)
    if result.get("reason") is None:
        sys.stderr.write(result["stderr_tail"])
        raise RuntimeError(f"crawl {tag} did not run")
    return result


def _log_counts(text: str) -> tuple[dict[str, int], list[str]]:
    """Log lines per level, and the first ERROR/CRITICAL lines (with a traceback's last line)."""
    counts: dict[str, int] = {}
    errors: list[str] = []
    lines = text.splitlines()
    for n, line in enumerate(lines):
        for level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            if f"] {level}: " in line:
                counts[level] = counts.get(level, 0) + 1
                if level in ("ERROR", "CRITICAL") and len(errors) < 5:
                    tail = next((x for x in lines[n + 1 : n + 60] if x and not x.startswith((" ", "Traceback"))), "")
                    errors.append(line[:300] + (f" ... {tail[:200]}" if tail else ""))
                break
    return counts, errors


def base_settings() -> dict[str, Any]:
    return {
        "LOG_LEVEL": "ERROR",
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "HTTPCACHE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "HTTPPROXY_ENABLED": False,  # loopback traffic must never go to a proxy from the environment
        "DOWNLOAD_DELAY": 0,
        "AUTOTHROTTLE_ENABLED": False,
        "LOGSTATS_INTERVAL": 0,
        "MEMUSAGE_ENABLED": False,
        "CLOSESPIDER_TIMEOUT": CLOSESPIDER_TIMEOUT,
    }


def config_settings(config: str) -> dict[str, Any]:
    if config == OFF:
        return {"ROBOTSTXT_OBEY": False}
    if config == OURS:  # every default on: the add-on (RobotsTxtMiddleware, UsageMiddleware reading headers)
        return {"ADDONS": {"scrapy_rfc9309.Addon": 0}}
    if config == TDM:  # enforced, so that each request is judged by the tdmrep.json as a TDM crawl's would be
        return {**config_settings(OURS), "ROBOTSTXT_TDMREP": True, "ROBOTSTXT_USAGE_DENY": ["train-ai"]}
    return {"ROBOTSTXT_OBEY": True}


#: The CPU benchmark's crawl settings. CONCURRENT_ITEMS=1: Scrapy 2.19 starts CONCURRENT_ITEMS asyncio
#: tasks for every callback's output (about 1 ms per response here with the default 100); the spider
#: yields nothing, so 1 removes that fixed cost and makes the baseline smaller (a stricter denominator).
CPU_CHAINS = 16  # the CPU benchmark's crawl: 16 chains of pages, each page's callback yields the next
CPU_SETTINGS: dict[str, Any] = {
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "CONCURRENT_ITEMS": 1,
    "DOWNLOAD_TIMEOUT": 30,
    "RETRY_ENABLED": False,
}


# ---- (a) CPU overhead -----------------------------------------------------------------
def _machine_busy() -> float:
    """CPU-seconds the whole machine has spent busy (all CPUs), from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return float("nan")
    values = [int(v) for v in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def bench_cpu(pages: int, reps: int, workdir: Path, pin: bool, hook_runs: int = 3) -> dict[str, Any]:
    crawler_cpu, server_cpu = _cpus() if pin else (None, None)
    configs = [OFF, OURS, TDM, BUILTIN]
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    extra: dict[str, Any] = {}
    with Server([{"host": "127.0.0.1", "robots": "ok"}], workdir, server_cpu) as server:
        base = f"http://127.0.0.1:{server.ports[0]}"
        urls = [f"{base}/p/{n}" for n in range(pages)]

        def spec(config: str, count: int, **more: Any) -> dict[str, Any]:
            settings = base_settings() | config_settings(config)
            settings.update(CPU_SETTINGS)
            out: dict[str, Any] = {"urls": urls[:count], "settings": settings, "chain": CPU_CHAINS, **more}
            if crawler_cpu is not None:
                out["cpu"] = crawler_cpu
            return out

        # Warm-up (bytecode cache, page cache), not counted; probed, to show where requests wait.
        for config in configs:
            result = run_crawl(spec(config, min(1000, pages), probe=True), workdir, f"cpu-warm-{config}")
            extra.setdefault("probe_max", {})[config] = _probe_max(result["samples"])
        for rep in range(reps):
            order = configs[rep % len(configs) :] + configs[: rep % len(configs)]
            for config in order:
                busy0 = _machine_busy()
                result = run_crawl(spec(config, pages), workdir, f"cpu-{config}-{rep}")
                busy = _machine_busy() - busy0
                result.pop("responses", None)
                # Other processes (the server included) during the run, in CPUs.
                result["others_cpus"] = max(0.0, (busy - result["cpu"]) / result["wall"]) if result["wall"] else 0.0
                runs[config].append(result)
                print(
                    f"  (a) rep {rep + 1}/{reps} {LABELS[config]:<22} cpu {result['cpu']:.3f} s "
                    f"(open->close {result['cpu_crawl']:.3f} s)  wall {result['wall']:.3f} s  pages {result['ok']}  "
                    f"other load {result['others_cpus']:.2f} CPUs",
                    file=sys.stderr,
                    flush=True,
                )
        # The middlewares' own time in their hooks, from instrumented runs (not in the medians): each hook
        # call that does not wait timed in CPU time of the thread, ours and the built-in's alike.
        for run_index in range(hook_runs):
            for config in (OURS, TDM, BUILTIN):
                result = run_crawl(spec(config, pages, instrument="cpu"), workdir,
                                   f"cpu-instrumented-{config}-{run_index}")
                timings = result.get("timings", {})
                extra.setdefault("self_time_runs", {}).setdefault(config, []).append(timings)
                if run_index == 0:
                    extra.setdefault("self_time", {})[config] = timings
        hook_timings = extra.get("self_time_runs", {})
        extra["self_time_ratio"] = [
            ours["total_us_per_page"] / builtin["total_us_per_page"]
            for ours, builtin in zip(hook_timings.get(OURS, []), hook_timings.get(BUILTIN, []), strict=False)
            if ours.get("total_us_per_page") and builtin.get("total_us_per_page")
        ]
    summary: dict[str, Any] = {
        "pages": pages,
        "reps": reps,
        "pinned": crawler_cpu is not None,
        "configs": {},
        "settings": CPU_SETTINGS,
        **extra,
    }
    for config in configs:
        cpus = [r["cpu"] for r in runs[config]]
        walls = [r["wall"] for r in runs[config]]
        summary["configs"][config] = {
            "cpu_median": _median(cpus),
            "cpu_min": min(cpus),
            "cpu_max": max(cpus),
            "cpu_crawl_median": _median([r["cpu_crawl"] for r in runs[config]]),
            "wall_median": _median(walls),
            "pages_ok": [r["ok"] for r in runs[config]],
            "errors": [r["errors_n"] for r in runs[config]],
            "cpu_runs": cpus,
            "wall_runs": walls,
            "others_cpus": [round(r["others_cpus"], 3) for r in runs[config]],
            "robots_stats": {k: v for k, v in runs[config][-1]["stats"].items() if k.startswith("robotstxt/")},
        }
    off = summary["configs"][OFF]
    for config in (OURS, TDM, BUILTIN):
        c = summary["configs"][config]
        c["cpu_overhead_pct"] = 100.0 * (c["cpu_median"] - off["cpu_median"]) / off["cpu_median"]
        c["cpu_overhead_min_pct"] = 100.0 * (c["cpu_min"] - off["cpu_min"]) / off["cpu_min"]
        c["wall_overhead_pct"] = 100.0 * (c["wall_median"] - off["wall_median"]) / off["wall_median"]
        c["us_per_request"] = 1e6 * (c["cpu_median"] - off["cpu_median"]) / pages
        # Paired by repetition (each repetition ran the three configurations back to back).
        paired = [100.0 * (a["cpu"] - b["cpu"]) / b["cpu"] for a, b in zip(runs[config], runs[OFF], strict=True)]
        c["cpu_overhead_paired_median_pct"] = _median(paired)
        c["cpu_overhead_paired_pct"] = [round(x, 2) for x in paired]
    off["cpu_spread_pct"] = 100.0 * (off["cpu_max"] - off["cpu_min"]) / off["cpu_median"]
    # ROBOTSTXT_TDMREP on against off, both with this middleware (paired by repetition too).
    tdm, ours = summary["configs"][TDM], summary["configs"][OURS]
    tdm["tdm_overhead_pct"] = 100.0 * (tdm["cpu_median"] - ours["cpu_median"]) / ours["cpu_median"]
    tdm["tdm_us_per_request"] = 1e6 * (tdm["cpu_median"] - ours["cpu_median"]) / pages
    tdm["tdm_overhead_paired_median_pct"] = _median(
        [100.0 * (a["cpu"] - b["cpu"]) / b["cpu"] for a, b in zip(runs[TDM], runs[OURS], strict=True)])
    summary["others_cpus_median"] = _median([r["others_cpus"] for c in configs for r in runs[c]])
    return summary


# ---- (b) broad crawl with failing robots.txt ------------------------------------------
FAILING = {3: "stall", 8: "503", 13: "stall", 18: "reset", 23: "stall", 28: "503"}  # site index -> behaviour


def broad_sites(delay: float) -> list[dict[str, Any]]:
    return [
        {"host": f"127.0.0.{i + 2}", "robots": FAILING.get(i, "ok"), "delay": delay, "name": f"h{i + 1:02d}"}
        for i in range(30)
    ]


def bench_broad(pages: int, reps: int, builtin_reps: int, delay: float, workdir: Path) -> dict[str, Any]:
    sites = broad_sites(delay)
    healthy_idx = [i for i in range(30) if i not in FAILING]
    runs: dict[str, list[dict[str, Any]]] = {}
    plan: list[tuple[str, str]] = []
    for rep in range(max(reps, builtin_reps)):
        pair = [(OURS, "all"), (OURS, "healthy")] if rep % 2 == 0 else [(OURS, "healthy"), (OURS, "all")]
        if rep < reps:
            plan.extend(pair)
        if rep < builtin_reps:
            plan.extend([(BUILTIN, "healthy"), (BUILTIN, "all")])
    with Server(sites, workdir, None) as server:
        bases = [f"http://{s['host']}:{port}" for s, port in zip(sites, server.ports, strict=True)]
        host_of = {b: i for i, b in enumerate(bases)}
        for n, (config, which) in enumerate(plan):
            chosen = list(range(30)) if which == "all" else healthy_idx
            # Interleaved, as a broad crawl's frontier would be: page 0 of every origin, then page 1, ...
            urls = [f"{bases[i]}/p/{p}" for p in range(pages) for i in chosen]
            settings = base_settings() | config_settings(config)
            settings.update(
                {
                    "CONCURRENT_REQUESTS": 16,
                    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
                    "DOWNLOAD_TIMEOUT": 10,
                    "ROBOTSTXT_RETRY_DELAY": 1,
                    "ROBOTSTXT_MAX_WAIT": 5,
                }
            )
            settings["LOG_LEVEL"] = "INFO"  # the log is kept as evidence (counts of errors, first lines)
            result = run_crawl(
                {"urls": urls, "settings": settings, "record": True, "probe": True}, workdir, f"broad-{n}"
            )
            result["config"], result["which"] = config, which
            runs.setdefault(f"{config}/{which}", []).append(result)
            healthy_done = _completion(result, host_of, healthy_idx, pages)
            print(
                f"  (b) {LABELS[config]:<16} {which:<8} healthy pages {healthy_done[1]}/{len(healthy_idx) * pages} "
                f"done at {healthy_done[0]:.2f} s, crawl closed at {result['closed'] - result['opened']:.2f} s "
                f"({result['reason']}), process {result['wall']:.2f} s",
                file=sys.stderr,
                flush=True,
            )
    server_log = server.log
    return _broad_summary(runs, sites, bases, healthy_idx, pages, delay, server_log)


def _origin_index(url: str, host_of: dict[str, int]) -> int | None:
    base = url.split("/p/", 1)[0]
    return host_of.get(base)


def _completion(result: dict[str, Any], host_of: dict[str, int], healthy: list[int], pages: int) -> tuple[float, int]:
    """(seconds after spider_opened when the last healthy page came, healthy pages fetched)."""
    t0 = result["opened"]
    wanted = set(healthy)
    times = [t - t0 for t, url in result["responses"] if _origin_index(url, host_of) in wanted]
    return (max(times) if times else float("nan"), len(times))


def _curve(
    result: dict[str, Any], host_of: dict[str, int], healthy: list[int], step: float, horizon: float
) -> list[int]:
    t0 = result["opened"]
    wanted = set(healthy)
    times = sorted(t - t0 for t, url in result["responses"] if _origin_index(url, host_of) in wanted)
    out = []
    steps = int(horizon / step) + 1
    j = 0
    for k in range(1, steps + 1):
        limit = k * step
        while j < len(times) and times[j] <= limit:
            j += 1
        out.append(j)
    return out


def _broad_summary(
    runs: dict[str, list[dict[str, Any]]],
    sites: list[dict[str, Any]],
    bases: list[str],
    healthy: list[int],
    pages: int,
    delay: float,
    server_log: list[tuple[float, int, str]],
) -> dict[str, Any]:
    host_of = {b: i for i, b in enumerate(bases)}
    out: dict[str, Any] = {
        "pages_per_origin": pages,
        "page_delay": delay,
        "healthy_pages": len(healthy) * pages,
        "failing": {sites[i]["name"]: b for i, b in FAILING.items()},
        "runs": {},
    }
    for key, results in runs.items():
        entries = []
        for r in results:
            done, count = _completion(r, host_of, healthy, pages)
            t0 = r["opened"]
            failing_errors = [e for e in r["errors"] if _origin_index(e[1], host_of) in FAILING]
            failing_ok = [x for x in r["responses"] if _origin_index(x[1], host_of) in FAILING]
            # Server-side: robots.txt arrivals of failing origins during this crawl.
            robots_hits: dict[str, list[float]] = {}
            for t, idx, path in server_log:
                if idx in FAILING and path == "/robots.txt" and r["start"] - 1 <= t <= r["end"] + 1:
                    robots_hits.setdefault(sites[idx]["name"], []).append(round(t - t0, 2))
            error_types: dict[str, int] = {}
            for e in r["errors"]:
                error_types[e[2]] = error_types.get(e[2], 0) + 1
            entries.append(
                {
                    "healthy_done_s": done,
                    "healthy_fetched": count,
                    "closed_s": (r["closed"] - t0) if r["closed"] else None,
                    "process_wall_s": r["wall"],
                    "reason": r["reason"],
                    "cpu_s": r["cpu"],
                    "failing_pages_fetched": len(failing_ok),
                    "failing_pages_dropped": len(failing_errors),
                    "failing_last_drop_s": max((e[0] - t0 for e in failing_errors), default=None),
                    "error_types": error_types,
                    "robots_hits_failing": robots_hits,
                    "robots_stats": {k: v for k, v in r["stats"].items() if k.startswith("robotstxt/")},
                    "probe_max": _probe_max(r["samples"]),
                    "probe_timeline": _probe_timeline(r["samples"], t0, 1.0),
                    "log_counts": r["log_counts"],
                    "log_errors": r["log_errors"],
                    "log_tail": r["stderr_tail"][-1500:],
                    "_result": r,
                }
            )
        out["runs"][key] = entries
    for config in (OURS, BUILTIN):
        # Only runs that fetched every healthy page count; the others are reported as incomplete.
        complete = out["healthy_pages"]
        a = [e for e in out["runs"].get(f"{config}/all", []) if e["healthy_fetched"] == complete]
        h = [e for e in out["runs"].get(f"{config}/healthy", []) if e["healthy_fetched"] == complete]
        for which in ("all", "healthy"):
            for e in out["runs"].get(f"{config}/{which}", []):
                if e["healthy_fetched"] != complete:
                    out.setdefault("incomplete", []).append(
                        f"{LABELS[config]}, {which}: {e['healthy_fetched']}/{complete} healthy pages fetched, "
                        f"errbacks {e['error_types']}"
                    )
        if a and h:
            ma = _median([e["healthy_done_s"] for e in a])
            mh = _median([e["healthy_done_s"] for e in h])
            out[f"{config}_ratio"] = ma / mh if mh else float("nan")
            out[f"{config}_done_all_s"] = ma
            out[f"{config}_done_healthy_s"] = mh
    out["_host_of"] = host_of
    return out


# --------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------
def report_cpu(cpu: dict[str, Any]) -> str:
    rows = []
    off = cpu["configs"][OFF]
    for config in (OFF, OURS, TDM, BUILTIN):
        c = cpu["configs"][config]
        dash = config == OFF
        rows.append(
            [
                LABELS[config],
                f"{c['cpu_median']:.3f} ({c['cpu_min']:.3f}-{c['cpu_max']:.3f})",
                f"{c['cpu_crawl_median']:.3f}",
                "-" if dash else f"{c['cpu_overhead_pct']:+.2f} %",
                "-" if dash else f"{c['cpu_overhead_paired_median_pct']:+.2f} %",
                "-" if dash else f"{c['cpu_overhead_min_pct']:+.2f} %",
                "-" if dash else f"{c['us_per_request']:+.1f}",
                f"{1e6 * c['cpu_median'] / cpu['pages']:.0f}",
                f"{c['wall_median']:.3f}",
                "-" if dash else f"{c['wall_overhead_pct']:+.2f} %",
            ]
        )
    ours = cpu["configs"][OURS]
    text = [
        f"### (a) CPU overhead: {cpu['pages']} pages of one origin, {cpu['reps']} runs per configuration",
        "",
        f"The spider starts {CPU_CHAINS} chains of pages (each page's callback yields the next page, all allowed "
        "by the ~30-rule robots.txt). "
        "Fresh crawler subprocess per run, configurations alternating; HTTP server in its own process"
        f"{', crawler and server pinned to separate CPUs' if cpu['pinned'] else ''}. Crawler CPU = "
        "getrusage(RUSAGE_SELF) user+sys from creating the crawler to the end of the crawl. Settings: "
        + ", ".join(f"{k}={v}" for k, v in cpu["settings"].items())
        + ", LOG_LEVEL=ERROR, COOKIES_ENABLED=False, HTTPCACHE_ENABLED=False, TELNETCONSOLE_ENABLED=False, "
        "REMOTE_CONTROL_ENABLED=False.",
        "",
        _table(
            [
                "configuration",
                "crawler CPU s, median (min-max)",
                "of which open->close",
                "CPU vs OBEY=False (medians)",
                "paired median",
                "vs (minima)",
                "CPU µs/request vs OBEY=False",
                "CPU µs/request total",
                "wall s",
                "wall vs OBEY=False",
            ],
            rows,
        ),
        "",
        f"Noise: the OBEY=False CPU time varies by {off['cpu_spread_pct']:.1f} % between its runs (max-min over "
        f"median); other processes used a median {cpu['others_cpus_median']:.2f} of the "
        f"{os.cpu_count()} CPUs during the runs (server included). "
        f"Goal: scrapy-rfc9309 within {GOAL_CPU_OVERHEAD:g} % of OBEY=False -> "
        f"**{'met' if ours['cpu_overhead_pct'] <= GOAL_CPU_OVERHEAD else 'NOT met'}** "
        f"({ours['cpu_overhead_pct']:+.2f} % on medians).",
    ]
    tdm = cpu["configs"][TDM]
    text.append(
        f"\nROBOTSTXT_TDMREP (the origin's tdmrep.json of 5 rules, none matching, enforced) against the same crawl "
        f"without it: {tdm['tdm_overhead_pct']:+.2f} % on medians ({tdm['tdm_us_per_request']:+.1f} µs/request; "
        f"paired median {tdm['tdm_overhead_paired_median_pct']:+.2f} %). Goal: within {GOAL_TDM_OVERHEAD:g} % -> "
        f"**{'met' if tdm['tdm_overhead_pct'] <= GOAL_TDM_OVERHEAD else 'NOT met'}**."
    )
    for config in (OFF, OURS, TDM, BUILTIN):
        short = [n for n in cpu["configs"][config]["pages_ok"] if n != cpu["pages"]]
        if short:
            text.append(f"\n**Warning: {LABELS[config]}: runs fetched only {short} of {cpu['pages']} pages.**")
    self_time = cpu.get("self_time") or {}
    if self_time:
        rows = []
        for config, timings in self_time.items():
            for name, t in timings.items():
                if name == "total_us_per_page" or not t["calls"]:  # a hook Scrapy did not call
                    continue
                rows.append(
                    [
                        LABELS[config],
                        name,
                        str(t["calls"]),
                        str(t["waited_calls"]),
                        _fmt(t["median_us"], 1),
                        f"{t['total_ms']:.1f}",
                    ]
                )
            total = timings.get("total_us_per_page")
            rows.append([LABELS[config], "**total per page, µs**", "", "", "", _fmt(total, 1)])
        text += [
            "",
            "The middlewares' own time in their hooks (CPU time of the thread around each call that does not wait, "
            "the first of the instrumented runs, "
            f"{cpu['pages']} pages; a process_request call longer than {_WAITED * 1000:g} ms waited for the "
            "robots.txt and is counted at the median of the others):",
            "",
            _table(["middleware", "hook", "calls", "waited", "median µs", "total ms"], rows),
        ]
    probe = cpu.get("probe_max") or {}
    if probe:
        text += [
            "",
            "Largest number of requests at once (warm-up runs of "
            f"{min(1000, cpu['pages'])} pages, sampled every {PROBE_INTERVAL * 1000:g} ms; CONCURRENT_REQUESTS=16): "
            + "; ".join(
                f"{LABELS[c]}: downloader active {p.get('downloader_active', 0):.0f}, waiting in scrapy-rfc9309 "
                f"{p.get('mw_waiting', 0):.0f}"
                for c, p in probe.items()
            )
            + ".",
        ]
    return "\n".join(text)


def report_broad(broad: dict[str, Any]) -> str:
    host_of = broad["_host_of"]
    healthy = [i for i in range(30) if i not in FAILING]
    total = broad["healthy_pages"]
    text = [
        f"### (b) Broad crawl: 30 origins x {broad['pages_per_origin']} pages ({broad['page_delay'] * 1000:.0f} ms "
        f"per page), 6 with a failing robots.txt "
        f"({', '.join(f'{k}: {v}' for k, v in broad['failing'].items())})",
        "",
        "CONCURRENT_REQUESTS=16, CONCURRENT_REQUESTS_PER_DOMAIN=8, DOWNLOAD_TIMEOUT=10, ROBOTSTXT_RETRY_DELAY=1, "
        "ROBOTSTXT_MAX_WAIT=5. Times are seconds after spider_opened; the healthy pages are the "
        f"{total} pages of the 24 healthy origins.",
        "",
    ]
    rows = []
    for config in (OURS, BUILTIN):
        for which in ("healthy", "all"):
            entries = broad["runs"].get(f"{config}/{which}")
            if not entries:
                continue
            rows.append(
                [
                    LABELS[config],
                    "24 healthy" if which == "healthy" else "all 30",
                    str(len(entries)),
                    f"{_median([e['healthy_done_s'] for e in entries]):.2f} "
                    f"({', '.join(_fmt(e['healthy_done_s']) for e in entries)})",
                    f"{min(e['healthy_fetched'] for e in entries)}/{total}",
                    f"{_median([e['closed_s'] or float('nan') for e in entries]):.2f}",
                    "-" if which == "healthy" else f"{_median([e['failing_pages_fetched'] for e in entries]):.0f}",
                    "-" if which == "healthy" else f"{_median([e['failing_pages_dropped'] for e in entries]):.0f}",
                    "-"
                    if which == "healthy"
                    else _fmt(_median([e["failing_last_drop_s"] or float("nan") for e in entries])),
                ]
            )
    text.append(
        _table(
            [
                "middleware",
                "origins",
                "runs",
                "healthy pages done at, s: median (runs)",
                "healthy fetched",
                "spider closed at, s",
                "failing-origin pages fetched",
                "failing-origin pages dropped",
                "last drop at, s",
            ],
            rows,
        )
    )
    text.append("")
    for line in broad.get("incomplete", []):
        text.append(f"- **Incomplete run, left out of the medians:** {line}")
    for config in (OURS, BUILTIN):
        if f"{config}_ratio" in broad:
            ratio = broad[f"{config}_ratio"]
            verdict = ""
            if config == OURS:
                verdict = f" (goal <= {GOAL_BROAD_RATIO:g}x: {'met' if ratio <= GOAL_BROAD_RATIO else 'NOT met'})"
            text.append(
                f"- {LABELS[config]}: healthy pages done in {broad[f'{config}_done_all_s']:.2f} s with the failing "
                f"origins vs {broad[f'{config}_done_healthy_s']:.2f} s without: **{ratio:.2f}x**{verdict}"
            )
    text.append("")
    # Curves: the median run (by completion time) of each configuration.
    for config, max_rows in ((OURS, 60), (BUILTIN, 40)):
        picks = {}
        for which in ("healthy", "all"):
            entries = broad["runs"].get(f"{config}/{which}")
            if entries:
                ordered = sorted(entries, key=lambda e: e["healthy_done_s"])
                picks[which] = ordered[(len(ordered) - 1) // 2]
        if len(picks) < 2:
            continue
        horizon = max(p["healthy_done_s"] for p in picks.values()) + 0.5
        step = 0.5
        while horizon / step > max_rows:
            step *= 2
        curves = {w: _curve(p["_result"], host_of, healthy, step, horizon) for w, p in picks.items()}
        rows = [
            [f"{(k + 1) * step:.1f}", str(curves["healthy"][k]), str(curves["all"][k])]
            for k in range(len(curves["healthy"]))
        ]
        text += [
            f"Cumulative healthy-origin pages fetched, {LABELS[config]} (median run), every {step:g} s:",
            "",
            _table(["t, s", "24 healthy origins", "all 30 origins"], rows),
            "",
        ]
    # What happened to the failing origins' requests.
    rows = []
    for config in (OURS, BUILTIN):
        for e in broad["runs"].get(f"{config}/all") or []:
            stats = e["robots_stats"]
            rows.append(
                [
                    LABELS[config],
                    ", ".join(f"{k} x{v}" for k, v in sorted(e["error_types"].items())) or "-",
                    str(stats.get("robotstxt/held", "-")),
                    str(stats.get("robotstxt/dropped_unreachable", 0 if config == OURS else "-")),
                    str(e["log_counts"].get("ERROR", 0)),
                    f"{e['probe_max'].get('downloader_active', 0):.0f}",
                    f"{e['probe_max'].get('mw_waiting', 0):.0f}" if config == OURS else "-",
                    _fmt(e["failing_last_drop_s"]),
                    _fmt(e["closed_s"]),
                ]
            )
    text += [
        "Failing origins, per run with all 30 origins:",
        "",
        _table(
            [
                "middleware",
                "errbacks of failing-origin requests",
                "robotstxt/held",
                "robotstxt/dropped_unreachable",
                "ERROR log lines",
                "max downloader active",
                "max waiting in middleware",
                "last drop at, s",
                "spider closed at, s",
            ],
            rows,
        ),
        "",
    ]
    entries = broad["runs"].get(f"{OURS}/all") or []
    if entries:
        e = sorted(entries, key=lambda e: e["healthy_done_s"])[(len(entries) - 1) // 2]
        rows = [
            [
                _fmt(t, 1),
                f"{active:.0f}",
                f"{queued:.0f}",
                f"{transferring:.0f}",
                f"{waiting:.0f}",
                f"{held:.0f}",
                f"{pending:.0f}",
            ]
            for t, active, _slots_active, queued, transferring, waiting, held, pending in e["probe_timeline"]
        ]
        text += [
            f"Where the requests were, {LABELS[OURS]}, all 30 origins, median run (largest value in each second; "
            "'waiting' includes 'held'):",
            "",
            _table(
                [
                    "t, s",
                    "downloader active",
                    "slot queues",
                    "transferring",
                    "waiting in middleware",
                    "held",
                    "scheduler",
                ],
                rows,
            ),
            "",
        ]
        text.append(
            "robots.txt requests received by the failing origins (server log, s after spider_opened), "
            f"{LABELS[OURS]}, median run:"
        )
        text.append("")
        text.append(
            _table(
                ["origin", "behaviour", "robots.txt requests at"],
                [
                    [name, broad["failing"][name], ", ".join(f"{t:.2f}" for t in hits)]
                    for name, hits in sorted(e["robots_hits_failing"].items())
                ],
            )
        )
        text.append("")
    return "\n".join(text)


def summary_md(cpu: dict[str, Any] | None, broad: dict[str, Any] | None, fingerprint: str = "") -> str:
    lines = ["### Middleware benchmark summary", ""]
    env = f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs"
    with contextlib.suppress(Exception):
        import scrapy

        env = f"Scrapy {scrapy.__version__}, " + env
    version = f"scrapy-rfc9309 {fingerprint}, " if fingerprint else ""
    lines.append(
        f"`benchmarks/bench_middleware.py` ({version}{env}; local HTTP servers in a separate process, loopback only)."
    )
    lines.append("")
    rows = []
    notes = []
    if cpu is not None:
        ours, builtin = cpu["configs"][OURS], cpu["configs"][BUILTIN]
        rows.append(
            [
                f"crawler CPU time vs ROBOTSTXT_OBEY=False, {cpu['pages']} pages of one origin, "
                f"median of {cpu['reps']}",
                f"{ours['cpu_overhead_pct']:+.2f} % ({ours['us_per_request']:+.1f} µs/request)",
                f"{builtin['cpu_overhead_pct']:+.2f} % ({builtin['us_per_request']:+.1f} µs/request)",
                f"<= {GOAL_CPU_OVERHEAD:g} %",
            ]
        )
        tdm = cpu["configs"][TDM]
        rows.append(
            [
                "crawler CPU time with ROBOTSTXT_TDMREP (a tdmrep.json of 5 rules, enforced) vs without, same crawl",
                f"{tdm['tdm_overhead_pct']:+.2f} % ({tdm['tdm_us_per_request']:+.1f} µs/request)",
                "-",
                f"<= {GOAL_TDM_OVERHEAD:g} %",
            ]
        )
        self_time = cpu.get("self_time") or {}
        if self_time:
            rows.append(
                [
                    "middleware's own time in its hooks per request (first instrumented run)",
                    f"{_fmt(self_time.get(OURS, {}).get('total_us_per_page'), 1)} µs",
                    f"{_fmt(self_time.get(BUILTIN, {}).get('total_us_per_page'), 1)} µs",
                    "",
                ]
            )
        ratios = cpu.get("self_time_ratio") or []
        if ratios:
            rows.append(
                [
                    f"hook time per request, ratio to the built-in's ({len(ratios)} instrumented runs: median "
                    "[min, max])",
                    f"{_median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}]",
                    "1",
                    f"<= {GOAL_HOOK_RATIO:g}",
                ]
            )
        notes.append(
            f"CPU figures are medians of {cpu['reps']} alternating runs on a machine where the OBEY=False runs "
            f"alone varied by {cpu['configs'][OFF]['cpu_spread_pct']:.1f} %; baseline "
            f"{1e6 * cpu['configs'][OFF]['cpu_median'] / cpu['pages']:.0f} µs of crawler CPU per request."
        )
    if broad is not None:

        def cell(config: str) -> str:
            if f"{config}_ratio" not in broad:
                return "-"
            return (
                f"{broad[f'{config}_ratio']:.2f}x ({broad[f'{config}_done_all_s']:.1f} s vs "
                f"{broad[f'{config}_done_healthy_s']:.1f} s)"
            )

        def closed(config: str) -> str:
            entries = broad["runs"].get(f"{config}/all") or []
            return f"{_median([e['closed_s'] or float('nan') for e in entries]):.1f} s" if entries else "-"

        rows.append(
            [
                f"broad crawl, 24 healthy + 6 failing robots.txt origins: time to fetch the {broad['healthy_pages']} "
                "healthy pages, vs the 24 healthy alone",
                cell(OURS),
                cell(BUILTIN),
                f"<= {GOAL_BROAD_RATIO:g}x",
            ]
        )
        rows.append(
            [
                "same crawl: spider closed after (DOWNLOAD_TIMEOUT=10, ROBOTSTXT_MAX_WAIT=5)",
                closed(OURS),
                closed(BUILTIN),
                "bounded",
            ]
        )
        entries = broad["runs"].get(f"{OURS}/all") or []
        late = [
            e["closed_s"] - e["failing_last_drop_s"]
            for e in entries
            if e["closed_s"] is not None
            and e["failing_last_drop_s"] is not None
            and e["closed_s"] - e["failing_last_drop_s"] > 1.0
        ]
        if late:
            notes.append(
                f"{LABELS[OURS]}, all 30 origins: in {len(late)} of {len(entries)} runs the spider closed "
                f"{', '.join(f'{x:.1f}' for x in late)} s after the last held request was dropped (in-flight "
                "robots.txt retries of the stalled origins running into DOWNLOAD_TIMEOUT)."
            )
        for e in entries:
            kinds = ", ".join(sorted(e["error_types"]))
            notes.append(
                f"{LABELS[OURS]}, all 30 origins: the failing origins' requests reached their errbacks as {kinds} "
                f"(robotstxt/dropped_unreachable = {e['robots_stats'].get('robotstxt/dropped_unreachable', 0)}); "
                f"up to {e['probe_max'].get('mw_waiting', 0):.0f} requests waited in the middleware at once."
            )
            break
    lines.append(_table(["", LABELS[OURS], LABELS[BUILTIN], "goal"], rows))
    if notes:
        lines.append("")
        lines += [f"- {note}" for note in notes]
    return "\n".join(lines)


def snapshot_package(workdir: Path) -> Path:
    """A copy of the package as it is now, which every crawl subprocess imports: the figures of one
    run then come from one version even if the sources are edited meanwhile."""
    import shutil

    target = workdir / "package"
    shutil.copytree(ROOT / "scrapy_rfc9309", target / "scrapy_rfc9309", ignore=shutil.ignore_patterns("__pycache__"))
    return target


def package_fingerprint(root: Path = ROOT) -> str:
    """The git commit and a hash of the package's files, to tell which version was measured."""
    import hashlib

    digest = hashlib.sha256()
    package = root / "scrapy_rfc9309"
    for path in sorted(package.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".c", ".pyi"):
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return f"{commit() or 'unknown'}+{digest.hexdigest()[:12]}"


def _strip(obj: Any) -> Any:
    """The JSON-able results, without the per-response lists."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in ("_result", "_host_of")}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


# ---- (c) memory over a broad crawl ------------------------------------------------------
HOSTS_DOMAIN = ".bench.test"  # o<i>.bench.test: origin i, resolved to 127.0.0.1 by BenchResolver
ORIGINS_CONCURRENCY = 64


def serve_hosts_main(spec_path: str, ready_path: str) -> int:
    """One HTTP server on 127.0.0.1 for every origin ``o<i>.bench.test``: robots.txt
    file ``i % len(files)`` of the spec's corpus at ``/robots.txt``, a page
    (:func:`_page`) at any other path; every response closes its connection. Prints
    its port, and stops when the parent closes stdin (or after ``max_life`` s)."""
    spec = json.loads(Path(spec_path).read_text())
    from twisted.internet import reactor
    from twisted.web import resource, server

    files = [Path(path).read_bytes() for path in spec["files"]]

    class Hosts(resource.Resource):
        isLeaf = True

        def render_GET(self, request: Any) -> bytes:
            host = (request.getHeader(b"host") or b"").decode("latin-1").split(":")[0]
            request.setHeader(b"connection", b"close")
            request.channel.persistent = False
            name = host[:-len(HOSTS_DOMAIN)] if host.endswith(HOSTS_DOMAIN) else ""
            if not (name.startswith("o") and name[1:].isdigit()):
                request.setResponseCode(404)
                return b"unknown host"
            if request.path == b"/robots.txt":
                request.setHeader(b"content-type", b"text/plain")
                return files[int(name[1:]) % len(files)]
            request.setHeader(b"content-type", b"text/html; charset=utf-8")
            return _page(request.path.decode("latin-1"))

    port = reactor.listenTCP(0, server.Site(Hosts()), backlog=1024, interface="127.0.0.1")  # type: ignore[attr-defined]
    print(json.dumps({"port": port.getHost().port}), flush=True)
    _run_until_stdin_closes(reactor, float(spec.get("max_life", SERVER_MAX_LIFE)))
    return 0


def _bench_resolver() -> Any:
    """Scrapy's resolver, with every ``*.bench.test`` name at 127.0.0.1 (and not cached)."""
    from scrapy.resolver import CachingThreadedResolver
    from twisted.internet import defer

    class BenchResolver(CachingThreadedResolver):
        def getHostByName(self, name: str, timeout: Any = ()) -> Any:
            if name.endswith(HOSTS_DOMAIN):
                return defer.succeed("127.0.0.1")
            return super().getHostByName(name, timeout)

    return BenchResolver


def __getattr__(name: str) -> Any:
    # DNS_RESOLVER = "__main__.BenchResolver" in a crawl subprocess; imported late so that Scrapy
    # is imported after the package snapshot is put first on sys.path.
    if name == "BenchResolver":
        return _bench_resolver()
    raise AttributeError(name)


def start_hosts_server(files: list[str], workdir: Path, max_life: float) -> tuple[subprocess.Popen[bytes], int]:
    """``--serve-hosts`` in a subprocess (see :func:`serve_hosts_main`): origin ``i`` serves
    ``files[i % len(files)]`` as its robots.txt. The process and its port."""
    spec_path = workdir / "hosts.json"
    spec_path.write_text(json.dumps({"files": files, "max_life": max_life}))
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "--serve-hosts", str(spec_path), "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 30)
    line = proc.stdout.readline() if ready else b""
    if not line:
        stop_server(proc)
        raise RuntimeError("the hosts server did not start")
    return proc, json.loads(line)["port"]


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server subprocess: its stdin closed (it stops by itself), killed if it does not."""
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()


def bench_origins(origins: int, reps: int, corpus: Path, workdir: Path,
                  configs: tuple[str, ...] = (OFF, OURS, BUILTIN)) -> dict[str, Any]:
    """Crawl ``origins`` origins, one page each, with each configuration ``reps`` times in
    alternating order, and read the crawler's memory when its spider opens and closes."""
    files = sorted(str(path) for path in corpus.iterdir() if path.is_file())
    proc, port = start_hosts_server(files, workdir, SERVER_MAX_LIFE * 3)
    runs: dict[str, list[dict[str, Any]]] = {OFF: [], OURS: [], BUILTIN: []}
    try:
        urls = [f"http://o{i}{HOSTS_DOMAIN}:{port}/p/{i}" for i in range(origins)]
        settings = {
            **base_settings(),
            "CONCURRENT_REQUESTS": ORIGINS_CONCURRENCY,
            "CONCURRENT_ITEMS": 1,
            "DOWNLOAD_TIMEOUT": 30,
            "RETRY_ENABLED": False,
            "REDIRECT_ENABLED": False,
            "DNS_RESOLVER": "__main__.BenchResolver",
            "TWISTED_DNS_RESOLVER": "__main__.BenchResolver",
            "ROBOTSTXT_CACHE_SIZE": origins + 5000,
            "CLOSESPIDER_TIMEOUT": ORIGINS_CRAWL_TIMEOUT - 60,
        }
        for rep in range(reps):
            order = [OFF, OURS, BUILTIN] if rep % 2 == 0 else [BUILTIN, OURS, OFF]
            for config in (config for config in order if config in configs):
                spec = {"urls": urls, "chain": ORIGINS_CONCURRENCY, "rss_ends": True, "chain_on_error": True,
                        "settings": {**settings, **config_settings(config)}}
                result = run_crawl(spec, workdir, f"origins-{config}-{rep}", timeout=ORIGINS_CRAWL_TIMEOUT)
                grown = (result["rss_closed_kb"] - result["rss_opened_kb"]) * 1024
                # Origins whose page was requested and answered (or refused by a middleware): all of
                # them unless the crawl was cut short.
                reached = result["ok"] + result["errors_n"]
                print(f"  {LABELS[config]}: {result['ok']} pages, {result['errors_n']} errors, "
                      f"{grown / max(reached, 1):,.0f} B per origin over the crawl, {result['wall']:.0f} s "
                      f"({result.get('reason')})", file=sys.stderr)
                runs[config].append({
                    "grown": grown,
                    "reached": reached,
                    "ok": result["ok"],
                    "errors": result["errors_n"],
                    "wall": result["wall"],
                    "robots_requests": result["stats"].get("robotstxt/request_count", 0),
                    "reason": result.get("reason"),
                })
    finally:
        stop_server(proc)
    return {"origins": origins, "reps": reps, "corpus": str(corpus), "files": len(files), "runs": runs}


ORIGINS_CRAWL_TIMEOUT = 3600.0  # a broad-crawl memory run is killed after this many seconds


def report_origins(result: dict[str, Any]) -> str:
    """Per origin, each middleware's growth over the ROBOTSTXT_OBEY=False crawl of the same
    repetition; median (min to max) over the repetitions."""
    origins, runs = result["origins"], result["runs"]
    off = runs[OFF]
    if not off or not runs[OURS] or not runs[BUILTIN]:
        return "Memory over a broad crawl: " + json.dumps(runs)

    def extra(config: str) -> list[float]:
        return [run["grown"] / run["reached"] - base["grown"] / base["reached"]
                for run, base in zip(runs[config], off, strict=True)]

    def fmt(values: list[float]) -> str:
        return f"{statistics.median(values):,.0f} ({min(values):,.0f} to {max(values):,.0f})"

    ours, builtin = extra(OURS), extra(BUILTIN)
    ratios = [o / b for o, b in zip(ours, builtin, strict=True) if b > 0]
    lines = [
        f"Memory over a broad crawl: {origins:,} origins, one page each, their robots.txt files from "
        f"{result['files']} files of {result['corpus']} (cycled); {result['reps']} repetitions, median (min to max).",
        "",
        "| configuration | resident memory grown over the crawl, per origin (B) "
        "| over ROBOTSTXT_OBEY=False, per origin (B) | pages | robots.txt requests |",
        "|---|---:|---:|---:|---:|",
    ]
    for config, values in ((OFF, None), (OURS, ours), (BUILTIN, builtin)):
        config_runs = runs[config]
        lines.append(
            f"| {LABELS[config]} | {fmt([run['grown'] / run['reached'] for run in config_runs])} | "
            f"{'-' if values is None else fmt(values)} | "
            f"{' / '.join(str(run['ok']) for run in config_runs)} | "
            f"{' / '.join(str(run['robots_requests']) for run in config_runs) if config == OURS else '-'} |"
        )
    if ratios:
        spread = f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}x to {max(ratios):.2f}x)"
        lines += ["", f"scrapy-rfc9309 / Scrapy built-in, per origin over ROBOTSTXT_OBEY=False: **{spread}** "
                      f"(each repetition's pair)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a short run (fewer pages and repetitions)")
    parser.add_argument("--json", metavar="PATH", help="write all results to this JSON file")
    parser.add_argument("--only", choices=("cpu", "broad", "origins"),
                        help="run only one benchmark (origins: the memory over a broad crawl, not run otherwise)")
    parser.add_argument("--origins", type=int, default=20000, help="origins in the memory benchmark (default 20000)")
    parser.add_argument("--origins-reps", type=int, default=3, help="repetitions of its three crawls (default 3)")
    parser.add_argument("--origins-configs", default=f"{OFF},{OURS},{BUILTIN}",
                        help="the memory benchmark's configurations, comma-separated (default all three)")
    parser.add_argument("--corpus", type=Path, default=ROOT / "benchmarks" / "corpus",
                        help="the robots.txt files its origins serve (default benchmarks/corpus)")
    parser.add_argument("--pages", type=int, help="pages in the CPU benchmark (default 3000, quick 500)")
    parser.add_argument("--reps", type=int, help="repetitions of each CPU configuration (default 7, quick 3)")
    parser.add_argument("--hook-runs", type=int, default=3,
                        help="instrumented runs timing each middleware's hooks, alternating (default 3)")
    parser.add_argument("--broad-pages", type=int, help="pages per origin in the broad crawl (default 40, quick 15)")
    parser.add_argument("--broad-reps", type=int, help="repetitions of the broad crawl pair (default 3, quick 1)")
    parser.add_argument("--page-delay", type=float, default=0.05, help="server latency per page in the broad crawl, s")
    parser.add_argument("--pin", action="store_true", help="pin the crawler and the server to separate CPUs")
    parser.add_argument("--serve", nargs=2, metavar=("SPEC", "LOG"), help=argparse.SUPPRESS)
    parser.add_argument("--crawl", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--serve-hosts", nargs=2, metavar=("SPEC", "READY"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve_main(*args.serve)
    if args.serve_hosts:
        return serve_hosts_main(*args.serve_hosts)
    if args.crawl:
        return crawl_main(*args.crawl)

    pages = args.pages or (500 if args.quick else 3000)
    reps = args.reps or (3 if args.quick else 7)
    broad_pages = args.broad_pages or (15 if args.quick else 40)
    broad_reps = args.broad_reps or (1 if args.quick else 3)
    started = time.perf_counter()
    cpu = broad = origins = None
    with tempfile.TemporaryDirectory(prefix="bench-mw-") as tmp:
        workdir = Path(tmp)
        snapshot = snapshot_package(workdir)
        _RUN["package_root"] = str(snapshot)
        fingerprint = package_fingerprint(snapshot)
        if args.only == "origins":
            configs = tuple(args.origins_configs.split(","))
            print(f"(c) memory over a broad crawl: {args.origins} origins x {len(configs)} configurations x "
                  f"{args.origins_reps}", file=sys.stderr)
            origins = bench_origins(args.origins, args.origins_reps, args.corpus, workdir, configs)
        if args.only in (None, "cpu"):
            print(f"(a) CPU overhead: {pages} pages x {reps} repetitions x 4 configurations", file=sys.stderr)
            cpu = bench_cpu(pages, reps, workdir, args.pin, args.hook_runs)
        if args.only in (None, "broad"):
            print(f"(b) broad crawl: 30 origins x {broad_pages} pages", file=sys.stderr)
            broad = bench_broad(broad_pages, broad_reps, 1, args.page_delay, workdir)
    fingerprint_end = package_fingerprint()
    out = []
    if fingerprint_end != fingerprint:
        out += [
            f"(scrapy_rfc9309 changed in the checkout during the run, {fingerprint} -> {fingerprint_end}; "
            f"every crawl imported the snapshot taken at the start, {fingerprint}.)",
            "",
        ]
    if cpu is not None:
        out += [report_cpu(cpu), ""]
    if broad is not None:
        out += [report_broad(broad), ""]
    if origins is not None:
        out += [report_origins(origins), "", f"(package {fingerprint})"]
    else:
        out.append(summary_md(cpu, broad, fingerprint))
    print("\n".join(out))
    elapsed = time.perf_counter() - started
    print(f"\n(total benchmark time {elapsed:.0f} s)", file=sys.stderr)
    if args.json:
        results = {
            "cpu": cpu,
            "broad": broad,
            "origins": origins,
            "elapsed_s": elapsed,
            "package": fingerprint,
            "package_at_end": fingerprint_end,
        }
        Path(args.json).write_text(json.dumps(_strip(results), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
