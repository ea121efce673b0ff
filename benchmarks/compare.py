"""Before and after in one run: the package at a git commit (``BASE``) beside the working tree.

``make bench-compare BASE=<commit>`` (``python benchmarks/compare.py BASE``) checks ``BASE`` out in
a temporary git worktree and builds its C accelerator there (``previous.Checkout``), copies the
working tree's package (so that editing it meanwhile changes nothing) and builds its accelerator the
same way, and measures the two with the same harness, this checkout's scripts, side by side: in each
of ``--runs`` runs every measurement is made for both, one right after the other, the order swapped
from run to run, so that the load of the moment falls on both alike. Per side, each figure's median and range over the
runs:

- **hooks**: the middleware's own CPU time per page in its hooks, ours (the add-on, every default
  on) and Scrapy's built-in, in instrumented crawls of ``bench_middleware.py`` (one origin, 16
  chains of pages), and their ratio (goal <= 0.5); with the median ``process_request`` call of ours,
  which the load of the moment moves less than the sums;
- **core**: ``bench_core.py`` (called as it is, in a child process importing the side's package):
  decisions per second in steady state against Protego's in the same process, and the resident
  memory per file kept after one decision against Protego's (goal <= 0.1x);
- **ledger**: ``bench_ledger.py``'s timed pair, what ``ROBOTSTXT_LEDGER`` adds to the hooks per
  page, and as a share of the ledger-off crawl's CPU per page (goal <= 2 %).

``--quick`` checks that it works (few pages, ``bench_core.py --quick``, no warm-up crawls); its
figures are not the ones to report. ``--base-tree`` names a checkout of ``BASE`` whose accelerator
is built already (the tests share one), used as it is and left in place. The output ends with a
markdown table for benchmarks/README.md. It measures, it does not gate: it exits 0 unless it
cannot run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_ledger
import bench_middleware as bm
from common import ROOT, commit, median, spread, table
from previous import ENV_FLAG, Checkout, build

MEASURES = ("hooks", "core", "ledger")
CORE_TIMEOUT = 3600.0  # a bench_core.py run is killed after this many seconds


class Side:
    """One of the two packages: its label and the directory its ``scrapy_rfc9309`` is in."""

    def __init__(self, name: str, label: str, root: str) -> None:
        self.name, self.label, self.root = name, label, root

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [self.root, env.get("PYTHONPATH")]))
        env[ENV_FLAG] = "1"
        return env


def _imported_from(result: dict[str, Any], side: Side) -> None:
    """A crawl that imported another tree than its side's would make the comparison a lie."""
    found = result.get("package_file") or ""
    if not found.startswith(side.root + os.sep):
        raise RuntimeError(f"a crawl of {side.label} imported {found}, not its tree {side.root}")


def hooks(side: Side, base_url: str, pages: int, workdir: Path, tag: str, ours_first: bool) -> dict[str, float]:
    """One instrumented crawl with our middleware and one with the built-in: hook CPU per page."""
    urls = [f"{base_url}/p/{n}" for n in range(pages)]
    found: dict[str, dict[str, Any]] = {}
    for config in (bm.OURS, bm.BUILTIN) if ours_first else (bm.BUILTIN, bm.OURS):
        settings = bm.base_settings() | bm.config_settings(config) | bm.CPU_SETTINGS
        spec = {"urls": urls, "settings": settings, "chain": bm.CPU_CHAINS, "instrument": "cpu",
                "package_root": side.root}
        result = bm.run_crawl(spec, workdir, f"{tag}-{config}")
        _imported_from(result, side)
        if result["ok"] != pages:
            raise RuntimeError(f"{side.label}, {config}: {result['ok']} of {pages} pages ({result['reason']})")
        found[config] = result["timings"]
    ours, builtin = found[bm.OURS]["total_us_per_page"], found[bm.BUILTIN]["total_us_per_page"]
    return {"ours_us": ours, "builtin_us": builtin, "ratio": ours / builtin,
            "ours_median_us": found[bm.OURS]["process_request"]["median_us"]}


