"""Benchmark: ``scrapy robotstxt report`` on a generated ledger of N verdicts (1,000,000 by
default): its wall time, CPU time and the peak resident memory of the command's process, at
N/10 (once) and N (``--runs`` times, 3 by default: median and spread), so that memory is seen
not to grow with the ledger; in each mode of the ledger's responses, side by side: ``all``
(``ROBOTSTXT_LEDGER_RESPONSES = True``: every response recorded) and ``refused`` (the default:
only the responses a usage preference kept from the spider).

The ledger is written as docs/ledger-format.md says, by tests/ledger_writer.py's definitions
(written from that document alone: version files, manifest lines) and a fast loop of its own for
the records (the same JSON lines and chain hashes, written in bulk rather than flushed one by
one): one run, a segment per 200,000 records (gzip), ``--hosts`` origins (250 by default: more
than the report lists one by one, so that the rest are folded) in turn, each with a robots.txt
of a few rules; per host in turn two verdicts ``allowed`` (each with its ``response``) and one
``disallowed`` (with its rule), 10 ms apart. With ``all`` each allowed verdict has its
``response`` (``passed``) right after it; with ``refused`` one allowed verdict in 1,000 has one
(``usage_denied``, three records later) and the others none, as a crawl that records refused
responses only writes them. Both runs deny ``train-ai`` (``cfg``), so that a refused response is
possible. The audit must find everything verified, or the benchmark fails: the generated ledger
is one the audit accepts.

Usage::

    nice -n 10 python benchmarks/bench_report.py [--verdicts N] [--hosts H] [--runs R]
        [--responses all|refused|both] [--keep DIRECTORY]

It measures, it does not gate: it exits 0 unless the ledger does not verify or the command fails.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from ledger_writer import (  # noqa: E402  (the format document's definitions, tests/ledger_writer.py)
    GENESIS,
    SETTINGS,
    append_manifest,
    chain,
    file_sha256,
    link,
    segment_name,
    write_version,
)

RUN = "20260921T120000Z-bench-1-0000cafe"
START = 1_790_000_000.0
SEGMENT_RECORDS = 200_000
#: The settings the heads record: ``train-ai`` denied, response headers read (a refused response is possible).
BENCH_SETTINGS = {**SETTINGS, "deny": ["train-ai"], "read": ["robots.txt", "headers"]}
ROBOTS = b"User-agent: *\nDisallow: /private\nDisallow: /*.pdf$\nAllow: /private/open\nCrawl-delay: 1\n"


class _Segments:
    """One run's segments: records appended with their chain, sealed and gzipped every
    :data:`SEGMENT_RECORDS` records."""

    def __init__(self, directory: Path, responses: str) -> None:
        self.directory = directory
        self.responses = responses
        (directory / "runs").mkdir(parents=True, exist_ok=True)
        self.clock = START
        self.manifest_line = append_manifest(directory, "start", RUN, self.clock)
        self.number = 0
        self.prev_seal = ""
        self.records = 0
        self._open()

    def _open(self) -> None:
        self.number += 1
        self.lines: list[bytes] = []
        self.hash = GENESIS
        extra: dict[str, Any] = {"man": self.manifest_line} if self.number == 1 else {}
        self.write("head", v=3, run=RUN, seg=self.number, prev=self.prev_seal, pkg="0.1.0", agent="benchbot",
                   resp=self.responses, cfg=BENCH_SETTINGS, **extra)

    def write(self, kind: str, **fields: Any) -> None:
        record = {"k": kind, "t": round(self.clock, 3), "p": link(self.hash) if self.lines else "", **fields}
        line = json.dumps(record, separators=(",", ":")).encode()
        self.lines.append(line)
        self.hash = chain(self.hash, line)
        self.records += 1
        if kind != "seal" and len(self.lines) >= SEGMENT_RECORDS:
            self.seal(end=False)
            self._open()

    def seal(self, end: bool) -> None:
        count, sealed = len(self.lines), self.hash.hex()
        self.write("seal", n=count, h=sealed, **({"end": True} if end else {}))
        self.prev_seal = sealed
        path = self.directory / "runs" / segment_name(RUN, self.number, closed=True)
        with gzip.open(path, "wb", compresslevel=6) as handle:
            handle.write(b"\n".join(self.lines) + b"\n")
        if end:
            append_manifest(self.directory, "end", RUN, self.clock, segs=self.number, h=sealed)


def generate(directory: Path, verdicts: int, hosts: int, responses: str = "all") -> int:
    """Write the ledger; the number of records."""
    origins = [f"http://host{index:04d}.test" for index in range(hosts)]
    segments = _Segments(directory, responses)
    digests = {}
    for origin in origins:
        digest = write_version(directory, f"{origin}/robots.txt", ROBOTS)
        digests[origin] = digest
        segments.write("state", o=origin, doc="robots.txt", src="fetch", access="parsed", ver=digest, status=200,
                       err=None, exp=segments.clock + 86400, vh=file_sha256(digest, directory))
    for index in range(verdicts):
        segments.clock += 0.01
        origin = origins[(index // 3) % hosts]
        digest = digests[origin]
        fp = f"{index:040x}"
        if index % 3 == 2:
            url, rule = (f"{origin}/private/{index}", ["Disallow", "/private", 2]) if index % 2 else (
                f"{origin}/files/{index}.pdf", ["Disallow", "/*.pdf$", 3])
            segments.write("verdict", m="GET", o=origin, a="", ver=digest, d="disallowed", r=rule, u=url, fp=fp)
        else:
            url = f"{origin}/page/{index}"
            segments.write("verdict", m="GET", o=origin, a="", ver=digest, d="allowed", r=None, u=url, fp=fp)
            if responses == "all":
                segments.write("response", s=200, d="passed", u=url, fp=fp)
            elif index % 3000 == 3:  # one allowed verdict in 1,000: the one three records back
                earlier = index - 3
                earlier_url = f"{origins[(earlier // 3) % hosts]}/page/{earlier}"
                segments.write("response", s=200, d="usage_denied", u=earlier_url, fp=f"{earlier:040x}")
    segments.seal(end=True)
    return segments.records


def report(directory: Path, out: Path) -> tuple[float, float, float, dict[str, Any], str]:
    """Run the command in a fresh process: wall seconds, its CPU seconds (user + sys: what it
    takes on a CPU of its own, whatever else loads the machine), its peak RSS in MiB (``wait4``'s,
    of that process alone), the JSON, stderr."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stderr, tempfile.TemporaryFile("w+") as stdout:
        process = subprocess.Popen([sys.executable, "-m", "scrapy", "robotstxt", "report", str(directory),
                                    "-o", str(out / "report.html"), "--json", str(out / "report.json")],
                                   cwd=out, stdout=stdout, stderr=stderr, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - started
        stderr.seek(0)
        stdout.seek(0)
        errors, output = stderr.read(), stdout.read()
    if process.returncode != 0:
        raise SystemExit(f"the report failed (exit {process.returncode}):\n{output}\n{errors[-4000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return elapsed, cpu, usage.ru_maxrss / 1024, json.loads((out / "report.json").read_text()), errors


def generated(directory: Path, verdicts: int, hosts: int, responses: str) -> tuple[int, float]:
    """Write the ledger in a process of its own (so that the memory it takes is not counted as the
    report's: a child forked from a large process starts large); its records and seconds."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--generate", str(directory), "--verdicts", str(verdicts),
                           "--hosts", str(hosts), "--responses", responses], capture_output=True, text=True,
                          check=True)
    return int(done.stdout), time.perf_counter() - started


def _spread(values: list[float], unit: str, digits: int = 1) -> str:
    """The median, and the range when there are several."""
    median = f"{statistics.median(values):.{digits}f} {unit}"
    return median if len(values) == 1 else f"{median} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=250)
    parser.add_argument("--runs", type=int, default=3, help="reports of the N ledger (median and spread)")
    parser.add_argument("--responses", choices=["all", "refused", "both"], default="both")
    parser.add_argument("--keep", default=None, help="write the ledgers here and keep them")
    parser.add_argument("--generate", default=None, metavar="DIRECTORY", help="only write a ledger there")
    args = parser.parse_args()
    if args.generate:
        print(generate(Path(args.generate), args.verdicts, args.hosts,
                       "all" if args.responses == "both" else args.responses))
        return 0
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_report-"))
    modes = ["all", "refused"] if args.responses == "both" else [args.responses]
    rows = []
    loads = [os.getloadavg()[0]]
    try:
        for mode in modes:
            for verdicts in sorted({max(1, args.verdicts // 10), args.verdicts}):
                directory, out = base / f"ledger-{mode}-{verdicts}", base / f"out-{mode}-{verdicts}"
                shutil.rmtree(directory, ignore_errors=True)
                out.mkdir(parents=True, exist_ok=True)
                records, written = generated(directory, verdicts, args.hosts, mode)
                size = sum(path.stat().st_size for path in (directory / "runs").iterdir())
                times, cpus, peaks = [], [], []
                for _ in range(args.runs if verdicts == args.verdicts else 1):
                    elapsed, cpu, peak, data, _ = report(directory, out)
                    loads.append(os.getloadavg()[0])
                    if not data["audit"]["ok"] or sum(data["totals"]["verdicts"].values()) != verdicts:
                        raise SystemExit(f"the generated ledger does not verify: {data['audit']}")
                    times.append(elapsed)
                    cpus.append(cpu)
                    peaks.append(peak)
                page = (out / "report.html").stat().st_size
                rows.append((mode, verdicts, records, size, written, times, cpus, peaks, page,
                             data["totals"]["responses"]["received"], len(data["hosts"]),
                             (data["other_hosts"] or {}).get("count", 0)))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
          f"load average (1 min) {min(loads):.1f} to {max(loads):.1f} during the runs")
    print("| responses | verdicts | records | responses recorded | segments (gzip) | runs | report: wall "
          "| report: CPU | verdicts per CPU s | peak RSS | page | hosts listed + folded |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode, verdicts, records, size, _, times, cpus, peaks, page, received, listed, folded in rows:
        print(f"| {mode} | {verdicts:,} | {records:,} | {received:,} | {size / 2**20:.1f} MiB | {len(times)} "
              f"| {_spread(times, 's')} | {_spread(cpus, 's')} | {verdicts / statistics.median(cpus):,.0f} "
              f"| {_spread(peaks, 'MiB', 0)} | {page / 2**20:.1f} MiB | {listed} + {folded} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
