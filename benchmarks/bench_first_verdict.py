"""Benchmark: a hostile robots.txt's first verdict inside a real crawl, ours beside Protego.

``bench_core.py --hostile-only`` times a fresh parse and its first question after
``gc.collect()``, with the parser's code, its objects and the body cold in the CPU's
caches. This script times the same first verdict where a crawler makes it: Scrapy's
built-in ``RobotsTxtMiddleware`` fetches each origin's robots.txt from a loopback server
(``bench_middleware.py --serve-hosts``: every origin ``o<i>.bench.test`` serves the same
hostile file) and parses it with ``ROBOTSTXT_PARSER``, a wrapper that times the parser's
``from_crawler`` and its first ``allowed`` call together (bench_core's first question:
``/private/secret.html`` for Scrapy's user agent) and hands the parser to the middleware.
The collector runs as it does in any crawl (it is not disabled around the call).

Each crawl runs in a subprocess of its own; per case, ours, Protego and (``--previous
REF``) ours at another commit crawl the same origins one after the other, the order
reversed every other rep, ``--reps`` times. Reported per case: each parser's median and
90th percentile over the origins of a crawl, and the ratio of the medians within each rep
(median and range over the reps).

Usage::

    python benchmarks/bench_first_verdict.py [--cases invalid-utf8,nul-bytes,cr-only,...]
        [--origins 200] [--reps 3] [--previous REF] [--json out.json]

It measures and does not gate: it exits 0 unless it cannot run at all.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parent.parent
sys.path.insert(0, str(SCRIPT.parent))

from common import commit, table  # noqa: E402
from previous import Checkout  # noqa: E402

OURS, PROTEGO, PREVIOUS = "ours", "protego", "previous"
LABELS = {OURS: "scrapy-rfc9309", PROTEGO: "Protego", PREVIOUS: "scrapy-rfc9309 before"}
CASES = ("invalid-utf8", "nul-bytes", "cr-only", "20k-literal-rules", "1mb-line")
#: The first question bench_core's probe asks (its CHECKS[0]): refused by every hostile file.
FIRST_PATH, FIRST_ALLOWED = "/private/secret.html", False
CRAWL_TIMEOUT = 900.0
HOSTS_DOMAIN = ".bench.test"
#: The wrapper's timings, read by the crawl when its spider closes.
_TIMINGS: list[int] = []
_ANSWERS: list[bool] = []


# --------------------------------------------------------------------------------------
# Crawl mode (a subprocess)
# --------------------------------------------------------------------------------------
def _timed(parser_class: Any, agent: str) -> type:
    """A ``ROBOTSTXT_PARSER`` class whose ``from_crawler`` parses with ``parser_class``,
    asks its first question, records the time both took, and returns the parser."""
    now_ns = time.perf_counter_ns

    class Timed:
        @classmethod
        def from_crawler(cls, crawler: Any, robotstxt_body: bytes) -> Any:
            if not robotstxt_body:  # the middleware's check of the parser when it starts
                return parser_class.from_crawler(crawler, robotstxt_body)
            t0 = now_ns()
            parser = parser_class.from_crawler(crawler, robotstxt_body)
            answer = parser.allowed("https://example.com" + FIRST_PATH, agent)
            _TIMINGS.append(now_ns() - t0)
            _ANSWERS.append(bool(answer))
            return parser

    return Timed


def crawl_main(spec_path: str, out_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    sys.path.insert(0, spec.get("package_root") or str(ROOT))
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.robotstxt import ProtegoRobotParser

    from scrapy_rfc9309 import RobotParser

    agent = spec["agent"]
    module = sys.modules[__name__]
    module.TimedParser = _timed(RobotParser if spec["parser"] == OURS else ProtegoRobotParser, agent)  # type: ignore[attr-defined]
    urls: list[str] = spec["urls"]
    counts = {"ok": 0, "error": 0}

    class FirstVerdictSpider(scrapy.Spider):
        name = "first_verdict"

        async def start(self) -> Any:
            for url in urls:
                yield scrapy.Request(url, callback=self.parse, errback=self.failed, dont_filter=True)

        def parse(self, response: Any) -> None:
            counts["ok"] += 1

        def failed(self, failure: Any) -> None:
            counts["error"] += 1

    process = CrawlerProcess(settings={
        "USER_AGENT": agent,
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_PARSER": f"{__name__}.TimedParser",
        "DNS_RESOLVER": "bench_middleware.BenchResolver",
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "DOWNLOAD_TIMEOUT": 60,
        "RETRY_ENABLED": False,
        "REDIRECT_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
    })
    crawler = process.create_crawler(FirstVerdictSpider)
    process.crawl(crawler)
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats else {}
    Path(out_path).write_text(json.dumps({
        "timings_ns": _TIMINGS,
        "answers": _ANSWERS,
        "counts": counts,
        "robots_responses": stats.get("robotstxt/response_count", 0),
        "forbidden": stats.get("robotstxt/forbidden", 0),
    }))
    return 0


# --------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------
def _crawl(spec: dict[str, Any], workdir: Path, tag: str) -> dict[str, Any]:
    spec_path, out_path = workdir / f"{tag}.json", workdir / f"{tag}.out.json"
    spec_path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--crawl", str(spec_path), str(out_path)], env=env,
                          capture_output=True, timeout=CRAWL_TIMEOUT, check=False)
    if proc.returncode != 0 or not out_path.exists():
        sys.stderr.write(proc.stderr.decode(errors="replace")[-4000:])
        raise RuntimeError(f"crawl {tag} failed with exit code {proc.returncode}")
    return json.loads(out_path.read_text())


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench(cases: tuple[str, ...], origins: int, reps: int, workdir: Path,
          previous: str | None = None) -> dict[str, Any]:
    """Per case, its crawls (see the module's description); ``previous``: the package
    directory of another commit, crawled as a third parser."""
    import bench_core
    import bench_middleware

    agent = bench_core.UA
    results: dict[str, Any] = {}
    for case in cases:
        body, _, description = bench_core.hostile_case(case)
        body_path = workdir / f"{case}.robots.txt"
        body_path.write_bytes(body)
        proc, port = bench_middleware.start_hosts_server([str(body_path)], workdir, CRAWL_TIMEOUT * 20)
        parsers = (OURS, PROTEGO) + ((PREVIOUS,) if previous else ())
        runs: dict[str, list[dict[str, Any]]] = {parser: [] for parser in parsers}
        try:
            urls = [f"http://o{i}{HOSTS_DOMAIN}:{port}{path}" for i in range(origins)
                    for path in (FIRST_PATH, "/public/page.html")]
            for rep in range(reps):
                for parser in (parsers if rep % 2 == 0 else parsers[::-1]):
                    spec = {"parser": PROTEGO if parser == PROTEGO else OURS, "urls": urls, "agent": agent,
                            "package_root": previous if parser == PREVIOUS else None}
                    out = _crawl(spec, workdir, f"{case}-{parser}-{rep}")
                    ms = [t / 1e6 for t in out["timings_ns"]]
                    if len(ms) != origins:
                        raise RuntimeError(f"{case} {parser}: {len(ms)} first verdicts for {origins} origins")
                    if any(answer != FIRST_ALLOWED for answer in out["answers"]):
                        raise RuntimeError(f"{case} {parser}: the first question was not answered as the file says")
                    entry = {"median_ms": statistics.median(ms), "p90_ms": _percentile(ms, 0.9),
                             "min_ms": min(ms), "pages": out["counts"]["ok"], "forbidden": out["forbidden"]}
                    runs[parser].append(entry)
                    print(f"  {case} {LABELS[parser]} rep {rep + 1}: median {entry['median_ms']:.3f} ms, "
                          f"p90 {entry['p90_ms']:.3f} ms over {len(ms)} origins; {entry['pages']} pages, "
                          f"{entry['forbidden']} refused", file=sys.stderr)
        finally:
            bench_middleware.stop_server(proc)
        results[case] = {"description": description, "bytes": len(body), "runs": runs,
                         "ratios": _ratios(runs, OURS)}
        if previous:
            results[case]["previous_ratios"] = _ratios(runs, PREVIOUS)
    return results


def _ratios(runs: dict[str, list[dict[str, Any]]], parser: str) -> list[float]:
    """``parser``'s median over Protego's, rep by rep."""
    return [ours["median_ms"] / theirs["median_ms"] for ours, theirs in zip(runs[parser], runs[PROTEGO], strict=True)]


def _mid(values: list[float], digits: int = 3) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def report(results: dict[str, Any], origins: int, reps: int, previous_label: str = "") -> str:
    rows = []
    for entry in results.values():
        ours, theirs = entry["runs"][OURS], entry["runs"][PROTEGO]
        row = [
            f"{entry['description']} ({entry['bytes'] / 1024:,.0f} KiB)",
            _mid([r["median_ms"] for r in ours]), _mid([r["p90_ms"] for r in ours]),
            _mid([r["median_ms"] for r in theirs]), _mid([r["p90_ms"] for r in theirs]),
            _mid(entry["ratios"]) + "x",
        ]
        if previous_label:
            row += [_mid([r["median_ms"] for r in entry["runs"][PREVIOUS]]), _mid(entry["previous_ratios"]) + "x"]
        rows.append([*row, "yes" if statistics.median(entry["ratios"]) <= 0.1 else "no"])
    header = ["hostile input", "ours, median (ms)", "ours, p90 (ms)", "Protego, median (ms)", "Protego, p90 (ms)",
              "ours ÷ Protego (medians)"]
    if previous_label:
        header += [f"before, {previous_label}, median (ms)", "before ÷ Protego"]
    return (f"First verdicts in a crawl at {commit()}: {origins} origins per crawl, {reps} reps, "
            "median (min-max) over the reps.\n\n" + table([*header, "≤ 0.1x"], rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated hostile inputs (bench_core's)")
    parser.add_argument("--origins", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--previous", metavar="REF", default=None,
                        help="also crawl with the package at this commit (built in a temporary worktree)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--crawl", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.crawl:
        return crawl_main(*args.crawl)
    import bench_core

    cases = tuple(args.cases.split(","))
    unknown = set(cases) - set(bench_core.HOSTILE_CASES)
    if unknown:
        parser.error(f"unknown hostile cases: {', '.join(sorted(unknown))}")
    tree = Checkout(args.previous) if args.previous else None
    with tempfile.TemporaryDirectory(prefix="bench-first-verdict-") as tmp, tree or contextlib.nullcontext():
        if tree is not None and not tree.available:
            parser.error(f"--previous {args.previous}: {tree.error}")
        previous = tree.directory if tree is not None else None
        results = bench(cases, max(1, args.origins), max(1, args.reps), Path(tmp), previous)
        label = tree.label if tree is not None else ""
    print(report(results, args.origins, args.reps, label))
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "origins": args.origins, "reps": args.reps}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
