"""Benchmark: the cost of the verdict ledger (``ROBOTSTXT_LEDGER``), with
``benchmarks/bench_middleware.py``'s machinery (each crawl a fresh subprocess, the HTTP
server in another, 16 chains of pages ``/p/<n>`` of one origin, its robots.txt of ~30
rules), the same crawl with the ledger off and on, side by side:

(a) **CPU.** Several repetitions in alternating order; medians of the crawler's CPU
    time (user + sys, ``getrusage``: every thread, the ledger's worker included). On a
    shared machine their spread is larger than the effect, so pairs of instrumented
    runs (ledger off and on, one after the other, alternating order) time the
    middleware's hooks inside the crawl (``process_request`` and ``process_response``,
    in CPU time of the thread, as ``bench_usage.py`` does): the time the ledger adds per
    page, over the CPU per page of the pair's ledger-off crawl, is the figure against
    the goal (the median of the pairs, with their range); the compression of the
    closed segments by the ledger's worker thread, timed apart, is added to it.
(b) **Bytes on disk** after the crawl: the closed segments (gzip) and the version
    files, per verdict record.
(c) **Memory**: the crawler's resident memory when 25, 50, 75 and 100 % of the pages
    have reached the spider, ledger off and on.

Usage::

    python benchmarks/bench_ledger.py [--quick] [--pages N] [--reps N] [--timed N]

It measures, it does not gate: it exits 0 unless it cannot run.
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_middleware as bm  # noqa: E402  (the crawl machinery: servers, subprocess crawls, settings)

from scrapy_rfc9309.ledger import GZIP_LEVEL  # noqa: E402

GOAL_CPU_PCT = 3.0
GOAL_BYTES_PER_VERDICT = 64.0
CONFIGS = ("ledger off", "ledger on")


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()
    except OSError:
        return ""


def _disk(directory: Path) -> dict[str, Any]:
    runs = list((directory / "runs").iterdir())
    versions = list((directory / "versions").iterdir())
    verdicts = responses = 0
    for path in runs:
        data = path.read_bytes()
        data = gzip.decompress(data) if path.name.endswith(".gz") else data
        verdicts += data.count(b'"k":"verdict"')
        responses += data.count(b'"k":"response"')
    runs_bytes = sum(p.stat().st_size for p in runs)
    versions_bytes = sum(p.stat().st_size for p in versions)
    texts = [gzip.decompress(p.read_bytes()) if p.name.endswith(".gz") else p.read_bytes() for p in runs]
    plain = sum(len(text) for text in texts)
    # The worker thread's compression of the closed segments, done again here and timed (CPU of this thread).
    started = time.thread_time()
    for text in texts:
        gzip.compress(text, compresslevel=GZIP_LEVEL, mtime=0)
    compress_cpu = time.thread_time() - started
    return {"verdicts": verdicts, "responses": responses, "segments": len(runs), "versions": len(versions),
            "runs_bytes": runs_bytes, "versions_bytes": versions_bytes, "plain_bytes": plain,
            "per_verdict": runs_bytes / verdicts if verdicts else float("nan"),
            "per_verdict_all": (runs_bytes + versions_bytes) / verdicts if verdicts else float("nan"),
            "plain_per_verdict": plain / verdicts if verdicts else float("nan"),
            "compress_us_per_verdict": 1e6 * compress_cpu / verdicts if verdicts else float("nan")}


def bench(pages: int, reps: int, timed: int, workdir: Path) -> dict[str, Any]:
    marks = [pages * q // 4 for q in (1, 2, 3, 4)]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    disk: dict[str, Any] = {}
    with bm.Server([{"host": "127.0.0.1", "robots": "ok"}], workdir, None) as server:
        base = f"http://127.0.0.1:{server.ports[0]}"
        urls = [f"{base}/p/{n}" for n in range(pages)]
        counter = [0]

        def spec(name: str, count: int, **more: Any) -> dict[str, Any]:
            settings = bm.base_settings() | bm.config_settings(bm.OURS) | bm.CPU_SETTINGS
            settings["ROBOTSTXT_USER_AGENT"] = "ExampleBot"
            if name == "ledger on":
                counter[0] += 1
                settings["ROBOTSTXT_LEDGER"] = str(workdir / f"ledger-{counter[0]}")
            return {"urls": urls[:count], "settings": settings, "chain": bm.CPU_CHAINS, **more}

        for name in CONFIGS:  # warm-up, not counted
            bm.run_crawl(spec(name, min(500, pages)), workdir, "ledger-warm")
        for rep in range(reps):
            for name in (CONFIGS if rep % 2 == 0 else CONFIGS[::-1]):
                result = bm.run_crawl(spec(name, pages, rss_at=marks), workdir, f"ledger-{rep}")
                runs[name].append(result)
                if name == "ledger on":
                    disk = _disk(workdir / f"ledger-{counter[0]}")
                print(f"  rep {rep + 1}/{reps} {name:<11} cpu {result['cpu']:.3f} s  pages {result['ok']}",
                      file=sys.stderr, flush=True)
        pairs: list[dict[str, dict[str, float]]] = []
        for rep in range(timed):
            pair: dict[str, dict[str, float]] = {}
            for name in (CONFIGS if rep % 2 == 0 else CONFIGS[::-1]):
                result = bm.run_crawl(spec(name, pages, instrument="cpu"), workdir, "ledger-timed")
                timings = result.get("timings") or {}
                pair[name] = {hook: (timings.get(hook) or {}).get("total_ms", 0.0) * 1e3 / pages
                              for hook in ("process_request", "process_response")}
                pair[name]["cpu_per_page"] = 1e6 * result["cpu"] / pages
            pairs.append(pair)
            print(f"  timed {rep + 1}/{timed}: hooks off {_hooks(pair['ledger off']):.1f} µs, "
                  f"on {_hooks(pair['ledger on']):.1f} µs per page", file=sys.stderr, flush=True)
    summary: dict[str, Any] = {"pages": pages, "reps": reps, "pairs": pairs, "disk": disk, "configs": {}}
    for name in CONFIGS:
        cpus = [r["cpu"] for r in runs[name]]
        summary["configs"][name] = {
            "cpu_median": bm._median(cpus), "cpu_runs": cpus, "ok": [r["ok"] for r in runs[name]],
            "reasons": sorted({str(r["reason"]) for r in runs[name]}),
            "rss": [dict(r["rss"]) for r in runs[name]],
        }
    off, on = summary["configs"]["ledger off"], summary["configs"]["ledger on"]
    on["overhead_pct"] = 100.0 * (on["cpu_median"] - off["cpu_median"]) / off["cpu_median"]
    paired = [100.0 * (a - b) / b for a, b in zip(on["cpu_runs"], off["cpu_runs"], strict=True)]
    on["paired_median_pct"] = bm._median(paired)
    added = [_hooks(pair["ledger on"]) - _hooks(pair["ledger off"]) for pair in pairs]
    shares = [100.0 * a / pair["ledger off"]["cpu_per_page"] for a, pair in zip(added, pairs, strict=True)]
    summary["hook_added_us"] = bm._median(added)
    summary["hook_share_pct"] = bm._median(shares)
    summary["hook_shares"] = shares
    summary["hooks"] = {name: bm._median([_hooks(pair[name]) for pair in pairs]) for name in CONFIGS}
    summary["timed_cpu_per_page"] = bm._median([pair["ledger off"]["cpu_per_page"] for pair in pairs])
    return summary


def _hooks(timed: dict[str, float]) -> float:
    """``process_request`` + ``process_response`` per page (µs) of one timed crawl."""
    return timed["process_request"] + timed["process_response"]


def report(summary: dict[str, Any]) -> str:
    import scrapy

    pages = summary["pages"]
    env = f"Scrapy {scrapy.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs"
    off, on = summary["configs"]["ledger off"], summary["configs"]["ledger on"]
    hooks = summary["hooks"]
    share = summary["hook_share_pct"]
    out = ["### Verdict ledger benchmark", "",
           f"`benchmarks/bench_ledger.py` at commit {_commit()} ({env}), {pages} pages of one origin, "
           f"{summary['reps']} alternating runs of each, then {len(summary['pairs'])} timed pairs.", "",
           "(a) crawler CPU:", "",
           "| crawl | CPU median (s) | vs ledger off | paired median | `process_request` + `process_response` "
           "per page (timed, median of the pairs) |", "|---|---:|---:|---:|---:|",
           f"| ledger off | {off['cpu_median']:.3f} | - | - | {hooks['ledger off']:.1f} µs |",
           f"| ledger on | {on['cpu_median']:.3f} | {on['overhead_pct']:+.2f} % | {on['paired_median_pct']:+.2f} % | "
           f"{hooks['ledger on']:.1f} µs |", "",
           f"The ledger adds {summary['hook_added_us']:.1f} µs of CPU per page to the hooks (timed in CPU time of the "
           f"thread; median of the pairs): {share:.2f} % of the CPU per page of the pair's ledger-off crawl "
           f"(pairs: {', '.join(f'{x:.2f}' for x in summary['hook_shares'])} %; ledger-off crawl "
           f"{summary['timed_cpu_per_page']:.0f} µs per page).", ""]
    gz = summary["disk"]["compress_us_per_verdict"] if summary["disk"] else 0.0
    gz_share = 100.0 * gz / summary["timed_cpu_per_page"]
    total = share + gz_share
    out += [f"The worker thread's compression of the closed segments (gzip level {GZIP_LEVEL}, done again after the "
            f"crawl and timed): {gz:.1f} µs of CPU per verdict, {gz_share:.2f} %. Together: {total:.2f} % "
            f"(goal <= {GOAL_CPU_PCT:g} %: {'PASS' if total <= GOAL_CPU_PCT else 'FAIL'}). The `fsync` once a "
            "second, kernel time in the worker thread, is only in the whole-crawl CPU medians.", ""]
    disk = summary["disk"]
    if disk:
        per = disk["per_verdict"]
        out += ["(b) on disk after the crawl:", "",
                "| verdicts | responses | segments (gzip) | bytes per verdict, segments | with the version files | "
                "plain JSON Lines per verdict | goal |", "|---:|---:|---:|---:|---:|---:|---|",
                f"| {disk['verdicts']} | {disk['responses']} | {disk['runs_bytes']:,} B | {per:.1f} B | "
                f"{disk['per_verdict_all']:.1f} B | {disk['plain_per_verdict']:.0f} B | "
                f"<= {GOAL_BYTES_PER_VERDICT:g} B: {'PASS' if per <= GOAL_BYTES_PER_VERDICT else 'FAIL'} |", ""]
    out += ["(c) resident memory (MiB) when 25 / 50 / 75 / 100 % of the pages reached the spider (last run):", "",
            "| crawl | 25 % | 50 % | 75 % | 100 % |", "|---|---:|---:|---:|---:|"]
    for name in CONFIGS:
        rss = summary["configs"][name]["rss"][-1] if summary["configs"][name]["rss"] else {}
        cells = [f"{rss[k] / 1024:.1f}" if k in rss else "-" for k in sorted(rss, key=int)]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--pages", type=int, help="pages per crawl (default 4000, quick 500)")
    parser.add_argument("--reps", type=int, help="repetitions of each configuration (default 5, quick 1)")
    parser.add_argument("--timed", type=int, help="pairs of timed crawls (default 3, quick 1)")
    args = parser.parse_args(argv)
    pages = args.pages or (500 if args.quick else 4000)
    reps = args.reps or (1 if args.quick else 5)
    timed = args.timed or (1 if args.quick else 3)
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as tmp:
        workdir = Path(tmp)
        bm._RUN["package_root"] = str(bm.snapshot_package(workdir))
        summary = bench(pages, reps, timed, workdir)
    print(report(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
