"""``make bench`` runs from a checkout: the parser benchmark reads the robots.txt files committed
in ``benchmarks/corpus`` when no corpus is given. A short run (``--quick``, without the memory,
hostile-input and previous-release parts); nothing is asserted about the figures. Each script runs in
its quick mode with small inputs: these tests check that the scripts run and report."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import scrapy
from deadline import deadline
from optional import missing, require_redis_server

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "benchmarks" / "corpus"

#: A benchmark script runs in child processes (a crawl, a server, a build), each starting Python and
#: importing Scrapy: a loaded machine slows them down more than a test in one process. Their hang guard
#: is this timeout; the script is killed at its deadline, so that the test fails alone (pytest-timeout's
#: last resort ends the whole run).
TIMEOUT = 600.0
CHILD_TIMEOUT = deadline(TIMEOUT)
pytestmark = pytest.mark.timeout(TIMEOUT)

#: The crawling benchmarks (and the memory breakdown, whose object sizes are CPython's) are written for the
#: development environment: the newest Scrapy (AsyncCrawlerProcess, the built-in middleware of 2.14 and later)
#: on Python 3.11 or later. ``tox -e min`` checks the product on Scrapy 2.13.4 and Python 3.10 without them.
NEWEST = pytest.mark.skipif(
    scrapy.version_info < (2, 14) or sys.version_info < (3, 11),
    reason="benchmarks/ runs on the development environment: Scrapy 2.14 or later, Python 3.11 or later",
)


def test_the_parser_benchmark_runs_on_the_committed_sample() -> None:
    if not SAMPLE.is_dir():  # an unpacked sdist ships no benchmarks
        missing(f"no {SAMPLE} (a checkout has it)")
    files = sorted(path for path in SAMPLE.iterdir() if path.is_file())
    assert len(files) == 32 and all(path.stat().st_size < 64_000 for path in files)

    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_core.py"), "--quick", "--no-previous", "--skip-memory",
         "--skip-hostile"],
        cwd=ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False,
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
        cwd=ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False,
    )

    assert run.returncode == 0, run.stderr
    assert re.search(r"^\| 304 answers \| 4 \(4 to 4\) \| 0 \(0 to 0\) \|$", run.stdout, re.M), run.stdout
    assert "robots.txt body bytes saved: 50.0 %" in run.stdout, run.stdout


def test_the_ledger_benchmark_runs_from_a_checkout() -> None:
    """A pair of short crawls, ledger off and on: the report's row of the pair (CPU, garbage
    collection, memory, bytes per verdict) and its summary lines."""
    out = _run("bench_ledger.py", "--quick", "--pages", "64", "--timed", "1")

    assert re.search(r"^\| 1 \| [\d.]+ / [\d.]+ \| [+-][\d.]+ % \| [\d.]+ / [\d.]+ \| \d+ / \d+ \| [\d,]+ / [\d,]+ \| "
                     r"\d+ / \d+ \| [\d.]+ B \|", out, re.M), out
    # One record per page: the responses passed to the spider are not recorded by default.
    assert re.search(r"^On disk: [\d.]+ B per verdict .* 64 verdicts and 0 responses", out, re.M), out
    assert "What the ledger adds to the whole crawl's CPU: median" in out
    assert re.search(r"^Timed pairs: .* the ledger adds -?[\d.]+ µs, -?[\d.]+ % .*goal <= 2 %: (PASS|FAIL)\)\.$",
                     out, re.M), out


def test_the_report_benchmark_runs_on_a_small_generated_ledger(tmp_path: Path) -> None:
    """``bench_report.py`` on 3,000 verdicts of 5 hosts, in both modes of the ledger's responses:
    its generated ledgers verify (the benchmark fails otherwise), and its table has a row per
    mode and size with the report's time and memory."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_report.py"), "--verdicts", "3000", "--hosts", "5",
         "--runs", "1", "--keep", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    rows = re.findall(r"^\| (all|refused) \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \| .* \| ([\d.]+) MiB \| [\d.]+ MiB "
                      r"\| (\d+) \+ (\d+) \|", run.stdout, re.M)
    assert [(mode, verdicts, records, received, listed, folded)
            for mode, verdicts, records, received, _, listed, folded in rows] == [
        ("all", "300", "507", "200", "5", "0"), ("all", "3,000", "5,007", "2,000", "5", "0"),
        ("refused", "300", "308", "1", "5", "0"), ("refused", "3,000", "3,008", "1", "5", "0")]
    data = json.loads((tmp_path / "out-all-3000" / "report.json").read_text())
    assert data["totals"]["verdicts"]["allowed"] == 2000 and data["totals"]["verdicts"]["disallowed"] == 1000
    assert data["totals"]["responses"]["received"] == 2000 and data["audit"]["problem_count"] == {}
    data = json.loads((tmp_path / "out-refused-3000" / "report.json").read_text())
    assert data["totals"]["verdicts"]["allowed"] == 2000 and data["runs"][0]["responses"] == "refused"
    assert data["totals"]["responses"] == {"received": 1, "usage_denied": 1} and data["audit"]["problem_count"] == {}


