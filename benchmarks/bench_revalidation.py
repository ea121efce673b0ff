"""Benchmark: the bytes conditional refetches save on a crawl whose robots.txt files do not change.

Real robots.txt files (``benchmarks/corpus`` by default, or ``--corpus DIR``) are served by local
origins (one per file, on 127.0.0.1, each with an ``ETag`` and a ``Last-Modified``, answering
``304 Not Modified`` to matching validators: ``Conditional`` of the test servers, ``tests/servers``). A crawl
requests one page per origin per round, for ``--rounds`` rounds; between two rounds it waits
longer than ``ROBOTSTXT_CACHE_TTL`` (0.2 s here), so that every robots.txt has expired and is
fetched again. Two configurations, side by side in each run: revalidation on (the default) and
``ROBOTSTXT_REVALIDATE = False`` (every refetch a plain GET, as every other crawler does).

Reported per configuration: robots.txt requests, 304 answers, robots.txt body bytes the servers
sent, the crawl's ``downloader/response_bytes`` (every response's headers and body, pages
included) and the wall time; median and range over ``--reps`` runs. The saving is what
revalidation does not download: bytes of the files renewed (``robotstxt/revalidated_bytes``).

Usage::

    python benchmarks/bench_revalidation.py [--corpus DIR] [--rounds 4] [--reps 3] [--json out.json]

It measures and does not gate: it exits 0 unless it cannot run at all.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import tests_on_path  # noqa: E402

tests_on_path()

from scrapy.utils.reactor import install_reactor  # noqa: E402

install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")

import scrapy  # noqa: E402
from scrapy.crawler import CrawlerRunner  # noqa: E402
from scrapy.utils.defer import deferred_from_coro, deferred_to_future, maybe_deferred_to_future  # noqa: E402
from servers import Conditional, Origin  # noqa: E402
from twisted.internet import defer, reactor, task  # noqa: E402

TTL = 0.2
GAP = 0.5


class RoundsSpider(scrapy.Spider):
    """One page per origin per round; the next round once every answer is in, and ``GAP`` later."""

    name = "rounds"

    def __init__(self, bases: list[str], rounds: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bases, self.rounds = bases, rounds
        self.pending = 0
        self.round_done: defer.Deferred[None] | None = None

    def _answered(self, *_: Any) -> None:
        self.pending -= 1
        if self.pending == 0 and self.round_done is not None and not self.round_done.called:
            self.round_done.callback(None)

    def parse(self, response: Any) -> None:
        self._answered()

    async def start(self) -> Any:  # type: ignore[override]
        for number in range(self.rounds):
            if number:
                await maybe_deferred_to_future(task.deferLater(reactor, GAP, lambda: None))
            self.pending = len(self.bases)
            self.round_done = defer.Deferred()
            for base in self.bases:
                yield scrapy.Request(f"{base}/page-{number}", callback=self.parse, errback=self._answered,
                                     dont_filter=True)
            await maybe_deferred_to_future(self.round_done)


async def one_crawl(files: list[bytes], rounds: int, revalidate: bool) -> dict[str, float]:
    servers = []
    for index, body in enumerate(files):
        origin = Origin("127.0.0.1").start()
        served = origin["/robots.txt"] = Conditional(body, f'"file-{index}"')
        servers.append((origin, served, body))
    settings = {
        "ADDONS": {"scrapy_rfc9309.Addon": 0}, "LOG_ENABLED": False, "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_CACHE_TTL": TTL, "ROBOTSTXT_CACHE_MIN_TTL": 0.1, "ROBOTSTXT_REVALIDATE": revalidate,
        "CONCURRENT_REQUESTS": 32, "CONCURRENT_REQUESTS_PER_DOMAIN": 8, "RETRY_ENABLED": False,
        "ROBOTSTXT_USER_AGENT": "BenchBot",
    }
    runner = CrawlerRunner(settings)
    crawler = runner.create_crawler(RoundsSpider)
    started = time.perf_counter()
    try:
        await deferred_to_future(crawler.crawl(bases=[o.base for o, _, _ in servers], rounds=rounds))
    finally:
        wall = time.perf_counter() - started
        for origin, _, _ in servers:
            await deferred_to_future(origin.stop())
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    robots = sum(origin.hits("/robots.txt") for origin, _, _ in servers)
    not_modified = sum(served.not_modified for _, served, _ in servers)
    body_bytes = sum((origin.hits("/robots.txt") - served.not_modified) * len(body) for origin, served, body in servers)
    return {"robots_requests": robots, "not_modified": not_modified, "robots_body_bytes": body_bytes,
            "response_bytes": stats.get("downloader/response_bytes", 0),
            "revalidated_bytes": stats.get("robotstxt/revalidated_bytes", 0), "wall": wall}


def _spread(values: list[float], unit: str = "") -> str:
    median = statistics.median(values)
    if all(float(v).is_integer() for v in values):
        return f"{median:,.0f}{unit} ({min(values):,.0f} to {max(values):,.0f})"
    return f"{median:.2f}{unit} ({min(values):.2f} to {max(values):.2f})"


async def main(args: argparse.Namespace) -> dict[str, Any]:
    corpus = Path(args.corpus)
    files = [path.read_bytes() for path in sorted(corpus.iterdir()) if path.is_file()][: args.origins]
    results: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for rep in range(args.reps):
        order = (("on", True), ("off", False))
        for name, revalidate in order if rep % 2 == 0 else order[::-1]:  # alternated: neither always goes first
            results[name].append(await one_crawl(files, args.rounds, revalidate))
    total = sum(len(body) for body in files)
    print(f"Corpus: {len(files)} robots.txt files of {corpus} ({total:,} bytes), {args.rounds} rounds "
          f"(each file fetched {args.rounds} times), {args.reps} runs: median (range)\n")
    print("| | revalidation on | `ROBOTSTXT_REVALIDATE = False` |")
    print("|---|---|---|")
    rows = [("robots.txt requests", "robots_requests"), ("304 answers", "not_modified"),
            ("robots.txt body bytes sent", "robots_body_bytes"),
            ("`downloader/response_bytes` (pages too)", "response_bytes"),
            ("`robotstxt/revalidated_bytes`", "revalidated_bytes")]
    for label, key in rows:
        print(f"| {label} | {_spread([r[key] for r in results['on']])} | "
              f"{_spread([r[key] for r in results['off']])} |")
    print(f"| wall time | {_spread([r['wall'] for r in results['on']], ' s')} | "
          f"{_spread([r['wall'] for r in results['off']], ' s')} |")
    saved = [1 - on["robots_body_bytes"] / off["robots_body_bytes"]
             for on, off in zip(results["on"], results["off"], strict=True) if off["robots_body_bytes"]]
    if saved:
        print(f"\nrobots.txt body bytes saved: {100 * statistics.median(saved):.1f} % "
              f"({100 * min(saved):.1f} to {100 * max(saved):.1f} %)")
    return {"files": len(files), "bytes": total, "rounds": args.rounds, "results": results}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(ROOT / "benchmarks" / "corpus"))
    parser.add_argument("--origins", type=int, default=32, help="at most this many files (one origin each)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", help="write the figures to this file")
    arguments = parser.parse_args()
    outcome: dict[str, Any] = {}

    async def run() -> None:
        outcome.update(await main(arguments))

    done = deferred_from_coro(run())
    done.addErrback(lambda failure: (failure.printTraceback(), outcome.setdefault("failed", True)))
    done.addBoth(lambda _: reactor.stop())  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]
    if outcome.get("failed"):
        sys.exit(1)
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(outcome, indent=1))