def core(side: Side, corpus: str, quick: bool, workdir: Path, tag: str) -> dict[str, float]:
    """``bench_core.py`` in a child process importing the side's package: decisions and memory."""
    out = workdir / f"core-{tag}.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_core.py"), corpus, "--skip-hostile",
               "--no-previous", "--json", str(out)] + (["--quick"] if quick else [])
    run = subprocess.run(command, env=side.env(), capture_output=True, text=True, timeout=CORE_TIMEOUT, check=False)
    if run.returncode != 0 or not out.exists():
        raise RuntimeError(f"bench_core.py for {side.label} failed: {run.stderr[-2000:]}")
    found = json.loads(out.read_text())
    steady = found["decisions"]["per_s"]["steady"]
    memory = found["memory"] or {}
    ours, protego = memory.get("rfc9309") or {}, memory.get("protego") or {}
    kept, kept_protego = ours.get("per_file_decision"), protego.get("per_file_decision")
    return {"decisions": steady["rfc9309"], "decisions_ratio": steady["rfc9309"] / steady["protego"],
            "memory_b": kept if kept is not None else float("nan"),
            "memory_ratio": kept / kept_protego if kept is not None and kept_protego else float("nan")}


def ledger(side: Side, pages: int, workdir: Path, warm: bool) -> dict[str, float]:
    """``bench_ledger.py``'s timed pair (ledger off and on) with the side's package."""
    bm._RUN["package_root"] = side.root
    try:
        found = bench_ledger.bench(pages, 0, 1, workdir, warm=warm)
    finally:
        bm._RUN.pop("package_root", None)
    return {"ledger_us": found["hook_added_us"], "ledger_pct": found["hook_share_pct"]}


#: The rows of the table: (measure, key, what it is, decimals).
ROWS = (
    ("hooks", "ours_us", "hook CPU per page, scrapy-rfc9309 (µs)", 1),
    ("hooks", "builtin_us", "hook CPU per page, Scrapy built-in (µs)", 1),
    ("hooks", "ratio", "hook time, scrapy-rfc9309 ÷ built-in (goal <= 0.5)", 2),
    ("hooks", "ours_median_us", "median process_request call, scrapy-rfc9309 (µs; steadier than the sums)", 2),
    ("core", "decisions", "decisions/s, steady state, scrapy-rfc9309", 0),
    ("core", "decisions_ratio", "decisions/s ÷ Protego's (same process)", 1),
    ("core", "memory_b", "RSS per file kept after 1 decision (B)", 0),
    ("core", "memory_ratio", "RSS per file kept ÷ Protego's (goal <= 0.1)", 3),
    ("ledger", "ledger_us", "what ROBOTSTXT_LEDGER adds to the hooks per page (µs)", 1),
    ("ledger", "ledger_pct", "the same, share of the crawl's CPU per page (%; goal <= 2)", 2),
)


