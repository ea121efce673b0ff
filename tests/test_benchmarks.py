"""``make bench`` runs from a checkout: the parser benchmark reads the robots.txt files committed
in ``benchmarks/corpus`` when no corpus is given. A short run (``--quick``, without the memory,
hostile-input and previous-release parts); nothing is asserted about the figures."""

from __future__ import annotations

import json
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


def test_the_memory_bands_split_the_corpus_in_two_halves_and_by_size(tmp_path: Path) -> None:
    """``bench_core.py --bands --split-half --seed N`` keeps, per half and size band,
    every file of that half and band and no other, each as often (enough parsers),
    in an order its seed fixes: the two halves are disjoint and make the corpus."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_core
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    sizes = {"a.test": 10, "b.test": 20_000, "c.test": 200_000, "d.test": 30, "e.test": 17_000, "f.test": 5}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(name.encode() * (size // len(name)) + b"x" * (size % len(name)))
    directory = str(tmp_path)
    kept: dict[int, set[str]] = {}
    for half in (0, 1):
        for band, low, high, least in bench_core.BANDS:
            hosts, bodies, distinct = bench_core.memory_files(directory, False, band, half, seed=7)
            chosen = {name for name, size in sizes.items() if low <= size and (high is None or size < high)
                      and bench_core.zlib.crc32(name.encode()) & 1 == half}
            assert set(hosts) == chosen and distinct == len(chosen)
            if chosen:
                assert len(hosts) >= least and len(hosts) % len(chosen) == 0
                assert all(hosts.count(name) == len(hosts) // len(chosen) for name in chosen)
                assert [len(body) for body in bodies] == [sizes[name] for name in hosts]
                again = bench_core.memory_files(directory, False, band, half, seed=7)[0]
                assert again == hosts and (len(set(hosts)) < 2 or hosts != sorted(hosts))
            if band == "all":
                kept[half] = chosen
    assert not kept[0] & kept[1] and kept[0] | kept[1] == set(sizes)


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


def test_the_report_benchmark_runs_on_a_small_generated_ledger(tmp_path: Path) -> None:
    """``bench_report.py`` on 3,000 verdicts of 5 hosts: its generated ledger verifies (the
    benchmark fails otherwise), and its table has a row per size with the report's time and memory."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_report.py"), "--verdicts", "3000", "--hosts", "5",
         "--keep", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    rows = re.findall(r"^\| ([\d,]+) \| ([\d,]+) \| .* \| ([\d.]+) MiB \| [\d.]+ MiB \| (\d+) \+ (\d+) \|", run.stdout,
                      re.M)
    assert [(verdicts, records, listed, folded) for verdicts, records, _, listed, folded in rows] == [
        ("300", "507", "5", "0"), ("3,000", "5,007", "5", "0")]
    data = json.loads((tmp_path / "out-3000" / "report.json").read_text())
    assert data["totals"]["verdicts"]["allowed"] == 2000 and data["totals"]["verdicts"]["disallowed"] == 1000
    assert data["totals"]["responses"]["received"] == 2000 and data["audit"]["problem_count"] == {}