def _script(name: str) -> Path:
    script = ROOT / "benchmarks" / name
    if not script.is_file():  # an unpacked sdist ships no benchmarks
        missing(f"no {script} (a checkout has it)")
    return script


def _run(name: str, *args: str) -> str:
    run = subprocess.run([sys.executable, str(_script(name)), *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=CHILD_TIMEOUT, check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    return run.stdout


def test_the_hostile_inputs_keep_the_files_first_rules_in_a_child_of_the_parser_benchmark() -> None:
    """``bench_core.py``'s hostile part, one case as its children run it: the top rules obeyed."""
    found = json.loads(_run("bench_core.py", "--hostile-case", "1mb-line", "--parser", "rfc9309").splitlines()[-1])

    assert found["checks_ok"] and found["truncated"] is True and found["bytes"] > 1_000_000
    assert 0 < found["parse_ms"] and 0 < found["worst_decision_ms"]
    assert 0 < found["parse_and_decision_warm_ms"] and 0 < found["parse_and_decision_ms"]


def test_the_hostile_first_verdicts_over_several_runs_with_the_goal() -> None:
    """``bench_core.py - --hostile-only CASES --runs N``: issue 42's table, ours and Protego's first
    verdict after a collection and warm, median (min-max) over the runs, and whether the goal is met."""
    out = _run("bench_core.py", "-", "--hostile-only", "nul-bytes", "--no-previous", "--runs", "2",
               "--hostile-processes", "1")

    assert "First verdicts, 2 run(s), median (min-max):" in out, out
    figure, ratio = r"[\d.]+ \([\d.]+-[\d.]+\)", r"[\d.]+ \([\d.]+-[\d.]+\)x"
    row = (rf"^\| NUL bytes \| {figure} \| {figure} \| {ratio} \| n/a \| n/a \| {figure} \| {figure} \| {ratio} "
           r"\| n/a \| (yes|no|median only) \|$")
    assert re.search(row, out, re.M), out


@NEWEST
def test_the_first_verdict_benchmark_times_each_parser_in_a_crawl_of_hostile_origins(tmp_path: Path) -> None:
    """``bench_first_verdict.py``: a crawl per parser through Scrapy's built-in middleware, every origin
    serving the hostile file; one first verdict timed per origin, each refusing the file's first question."""
    origins = 4
    out = _run("bench_first_verdict.py", "--cases", "nul-bytes", "--origins", str(origins), "--reps", "1",
               "--json", str(tmp_path / "out.json"))

    figure, ratio = r"[\d.]+ \([\d.]+-[\d.]+\)", r"[\d.]+ \([\d.]+-[\d.]+\)x"
    assert re.search(rf"^\| NUL bytes \(98 KiB\) \| {figure} \| {figure} \| {figure} \| {figure} \| {ratio} "
                     r"\| (yes|no) \|$", out, re.M), out
    result = json.loads((tmp_path / "out.json").read_text())["results"]["nul-bytes"]
    for parser in ("ours", "protego"):
        (run,) = result["runs"][parser]
        # Each origin's first page is refused, its second crawled: the parser each crawl used decided them.
        assert run["forbidden"] == origins and run["pages"] == origins, (parser, run)
        assert 0 < run["min_ms"] <= run["median_ms"] <= run["p90_ms"]
    assert len(result["ratios"]) == 1


@NEWEST
def test_the_middleware_benchmark_times_both_middlewares_hooks() -> None:
    """The CPU part of ``bench_middleware.py``: every crawl got its pages, and the hook time of
    ours and of the built-in, with their ratio, is in the summary."""
    out = _run("bench_middleware.py", "--only", "cpu", "--pages", "120", "--reps", "1", "--hook-runs", "1")

    assert "Warning" not in out, out
    for label in ("ROBOTSTXT_OBEY=False", "scrapy-rfc9309", "scrapy-rfc9309 + ROBOTSTXT_TDMREP", "Scrapy built-in"):
        assert re.search(rf"^\| {re.escape(label)} \| [\d.]+ \([\d.]+-[\d.]+\) \|", out, re.M), out
    for label in ("scrapy-rfc9309", "Scrapy built-in"):  # every page's call timed (and the robots.txt request's)
        calls = re.search(rf"^\| {label} \| process_request \| (\d+) \| \d+ \| [\d.]+ \|", out, re.M)
        assert calls is not None and 120 <= int(calls[1]) <= 122, out
    assert re.search(r"^\| hook time per request, ratio to the built-in's \(1 instrumented runs: median \[min, max\]\) "
                     r"\| [\d.]+ \[[\d.]+, [\d.]+\] \| 1 \| <= 0.5 \|$", out, re.M), out


@NEWEST
def test_the_hold_benchmark_crawls_the_healthy_origin_while_the_other_waits() -> None:
    """``bench_hold.py --quick``, small: both scenarios, ours and (while the robots.txt is slow) the
    built-in; the healthy origin's pages are fetched in each."""
    out = _run("bench_hold.py", "--quick", "--waiting", "200", "--healthy", "20", "--max-wait", "0.5",
               "--robots-delay", "0.5", "--before", "")

    rows = re.findall(r"^\| (scrapy-rfc9309|Scrapy built-in) \| ([\d.]+) \| (\d+) \| [\d.]+ \| ([\d,]+) \| ([\d.]+) \|",
                      out, re.M)
    assert [row[0] for row in rows] == ["scrapy-rfc9309", "scrapy-rfc9309", "Scrapy built-in"], out
    assert "(a) robots.txt answers 503: held, dropped after 0.5 s" in out, out
    assert "(b) robots.txt answers after 0.5 s" in out, out


@pytest.mark.parametrize("configs", [("builtin", "memory"), ("disk", "redis")])
def test_the_store_benchmark_fetches_each_robots_txt_once_per_store(configs: tuple[str, str]) -> None:
    """``bench_store.py``'s fleet part, small, two configurations at a time: two processes each
    fetch every robots.txt themselves (the built-in, the memory store) or share it (the disk and
    the Redis store: each fetched once)."""
    if "redis" in configs:
        require_redis_server()
    out = _run("bench_store.py", "--only", "fleet", "--configs", ",".join(configs), "--origins", "4", "--pages", "1",
               "--processes", "2", "--reps", "1", "--no-previous")

    expected = {"builtin": ("Scrapy built-in (Protego)", 8), "memory": ("scrapy-rfc9309, memory", 8),
                "disk": ("scrapy-rfc9309, disk", 4), "redis": ("scrapy-rfc9309, redis", 4)}
    for config in configs:
        label, fetches = expected[config]
        assert re.search(rf"^\| 2 \| {re.escape(label)} \| {fetches} \| ", out, re.M), out


def test_the_store_benchmark_sizes_each_store_per_cached_origin() -> None:
    """``bench_store.py``'s memory part, small: each store's bytes per cached origin and its ratio."""
    require_redis_server()
    out = _run("bench_store.py", "--only", "memory", "--sample", "40", "--no-previous")

    for store in ("Scrapy built-in (Protego)", "scrapy-rfc9309, memory", "scrapy-rfc9309, disk",
                  "scrapy-rfc9309, redis"):
        assert re.search(rf"^\| {re.escape(store)}[^|]* \| [\d,]+ \| [\d.]+x \|", out, re.M), out


def test_the_bounded_cache_benchmark_times_each_kind() -> None:
    out = _run("bench_bounded.py", "--runs", "1")

    for kind in ("store, plain dict, clear when full", "store, BoundedDict", "store, BoundedDict with max_bytes",
                 "hit, plain dict", "hit, BoundedDict"):
        assert len(re.findall(rf"^  {re.escape(kind)} +[\d.]+  \[", out, re.M)) == 4, out


def test_the_purpose_benchmark_decides_with_every_token_list() -> None:
    out = _run("bench_purpose.py", "--runs", "1", "--urls", "16")

    for name in ("none", "one", "three", "70", "1,000", "3,000"):
        assert re.search(rf"^\| {re.escape(name)} \(.*\) \| [\d,]+ \[[\d,]+, [\d,]+\] \| [\d.]+ \| 32/32 \|", out,
                         re.M), out


@NEWEST
def test_the_usage_benchmark_reads_responses_and_a_sites_robots_txt() -> None:
    out = _run("bench_usage.py", "--quick", "--only", "response")
    assert re.search(r"^\| hostile head: an unclosed comment of 1 MB \| [\d.]+ \| [\d.]+ \| [\d.]+ \|$", out, re.M), out

    out = _run("bench_usage.py", "--only", "robotstxt", "--runs", "1")
    # The change record stays small whatever the number of tokens (its sizes are not times).
    assert re.search(r"^\| 5,000 rules renamed, 300 tokens \| [\d,]+ \| [\d,]+ \|$", out, re.M), out


def _worktrees() -> set[str]:
    """The checkout's worktrees (other people's may come and go meanwhile)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "worktree", "list", "--porcelain"], capture_output=True,
                            text=True, check=True).stdout
    return {line.split(" ", 1)[1] for line in listed.splitlines() if line.startswith("worktree ")}


@pytest.fixture(scope="session")
def base_tree() -> Iterator[Path]:
    """HEAD checked out in a temporary worktree with its accelerator built (``previous.Checkout``, as
    ``compare.py`` does), once for the bench-compare tests (``compare.py --base-tree``); the worktree is
    gone after it."""
    if not (ROOT / ".git").exists():
        missing(f"{ROOT} is not a git checkout")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from previous import Checkout
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    with Checkout("HEAD") as checkout:
        if checkout.directory is None or checkout.error is not None:
            pytest.fail(f"HEAD could not be checked out and built: {checkout.error}")
        directory = checkout.directory
        assert directory in _worktrees()
        yield Path(directory)
    assert directory not in _worktrees()


def _head(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def _compare(base: Path, *measures: str) -> str:
    """``make bench-compare``'s script against HEAD (the session's built checkout of it, whose
    removal :func:`base_tree` checks), one short run of ``measures``."""
    out = _run("compare.py", "HEAD", "--base-tree", str(base), "--quick", "--runs", "1", "--pages", "60",
               "--ledger-pages", "60", "--only", ",".join(measures))
    # Each side labelled with its commit (HEAD may have moved since the session's checkout).
    assert re.search(rf"^\| measure \| before: {_head(base)} \| after: {_head(ROOT)}.* \(working tree\) \|", out,
                     re.M), out
    return out


def _compared(out: str, measure: str) -> bool:
    """Whether the row of ``measure`` has each side's median [min, max] and their ratio."""
    number = r"-?[\d,.]+"
    cell = rf"{number} \[{number}, {number}\]"
    return re.search(rf"^\| {re.escape(measure)}.* \| {cell} \| {cell} \| (-?[\d.]+|-) \|$", out, re.M) is not None


@NEWEST
def test_bench_compare_times_the_hooks_of_a_commit_and_of_the_working_tree(base_tree: Path) -> None:
    out = _compare(base_tree, "hooks")

    assert _compared(out, "hook time, scrapy-rfc9309 ÷ built-in") and _compared(out, "hook CPU per page"), out
    assert not _compared(out, "decisions/s ÷ Protego's"), out


@NEWEST
def test_bench_compare_measures_decisions_and_memory_of_a_commit_and_of_the_working_tree(base_tree: Path) -> None:
    out = _compare(base_tree, "core")

    assert _compared(out, "decisions/s ÷ Protego's") and _compared(out, "RSS per file kept ÷ Protego's"), out
    assert not _compared(out, "hook time, scrapy-rfc9309 ÷ built-in"), out


@NEWEST
def test_bench_compare_measures_the_ledgers_cost_for_a_commit_and_for_the_working_tree(base_tree: Path) -> None:
    out = _compare(base_tree, "ledger")

    assert _compared(out, "what ROBOTSTXT_LEDGER adds to the hooks per page"), out
    assert _compared(out, "the same, share of the crawl's CPU per page"), out


@NEWEST
def test_the_memory_breakdown_parts_add_up_to_the_heaps_growth() -> None:
    """``bench_core.py --memory-breakdown`` on the sample: the parts of a kept file, each sized once,
    add up to the heap's growth within a tenth (a part shared between files counted with the first)."""
    out = _run("bench_core.py", "--memory-breakdown")

    total = re.search(r"^\| sum of the parts \| ([\d,]+) \|$", out, re.M)
    heap = re.search(r"^\| Python heap growth \(tracemalloc\) \| ([\d,]+) \|$", out, re.M)
    assert total is not None and heap is not None, out
    parts, grown = (int(found[1].replace(",", "")) for found in (total, heap))
    assert grown > 0 and abs(parts - grown) <= grown / 10, out


def test_the_broad_crawl_memory_benchmark_keeps_every_origin() -> None:
    """``bench_middleware.py --only origins``, 40 origins: the three crawls reach every origin, and
    each middleware's growth over the ``ROBOTSTXT_OBEY=False`` crawl is reported with their ratio."""
    out = _run("bench_middleware.py", "--only", "origins", "--origins", "40", "--origins-reps", "1")

    for label in ("ROBOTSTXT_OBEY=False", "scrapy-rfc9309", "Scrapy built-in"):
        row = re.search(rf"^\| {re.escape(label)} \| -?[\d,]+ \(.*\) \| (-|-?[\d,]+ \(.*\)) \| (\d+) \|", out, re.M)
        assert row is not None, out
    assert re.search(r"^\| scrapy-rfc9309 \| .* \| 40 \|$", out, re.M), out  # one robots.txt request per origin
    assert "scrapy-rfc9309 / Scrapy built-in, per origin over ROBOTSTXT_OBEY=False: **" in out, out
