"""Benchmark: the cost of the verdict ledger (``ROBOTSTXT_LEDGER``), with
``benchmarks/bench_middleware.py``'s machinery (each crawl a fresh subprocess, the HTTP
server in another, 16 chains of pages ``/p/<n>`` of one origin (``--chains 0``: every URL
from the spider's ``start()``, which Scrapy may queue at once), its robots.txt of ~30
rules, the add-on with every default on): the same crawl with the ledger off and on, in
pairs (off then on, on then off, alternating), each crawl a fresh process:

(a) **CPU.** The crawler's CPU time (user + sys, ``getrusage``: every thread, the
    ledger's worker with its ``fsync`` and the gzip of the closed segment included, from
    the crawler's creation to the end of the crawl); per pair, what the ledger adds over
    the pair's ledger-off crawl, in %; the median of the pairs and their range.
(b) **Garbage collection** in each crawl (``gc.callbacks``): collections per generation,
    their CPU time, and the objects a full collection left in the oldest generation (the
    most of them), so that a crawl whose collections blow up is seen and told apart.
(c) **Memory**: the crawler's resident memory, its peak and when the last page reached
    the spider (and at 25, 50, 75 %).
(d) **Bytes on disk** after each ledger-on crawl: the closed segments (gzip) and the
    version files, per verdict record.
(e) Optionally (``--timed N``), N pairs with the middleware's hooks timed inside the
    crawl in CPU time of the thread (``process_request`` + ``process_response``): what the
    ledger adds there per page, over the CPU per page of the pair's ledger-off crawl.

Usage::

    python benchmarks/bench_ledger.py [--quick] [--pages N] [--pairs N] [--timed N] [--parse]

``--parse``: the spider reads each page's title and links and yields them as an item, the least a
crawl does with a page, instead of ignoring it (the default, Scrapy's own cost per page alone).

It measures, it does not gate: it exits 0 unless it cannot run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_middleware as bm  # noqa: E402  (the crawl machinery: servers, subprocess crawls, settings)
from common import commit  # noqa: E402

from scrapy_rfc9309.ledger.segments import GZIP_LEVEL  # noqa: E402

GOAL_CPU_PCT = 2.0
CRAWL_TIMEOUT = 1800.0  # a crawl subprocess is killed after this many seconds
GOAL_BYTES_PER_VERDICT = 64.0
CONFIGS = ("ledger off", "ledger on")
#: What the spider does with each page: ignores it, or parses it (``--parse``).
SPIDERS = {False: "ignores the pages", True: "parses each page (its title and links, as an item)"}


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


def bench(pages: int, pairs: int, timed: int, workdir: Path, chains: int = bm.CPU_CHAINS,
          parse: bool = False, warm: bool = True) -> dict[str, Any]:
    """The pairs and the timed pairs; ``warm``: first a crawl of each configuration, not counted
    (a quick run, which checks that the benchmark works, goes without)."""
    marks = [pages * q // 4 for q in (1, 2, 3, 4)]
    crawls: list[dict[str, dict[str, Any]]] = []
    hook_pairs: list[dict[str, dict[str, float]]] = []
    bm.SERVER_MAX_LIFE = 3 * 3600.0  # a 20,000-page crawl takes minutes on a loaded machine: the server outlives them
    with bm.Server([{"host": "127.0.0.1", "robots": "ok"}], workdir, None) as server:
        base = f"http://127.0.0.1:{server.ports[0]}"
        urls = [f"{base}/p/{n}" for n in range(pages)]
        counter = [0]

        def spec(name: str, count: int, **more: Any) -> dict[str, Any]:
            settings = bm.base_settings() | bm.config_settings(bm.OURS) | bm.CPU_SETTINGS
            settings["ROBOTSTXT_USER_AGENT"] = "ExampleBot"
            settings["CLOSESPIDER_TIMEOUT"] = 0  # a loaded machine may take longer: the crawl's own limit is the kill
            if name == "ledger on":
                counter[0] += 1
                settings["ROBOTSTXT_LEDGER"] = str(workdir / f"ledger-{counter[0]}")
            return {"urls": urls[:count], "settings": settings, "chain": chains or None, "parse": parse, **more}

        for name in CONFIGS if warm else ():  # warm-up, not counted
            bm.run_crawl(spec(name, min(500, pages)), workdir, "ledger-warm")
        for rep in range(pairs):
            pair: dict[str, dict[str, Any]] = {}
            for name in (CONFIGS if rep % 2 == 0 else CONFIGS[::-1]):
                load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
                result = bm.run_crawl(spec(name, pages, rss_at=marks, gc=True), workdir, f"ledger-{rep}",
                                      timeout=CRAWL_TIMEOUT)
                if result["ok"] != pages:
                    raise RuntimeError(f"a crawl got {result['ok']} of its {pages} pages ({result['reason']})")
                gc_stats = result.get("gc") or {}
                rss = gc_stats.get("rss") or []
                crawl = {"cpu": result["cpu"], "cpu_user": result["cpu_user"], "cpu_sys": result["cpu_sys"],
                         "ok": result["ok"], "reason": result["reason"], "load": load,
                         "gc_cpu": gc_stats.get("total_cpu", float("nan")), "gc_count": gc_stats.get("count"),
                         "gen2_max": max(gc_stats.get("gen2_sizes") or [0]),
                         "maxrss_kb": result["maxrss_kb"], "rss_marks": dict(result["rss"]),
                         "rss_first_kb": rss[min(2, len(rss) - 1)][1] if rss else 0}
                if name == "ledger on":
                    crawl["disk"] = _disk(workdir / f"ledger-{counter[0]}")
                    shutil.rmtree(workdir / f"ledger-{counter[0]}", ignore_errors=True)
                pair[name] = crawl
                print(f"  pair {rep + 1}/{pairs} {name:<10} cpu {crawl['cpu']:.2f} s  gc {crawl['gc_cpu']:.2f} s  "
                      f"gen2 max {crawl['gen2_max']}  peak rss {crawl['maxrss_kb'] / 1024:.0f} MiB  pages {crawl['ok']}"
                      f"  load {load:.1f}", file=sys.stderr, flush=True)
            crawls.append(pair)
        for rep in range(timed):
            hooks: dict[str, dict[str, float]] = {}
            for name in (CONFIGS if rep % 2 == 0 else CONFIGS[::-1]):
                result = bm.run_crawl(spec(name, pages, instrument="cpu"), workdir, "ledger-timed",
                                      timeout=CRAWL_TIMEOUT)
                timings = result.get("timings") or {}
                hooks[name] = {hook: (timings.get(hook) or {}).get("total_ms", 0.0) * 1e3 / pages
                               for hook in ("process_request", "process_response")}
                hooks[name]["cpu_per_page"] = 1e6 * result["cpu"] / pages
                # The typical call, and what the slowest 1 % of the calls took in all (per page): a garbage
                # collection a hook set off, or a page fault, is counted in the hook that was running.
                for hook in ("process_request", "process_response"):
                    timing = timings.get(hook) or {}
                    hooks[name][f"{hook} median"] = timing.get("median_us") or 0.0
                    hooks[name][f"{hook} top 1 %"] = (timing.get("top1pct_ms") or 0.0) * 1e3 / pages
            hook_pairs.append(hooks)
            print(f"  timed {rep + 1}/{timed}: hooks off {_hooks(hooks['ledger off']):.1f} µs, "
                  f"on {_hooks(hooks['ledger on']):.1f} µs per page (medians of a call off / on: "
                  f"{_hooks(hooks['ledger off'], ' median'):.1f} / {_hooks(hooks['ledger on'], ' median'):.1f} µs; "
                  f"the slowest 1 % of the calls off / on: {_hooks(hooks['ledger off'], ' top 1 %'):.1f} / "
                  f"{_hooks(hooks['ledger on'], ' top 1 %'):.1f} µs per page)", file=sys.stderr, flush=True)
    shares = [100.0 * (p["ledger on"]["cpu"] - p["ledger off"]["cpu"]) / p["ledger off"]["cpu"] for p in crawls]
    summary: dict[str, Any] = {"pages": pages, "chains": chains, "parse": parse, "crawls": crawls, "shares": shares,
                               "share": bm._median(shares), "hook_pairs": hook_pairs}
    if hook_pairs:
        added = [_hooks(p["ledger on"]) - _hooks(p["ledger off"]) for p in hook_pairs]
        summary["hook_added_us"] = bm._median(added)
        summary["hook_shares"] = [100.0 * a / p["ledger off"]["cpu_per_page"] for a, p in zip(added, hook_pairs,
                                                                                               strict=True)]
        summary["hook_share_pct"] = bm._median(summary["hook_shares"])
        summary["hooks"] = {name: bm._median([_hooks(p[name]) for p in hook_pairs]) for name in CONFIGS}
    return summary


def _hooks(timed: dict[str, float], part: str = "") -> float:
    """``process_request`` + ``process_response`` per page (µs) of one timed crawl (``part``:
    ``" median"``, their median calls; ``" top 1 %"``, their slowest 1 % of calls, per page)."""
    return timed[f"process_request{part}"] + timed.get(f"process_response{part}", 0.0)


def report(summary: dict[str, Any]) -> str:
    import scrapy

    pages = summary["pages"]
    env = f"Scrapy {scrapy.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs"
    crawls = summary["crawls"]
    shares = summary["shares"]
    out = ["### Verdict ledger benchmark", "",
           f"`benchmarks/bench_ledger.py` at commit {commit()} ({env}), {pages} pages of one origin per crawl, "
           f"{len(crawls)} pairs (ledger off and on, alternating order), each crawl a fresh process, "
           f"{summary['chains'] or 'no'} chains{' (every URL from start())' if not summary['chains'] else ''}, "
           f"a spider that {SPIDERS[bool(summary.get('parse'))]}.", "",
           "| pair | CPU off / on (s) | ledger on vs off | GC CPU off / on (s) | full collections off / on | "
           "most objects left by a full collection off / on | peak RSS off / on (MiB) | bytes per verdict | "
           "load (1 min) |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, (pair, share) in enumerate(zip(crawls, shares, strict=True), 1):
        off, on = pair["ledger off"], pair["ledger on"]
        disk = on.get("disk") or {}
        out.append(f"| {n} | {off['cpu']:.2f} / {on['cpu']:.2f} | {share:+.2f} % | {off['gc_cpu']:.2f} / "
                   f"{on['gc_cpu']:.2f} | {(off['gc_count'] or [0, 0, 0])[2]} / {(on['gc_count'] or [0, 0, 0])[2]} | "
                   f"{off['gen2_max']:,} / {on['gen2_max']:,} | {off['maxrss_kb'] / 1024:.0f} / "
                   f"{on['maxrss_kb'] / 1024:.0f} | {disk.get('per_verdict', float('nan')):.1f} B | "
                   f"{off['load']:.1f}, {on['load']:.1f} |")
    lo, hi = (min(shares), max(shares)) if shares else (float("nan"), float("nan"))
    share = summary["share"]
    out += ["", f"What the ledger adds to the whole crawl's CPU: median {share:+.2f} % of the pairs (range {lo:+.2f} "
            f"to {hi:+.2f} %; on a shared machine one crawl's CPU moves by more than that: the goal is judged on "
            "the timed pairs, `--timed N`).", ""]
    per = [p["ledger on"]["disk"]["per_verdict"] for p in crawls if p["ledger on"].get("disk")]
    if per:
        disk = crawls[-1]["ledger on"]["disk"]
        out += [f"On disk: {bm._median(per):.1f} B per verdict in the gzip segments (range {min(per):.1f} to "
                f"{max(per):.1f}; {disk['per_verdict_all']:.1f} B with the version file; {disk['verdicts']} verdicts "
                f"and {disk['responses']} responses; plain {disk['plain_per_verdict']:.0f} B per verdict; goal <= "
                f"{GOAL_BYTES_PER_VERDICT:g} B: {'PASS' if bm._median(per) <= GOAL_BYTES_PER_VERDICT else 'FAIL'}). "
                f"The gzip of the closed segment (level {GZIP_LEVEL}), done again after the crawl: "
                f"{disk['compress_us_per_verdict']:.1f} µs of CPU per verdict.", ""]
    gcs = {name: [p[name]["gc_cpu"] for p in crawls] or [float("nan")] for name in CONFIGS}
    out += [f"Garbage collection, CPU per crawl: ledger off median {bm._median(gcs['ledger off']):.2f} s (range "
            f"{min(gcs['ledger off']):.2f} to {max(gcs['ledger off']):.2f}), ledger on median "
            f"{bm._median(gcs['ledger on']):.2f} s (range {min(gcs['ledger on']):.2f} to "
            f"{max(gcs['ledger on']):.2f}).", ""]
    out += ["Resident memory (MiB) when 25 / 50 / 75 / 100 % of the pages reached the spider (medians of the pairs):",
            "", "| crawl | 25 % | 50 % | 75 % | 100 % |", "|---|---:|---:|---:|---:|"]
    for name in CONFIGS:
        cells = []
        for mark in sorted({int(k) for p in crawls for k in p[name]["rss_marks"]}):
            values = [p[name]["rss_marks"].get(str(mark), p[name]["rss_marks"].get(mark)) for p in crawls]
            cells.append(f"{bm._median([v / 1024 for v in values if v]):.1f}")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    if summary["hook_pairs"]:
        hooks = summary["hooks"]
        out += ["", f"Timed pairs: `process_request` + `process_response` per page {hooks['ledger off']:.1f} µs off, "
                f"{hooks['ledger on']:.1f} µs on (medians); the ledger adds {summary['hook_added_us']:.1f} µs, "
                f"{summary['hook_share_pct']:.2f} % of the CPU per page of the pair's ledger-off crawl (pairs: "
                f"{', '.join(f'{x:.2f}' for x in summary['hook_shares'])} %; goal <= {GOAL_CPU_PCT:g} %: "
                f"{'PASS' if summary['hook_share_pct'] <= GOAL_CPU_PCT else 'FAIL'})."]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run, without the warm-up crawls")
    parser.add_argument("--pages", type=int, help="pages per crawl (default 20000, quick 500)")
    parser.add_argument("--pairs", type=int, help="pairs of crawls, ledger off and on (default 6, quick 1)")
    parser.add_argument("--timed", type=int, help="pairs of crawls with the hooks timed (default 0)")
    parser.add_argument("--chains", type=int, default=bm.CPU_CHAINS,
                        help="chains of pages (default 16); 0: every URL from the spider's start()")
    parser.add_argument("--parse", action="store_true",
                        help="the spider parses each page (its title and links, as an item) instead of ignoring it")
    parser.add_argument("--json", help="write the results there too")
    args = parser.parse_args(argv)
    pages = args.pages or (500 if args.quick else 20000)
    pairs = args.pairs if args.pairs is not None else (1 if args.quick else 6)
    timed = args.timed or 0
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as tmp:
        workdir = Path(tmp)
        bm._RUN["package_root"] = str(bm.snapshot_package(workdir))
        summary = bench(pages, pairs, timed, workdir, args.chains, args.parse, warm=not args.quick)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    print(report(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