def report(sides: list[Side], runs: list[dict[str, dict[str, dict[str, float]]]], measures: tuple[str, ...],
           note: str) -> str:
    """The markdown table: per row, each side's median [min, max] over the runs, and after ÷ before."""
    before, after = sides
    rows = []
    for measure, key, label, digits in ROWS:
        if measure not in measures:
            continue
        values = {side.name: [run[side.name][measure][key] for run in runs if measure in run[side.name]]
                  for side in sides}
        ratio = median(values[after.name]) / median(values[before.name]) if median(values[before.name]) else None
        rows.append([label, spread(values[before.name], digits), spread(values[after.name], digits),
                     f"{ratio:.2f}" if ratio is not None and ratio == ratio else "-"])
    header = ["measure", f"before: {before.label}", f"after: {after.label}", "after ÷ before (medians)"]
    return f"{note}\n\n{table(header, rows)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("base", help="the git commit to compare the working tree with")
    parser.add_argument("--quick", action="store_true", help="a short run, to check that it works")
    parser.add_argument("--runs", type=int, help="runs, each measuring both sides (default 5, quick 2)")
    parser.add_argument("--pages", type=int, help="pages of each hook-timing crawl (default 3000, quick 300)")
    parser.add_argument("--ledger-pages", type=int, help="pages of each ledger crawl (default 5000, quick 300)")
    parser.add_argument("--corpus", default=str(ROOT / "benchmarks" / "corpus"), help="bench_core.py's corpus")
    parser.add_argument("--only", help=f"comma-separated measures (default all: {','.join(MEASURES)})")
    parser.add_argument("--json", metavar="PATH", help="also write every run's figures to PATH")
    parser.add_argument("--base-tree", metavar="DIR",
                        help="a checkout of BASE with its accelerator built, used as it is (the tests share one)")
    args = parser.parse_args(argv)
    runs_n = args.runs or (2 if args.quick else 5)
    pages = args.pages or (300 if args.quick else 3000)
    ledger_pages = args.ledger_pages or (300 if args.quick else 5000)
    measures = tuple(args.only.split(",")) if args.only else MEASURES
    if unknown := set(measures) - set(MEASURES):
        parser.error(f"unknown measures: {', '.join(sorted(unknown))}")
    # Stopped (SIGTERM), it leaves through the ``with`` blocks: the worktree and the copies are removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    started = time.perf_counter()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "scrapy_rfc9309", "setup.py"],
                           capture_output=True, text=True, check=False).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp, Checkout(args.base) as base:
        if args.base_tree:
            base_side = Side("before", commit(Path(args.base_tree)), str(Path(args.base_tree).resolve()))
        elif not base.available:
            print(f"cannot compare with {args.base}: {base.error}", file=sys.stderr)
            return 1
        else:
            assert base.directory is not None
            base_side = Side("before", base.label, base.directory)
        workdir = Path(tmp)
        copy = str(bm.snapshot_package(workdir))
        if failed := build(copy):  # built as the base's is, so that the two differ in their code only
            print(f"the working tree's C accelerator did not build: {failed}", file=sys.stderr)
            return 1
        sides = [base_side,
                 Side("after", f"{commit()}{' + changes' if dirty else ''} (working tree)", copy)]
        for side in sides:  # a child process must import the side's tree, not the editable install
            imported = subprocess.run([sys.executable, "-c", "import scrapy_rfc9309; print(scrapy_rfc9309.__file__)"],
                                      env=side.env(), cwd=workdir, capture_output=True, text=True, check=False)
            _imported_from({"package_file": imported.stdout.strip()}, side)
        runs: list[dict[str, dict[str, dict[str, float]]]] = []
        with bm.Server([{"host": "127.0.0.1", "robots": "ok"}], workdir, None) as server:
            base_url = f"http://127.0.0.1:{server.ports[0]}"
            if "hooks" in measures and not args.quick:  # not counted: modules byte-compiled, pages cached
                for side in sides:
                    hooks(side, base_url, min(100, pages), workdir, f"warm-{side.name}", ours_first=True)
            for n in range(runs_n):
                order = sides if n % 2 == 0 else sides[::-1]
                run: dict[str, dict[str, dict[str, float]]] = {side.name: {} for side in sides}
                for measure in measures:
                    for side in order:
                        tag = f"{n}-{side.name}"
                        if measure == "hooks":
                            found = hooks(side, base_url, pages, workdir, tag, ours_first=n % 2 == 0)
                        elif measure == "core":
                            found = core(side, args.corpus, args.quick, workdir, tag)
                        else:
                            found = ledger(side, ledger_pages, workdir, warm=not args.quick)
                        run[side.name][measure] = found
                        print(f"  run {n + 1}/{runs_n} {measure:<6} {side.name:<6} "
                              + ", ".join(f"{key} {value:.3g}" for key, value in found.items()),
                              file=sys.stderr, flush=True)
                runs.append(run)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    note = (f"`make bench-compare BASE={args.base}`{' (quick)' if args.quick else ''}: {runs_n} runs, each side "
            f"measured in each, alternating; hooks over {pages} pages, ledger over {ledger_pages}, bench_core on "
            f"{Path(args.corpus).name}{' (quick subset)' if args.quick else ''}; median [min, max] of the runs; "
            f"{os.cpu_count()} CPUs, load average {load:.1f} at the end, {time.perf_counter() - started:.0f} s.")
    print(report(sides, runs, measures, note))
    if args.json:
        Path(args.json).write_text(json.dumps({"sides": [vars(side) for side in sides], "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
