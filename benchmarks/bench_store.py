"""Benchmark: the robots.txt stores of ``scrapy_rfc9309.RobotsTxtMiddleware``
(``ROBOTSTXT_STORE`` = ``memory``, ``disk``, ``redis``) beside Scrapy's built-in
middleware (Protego), in one run.

Three measurements. Every crawl runs in a fresh subprocess (``bench_middleware.py
--crawl``); the HTTP server is ``bench_middleware.Server``, in a subprocess of its
own, serving M origins (one loopback address and port each), logging every request
it receives; all traffic stays on 127.0.0.0/8.

(1) **Fleet: robots.txt fetches and wall time.** M origins (default 100) whose
    robots.txt answers after 0.2 s and whose pages answer after 0.02 s (all pages
    allowed). N processes (1, 2, 4) are spawned together with ``subprocess.Popen``;
    each crawls P pages of every origin (default 3; each process its own pages,
    as a fleet splitting a frontier would; origins interleaved). Per configuration
    (Scrapy built-in; ours with memory; ours with disk, one fresh directory shared
    by the N processes; ours with redis, a ``redis-server`` this script starts on a
    free port, flushed between configurations): the robots.txt requests the
    server received (total, and the most for one origin), the wall time from the
    first spawn to the last process's exit, each crawl's time from spider_opened
    to spider_closed, and the sum over the processes of the ``robotstxt/store_*``
    stats.
(2) **Restart.** Right after each disk and redis fleet run, the same N processes
    run again against the same store, within the robots.txt lifetime: they should
    fetch nothing. The memory configuration run again (it fetches everything
    again) is the reference.
(3) **Memory per cached origin**, from K real robots.txt files of a corpus
    directory (one file per host, named after it; default 2,000 files; the
    sample in ``benchmarks/corpus`` unless ``--corpus`` names another, its 32
    files gone through again under other host names up to K): (a) in
    memory, the RSS growth per origin of a fresh subprocess after putting K
    ``OriginState``s into ``MemoryStore``, beside one ``ProtegoRobotParser`` per
    origin in a dict (what Scrapy's built-in middleware keeps), each also measured
    with ``tracemalloc`` in another fresh subprocess; (b) on disk, the size of
    ``robotstxt.sqlite3`` after ``PRAGMA wal_checkpoint(TRUNCATE)`` divided by K;
    (c) in Redis, the growth of ``INFO memory`` ``used_memory`` divided by K. The
    mean raw robots.txt size of the sample is given, to tell raw bytes from
    overhead.

The report ends with a markdown summary for benchmarks/README.md. Every crawl imports a
snapshot of the package taken at the start (its commit and source hash are
printed).

Usage::

    python benchmarks/bench_store.py [--quick] [--json results.json] [--origins M] [--pages P]
                                     [--processes 1,2,4] [--corpus DIR] [--sample K]
                                     [--configs memory,redis,...]

The script always exits 0 unless it cannot run at all: it measures, it does not
gate. Every subprocess has a hard time limit; the HTTP server stops by itself, and
so does ``redis-server`` (run under ``timeout``, and sent SIGTERM if this script
dies), which is stopped at the end in any case.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_middleware as bm
from common import fmt as _fmt
from common import median as _median
from common import rss_kb, tests_on_path
from common import table as _table
from previous import DEFAULT_REF, Checkout

tests_on_path()
import servers  # noqa: E402  (the test suite's loopback servers, from the checkout's tests/)

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve()
DEFAULT_CORPUS = ROOT / "benchmarks" / "corpus"  # the committed sample; --corpus for a larger one

BUILTIN = "builtin"
MEMORY = "memory"
DISK = "disk"
REDIS = "redis"
PREVIOUS_REDIS = "previous-redis"  # the previous release (see previous.py) with the Redis store
LABELS = {
    BUILTIN: "Scrapy built-in (Protego)",
    MEMORY: "scrapy-rfc9309, memory",
    DISK: "scrapy-rfc9309, disk",
    REDIS: "scrapy-rfc9309, redis",
    PREVIOUS_REDIS: "previous release, redis",
}
REDIS_CONFIGS = (REDIS, PREVIOUS_REDIS)

ROBOTS_DELAY = 0.2  # s before a robots.txt answers
PAGE_DELAY = 0.02  # s before a page answers
MEMORY_AGENT = "Scrapy/2.19 (+https://scrapy.org)"  # asks each cached origin about one page
FLEET_TIMEOUT = 240.0  # every crawl process of a fleet run is killed after this many seconds
CLOSESPIDER_TIMEOUT = 180  # and closes itself before that
MEASURE_TIMEOUT = 600.0  # a memory measurement subprocess is killed after this many seconds
REDIS_MAX_LIFE = 3600  # redis-server stops by itself after this many seconds
CRAWL_SETTINGS: dict[str, Any] = {
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    "DOWNLOAD_TIMEOUT": 30,
    "RETRY_ENABLED": False,
    "LOG_LEVEL": "WARNING",  # the warnings and errors are counted and kept as evidence
    "CLOSESPIDER_TIMEOUT": CLOSESPIDER_TIMEOUT,
}
STORE_STATS = ("store_hit", "store_wait", "store_woken", "store_poll", "store_saved", "store_error",
               "store_unreadable")


def _env(workdir: Path) -> dict[str, str]:
    # As bench_middleware.run_crawl: byte-compiled modules cached in the work directory.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    return env


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when this script dies (Linux)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


# --------------------------------------------------------------------------------------
# redis-server, started and stopped by the benchmark
# --------------------------------------------------------------------------------------
class RedisServer(servers.RedisServer):
    """``redis-server`` on 127.0.0.1 on a free port, without persistence, under
    ``timeout`` (it stops by itself after REDIS_MAX_LIFE s) in a process group of
    its own; stopped on exit from the ``with`` block, even on error. Started by the
    test suite's support (``tests/servers``' :class:`RedisServer`); this adds
    the benchmark's log, its version and its client."""

    def __init__(self, workdir: Path) -> None:
        directory = workdir / "redis"
        directory.mkdir(exist_ok=True)
        super().__init__(workdir=directory, max_life=REDIS_MAX_LIFE, log=directory / "redis.log",
                         preexec_fn=_die_with_parent)
        self.dir = directory
        self.version = ""
        self.url = f"redis://127.0.0.1:{self.port}/0"  # type: ignore[assignment]

    def __enter__(self) -> RedisServer:
        self.start()
        try:
            client = self.client()
            self.version = str(client.info("server").get("redis_version", ""))
            client.close()
        except BaseException:
            self.stop()
            raise
        return self

    def client(self) -> Any:
        import redis

        return redis.Redis.from_url(self.url, socket_timeout=10)

    def flush(self) -> None:
        client = self.client()
        try:
            client.flushall()
        finally:
            client.close()


