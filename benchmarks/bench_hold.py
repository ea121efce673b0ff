"""Benchmark: what requests waiting for a robots.txt cost, and whether the crawl of
other origins goes on meanwhile.

Two scenarios, each crawl in a subprocess of its own, every HTTP server in another
subprocess (bench_middleware.py's), all traffic on 127.0.0.0/8. A spider schedules N
requests for one origin (the *waiting* origin) and M for a healthy one, one healthy
request after every N/M waiting ones, with ``CONCURRENT_REQUESTS`` 16:

(a) **unreachable**: the waiting origin's robots.txt answers 503, so its requests are
    held until ``ROBOTSTXT_MAX_WAIT`` (20 s by default here), then dropped.
(b) **slow**: its robots.txt answers after 10 s (and allows everything): its requests
    wait for it, then are crawled. Scrapy's built-in middleware waits for a robots.txt
    too, so it is measured beside.

Configurations, side by side in one run: this checkout (waiting requests parked outside
the downloader); the same code before parking (``--before``, default 977f046: waiting
requests wait in the downloader, see previous.py); Scrapy's built-in middleware (b only:
it parses a 503 page as rules and holds nothing).

Each crawl measures from inside: the longest pause of the event loop (a call every
10 ms, how late it ran), the garbage collector's full collections and the time spent in
every collection, the healthy origin's last page and the longest gap between two of its
pages, the peak number of requests waiting for the robots.txt, and the wall time. A
second run of each configuration traces memory (``tracemalloc``, which slows it down)
and reports the bytes per waiting request at the peak: what was allocated since the
crawl started, divided by the requests that wait (in the downloader, parked, or still
in the scheduler's queue).

Usage::

    python benchmarks/bench_hold.py [--waiting 30000] [--healthy 500] [--reps 3] [--json out.json] [--quick]

``--quick`` checks that it works: one traced crawl per configuration and scenario, whose
figures stand for the timed ones too (tracemalloc slows it down: not figures to report).

It measures and does not gate: it exits 0 unless it cannot run at all.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve()
sys.path.insert(0, str(SCRIPT.parent))

import bench_middleware  # noqa: E402
from bench_middleware import Server  # noqa: E402
from common import fmt as _fmt  # noqa: E402
from common import median as _median  # noqa: E402
from previous import Checkout  # noqa: E402

# A scenario's server serves every run of it (about half an hour at the defaults).
bench_middleware.SERVER_MAX_LIFE = 3 * 3600.0

BEFORE = "977f046"  # the commit before parking: waiting requests wait in the downloader
OURS, BEFORE_PARKING, BUILTIN = "ours", "before", "builtin"
LABELS = {OURS: "scrapy-rfc9309", BEFORE_PARKING: "waiting in the downloader", BUILTIN: "Scrapy built-in"}
CRAWL_TIMEOUT = 600.0


# --------------------------------------------------------------------------------------
# Crawl mode (a subprocess)
# --------------------------------------------------------------------------------------
def crawl_main(spec_path: str, out_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    if not os.environ.get("RFC9309_BENCH_PREVIOUS"):
        sys.path.insert(0, str(ROOT))
    import scrapy
    from scrapy import signals
    from scrapy.crawler import AsyncCrawlerProcess

    waiting_urls: list[str] = spec["waiting_urls"]
    healthy_urls: list[str] = spec["healthy_urls"]
    trace = spec.get("trace", False)
    found: dict[str, Any] = {"gap": 0.0, "peak": 0, "healthy": [], "full_gc": 0, "gc_time": 0.0,
                             "traced_start": None, "traced_peak": None, "peak_at": None}
    gc_start = [0.0]

    def collected(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_start[0] = time.perf_counter()
            return
        found["gc_time"] += time.perf_counter() - gc_start[0]
        if info["generation"] == 2:
            found["full_gc"] += 1

    class HoldSpider(scrapy.Spider):
        name = "hold"

        async def start(self) -> Any:
            from scrapy.utils.asyncio import create_looping_call

            self.t0 = time.perf_counter()
            last = [self.t0]

            def tick() -> None:
                now = time.perf_counter()
                found["gap"] = max(found["gap"], now - last[0] - 0.01)
                last[0] = now
                waiting = _waiting(self.crawler, len(waiting_urls))
                if waiting > found["peak"]:
                    found["peak"], found["peak_at"] = waiting, now - self.t0
                    if trace:
                        found["traced_peak"] = tracemalloc.get_traced_memory()[0]

            self.ticker = create_looping_call(tick)
            self.ticker.start(0.01)
            if trace:
                found["traced_start"] = tracemalloc.get_traced_memory()[0]
            every = max(1, len(waiting_urls) // max(1, len(healthy_urls)))
            healthy = iter(healthy_urls)
            for i, url in enumerate(waiting_urls):
                yield scrapy.Request(url, callback=self.parse, dont_filter=True)
                if i % every == every - 1:
                    following = next(healthy, None)
                    if following is not None:
                        yield scrapy.Request(following, callback=self.parse, dont_filter=True)
            for following in healthy:
                yield scrapy.Request(following, callback=self.parse, dont_filter=True)

        def parse(self, response: Any) -> None:
            if response.url.startswith(spec["healthy_base"]):
                found["healthy"].append(time.perf_counter() - self.t0)

    settings = spec["settings"]
    process = AsyncCrawlerProcess(settings=settings, install_root_handler=True)
    crawler = process.create_crawler(HoldSpider)
    closed: dict[str, Any] = {}
    crawler.signals.connect(lambda reason, spider=None: closed.update(reason=reason), signal=signals.spider_closed)
    gc.callbacks.append(collected)
    if trace:
        tracemalloc.start()
    process.crawl(crawler)
    wall0 = time.perf_counter()
    process.start()
    wall = time.perf_counter() - wall0
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    healthy = sorted(found["healthy"])
    gaps = [b - a for a, b in itertools.pairwise(healthy)]
    result = {
        "wall": wall, "reason": closed.get("reason"), "gap": found["gap"], "full_gc": found["full_gc"],
        "gc_time": found["gc_time"], "peak": found["peak"], "peak_at": found["peak_at"],
        "healthy_n": len(healthy), "healthy_done": healthy[-1] if healthy else None,
        "healthy_first": healthy[0] if healthy else None, "healthy_gap": max(gaps) if gaps else None,
        "bytes_per_waiting": (None if not trace or not found["peak"] or found["traced_peak"] is None
                              else (found["traced_peak"] - found["traced_start"]) / found["peak"]),
        "package_file": getattr(sys.modules.get("scrapy_rfc9309"), "__file__", None),
        "stats": {k: v for k, v in stats.items() if isinstance(v, (int, float)) and (
            k.startswith("robotstxt/") or k.startswith("scheduler/") or k == "item_scraped_count")},
    }
    Path(out_path).write_text(json.dumps(result))
    return 0


def _waiting(crawler: Any, waiting_total: int) -> int:
    """Requests that wait for the waiting origin's robots.txt: those of this
    middleware (in the downloader or parked) and, for every configuration, those
    still in the scheduler (they wait as well, in its queue)."""
    engine = crawler.engine
    if engine is None:
        return 0
    scheduler = getattr(engine, "scheduler", None) or getattr(getattr(engine, "_slot", None), "scheduler", None)
    queued = len(scheduler) if scheduler is not None and hasattr(scheduler, "__len__") else 0
    try:
        from scrapy_rfc9309 import RobotsTxtMiddleware

        middleware = crawler.get_downloader_middleware(RobotsTxtMiddleware)
    except Exception:
        middleware = None
    if middleware is not None:
        # waiting_count: the middleware's documented count; states.waiting where it has none yet.
        count = getattr(middleware, "waiting_count", None)
        return int(middleware.states.waiting if count is None else count) + queued
    return len(engine.downloader.active) + queued  # the built-in: in the downloader, and queued


# --------------------------------------------------------------------------------------
# The parent
# --------------------------------------------------------------------------------------
def _settings(config: str, scenario: str, max_wait: float) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "LOG_LEVEL": "WARNING", "CONCURRENT_REQUESTS": 16, "TELNETCONSOLE_ENABLED": False,
        "RETRY_ENABLED": False, "COOKIES_ENABLED": False, "HTTPPROXY_ENABLED": False, "DOWNLOAD_TIMEOUT": 60,
        "ROBOTSTXT_OBEY": True,
    }
    if config == BUILTIN:
        return settings
    settings["ADDONS"] = {"scrapy_rfc9309.Addon": 0}
    settings["ROBOTSTXT_MAX_WAIT"] = max_wait
    # Every waiting request without a CONCURRENT_REQUESTS place, in both versions: the cap is not measured.
    settings["ROBOTSTXT_MAX_WAITING"] = 1_000_000
    return settings


def run_one(config: str, scenario: str, sites: dict[str, str], args: argparse.Namespace, workdir: Path,
            before: Checkout | None, trace: bool, tag: str) -> dict[str, Any]:
    spec = {
        "waiting_urls": [f"{sites['waiting']}/p/{i}" for i in range(args.waiting)],
        "healthy_urls": [f"{sites['healthy']}/p/{i}" for i in range(args.healthy)],
        "healthy_base": sites["healthy"],
        "settings": _settings(config, scenario, args.max_wait),
        "trace": trace,
    }
    spec_path, out_path = workdir / f"{tag}.json", workdir / f"{tag}.out.json"
    spec_path.write_text(json.dumps(spec))
    env = before.env() if config == BEFORE_PARKING and before is not None else dict(os.environ)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--crawl", str(spec_path), str(out_path)], env=env,
                          capture_output=True, timeout=CRAWL_TIMEOUT, check=False, cwd=workdir)
    if proc.returncode != 0 or not out_path.exists():
        sys.stderr.write(proc.stderr.decode(errors="replace")[-3000:])
        raise RuntimeError(f"crawl {tag} failed ({proc.returncode})")
    return json.loads(out_path.read_text())


def summary(results: dict[str, dict[str, list[dict[str, Any]]]], args: argparse.Namespace, before_label: str) -> str:
    runs = ("one traced run (quick: its figures are not the ones to report)" if args.quick
            else f"medians of {args.reps} runs (bytes: one traced run)")
    lines = [f"Requests waiting: {args.waiting:,} for one origin, beside {args.healthy:,} of a healthy origin; "
             f"CONCURRENT_REQUESTS 16; {runs}.", ""]
    for scenario, title in (("unreachable", f"(a) robots.txt answers 503: held, dropped after {args.max_wait:g} s"),
                            ("slow", f"(b) robots.txt answers after {args.robots_delay:g} s")):
        lines += [f"**{title}**", "",
                  "| | longest loop pause (s) | full GCs | time in GC (s) | bytes per waiting request "
                  "| healthy origin done (s) | longest healthy gap (s) | wall (s) |",
                  "|---|---|---|---|---|---|---|---|"]
        for config, runs in results[scenario].items():
            timed = runs["timed"]
            traced = runs["traced"]
            label = LABELS[config] + (f" ({before_label})" if config == BEFORE_PARKING else "")
            lines.append("| " + " | ".join([
                label,
                _fmt(_median([r["gap"] for r in timed])),
                _fmt(_median([r["full_gc"] for r in timed]), 0),
                _fmt(_median([r["gc_time"] for r in timed])),
                _fmt(_median([r["bytes_per_waiting"] for r in traced]), 0),
                _fmt(_median([r["healthy_done"] for r in timed])),
                _fmt(_median([r["healthy_gap"] for r in timed])),
                _fmt(_median([r["wall"] for r in timed]), 1),
            ]) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--waiting", type=int, default=30_000)
    parser.add_argument("--healthy", type=int, default=500)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--max-wait", type=float, default=20.0)
    parser.add_argument("--robots-delay", type=float, default=10.0, help="s before the slow robots.txt answers")
    parser.add_argument("--before", default=BEFORE, help="the commit of the code before parking ('': left out)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--quick", action="store_true",
                        help="one traced crawl per configuration, standing for the timed ones (checks that it works)")
    parser.add_argument("--crawl", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.crawl:
        return crawl_main(*args.crawl)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-hold-") as tmp, Checkout(args.before) as before:
        workdir = Path(tmp)
        if not before.available:
            print(f"without the code before parking: {before.error}", file=sys.stderr)
        configs = [OURS] + ([BEFORE_PARKING] if before.available else [])
        for scenario in ("unreachable", "slow"):
            robots = ({"robots": "503"} if scenario == "unreachable"
                      else {"robots": "ok", "robots_delay": args.robots_delay})
            sites_spec = [{"host": "127.0.0.2", **robots}, {"host": "127.0.0.3", "robots": "ok"}]
            results[scenario] = {}
            with Server(sites_spec, workdir, None) as server:
                sites = {"waiting": f"http://127.0.0.2:{server.ports[0]}",
                         "healthy": f"http://127.0.0.3:{server.ports[1]}"}
                names = configs + ([BUILTIN] if scenario == "slow" else [])
                runs: dict[str, dict[str, list[dict[str, Any]]]] = {c: {"timed": [], "traced": []} for c in names}
                for rep in range(0 if args.quick else args.reps):
                    for config in names if rep % 2 == 0 else list(reversed(names)):  # alternate the order
                        tag = f"{scenario}-{config}-{rep}"
                        run = run_one(config, scenario, sites, args, workdir, before, False, tag)
                        runs[config]["timed"].append(run)
                        print(f"{tag}: {runs[config]['timed'][-1]['wall']:.1f} s", file=sys.stderr, flush=True)
                for config in names:
                    runs[config]["traced"].append(run_one(config, scenario, sites, args, workdir, before, True,
                                                          f"{scenario}-{config}-traced"))
                    if args.quick:
                        runs[config]["timed"] = runs[config]["traced"]
                results[scenario] = runs
        text = summary(results, args, before.label)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
