"""``make bench`` runs from a checkout: the parser benchmark reads the robots.txt files committed
in ``benchmarks/corpus`` when no corpus is given. A short run (``--quick``, without the memory,
hostile-input and previous-release parts); nothing is asserted about the figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from optional import missing

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "benchmarks" / "corpus"


def test_the_parser_benchmark_runs_on_the_committed_sample() -> None:
    if not SAMPLE.is_dir():  # an unpacked sdist ships no benchmarks
        missing(f"no {SAMPLE} (a checkout has it)")
    files = sorted(path for path in SAMPLE.iterdir() if path.is_file())
    assert len(files) == 32 and all(path.stat().st_size < 64_000 for path in files)

    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_core.py"), "--quick", "--no-previous", "--skip-memory",
         "--skip-hostile"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )

    assert run.returncode == 0, run.stderr
    assert f"Corpus: 4 real robots.txt files (0.0 MB) of {SAMPLE} (quick subset)" in run.stdout, run.stdout
    assert re.search(r"^\| Decisions/s, steady state .*\| [\d.]+x \|", run.stdout, re.M), run.stdout


def test_the_revalidation_benchmark_runs_on_the_committed_sample() -> None:
    if not SAMPLE.is_dir():  # an unpacked sdist ships no benchmarks
        missing(f"no {SAMPLE} (a checkout has it)")
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_revalidation.py"), "--origins", "4", "--rounds", "2",
         "--reps", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )

    assert run.returncode == 0, run.stderr
    assert re.search(r"^\| 304 answers \| 4 \(4 to 4\) \| 0 \(0 to 0\) \|$", run.stdout, re.M), run.stdout
    assert "robots.txt body bytes saved: 50.0 %" in run.stdout, run.stdout


def test_the_ledger_benchmark_runs_from_a_checkout() -> None:
    """A pair of short crawls, ledger off and on: the report's row of the pair (CPU, garbage
    collection, memory, bytes per verdict) and its summary lines."""
    script = ROOT / "benchmarks" / "bench_ledger.py"
    if not script.is_file():  # an unpacked sdist ships no benchmarks
        missing(f"no {script} (a checkout has it)")
    run = subprocess.run([sys.executable, str(script), "--quick", "--pages", "200", "--timed", "1"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600, check=False)

    assert run.returncode == 0, run.stderr
    assert re.search(r"^\| 1 \| [\d.]+ / [\d.]+ \| [+-][\d.]+ % \| [\d.]+ / [\d.]+ \| \d+ / \d+ \| [\d,]+ / [\d,]+ \| "
                     r"\d+ / \d+ \| [\d.]+ B \|", run.stdout, re.M), run.stdout
    # One record per page: the responses passed to the spider are not recorded by default.
    assert re.search(r"^On disk: [\d.]+ B per verdict .* 200 verdicts and 0 responses", run.stdout, re.M), run.stdout
    assert "What the ledger adds to the whole crawl's CPU: median" in run.stdout
    assert re.search(r"^Timed pairs: .* the ledger adds -?[\d.]+ µs, -?[\d.]+ % .*goal <= 2 %: (PASS|FAIL)\)\.$",
                     run.stdout, re.M), run.stdout