# --------------------------------------------------------------------------------------
# (1) and (2): fleets of crawl processes
# --------------------------------------------------------------------------------------
def fleet_sites(origins: int) -> list[dict[str, Any]]:
    """One loopback address per origin (so that each has its own download slot)."""
    return [
        {"host": f"127.1.{i // 250}.{i % 250 + 1}", "robots": "ok", "delay": PAGE_DELAY, "robots_delay": ROBOTS_DELAY}
        for i in range(origins)
    ]


def fleet_urls(bases: list[str], pages: int, process: int) -> list[str]:
    """Process ``process``'s pages: its own P pages of every origin, origins interleaved."""
    return [f"{base}/p/{process * pages + j}" for j in range(pages) for base in bases]


def crawl_settings(config: str, store_dir: Path | None, redis_url: str | None) -> dict[str, Any]:
    settings = bm.base_settings() | dict(CRAWL_SETTINGS)
    if config == BUILTIN:
        settings["ROBOTSTXT_OBEY"] = True
        return settings
    settings |= {"ROBOTSTXT_OBEY": True, "DOWNLOADER_MIDDLEWARES": {bm.BUILTIN_MW: None, bm.OURS_MW: 100}}
    if config == DISK:
        settings |= {"ROBOTSTXT_STORE": "disk", "ROBOTSTXT_STORE_PATH": str(store_dir)}
    elif config in REDIS_CONFIGS:
        settings |= {"ROBOTSTXT_STORE": "redis", "ROBOTSTXT_REDIS_URL": redis_url}
    return settings


def run_fleet(specs: list[dict[str, Any]], workdir: Path, tag: str, package_root: str) -> dict[str, Any]:
    """Spawn one crawl process per spec at once; wait for them all (each killed after
    FLEET_TIMEOUT s). Times are ``time.time()``, as the crawls' own."""
    paths = []
    for k, spec in enumerate(specs):
        spec_path, out_path = workdir / f"{tag}-{k}.json", workdir / f"{tag}-{k}.out.json"
        spec_path.write_text(json.dumps({**spec, "package_root": package_root}))
        with contextlib.suppress(FileNotFoundError):
            out_path.unlink()
        paths.append((spec_path, out_path, workdir / f"{tag}-{k}.err"))
    env = _env(workdir)
    procs: list[subprocess.Popen[bytes]] = []
    logs = [open(err, "wb") for _, _, err in paths]
    busy0, children0 = bm._machine_busy(), resource.getrusage(resource.RUSAGE_CHILDREN)
    spawned = time.time()
    try:
        for (spec_path, out_path, _), log in zip(paths, logs, strict=True):
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(bm.SCRIPT), "--crawl", str(spec_path), str(out_path)],
                    env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                )
            )
        exits: list[float | None] = [None] * len(procs)
        killed = [False] * len(procs)
        deadline = spawned + FLEET_TIMEOUT
        while any(e is None for e in exits):
            now = time.time()
            for k, proc in enumerate(procs):
                if exits[k] is None and proc.poll() is not None:
                    exits[k] = now
            if now > deadline:
                for k, proc in enumerate(procs):
                    if exits[k] is None:
                        proc.kill()
                        proc.wait(10)
                        exits[k], killed[k] = time.time(), True
            time.sleep(0.005)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        for log in logs:
            log.close()
    busy1, children1 = bm._machine_busy(), resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU-seconds of the crawl processes (whole processes, imports included), and of everything else on the
    # machine meanwhile (the HTTP server and redis-server included): the crawls compete with it for the CPUs.
    ours_cpu = (children1.ru_utime - children0.ru_utime) + (children1.ru_stime - children0.ru_stime)
    processes = []
    for k, (_, out_path, err) in enumerate(paths):
        stderr = err.read_text(errors="replace") if err.exists() else ""
        counts, errors = bm._log_counts(stderr)
        warnings = [line[:300] for line in stderr.splitlines() if "] WARNING: " in line][:5]
        entry: dict[str, Any] = {
            "returncode": procs[k].returncode,
            "killed": killed[k],
            "exit": exits[k],
            "log_counts": counts,
            "log_errors": errors,
            "log_warnings": warnings,
        }
        if out_path.exists():
            result = json.loads(out_path.read_text())
            entry.update(
                opened=result.get("opened"), closed=result.get("closed"), reason=result.get("reason"),
                ok=result.get("ok"), errors_n=result.get("errors_n"), cpu=result.get("cpu"),
                maxrss_kb=result.get("maxrss_kb"), errbacks=result.get("errors", [])[:5],
                stats={k2: v for k2, v in result.get("stats", {}).items() if k2.startswith("robotstxt/")},
            )
        else:
            entry["stderr_tail"] = stderr[-2000:]
        processes.append(entry)
    last = max(e for e in exits if e is not None)
    wall = last - spawned
    return {"spawned": spawned, "last_exit": last, "wall_s": wall, "processes": processes, "cpu_s": ours_cpu,
            "crawl_load": ours_cpu / wall if wall > 0 else float("nan"),
            "other_load": max(0.0, (busy1 - busy0) - ours_cpu) / wall if wall > 0 else float("nan")}


class RunRequests(NamedTuple):
    """What the server received during one fleet run."""

    #: (process, origin) -> its first page request.
    first_page: dict[tuple[int, int], float]
    #: origin -> its first robots.txt request.
    first_robots: dict[int, float]
    #: robots.txt requests per origin.
    robots: list[int]
    #: Page requests in all.
    pages: int


