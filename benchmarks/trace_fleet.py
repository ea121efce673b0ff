"""Where a waiting process's time goes, in a fleet sharing a Redis store.

Runs N crawl processes (``bench_store.py``'s fleet: 100 local origins, robots.txt
answering after 200 ms) with the Redis store and a tracing extension (this module's
``Tracer``) that timestamps, in each process, the steps between an origin's
robots.txt fetch and its first page request: the fetcher's fetch returning, its save
being written to Redis, the waiter hearing the save's message, its claim ending with
the record, and each process releasing its waiting requests (``_settle``). The page
requests' times come from the server. Prints the median (and quartiles) of each step
over the origins where one process fetched and the other waited.

The tracer wraps private functions of the store and the middleware: it is a
diagnostic for this code base, not an API.

    python benchmarks/trace_fleet.py [--processes 2] [--reps 4]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TRACE_DIR_SETTING = "TRACE_FLEET_DIR"


def _origin(text: str) -> str:
    """The origin in a Redis key or channel (``prefix:{origin}:...``)."""
    found = re.search(r"\{(.*)\}", text)
    return found.group(1) if found else text


class Tracer:
    """A Scrapy extension: timestamps of each origin's steps, written at spider_closed."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.events: list[tuple[float, str, str]] = []
        self.numbered = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> Tracer:
        from scrapy import signals

        import scrapy_rfc9309.lifecycle.fetch as fetch
        import scrapy_rfc9309.lifecycle.waiting as waiting
        import scrapy_rfc9309.stores.client as store_client
        import scrapy_rfc9309.stores.redis as redis_store

        tracer = cls(crawler.settings.get(TRACE_DIR_SETTING))
        note = tracer.events.append

        heard = redis_store._Notifier.heard

        def heard_traced(self: Any, kind: bytes, channel: str, *args: Any, **kwargs: Any) -> None:
            if kind in (b"message", b"smessage"):
                note((time.time(), "heard", _origin(channel)))
            heard(self, kind, channel, *args, **kwargs)

        run = redis_store.RedisStore._run

        async def run_traced(self: Any, name: str, keys: Any, args: Any) -> Any:
            if name == "save":
                note((time.time(), "written", _origin(keys[0])))
            return await run(self, name, keys, args)

        obtain = store_client.StoreClient.obtain

        async def obtain_traced(self: Any, origin: Any, previous: Any, *args: Any, **kwargs: Any) -> Any:
            found = await obtain(self, origin, previous, *args, **kwargs)
            note((time.time(), "obtained" if found.state is not None else "locked", str(origin)))
            return found

        robots = fetch.RobotsFetcher.fetch

        async def fetch_traced(self: Any, origin: Any, *args: Any, **kwargs: Any) -> Any:
            outcome = await robots(self, origin, *args, **kwargs)
            note((time.time(), "fetched", str(origin)))
            return outcome

        settle = waiting.WaitingRequests._settle

        def settle_traced(self: Any, state: Any, origin: Any) -> None:
            note((time.time(), "released", str(origin)))
            settle(self, state, origin)

        redis_store._Notifier.heard = heard_traced  # type: ignore[method-assign]
        redis_store.RedisStore._run = run_traced  # type: ignore[method-assign]
        store_client.StoreClient.obtain = obtain_traced  # type: ignore[method-assign]
        fetch.RobotsFetcher.fetch = fetch_traced  # type: ignore[method-assign]
        waiting.WaitingRequests._settle = settle_traced  # type: ignore[method-assign]
        crawler.signals.connect(tracer.closed, signal=signals.spider_closed)
        crawler.signals.connect(tracer.received, signal=signals.response_received)
        return tracer

    def received(self, response: Any, request: Any = None, spider: Any = None) -> None:
        """Note the first page's URL: it says which process of the fleet this is."""
        if not self.numbered and "/p/" in response.url:
            self.numbered = True
            self.events.append((time.time(), "page url", response.url))

    def closed(self, spider: Any = None) -> None:
        Path(self.directory, f"trace-{os.getpid()}.json").write_text(json.dumps(self.events))


