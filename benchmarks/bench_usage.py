"""Benchmark: the cost of reading the usage preferences responses state (``Content-Usage``,
``tdm-reservation``, ``X-Robots-Tag`` headers; with ``ROBOTSTXT_USAGE_META`` the head's meta tags).

Two measurements:

(a) **Per response**, in this process: ``UsageMiddleware.process_response`` timed on
    prepared Scrapy responses (a 1.5 KB page without any usage header; the same page with a
    ``Content-Usage`` and an ``X-Robots-Tag`` header; a page with a 4 KB head holding meta
    robots and TDMRep tags, meta reading on; a page whose head goes on past the 32 KiB bound;
    a hostile head, an unclosed comment of 1 MB), against a call that returns the response (with
    the feature off the add-on does not enable the middleware), GC paused, best of several rounds.

(b) **Crawl CPU**, with ``benchmarks/bench_middleware.py``'s machinery (each crawl a fresh
    subprocess, the HTTP server in another, 16 chains of pages ``/p/<n>`` of one origin): the same
    crawl with the feature off, with the header reading on (the default), and with the meta
    reading on too, on pages without usage headers and on pages that carry them (headers and
    meta tags), several repetitions in alternating order; medians of the crawler's CPU time
    (user + sys, ``getrusage``) compared with the feature-off crawl of the same pages.

(c) **A site's own robots.txt** (issue 38), in this process, ``--only robotstxt``: the usage
    preferences of one URL (``RobotsTxt.usage``) in a file of 9,500 path-scoped
    ``Content-Signal`` lines against one of 3, and the change diff (``core.changes.diff``, what the
    change news computes on a refetch) of a file of 12,000 ``Content-Usage`` lines that all
    change, of 5,000 rules renamed with 3 and with 300 of the crawl's product tokens, and of
    20,000 rules with 50 tokens, with the sizes of the change record and INFO line it gives;
    ``--runs`` runs side by side, median [min, max]. Run it on an earlier commit with
    ``PYTHONPATH`` naming a checkout of that commit (``previous.Checkout``) and ``RFC9309_BENCH_PREVIOUS=1``
    (see ``previous.py``) for the figures before.

Usage::

    python benchmarks/bench_usage.py [--quick] [--pages N] [--reps N] [--only response|crawl|robotstxt]

It measures, it does not gate: it exits 0 unless it cannot run.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from previous import package_root_first  # noqa: E402

package_root_first()

import bench_middleware as bm  # noqa: E402  (the crawl machinery: servers, subprocess crawls, settings)

#: The usage headers and head markup of the pages that carry them.
USAGE_HEADERS = {"Content-Usage": "train-ai=n, search=y", "X-Robots-Tag": "noarchive, examplebot: noai",
                 "tdm-reservation": "1", "tdm-policy": "https://publisher.example/policy.json"}
USAGE_HEAD = ('<meta charset="utf-8"><meta name="viewport" content="width=device-width">'
              '<meta name="robots" content="noindex, noai"><meta name="tdm-reservation" content="1">'
              '<link rel="stylesheet" href="/s.css"><script src="/a.js"></script>')

#: (name, pages with usage headers?, settings): the crawl configurations.
CONFIGS: list[tuple[str, bool, dict[str, Any]]] = [
    ("plain, feature off", False, {"ROBOTSTXT_USAGE_HEADERS": False}),
    ("plain, headers read", False, {}),
    ("plain, headers + meta read", False, {"ROBOTSTXT_USAGE_META": True}),
    ("usage pages, feature off", True, {"ROBOTSTXT_USAGE_HEADERS": False}),
    ("usage pages, headers read", True, {}),
    ("usage pages, headers + meta read", True, {"ROBOTSTXT_USAGE_META": True}),
]
#: Each configuration's baseline: the feature-off crawl of the same pages.
BASELINE = {False: "plain, feature off", True: "usage pages, feature off"}
GOAL_PCT = 2.0


# ---- (a) per response ---------------------------------------------------------------------
def _middleware(settings: dict[str, Any]) -> Any:
    from scrapy.utils.test import get_crawler

    from scrapy_rfc9309 import UsageMiddleware

    crawler = get_crawler(settings_dict={**bm.config_settings(bm.OURS), "ROBOTSTXT_OBEY": True,
                                         "ROBOTSTXT_USER_AGENT": "ExampleBot", "LOG_LEVEL": "ERROR", **settings})
    return UsageMiddleware.from_crawler(crawler)


def _not_enabled(request: Any, response: Any) -> Any:
    """With the feature off the add-on does not enable ``UsageMiddleware``: a call that returns the
    response, for the cost of a call alone."""
    return response


def _responses() -> dict[str, Any]:
    from scrapy import Request
    from scrapy.http import HtmlResponse

    page = bm._page("/p/1")
    big_head = "".join(f'<link rel="preload" href="/asset-{n}.js" as="script">' for n in range(700))
    cases = {
        "page without usage headers": ({}, page),
        "page with Content-Usage, X-Robots-Tag, tdm-* headers": (USAGE_HEADERS, page),
        "page with meta robots and TDMRep tags in a 4 KB head": ({}, bm._page("/p/1", USAGE_HEAD + big_head[:3500])),
        "page whose head goes on past 32 KiB": ({}, bm._page("/p/1", big_head + USAGE_HEAD)),
        "hostile head: an unclosed comment of 1 MB": ({}, b"<html><head><!--" + b"x" * 1_000_000),
        "hostile: 10,000 X-Robots-Tag directives in 10 lines": (
            {"X-Robots-Tag": [", ".join(f"d{n}x{i}" for i in range(n, n + 1000)) for n in range(0, 10_000, 1000)]},
            page),
        "hostile: Content-Usage of 1,600 items (under 16 KiB)": (
            {"Content-Usage": ", ".join(f"k{i}=n" for i in range(1600))}, page),
    }
    out = {}
    for name, (headers, body) in cases.items():
        url = "http://www.example.com/p/1"
        request = Request(url)
        out[name] = (request, HtmlResponse(url, headers={"Content-Type": "text/html; charset=utf-8", **headers},
                                           body=body, request=request))
    return out


def _time_call(fn: Any, request: Any, response: Any, number: int, rounds: int) -> float:
    """Best per-call time (µs) over ``rounds`` rounds of ``number`` calls, GC paused."""
    best = float("inf")
    gc.disable()
    try:
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(number):
                fn(request, response)
            best = min(best, (time.perf_counter() - t0) / number)
    finally:
        gc.enable()
    return best * 1e6


def bench_per_response(number: int, rounds: int) -> list[dict[str, Any]]:
    configs = {
        "off": _not_enabled,
        "headers": _middleware({}).process_response,
        "meta": _middleware({"ROBOTSTXT_USAGE_META": True}).process_response,
    }
    rows = []
    for name, (request, response) in _responses().items():
        n = max(20, number // 50) if "hostile" in name or "32 KiB" in name else number  # hostile: not remembered
        row: dict[str, Any] = {"case": name}
        for config, hook in configs.items():
            row[config] = _time_call(hook, request, response, n, rounds)
        prefs = request.meta.get("robotstxt_preferences")
        row["read"] = "" if prefs is None else str(prefs)
        rows.append(row)
    return rows


# ---- (b) crawl CPU ------------------------------------------------------------------------
def bench_crawl(pages: int, reps: int, workdir: Path) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _u, _s in CONFIGS}
    sites = [{"host": "127.0.0.1", "robots": "ok"},
             {"host": "127.0.0.1", "robots": "ok", "headers": USAGE_HEADERS, "head": USAGE_HEAD}]
    with bm.Server(sites, workdir, None) as server:
        bases = {False: f"http://127.0.0.1:{server.ports[0]}", True: f"http://127.0.0.1:{server.ports[1]}"}

        def spec(usage_pages: bool, extra: dict[str, Any], count: int) -> dict[str, Any]:
            settings = bm.base_settings() | bm.config_settings(bm.OURS) | bm.CPU_SETTINGS | extra
            settings["ROBOTSTXT_USER_AGENT"] = "ExampleBot"
            urls = [f"{bases[usage_pages]}/p/{n}" for n in range(count)]
            return {"urls": urls, "settings": settings, "chain": bm.CPU_CHAINS}

        for _name, usage_pages, extra in CONFIGS:  # warm-up, not counted
            bm.run_crawl(spec(usage_pages, extra, min(500, pages)), workdir, "usage-warm")
        for rep in range(reps):
            order = CONFIGS[rep % len(CONFIGS):] + CONFIGS[:rep % len(CONFIGS)]
            for name, usage_pages, extra in order:
                result = bm.run_crawl(spec(usage_pages, extra, pages), workdir, f"usage-{rep}")
                runs[name].append({"cpu": result["cpu"], "wall": result["wall"], "ok": result["ok"],
                                   "stats": {k: v for k, v in result["stats"].items() if k.startswith("robotstxt/")}})
                print(f"  (b) rep {rep + 1}/{reps} {name:<34} cpu {result['cpu']:.3f} s  pages {result['ok']}",
                      file=sys.stderr, flush=True)
        # The middleware's own time per response (its hooks timed; one instrumented run each): steadier
        # than CPU medians on a shared machine.
        hooks: dict[str, Any] = {}
        for name, usage_pages, extra in CONFIGS:
            result = bm.run_crawl(spec(usage_pages, extra, pages) | {"instrument": True}, workdir, "usage-timed")
            timings = result.get("timings") or {}
            hooks[name] = {hook: (timings.get(hook) or {}).get("total_ms", 0.0) * 1e3 / pages
                           for hook in ("process_request", "process_response")}
    summary: dict[str, Any] = {"pages": pages, "reps": reps, "configs": {}, "hooks": hooks}
    for name, usage_pages, _extra in CONFIGS:
        cpus = [r["cpu"] for r in runs[name]]
        summary["configs"][name] = {"cpu_median": bm._median(cpus), "cpu_runs": cpus, "usage_pages": usage_pages,
                                    "ok": [r["ok"] for r in runs[name]], "stats": runs[name][-1]["stats"]}
    for name, usage_pages, _extra in CONFIGS:
        base_name = BASELINE[usage_pages]
        response_us = hooks[name]["process_response"]
        summary["configs"][name]["response_hook_us"] = response_us
        summary["configs"][name]["response_hook_added_us"] = response_us - hooks[base_name]["process_response"]
        c, base = summary["configs"][name], summary["configs"][base_name]
        c["overhead_pct"] = 100.0 * (c["cpu_median"] - base["cpu_median"]) / base["cpu_median"]
        paired = [100.0 * (a - b) / b for a, b in zip(c["cpu_runs"], base["cpu_runs"], strict=True)]
        c["paired_median_pct"] = bm._median(paired)
        c["us_per_response"] = 1e6 * (c["cpu_median"] - base["cpu_median"]) / pages
    return summary


def report(per_response: list[dict[str, Any]], crawl: dict[str, Any] | None) -> str:
    import scrapy

    env = f"Scrapy {scrapy.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs"
    out = ["### Usage sources benchmark", "", f"`benchmarks/bench_usage.py` ({env}).", "",
           "(a) `process_response` per response, best of several rounds (µs):", "",
           "| response | feature off | headers read (default) | headers + meta read |", "|---|---:|---:|---:|"]
    for row in per_response:
        out.append(f"| {row['case']} | {row['off']:.2f} | {row['headers']:.2f} | {row['meta']:.2f} |")
    if crawl is not None:
        out += ["", f"(b) crawler CPU, {crawl['pages']} pages of one origin, median of {crawl['reps']} alternating "
                "runs, vs the same pages crawled with the feature off:", "",
                "| crawl | CPU median (s) | CPU vs feature off | paired median | `process_response` per response "
                "(timed) | its share of the crawl's CPU | goal |",
                "|---|---:|---:|---:|---:|---:|---|"]
        for name, c in crawl["configs"].items():
            base = crawl["configs"][BASELINE[c["usage_pages"]]]
            hook = f"{c['response_hook_us']:.1f} µs"
            if name in BASELINE.values():
                out.append(f"| {name} | {c['cpu_median']:.3f} | - | - | {hook} | - | |")
                continue
            share = 100.0 * c["response_hook_added_us"] / (1e6 * base["cpu_median"] / crawl["pages"])
            verdict = "PASS" if share <= GOAL_PCT else "FAIL"
            out.append(f"| {name} | {c['cpu_median']:.3f} | {c['overhead_pct']:+.2f} % | "
                       f"{c['paired_median_pct']:+.2f} % | {hook} | {share:+.2f} % | <= {GOAL_PCT:g} %: {verdict} |")
        out += ["", "The share is the time `process_response` adds per response (timed inside the crawl, less the "
                "feature-off crawl's) over the feature-off crawl's CPU per response; the CPU medians and their "
                "paired differences are shown beside it, but on a shared machine their run-to-run spread is larger "
                "than the effect."]
    return "\n".join(out)


# ---- (c) a site's own robots.txt -------------------------------------------------------------
def _tokens(count: int) -> list[str]:
    """``count`` product tokens a file does not name."""
    return [f"bot-{chr(97 + n % 26)}{chr(97 + n // 26 % 26)}{chr(97 + n // 676)}" for n in range(count)]


def bench_robotstxt(runs: int) -> str:
    """Per request: ``RobotsTxt.usage`` of 200 URLs; per change: ``changes.diff``; median [min, max]."""
    import json
    import statistics

    import scrapy_rfc9309
    from scrapy_rfc9309.core.changes import diff

    signals = "User-agent: *\n" + "".join(f"Content-Signal: /s{n}/ ai-train={'no' if n % 2 else 'yes'}\n"
                                          for n in range(9500))
    few = "User-agent: *\n" + "".join(f"Content-Signal: /s{n}/ ai-train=no\n" for n in range(3))
    urls = [f"https://example.com/s{n * 47}/page" for n in range(200)]
    usage = [f"Content-Usage: train-ai=n, v{{v}}x{n:05d}=y\n" for n in range(12_000)]

    def rules(count: int, version: int) -> str:
        return "User-agent: *\n" + "".join(f"Disallow: /v{version}/{n}\n" for n in range(count))

    changes = {
        "12,000 Content-Usage lines changed, 1 agent": (
            "User-agent: *\n" + "".join(usage).replace("{v}", "1"), "User-agent: *\n" + "".join(usage).replace(
                "{v}", "2"), ["ExampleBot"]),
        "5,000 rules renamed, 3 tokens": (rules(5000, 1), rules(5000, 2), _tokens(3)),
        "5,000 rules renamed, 300 tokens": (rules(5000, 1), rules(5000, 2), _tokens(300)),
        "20,000 rules renamed, 50 tokens": (rules(20_000, 1), rules(20_000, 2), _tokens(50)),
    }
    times: dict[str, list[float]] = {}
    sizes: dict[str, tuple[int, int]] = {}
    for _ in range(runs):
        for name, body in (("9,500 path-scoped Content-Signal lines", signals), ("3 such lines", few)):
            robots = scrapy_rfc9309.parse(body)
            robots.usage(urls[0], "ExampleBot")  # the group built (and, where it is, the index)
            started = time.perf_counter()
            for url in urls:
                robots.usage(url, "ExampleBot")
            times.setdefault(f"usage of one URL: {name}", []).append((time.perf_counter() - started) / len(urls))
        for name, (old, new, agents) in changes.items():
            before, after = scrapy_rfc9309.parse(old), scrapy_rfc9309.parse(new)
            before.allowed("https://example.com/", agents[0])  # as a crawl's copy: asked already
            started = time.perf_counter()
            change = diff(before, after.copy(), agents)
            times.setdefault(f"change diff: {name}", []).append(time.perf_counter() - started)
            assert change is not None
            sizes[name] = (len(json.dumps(change.as_dict(), separators=(",", ":"))), len(str(change)))
    lines = [f"{runs} runs; seconds per call: median [min, max]", "", "| measure | median | [min, max] |",
             "|---|---:|---|"]
    for name, values in times.items():
        lines.append(f"| {name} | {_seconds(statistics.median(values))} | "
                     f"[{_seconds(min(values))}, {_seconds(max(values))}] |")
    usage_ratio = (statistics.median(times["usage of one URL: 9,500 path-scoped Content-Signal lines"])
                   / statistics.median(times["usage of one URL: 3 such lines"]))
    token_ratio = (statistics.median(times["change diff: 5,000 rules renamed, 300 tokens"])
                   / statistics.median(times["change diff: 5,000 rules renamed, 3 tokens"]))
    lines += ["", f"usage, 9,500 lines / 3 lines: {usage_ratio:.2f}; change diff, 300 tokens / 3 tokens: "
              f"{token_ratio:.2f}", "", "| change | change record (JSON bytes) | INFO line (characters) |",
              "|---|---:|---:|"]
    lines += [f"| {name} | {record:,} | {line:,} |" for name, (record, line) in sizes.items()]
    return "\n".join(lines)


def _seconds(value: float) -> str:
    return f"{value * 1e6:,.1f} µs" if value < 1e-3 else f"{value * 1e3:,.1f} ms" if value < 1 else f"{value:.2f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--pages", type=int, help="pages per crawl (default 2000, quick 300)")
    parser.add_argument("--reps", type=int, help="repetitions of each crawl configuration (default 5, quick 1)")
    parser.add_argument("--only", choices=("response", "crawl", "robotstxt"), help="run only one measurement")
    parser.add_argument("--runs", type=int, default=5, help="runs of the robots.txt measurement")
    args = parser.parse_args(argv)
    if args.only == "robotstxt":
        print(bench_robotstxt(args.runs))
        return 0
    pages = args.pages or (300 if args.quick else 2000)
    reps = args.reps or (1 if args.quick else 5)
    per_response = bench_per_response(200 if args.quick else 5000, 3 if args.quick else 7) \
        if args.only in (None, "response") else []
    crawl = None
    if args.only in (None, "crawl"):
        with tempfile.TemporaryDirectory(prefix="bench-usage-") as tmp:
            workdir = Path(tmp)
            bm._RUN["package_root"] = str(bm.snapshot_package(workdir))
            crawl = bench_crawl(pages, reps, workdir)
    print(report(per_response, crawl))
    return 0


if __name__ == "__main__":
    sys.exit(main())
