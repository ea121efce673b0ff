"""Benchmark: ``scrapy robotstxt report`` on a generated ledger of N verdicts (1,000,000 by
default): its wall time and the peak resident memory of the command's process, at N/10 and N,
so that memory is seen not to grow with the ledger.

The ledger is written as docs/ledger-format.md says, by tests/ledger_writer.py's definitions
(written from that document alone: version files, manifest lines) and a fast loop of its own for
the records (the same JSON lines and chain hashes, written in bulk rather than flushed one by
one): one run, a segment per 200,000 records (gzip), ``--hosts`` origins (250 by default: more
than the report lists one by one, so that the rest are folded) in turn, each with a robots.txt
of a few rules; per host in turn two verdicts ``allowed`` (each with its ``response``) and one
``disallowed`` (with its rule), 10 ms apart. The audit must find everything verified, or the
benchmark fails: the generated ledger is one the audit accepts.

Usage::

    python benchmarks/bench_report.py [--verdicts N] [--hosts H] [--keep DIRECTORY]

It measures, it does not gate: it exits 0 unless the ledger does not verify or the command fails.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
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
ROBOTS = b"User-agent: *\nDisallow: /private\nDisallow: /*.pdf$\nAllow: /private/open\nCrawl-delay: 1\n"


class _Segments:
    """One run's segments: records appended with their chain, sealed and gzipped every
    :data:`SEGMENT_RECORDS` records."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
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
                   resp="all", cfg=SETTINGS, **extra)

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


def generate(directory: Path, verdicts: int, hosts: int) -> int:
    """Write the ledger; the number of records."""
    origins = [f"http://host{index:04d}.test" for index in range(hosts)]
    segments = _Segments(directory)
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
            segments.write("response", s=200, d="passed", u=url, fp=fp)
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


def generated(directory: Path, verdicts: int, hosts: int) -> tuple[int, float]:
    """Write the ledger in a process of its own (so that the memory it takes is not counted as the
    report's: a child forked from a large process starts large); its records and seconds."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--generate", str(directory), "--verdicts", str(verdicts),
                           "--hosts", str(hosts)], capture_output=True, text=True, check=True)
    return int(done.stdout), time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verdicts", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=250)
    parser.add_argument("--keep", default=None, help="write the ledgers here and keep them")
    parser.add_argument("--generate", default=None, metavar="DIRECTORY", help="only write a ledger there")
    args = parser.parse_args()
    if args.generate:
        print(generate(Path(args.generate), args.verdicts, args.hosts))
        return 0
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_report-"))
    rows = []
    try:
        for verdicts in sorted({max(1, args.verdicts // 10), args.verdicts}):
            directory, out = base / f"ledger-{verdicts}", base / f"out-{verdicts}"
            shutil.rmtree(directory, ignore_errors=True)
            out.mkdir(parents=True, exist_ok=True)
            records, written = generated(directory, verdicts, args.hosts)
            size = sum(path.stat().st_size for path in (directory / "runs").iterdir())
            elapsed, cpu, peak, data, stderr = report(directory, out)
            if not data["audit"]["ok"] or sum(data["totals"]["verdicts"].values()) != verdicts:
                raise SystemExit(f"the generated ledger does not verify: {data['audit']}")
            page = (out / "report.html").stat().st_size
            progress = sum(1 for line in stderr.splitlines() if line.startswith("robotstxt report:"))
            rows.append((verdicts, records, size, written, elapsed, cpu, peak, page, len(data["hosts"]),
                         (data["other_hosts"] or {}).get("count", 0), progress))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| verdicts | records | segments (gzip) | generated in | report: wall | report: CPU | verdicts per CPU s "
          "| peak RSS | page | hosts listed + folded | progress lines |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for verdicts, records, size, written, elapsed, cpu, peak, page, listed, folded, progress in rows:
        print(f"| {verdicts:,} | {records:,} | {size / 2**20:.1f} MiB | {written:.1f} s | {elapsed:.1f} s "
              f"| {cpu:.1f} s | {verdicts / max(cpu, 1e-9):,.0f} | {peak:.0f} MiB | {page / 2**20:.1f} MiB "
              f"| {listed} + {folded} | {progress} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