STEPS = (
    ("fetcher: lock taken -> robots.txt request", ("F", "locked"), ("F", "robots")),
    ("fetcher: robots.txt fetched -> save written", ("F", "fetched"), ("F", "written")),
    ("save written -> waiter hears the message", ("F", "written"), ("W", "heard")),
    ("waiter: message heard -> claim ends with the record", ("W", "heard"), ("W", "obtained")),
    ("waiter releases its requests, after the fetcher does", ("F", "released"), ("W", "released")),
    ("fetcher: requests released -> first page request", ("F", "released"), ("F", "page")),
    ("waiter: requests released -> first page request", ("W", "released"), ("W", "page")),
    ("waiter's first page request, after the fetcher's", ("F", "page"), ("W", "page")),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--origins", type=int, default=100)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(HERE))
    import bench_middleware as bm
    import bench_store as bs

    # The crawl processes import this module as their extension.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    work = Path(tempfile.mkdtemp(prefix="trace-fleet-"))
    traces = work / "traces"
    traces.mkdir()
    sites = bs.fleet_sites(args.origins)
    pages, n = 3, args.processes
    runs = []
    with bs.RedisServer(work) as redis, bm.Server(sites, work, None) as server:
        bases = [f"http://{s['host']}:{port}" for s, port in zip(sites, server.ports, strict=True)]
        warm_up = bs.crawl_settings(bs.REDIS, None, redis.url)
        bs.run_fleet([{"urls": bs.fleet_urls(bases[:5], 1, 0), "settings": warm_up}], work, "warm-up", str(HERE.parent))
        for rep in range(args.reps):
            redis.flush()
            settings = bs.crawl_settings(bs.REDIS, None, redis.url) | {
                "EXTENSIONS": {"trace_fleet.Tracer": 0}, TRACE_DIR_SETTING: str(traces)}
            specs = [{"urls": bs.fleet_urls(bases, pages, k), "settings": settings} for k in range(n)]
            run = bs.run_fleet(specs, work, f"trace-{rep}", str(HERE.parent))
            run["traces"] = [json.loads(p.read_text()) for p in traces.iterdir()]
            for p in traces.iterdir():
                p.unlink()
            runs.append(run)
    log = server.log
    durations: dict[str, list[float]] = {label: [] for label, *_ in STEPS}
    for run in runs:
        first_page, robots, *_ = bs.requests_of(run, log, args.origins, pages)
        processes = []  # (process number, {(step, origin): time}) per trace
        for trace in run["traces"]:
            urls = [origin for _, kind, origin in trace if kind == "page url"]
            number = int(urls[0].rsplit("/", 1)[1]) // pages if urls else -1
            processes.append((number, {(kind, origin): t for t, kind, origin in reversed(trace)}))
        for idx, base in enumerate(bases):
            fetchers = [p for p in processes if ("fetched", base) in p[1]]
            if len(fetchers) != 1:
                continue
            for waiter in (p for p in processes if ("obtained", base) in p[1] and ("heard", base) in p[1]):
                at = {}
                for who, (number, steps) in (("F", fetchers[0]), ("W", waiter)):
                    at[who] = dict(steps)
                    if (number, idx) in first_page:
                        at[who][("page", base)] = first_page[(number, idx)]
                    if idx in robots:
                        at[who][("robots", base)] = robots[idx]
                for label, (who0, what0), (who1, what1) in STEPS:
                    start, end = at[who0].get((what0, base)), at[who1].get((what1, base))
                    if start is not None and end is not None:
                        durations[label].append((end - start) * 1000)
    print(f"{n} processes, {args.origins} origins, {args.reps} runs; per origin fetched by one process, for each "
          "process that waited for it (ms):")
    for label, values in durations.items():
        if len(values) >= 2:
            q1, _, q3 = statistics.quantiles(values, n=4)
            print(f"  {label:<55} median {statistics.median(values):6.1f}  (quartiles {q1:.1f}-{q3:.1f}, "
                  f"{len(values)} origins)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