def requests_of(run: dict[str, Any], log: list[tuple[float, int, str]], origins: int, pages: int) -> RunRequests:
    """The server's log entries of ``run``: exactly the run's span (its processes can send
    nothing before they are spawned or after they exit, and the next run is spawned
    right after: a margin would count its requests twice). Process k crawls pages
    kP..kP+P-1 of each origin (P = ``pages``)."""
    lo, hi = run["spawned"], run["last_exit"]
    found = RunRequests({}, {}, [0] * origins, 0)
    page_requests = 0
    for t, idx, path in log:
        if lo <= t <= hi:
            if path == "/robots.txt":
                found.robots[idx] += 1
                found.first_robots[idx] = min(found.first_robots.get(idx, t), t)
            else:
                page_requests += 1
                with contextlib.suppress(ValueError):
                    key = (int(path.rsplit("/", 1)[1]) // pages, idx)
                    found.first_page[key] = min(found.first_page.get(key, t), t)
    return found._replace(pages=page_requests)


def _summarise_run(run: dict[str, Any], log: list[tuple[float, int, str]], origins: int, pages: int) -> None:
    """Add the server's view (robots.txt and page requests during the run) and the
    per-process timings to ``run``."""
    first_page, first_robots, robots, page_requests = requests_of(run, log, origins, pages)
    # Seconds from a process's spider_opened to each origin's first page request (what waiting for the
    # robots.txt, fetched or loaded from the store, costs an origin; the crawl's CPU load adds to it).
    delays = []
    for (k, _), t in first_page.items():
        opened = run["processes"][k].get("opened") if k < len(run["processes"]) else None
        if opened:
            delays.append(t - opened)
    run["first_page_median_s"] = _median(delays)
    # Seconds between the first and the last process to request an origin's first page: with a store, what
    # a waiting process pays over the one that fetched; without, how far apart the processes' own fetches end.
    spreads, n = [], len(run["processes"])
    for idx in range(origins if n > 1 else 0):
        times = [first_page[(k, idx)] for k in range(n) if (k, idx) in first_page]
        if len(times) == n:
            spreads.append(max(times) - min(times))
    run["first_page_spread_median_s"] = _median(spreads)
    # Seconds from the first spider_opened to each origin's robots.txt request: what a process does before
    # fetching (with a store, the claim that makes it the fetcher).
    opened_first = min((p["opened"] for p in run["processes"] if p.get("opened")), default=None)
    run["robots_request_median_s"] = (_median([t - opened_first for t in first_robots.values()])
                                      if opened_first is not None and first_robots else float("nan"))
    run["first_page_max_s"] = max(delays) if delays else float("nan")
    run["robots_fetches"] = sum(robots)
    run["robots_max_per_origin"] = max(robots) if robots else 0
    run["origins_fetched_more_than_once"] = sum(1 for r in robots if r > 1)
    run["origins_never_fetched"] = sum(1 for r in robots if r == 0)
    run["page_requests"] = page_requests
    run["pages_expected"] = len(run["processes"]) * origins * pages
    procs = run["processes"]
    run["pages_ok"] = sum(p.get("ok") or 0 for p in procs)
    totals: dict[str, int] = {}
    for p in procs:
        for key, value in (p.get("stats") or {}).items():
            if isinstance(value, int):
                totals[key] = totals.get(key, 0) + value
    run["stats_sum"] = totals
    crawl = [p["closed"] - p["opened"] for p in procs if p.get("closed") and p.get("opened")]
    startup = [p["opened"] - run["spawned"] for p in procs if p.get("opened")]
    shutdown = [p["exit"] - p["closed"] for p in procs if p.get("closed") and p.get("exit")]
    run["crawl_s"] = crawl
    run["crawl_max_s"] = max(crawl) if crawl else float("nan")
    run["startup_max_s"] = max(startup) if startup else float("nan")
    run["shutdown_max_s"] = max(shutdown) if shutdown else float("nan")
    run["problems"] = _problems(run)


def _problems(run: dict[str, Any]) -> list[str]:
    out = []
    config, phase = run["config"], run["phase"]
    shared = config in (DISK, *REDIS_CONFIGS)
    for k, p in enumerate(run["processes"]):
        if p["killed"]:
            out.append(f"process {k} killed after {FLEET_TIMEOUT:g} s")
        elif p["returncode"] != 0:
            out.append(f"process {k} exited with {p['returncode']}")
        if p.get("reason") not in (None, "finished"):
            out.append(f"process {k} closed with reason {p.get('reason')!r}")
        if "opened" not in p:
            out.append(f"process {k} wrote no result: {p.get('stderr_tail', '')[-300:]!r}")
        if p.get("closed") and p.get("exit") and p["exit"] - p["closed"] > 3:
            out.append(f"process {k} exited {p['exit'] - p['closed']:.1f} s after spider_closed")
        for level in ("ERROR", "CRITICAL"):
            if p["log_counts"].get(level):
                out.append(f"process {k}: {p['log_counts'][level]} {level} log lines, first: {p['log_errors'][:1]}")
        if p["log_counts"].get("WARNING"):
            out.append(f"process {k}: {p['log_counts']['WARNING']} WARNING log lines, first: {p['log_warnings'][:2]}")
    if run["pages_ok"] != run["pages_expected"]:
        out.append(f"{run['pages_ok']}/{run['pages_expected']} pages reached the callback")
    if shared and run["robots_max_per_origin"] > 1:
        out.append(f"{run['origins_fetched_more_than_once']} origins' robots.txt fetched more than once "
                   "with a shared store")
    if shared and phase == "restart" and run["robots_fetches"]:
        out.append(f"{run['robots_fetches']} robots.txt fetches after a restart against the store")
    if run["stats_sum"].get("robotstxt/store_error"):
        out.append(f"robotstxt/store_error = {run['stats_sum']['robotstxt/store_error']}")
    return out


def bench_fleet(origins: int, pages: int, fleet: list[int], reps: int, workdir: Path, package_root: str,
                redis: RedisServer | None, previous_root: str | None = None,
                configs: set[str] | None = None) -> dict[str, Any]:
    """The fleet runs; with ``previous_root`` (the previous release's tree) its
    Redis configuration runs beside ours, in the same rotation; ``configs`` keeps only those."""
    sites = fleet_sites(origins)
    units = [[BUILTIN], [MEMORY, MEMORY], [DISK, DISK]] + ([[REDIS, REDIS]] if redis is not None else [])
    if redis is not None and previous_root is not None:
        units.append([PREVIOUS_REDIS, PREVIOUS_REDIS])
    if configs:
        units = [unit for unit in units if unit[0] in configs]

    def root_of(config: str) -> str:
        return previous_root if config == PREVIOUS_REDIS and previous_root is not None else package_root

    runs: list[dict[str, Any]] = []
    redis_url = redis.url if redis is not None else None
    for n in fleet:
        with bm.Server(sites, workdir, None) as server:
            bases = [f"http://{s['host']}:{port}" for s, port in zip(sites, server.ports, strict=True)]
            block: list[dict[str, Any]] = []
            if n == fleet[0]:
                # Warm-up, not counted: byte-compiles every module the crawls import (into the work directory).
                warm = [BUILTIN, REDIS if redis is not None else DISK]
                for config in warm:
                    store_dir = workdir / "store-warmup"
                    settings = crawl_settings(config, store_dir, redis_url)
                    run_fleet([{"urls": fleet_urls(bases[:5], 1, 0), "settings": settings}], workdir,
                              f"warmup-{config}", package_root)
                    if redis is not None:
                        redis.flush()
            for rep in range(reps):
                order = units[rep % len(units):] + units[: rep % len(units)]
                for unit in order:
                    store_dir = workdir / f"store-{n}-{rep}-{unit[0]}"
                    store_dir.mkdir()
                    if redis is not None:
                        redis.flush()
                    for phase, config in enumerate(unit):
                        settings = crawl_settings(config, store_dir, redis_url)
                        specs = [{"urls": fleet_urls(bases, pages, k), "settings": settings} for k in range(n)]
                        tag = f"fleet-{n}-{rep}-{config}-{phase}"
                        run = run_fleet(specs, workdir, tag, root_of(config))
                        run.update(n=n, rep=rep, config=config, phase="restart" if phase else "first")
                        block.append(run)
                        crawl = [p["closed"] - p["opened"] for p in run["processes"] if p.get("closed")]
                        print(f"  N={n} rep {rep + 1}/{reps} {LABELS[config]:<26} {run['phase']:<8} "
                              f"wall {run['wall_s']:.2f} s, crawls {', '.join(f'{c:.2f}' for c in crawl)} s",
                              file=sys.stderr, flush=True)
        log = server.log
        for run in block:
            _summarise_run(run, log, origins, pages)
            if run["problems"]:
                for problem in run["problems"]:
                    print(f"    ! N={n} {run['config']} {run['phase']}: {problem}", file=sys.stderr, flush=True)
        runs += block
    return {"origins": origins, "pages": pages, "fleet": fleet, "reps": reps, "runs": runs,
            "redis": redis is not None, "previous": redis is not None and previous_root is not None}


# --------------------------------------------------------------------------------------
# (3): memory per cached origin (subprocess mode --measure KIND SPEC OUT)
# --------------------------------------------------------------------------------------
def corpus_sample(corpus: Path, k: int) -> list[tuple[str, str]]:
    """(origin URL, file) for K files of the corpus, one per origin, chosen at random
    (fixed seed). A file named ``host_port`` is the origin ``https://host:port``.
    With fewer than K files, each is used again for more origins."""
    files = sorted(p for p in corpus.iterdir() if p.is_file())
    seen: set[tuple[str, int]] = set()
    entries = []
    for path in files:
        host, _, port = path.name.partition("_")
        url = f"https://{host}:{port}" if port.isdigit() else f"https://{host}"
        with contextlib.suppress(ValueError):
            from urllib.parse import urlsplit

            parts = urlsplit(url)
            key = (parts.hostname or "", parts.port or 443)
            if key[0] and key not in seen:
                seen.add(key)
                entries.append((url, str(path)))
    random.Random(9309).shuffle(entries)
    # A corpus smaller than K (the committed sample) is gone through again, each file
    # then the robots.txt of another origin, so that the memory figures are K origins.
    distinct = len(entries)
    for n in range(distinct, k if distinct else 0):
        url, path = entries[n % distinct]
        scheme, _, netloc = url.partition("://")
        entries.append((f"{scheme}://copy{n // distinct}.{netloc}", path))
    return entries[:k]


def measure_main(kind: str, spec_path: str, out_path: str) -> int:
    import gc

    spec = json.loads(Path(spec_path).read_text())
    # This script imported the checkout's package: the measurement imports the one asked for.
    for name in [name for name in sys.modules if name.split(".", 1)[0] == "scrapy_rfc9309"]:
        del sys.modules[name]
    sys.path.insert(0, spec["package_root"])
    from scrapy.robotstxt import ProtegoRobotParser

    from scrapy_rfc9309.core.origins import Origin
    from scrapy_rfc9309.core.state import Access, FetchOutcome, OriginState, Policy
    from scrapy_rfc9309.stores import MemoryStore
    from scrapy_rfc9309.stores.record import encode

    policy = Policy()
    entries: list[tuple[str, str]] = [tuple(e) for e in spec["entries"]]  # type: ignore[misc]

    def state_of(url: str, body: bytes) -> OriginState:
        # As the fetcher does, a body longer than ROBOTSTXT_MAX_SIZE is cut to it.
        outcome = FetchOutcome(Access.PARSED, f"{url}/robots.txt", 200, body[: policy.max_size],
                               truncated=len(body) > policy.max_size)
        return OriginState.initial(outcome, time.time(), policy)

    def netloc(url: str) -> str:
        return url.split("://", 1)[1]

    # Warm-up: modules, caches and interned strings that the first parse creates, outside the figures.
    warm = bm.ROBOTS_TXT.encode()
    warm_state = state_of("https://warm-up.invalid", warm)
    warm_state.robots.allowed("https://warm-up.invalid/p/1", "Scrapy")  # type: ignore[union-attr]
    ProtegoRobotParser(warm, None).allowed("https://warm-up.invalid/p/1", "Scrapy")
    out: dict[str, Any] = {"kind": kind, "k": len(entries), "max_size": policy.max_size}
    if kind in ("rss-ours", "rss-protego", "traced-ours", "traced-protego"):
        traced = kind.startswith("traced")
        ours = kind.endswith("ours")
        gc.collect()
        if traced:
            import tracemalloc

            tracemalloc.start()
            before = tracemalloc.get_traced_memory()[0]
        else:
            before = 1024 * rss_kb()
        started = time.perf_counter()
        # Each file is read inside the loop: only what the cache keeps stays allocated.
        # Each origin is asked about one page, as a crawl does right after the fetch
        # (Protego builds every group while parsing, ours the asking agent's then).
        if ours:
            store = MemoryStore(len(entries) + 1)
            for url, path in entries:
                origin = Origin.from_url(url)
                assert origin is not None
                state = state_of(url, Path(path).read_bytes())
                state.robots.allowed(f"{url}/some/page.html?id=1", MEMORY_AGENT)  # type: ignore[union-attr]
                store.put(origin, state)
            kept: Any = store
            out["kept"] = len(store)
        else:
            parsers: dict[str, Any] = {}
            for url, path in entries:
                parser = ProtegoRobotParser(Path(path).read_bytes(), None)
                parser.allowed(f"{url}/some/page.html?id=1", MEMORY_AGENT)
                parsers[netloc(url)] = parser
            kept = parsers
            out["kept"] = len(parsers)
        out["build_s"] = time.perf_counter() - started
        gc.collect()
        if traced:
            import tracemalloc

            out["growth"] = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
        else:
            out["growth"] = 1024 * rss_kb() - before
            out["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        del kept
    elif kind == "disk":
        import sqlite3

        from scrapy_rfc9309.stores.disk import FILENAME, DiskStore

        directory = spec["directory"]
        disk = DiskStore(directory)
        disk.open()
        disk.close()
        path = os.path.join(directory, FILENAME)

        def checkpoint() -> None:
            db = sqlite3.connect(path)
            try:
                out.setdefault("checkpoints", []).append(list(db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()))
            finally:
                db.close()

        checkpoint()
        out["empty_bytes"] = os.path.getsize(path)
        disk = DiskStore(directory)
        disk.open()
        records = [(url, encode(state_of(url, Path(p).read_bytes()), policy)) for url, p in entries]
        out["record_bytes"] = sum(len(r.meta.encode()) + len(r.body) for _, r in records)
        out["save_s"] = _timed_saves(disk, records)
        out["load_decode_s"] = _timed_loads(disk, records, policy)
        out["rows"] = len(disk)
        disk.close()
        checkpoint()
        out["file_bytes"] = os.path.getsize(path)
        wal = path + "-wal"
        out["wal_bytes"] = os.path.getsize(wal) if os.path.exists(wal) else 0
        out["growth"] = out["file_bytes"]
    elif kind == "redis":
        import redis

        from scrapy_rfc9309.stores.redis import RedisStore

        store = _Blocking(RedisStore(spec["redis_url"]))  # its methods are coroutines
        store.open()
        client = redis.Redis.from_url(spec["redis_url"])
        client.flushall()
        # Warm-up: loads the store's Lua scripts into Redis's script cache.
        store.save("https://warm-up.invalid", encode(warm_state, policy))
        client.delete(*store.keys("https://warm-up.invalid"))
        records = [(url, encode(state_of(url, Path(p).read_bytes()), policy)) for url, p in entries]
        out["record_bytes"] = sum(len(r.meta.encode()) + len(r.body) for _, r in records)
        info = client.info("memory")
        before, before_dataset = info["used_memory"], info.get("used_memory_dataset", 0)
        out["save_s"] = _timed_saves(store, records)
        info = client.info("memory")
        out["growth"] = info["used_memory"] - before
        out["dataset_growth"] = info.get("used_memory_dataset", 0) - before_dataset
        out["keys"] = client.dbsize()
        first_key = store.keys(entries[0][0])[0]
        out["encoding"] = (client.object("encoding", first_key) or b"").decode()
        out["load_decode_s"] = _timed_loads(store, records, policy)
        client.flushall()
        client.close()
        store.close()
        store.loop.close()
    else:
        raise SystemExit(f"unknown measurement {kind!r}")
    Path(out_path).write_text(json.dumps(out))
    return 0


class _Blocking:
    """An async store's coroutine methods run to completion one by one, on an event
    loop of its own (this measurement has no reactor)."""

    def __init__(self, store: Any) -> None:
        import asyncio

        self.store = store
        self.loop = asyncio.new_event_loop()

    def __getattr__(self, name: str) -> Any:
        import inspect

        attribute = getattr(self.store, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute
        return lambda *args: self.loop.run_until_complete(attribute(*args))


def _timed_saves(store: Any, records: list[tuple[str, Any]]) -> float:
    """Seconds to save every record (one at a time, as the middleware does)."""
    started = time.perf_counter()
    for url, record in records:
        store.save(url, record)
    return time.perf_counter() - started


def _timed_loads(store: Any, records: list[tuple[str, Any]], policy: Any) -> float:
    """Seconds to load every record and parse it again."""
    from scrapy_rfc9309.stores.record import decode

    started = time.perf_counter()
    for url, _ in records:
        found = store.load(url)
        assert found is not None
        decode(found, policy)
    return time.perf_counter() - started


def bench_memory(corpus: Path, k: int, workdir: Path, package_root: str, redis: RedisServer | None,
                 previous_root: str | None = None) -> dict[str, Any]:
    """The memory figures; with ``previous_root`` the previous release's memory
    store is measured too (``rss-previous``, ``traced-previous``: the ``ours``
    measurement importing that tree)."""
    entries = corpus_sample(corpus, k)
    sizes = [os.path.getsize(p) for _, p in entries]
    out: dict[str, Any] = {"corpus": str(corpus), "k": len(entries), "files": len({p for _, p in entries}),
                           "results": {}}
    kinds = ["rss-protego", "rss-ours", "traced-protego", "traced-ours", "disk"] + (["redis"] if redis else [])
    if previous_root is not None:
        kinds += ["rss-previous", "traced-previous"]
    for kind in kinds:
        spec = {"package_root": previous_root if kind.endswith("previous") else package_root, "entries": entries}
        if kind == "disk":
            directory = workdir / "memory-disk"
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            spec["directory"] = str(directory)
        if kind == "redis" and redis is not None:
            spec["redis_url"] = redis.url
        spec_path, out_path = workdir / f"measure-{kind}.json", workdir / f"measure-{kind}.out.json"
        spec_path.write_text(json.dumps(spec))
        try:
            proc = subprocess.run(
                [sys.executable, str(SCRIPT), "--measure", kind.replace("previous", "ours"), str(spec_path),
                 str(out_path)],
                env=_env(workdir), capture_output=True, timeout=MEASURE_TIMEOUT, check=False,
            )
        except subprocess.TimeoutExpired:
            out["results"][kind] = {"error": f"killed after {MEASURE_TIMEOUT:g} s"}
            continue
        if proc.returncode != 0 or not out_path.exists():
            out["results"][kind] = {"error": proc.stderr.decode(errors="replace")[-1500:]}
            print(f"  (3) {kind} failed: {out['results'][kind]['error']}", file=sys.stderr, flush=True)
            continue
        result = json.loads(out_path.read_text())
        result["per_origin"] = result["growth"] / result["k"] if result["k"] else float("nan")
        out["results"][kind] = result
        print(f"  (3) {kind:<15} {result['per_origin']:,.0f} bytes per origin", file=sys.stderr, flush=True)
    res = out["results"]
    # ROBOTSTXT_MAX_SIZE's default, as the measured package has it.
    max_size = next((r["max_size"] for r in res.values() if "max_size" in r), 500 * 1024)
    out |= {
        "raw_mean": statistics.fmean(sizes) if sizes else 0.0,
        "raw_median": _median([float(s) for s in sizes]),
        "raw_max": max(sizes, default=0),
        "raw_empty": sum(1 for s in sizes if s == 0),
        "raw_over_max": sum(1 for s in sizes if s > max_size),
        "raw_kept_mean": statistics.fmean(min(s, max_size) for s in sizes) if sizes else 0.0,
        "max_size": max_size,
    }
    for method in ("rss", "traced"):
        a, b = res.get(f"{method}-ours", {}), res.get(f"{method}-protego", {})
        if "per_origin" in a and "per_origin" in b and b["per_origin"]:
            out[f"{method}_ratio"] = a["per_origin"] / b["per_origin"]
    return out


# --------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------
def _runs(fleet: dict[str, Any], n: int, config: str, phase: str) -> list[dict[str, Any]]:
    return [r for r in fleet["runs"] if r["n"] == n and r["config"] == config and r["phase"] == phase]


def _values(runs: list[dict[str, Any]], key: str) -> str:
    """The value of ``key`` over the repetitions: one number when they agree."""
    values = [r[key] for r in runs]
    if len(set(values)) == 1:
        return str(values[0])
    return " / ".join(str(v) for v in values)


def _stat(runs: list[dict[str, Any]], name: str) -> str:
    values = [r["stats_sum"].get(f"robotstxt/{name}", 0) for r in runs]
    return str(values[0]) if len(set(values)) == 1 else " / ".join(str(v) for v in values)


def _wall(runs: list[dict[str, Any]], key: str = "wall_s", scale: float = 1.0, digits: int = 2) -> str:
    """Median (min-max) of ``key`` over the runs, times ``scale``; "-" when no run has it."""
    values = [r.get(key, float("nan")) * scale for r in runs]
    values = [v for v in values if v == v]
    if len(values) <= 1:
        return _fmt(values[0] if values else None, digits)
    return f"{_fmt(_median(values), digits)} ({_fmt(min(values), digits)}-{_fmt(max(values), digits)})"


def fleet_tables(fleet: dict[str, Any]) -> tuple[str, str]:
    configs = [BUILTIN, MEMORY, DISK] + ([REDIS] if fleet["redis"] else []) + (
        [PREVIOUS_REDIS] if fleet.get("previous") else [])
    rows = []
    for n in fleet["fleet"]:
        for config in configs:
            runs = _runs(fleet, n, config, "first")
            if not runs:
                continue
            ours = config != BUILTIN
            rows.append([
                str(n), LABELS[config], _values(runs, "robots_fetches"), _values(runs, "robots_max_per_origin"),
                _wall(runs), _wall(runs, "crawl_max_s"), _wall(runs, "robots_request_median_s"),
                _wall(runs, "first_page_median_s"), _wall(runs, "first_page_spread_median_s", 1000, 0),
                _stat(runs, "store_hit") if ours else "-", _stat(runs, "store_wait") if ours else "-",
                _stat(runs, "store_woken") if ours else "-", _stat(runs, "store_poll") if ours else "-",
                _stat(runs, "store_error") if ours else "-", _wall(runs, "crawl_load"), _wall(runs, "other_load"),
            ])
    first = _table(["processes", "configuration", "robots.txt fetches", "most for one origin",
                       "wall s, spawn to last exit", "slowest crawl s, open to close",
                       "s to an origin's robots.txt request (median)", "s to an origin's first page (median)",
                       "ms from the first to the last process's first page of an origin (median)",
                       "store_hit", "store_wait", "store_woken",
                       "store_poll", "store_error", "CPUs used by the crawls", "other load, CPUs"], rows)
    rows = []
    for n in fleet["fleet"]:
        for config in (MEMORY, DISK, *REDIS_CONFIGS):
            runs = _runs(fleet, n, config, "restart")
            if not runs:
                continue
            before = _runs(fleet, n, config, "first")
            label = LABELS[config] + (" (run again: nothing kept)" if config == MEMORY else " (same store)")
            rows.append([
                str(n), label, _values(runs, "robots_fetches"), _values(runs, "robots_max_per_origin"),
                f"{_wall(runs)} vs {_wall(before)}", f"{_wall(runs, 'crawl_max_s')} vs {_wall(before, 'crawl_max_s')}",
                f"{_wall(runs, 'first_page_median_s')} vs {_wall(before, 'first_page_median_s')}",
                _stat(runs, "store_hit"), _wall(runs, "crawl_load"), _wall(runs, "other_load"),
            ])
    restart = _table(["processes", "configuration", "robots.txt fetches", "most for one origin",
                         "wall s (vs first run)", "slowest crawl s (vs first run)",
                         "s to an origin's first page, median (vs first run)", "store_hit", "CPUs used by the crawls",
                         "other load, CPUs"],
                        rows)
    return first, restart


def fleet_details(fleet: dict[str, Any]) -> str:
    rows = []
    for r in fleet["runs"]:
        rows.append([
            str(r["n"]), str(r["rep"] + 1), LABELS[r["config"]], r["phase"], str(r["robots_fetches"]),
            str(r["robots_max_per_origin"]), f"{r['pages_ok']}/{r['pages_expected']}", _fmt(r["wall_s"]),
            _fmt(r["startup_max_s"]), ", ".join(_fmt(c) for c in r["crawl_s"]), _fmt(r["shutdown_max_s"]),
            _fmt(r.get("robots_request_median_s", float("nan"))),
            f"{_fmt(r['first_page_median_s'])} / {_fmt(r['first_page_max_s'])}",
            " ".join(f"{k}={r['stats_sum'].get('robotstxt/' + k, 0)}" for k in STORE_STATS
                     if r["stats_sum"].get("robotstxt/" + k)) or "-",
            str(r["stats_sum"].get("robotstxt/request_count", "-")), _fmt(r["cpu_s"], 1), _fmt(r["other_load"]),
        ])
    return _table(["N", "rep", "configuration", "phase", "robots.txt fetches (server)", "most for one origin",
                      "pages", "wall s", "slowest start s (spawn to open)", "crawls s (open to close)",
                      "slowest exit s (close to exit)", "s to an origin's robots.txt request, median",
                      "s to an origin's first page, median / max",
                      "store stats (sum)", "robotstxt/request_count (sum)", "CPU s of the crawl processes",
                      "other load, CPUs"], rows)


def memory_table(memory: dict[str, Any]) -> str:
    res = memory["results"]
    raw = memory["raw_kept_mean"]

    def cell(kind: str) -> str:
        r = res.get(kind, {})
        return f"{r['per_origin']:,.0f}" if "per_origin" in r else "failed"

    def times(kind: str) -> str:
        r = res.get(kind, {})
        return f"{raw and r['per_origin'] / raw:.1f}x" if "per_origin" in r else "-"

    rows = [
        [LABELS[BUILTIN] + ": a ProtegoRobotParser per origin, in a dict", cell("rss-protego"), times("rss-protego"),
         cell("traced-protego"), "RSS growth / K (tracemalloc: Python heap growth / K)"],
        [LABELS[MEMORY] + ": an OriginState per origin, in MemoryStore", cell("rss-ours"), times("rss-ours"),
         cell("traced-ours"), "RSS growth / K (tracemalloc: Python heap growth / K)"],
    ]
    if "rss-previous" in res:
        rows.append(["previous release, memory: the same", cell("rss-previous"), times("rss-previous"),
                     cell("traced-previous"), "RSS growth / K (tracemalloc: Python heap growth / K)"])
    rows += [
        [LABELS[DISK], cell("disk"), times("disk"), "-",
         "size of robotstxt.sqlite3 after PRAGMA wal_checkpoint(TRUNCATE) / K"],
    ]
    if "redis" in res:
        rows.append([LABELS[REDIS], cell("redis"), times("redis"), "-", "INFO memory used_memory growth / K"])
    return _table(["store", "bytes per cached origin", "x mean raw size", "tracemalloc bytes per origin",
                      "measured as"], rows)


def memory_notes(memory: dict[str, Any]) -> list[str]:
    res = memory["results"]
    notes = [
        f"Sample: {memory['k']} robots.txt files of {memory['corpus']} (one per host, fixed random choice"
        + (f"; its {memory['files']} files, each used for several origins" if memory["files"] < memory["k"] else "")
        + f"): mean raw size "
        f"{memory['raw_mean']:,.0f} bytes, median {memory['raw_median']:,.0f}, largest {memory['raw_max']:,}; "
        f"{memory['raw_empty']} empty; {memory['raw_over_max']} over ROBOTSTXT_MAX_SIZE ({memory['max_size']:,} "
        f"bytes), which scrapy-rfc9309 cuts to it (mean kept {memory['raw_kept_mean']:,.0f} bytes, the 'x mean "
        "raw size' base); Protego parses whole files."
    ]
    for method, name in (("rss", "RSS"), ("traced", "tracemalloc")):
        if f"{method}_ratio" in memory:
            was = res.get(f"{method}-previous", {})
            before = res.get(f"{method}-protego", {})
            previous = (f" (previous release {was['per_origin'] / before['per_origin']:.2f}x)"
                        if "per_origin" in was and before.get("per_origin") else "")
            notes.append(f"In memory, scrapy-rfc9309 / Protego per cached origin ({name}): "
                         f"**{memory[f'{method}_ratio']:.2f}x**{previous}.")
    build = []
    for kind, label in (("rss-protego", "Protego"), ("rss-ours", "scrapy-rfc9309")):
        r = res.get(kind, {})
        if "build_s" in r and r["k"]:
            build.append(f"{label} {1e6 * r['build_s'] / r['k']:,.0f} µs")
    if build:
        notes.append("Time per file (read, parse, one decision, cache; the RSS runs): " + ", ".join(build) + ".")
    d = res.get("disk", {})
    if "file_bytes" in d:
        notes.append(
            f"Disk: {d['rows']} rows, file {d['file_bytes']:,} bytes ({d['empty_bytes']:,} when empty; WAL "
            f"{d['wal_bytes']:,} bytes after the checkpoint); records "
            f"(meta JSON + body) {d['record_bytes'] / d['k']:,.0f} bytes each on average; save "
            f"{1e6 * d['save_s'] / d['k']:,.0f} µs, load + parse again {1e6 * d['load_decode_s'] / d['k']:,.0f} µs "
            "per origin (one process)."
        )
    r = res.get("redis", {})
    if "growth" in r:
        notes.append(
            f"Redis: {r['keys']} keys (hash encoding {r['encoding']!r}); used_memory_dataset growth "
            f"{r['dataset_growth'] / r['k']:,.0f} bytes per origin; records (meta JSON + body) "
            f"{r['record_bytes'] / r['k']:,.0f} bytes each on average; save {1e6 * r['save_s'] / r['k']:,.0f} µs, "
            f"load + parse again {1e6 * r['load_decode_s'] / r['k']:,.0f} µs per origin (one process, one "
            "connection)."
        )
    for kind, r in res.items():
        if "error" in r:
            notes.append(f"**{kind} measurement failed:** {r['error'][-300:]!r}")
    return notes


def environment(fingerprint: str, redis_version: str) -> str:
    parts = [f"scrapy-rfc9309 {fingerprint}"]
    for package in ("Scrapy", "Protego", "Twisted", "redis"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version

            parts.append(f"{package} {version(package)}" + (" (Python client)" if package == "redis" else ""))
    parts.append(f"Python {platform.python_version()}")
    if redis_version:
        parts.append(f"redis-server {redis_version}")
    with contextlib.suppress(Exception):
        import sqlite3

        parts.append(f"SQLite {sqlite3.sqlite_version}")
    parts.append(f"{platform.system()} {platform.release()} {platform.machine()}")
    parts.append(f"{_cpus()} CPUs")
    with contextlib.suppress(Exception):
        model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
        parts.append(model)
    with contextlib.suppress(Exception):
        kb = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
        parts.append(f"{kb / 1024 / 1024:.0f} GiB RAM")
    return ", ".join(parts)


def summary_md(fleet: dict[str, Any] | None, memory: dict[str, Any] | None, env: str) -> str:
    lines = ["### Store benchmark summary", "", f"`benchmarks/bench_store.py` ({env}).", ""]
    if fleet is not None:
        first, restart = fleet_tables(fleet)
        reps = fleet["reps"]
        lines += [
            f"**Fleet.** N crawl processes started together, {fleet['origins']} origins (robots.txt answers after "
            f"{ROBOTS_DELAY * 1000:.0f} ms, pages after {PAGE_DELAY * 1000:.0f} ms; loopback), each process "
            f"crawling {fleet['pages']} pages of every origin (its own pages, all allowed); CONCURRENT_REQUESTS="
            f"{CRAWL_SETTINGS['CONCURRENT_REQUESTS']}, CONCURRENT_REQUESTS_PER_DOMAIN="
            f"{CRAWL_SETTINGS['CONCURRENT_REQUESTS_PER_DOMAIN']}. robots.txt fetches are counted by the server. "
            + (f"Times: median (min-max) of {reps} runs; counts: per run when they differ. " if reps > 1 else "")
            + "Wall time includes starting Python and Scrapy in each process; store stats are summed over the "
            f"processes. 'CPUs used by the crawls': their CPU time (imports included) over the wall time, of the "
            f"{_cpus()} CPUs; 'other load': CPUs busy with anything else meanwhile (the HTTP server and redis-server "
            "included), from /proc/stat: when the two add up to the machine, the times measure CPU contention. "
            "'s to an origin's first page': from a process's spider_opened to the server receiving that process's "
            "first page request of an origin (what waiting for the robots.txt, fetched or loaded from the store, "
            "costs an origin); 's to an origin's robots.txt request': from the first spider_opened to the server "
            "receiving the origin's first robots.txt request (what a process does before fetching: with a store, "
            "the claim that makes it the fetcher); 'ms from the first to the last process's first page': per origin, "
            "how much later than the first the last process sent its first page request (with a store: what a "
            "waiting process pays over the one that fetched; without: how far apart the processes' own fetches "
            "ended).",
            "",
            first,
            "",
            "**Restart.** Right after each run above, the same N processes run again: against the same store "
            "(disk, redis), within the robots.txt lifetime, or with nothing kept (memory).",
            "",
            restart,
            "",
        ]
        problems = [f"N={r['n']}, {LABELS[r['config']]}, {r['phase']} run {r['rep'] + 1}: {p}"
                    for r in fleet["runs"] for p in r["problems"]]
        if problems:
            lines += ["Problems seen:", ""] + [f"- {p}" for p in problems] + [""]
    if memory is not None:
        lines += [
            f"**Memory per cached origin**, {memory['k']} real robots.txt files (K):",
            "",
            memory_table(memory),
            "",
        ]
        lines += [f"- {note}" for note in memory_notes(memory)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a short run (fewer origins, processes and files)")
    parser.add_argument("--json", metavar="PATH", help="write all results to this JSON file")
    parser.add_argument("--origins", type=int, help="origins in the fleet runs (default 100, quick 20)")
    parser.add_argument("--pages", type=int, help="pages per origin per process (default 3, quick 2)")
    parser.add_argument("--processes", help="fleet sizes, comma-separated (default 1,2,4, quick 1,2)")
    parser.add_argument("--reps", type=int, help="repetitions of each fleet run (default 3, quick 1)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                        help=f"directory of robots.txt files named after hosts (default {DEFAULT_CORPUS})")
    parser.add_argument("--sample", type=int, help="robots.txt files for the memory figures (default 2000, quick 300)")
    parser.add_argument("--only", choices=("fleet", "memory"), help="run only one part")
    parser.add_argument("--previous", metavar="REF", default=DEFAULT_REF,
                        help=f"git commit of the previous release, measured beside (default {DEFAULT_REF})")
    parser.add_argument("--no-previous", action="store_true", help="do not measure the previous release")
    parser.add_argument("--configs", help="fleet configurations to run, comma-separated (default all): "
                        + ", ".join(LABELS))
    parser.add_argument("--measure", nargs=3, metavar=("KIND", "SPEC", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        return measure_main(*args.measure)

    origins = args.origins or (20 if args.quick else 100)
    pages = args.pages or (2 if args.quick else 3)
    fleet_sizes = [int(x) for x in (args.processes or ("1,2" if args.quick else "1,2,4")).split(",") if x.strip()]
    reps = args.reps or (1 if args.quick else 3)
    sample = args.sample or (300 if args.quick else 2000)
    corpus = args.corpus.resolve()
    started = time.perf_counter()
    fleet = memory = None
    redis_version = ""
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        workdir = Path(tmp)
        snapshot = bm.snapshot_package(workdir)
        fingerprint = bm.package_fingerprint(snapshot)
        with contextlib.ExitStack() as stack:
            previous_root = None
            if not args.no_previous:
                previous = stack.enter_context(Checkout(args.previous))
                if previous.available:
                    previous_root = previous.directory
                    out.append(f"(the previous release is commit {previous.label}, the code this scale work started "
                               "from; no release is tagged)")
                else:
                    out.append(f"(the previous release is not measured: {previous.error})")
                print(out[-1], file=sys.stderr)
            redis: RedisServer | None = None
            try:
                redis = stack.enter_context(RedisServer(workdir))
                redis_version = redis.version
            except Exception as exc:
                out.append(f"(redis-server could not be started, the redis configurations are left out: {exc})")
                print(out[-1], file=sys.stderr)
            if args.only in (None, "fleet"):
                print(f"(1, 2) fleet: {origins} origins x {pages} pages, processes {fleet_sizes}, {reps} repetitions",
                      file=sys.stderr, flush=True)
                configs = {c.strip() for c in args.configs.split(",")} if args.configs else None
                fleet = bench_fleet(origins, pages, fleet_sizes, reps, workdir, str(snapshot), redis, previous_root,
                                    configs)
            if args.only in (None, "memory"):
                if corpus.is_dir():
                    print(f"(3) memory per cached origin: {sample} files of {corpus}", file=sys.stderr, flush=True)
                    memory = bench_memory(corpus, sample, workdir, str(snapshot), redis, previous_root)
                else:
                    out.append(f"(no corpus at {corpus}: the memory figures are left out)")
    fingerprint_end = bm.package_fingerprint()
    if fingerprint_end != fingerprint:
        out.append(f"(scrapy_rfc9309 changed in the checkout during the run, {fingerprint} -> {fingerprint_end}; "
                   f"every measurement imported the snapshot taken at the start, {fingerprint}.)")
    env = environment(fingerprint, redis_version)
    if fleet is not None:
        out += ["", "### Fleet runs, one row per run", "", fleet_details(fleet), ""]
    out.append(summary_md(fleet, memory, env))
    print("\n".join(out))
    elapsed = time.perf_counter() - started
    print(f"\n(total benchmark time {elapsed:.0f} s)", file=sys.stderr)
    if args.json:
        results = {"fleet": fleet, "memory": memory, "environment": env, "elapsed_s": elapsed,
                   "package": fingerprint, "package_at_end": fingerprint_end}
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
