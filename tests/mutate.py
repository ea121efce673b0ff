"""``make mutate``: mutation testing of the decision and evidence code with cosmic-ray.

    python tests/mutate.py [--timeout S] [--sample N] MODULE TEST_FILE... [pytest arguments]
    python tests/mutate.py --all [--timeout S] [--sample N]     # every campaign of CAMPAIGNS, in order

cosmic-ray changes the module one mutation at a time (an operator swapped, a constant changed, a
condition negated, ...) and runs the given tests on each mutant: a mutant the tests fail on is killed,
one they pass on survived, a behaviour change the tests do not notice. It edits the module in place,
so this runs it in a copy of the checkout (in a temporary directory, kept with its session for
``cr-report``), never in the checkout itself; the copy's tests import the copy's package (the current
directory comes first on ``sys.path``). Prints the survivors with their diffs, and the kill rate.

Mutants inside a type annotation or the ``TYPE_CHECKING`` guard are not run: every module has
``from __future__ import annotations``, so annotations are never evaluated and those mutants are
equivalent by construction (they are counted, as ``annotation``). ``--sample N`` runs N mutants
drawn at random (seeded by the module's path: the same N every run) and counts the rest as not run.
``--timeout`` bounds one mutant's test run (a mutant that loops is killed by it).
A campaign takes one test run per mutant: see docs/development.md, "Mutation testing", for each
campaign's size and duration.
"""

from __future__ import annotations

import argparse
import ast
import random
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What the copy leaves out: the venv, git's data, build outputs, caches.
IGNORED = shutil.ignore_patterns(".venv", ".git", ".tox", "_build", "build", "dist", "__pycache__", "*.egg-info",
                                 ".mypy_cache", ".ruff_cache", ".pytest_cache", "demo-ledger", ".scrapy")
#: Seconds a mutant's test run may take by default (a mutant that loops is killed by it).
TIMEOUT = 120.0

#: Pytest arguments for tests that need no reactor: they start faster (no Twisted, no pytest-twisted).
PURE = ["-p", "no:twisted", "--reactor=none"]
#: The tests of tests/test_revalidation.py that run no crawl (the state model's part of conditional refetch).
PURE_REVALIDATION = [f"tests/test_revalidation.py::{name}" for name in (
    "test_validator", "test_the_validators_of_a_good_copy", "test_an_unreachable_state_keeps_its_copys_validators",
    "test_a_304_renews_the_copy_with_its_own_lifetime", "test_a_304_without_a_lifetime_keeps_the_copys",
    "test_a_304_brings_an_unreachable_origin_back", "test_a_304_without_a_copy_is_unreachable",
    "test_a_last_modified_later_than_the_copys_fetch_is_no_validator",
    "test_a_304_selects_the_copy_only_by_its_validators",
    "test_a_304_that_renews_nothing_is_a_failed_fetch_and_the_next_is_unconditional",
    "test_records_keep_the_validators", "test_a_record_without_validators_or_with_bad_ones_is_read_without_them")]
#: The campaigns of ``--all``, most important first: a module, the fastest tests that guard it
#: (pytest arguments; ``-k`` leaves out a file's slow tests that add nothing for that module) and,
#: for a module of which only a part is the decision code, its lines (as of the commit that wrote
#: them: check them after a restructure). docs/development.md gives each one's size and duration.
CAMPAIGNS: list[tuple[str, list[str], str | None]] = [
    ("scrapy_rfc9309/evidence/format.py",
     ["tests/test_mutants_format.py", "tests/test_audit.py", "-k", "not command and not memory", *PURE], None),
    ("scrapy_rfc9309/evidence/audit.py",
     ["tests/test_mutants_audit.py", "tests/test_audit.py", "-k", "not command and not memory", *PURE], None),
    # The ledger's direct tests first (a fraction of a second each: most mutants die there), then its crawls.
    ("scrapy_rfc9309/ledger/writer.py",
     ["tests/test_mutants_ledger.py", "tests/test_ledger.py", "tests/test_mutants_format.py"], None),
    ("scrapy_rfc9309/ledger/segments.py",
     ["tests/test_mutants_ledger.py", "tests/test_ledger.py", "tests/test_mutants_format.py"], None),
    ("scrapy_rfc9309/ledger/versions.py",
     ["tests/test_mutants_ledger.py", "tests/test_ledger.py", "tests/test_mutants_format.py"], None),
    ("scrapy_rfc9309/ledger/worker.py",
     ["tests/test_mutants_ledger.py", "tests/test_ledger.py", "tests/test_mutants_format.py"], None),
    ("scrapy_rfc9309/evidence/item_check.py", ["tests/test_item_check.py"], None),
    ("scrapy_rfc9309/evidence/report_figures.py", ["tests/test_report.py"], None),
    ("scrapy_rfc9309/core/verdict.py", ["tests/test_mutants_verdict.py", "tests/test_judgement.py", *PURE], None),
    ("scrapy_rfc9309/core/verdict_kinds.py", ["tests/test_verdict_kinds.py", *PURE], None),
    ("scrapy_rfc9309/core/http_cache.py",
     ["tests/test_mutants_state.py", "tests/test_mutants_record.py", *PURE_REVALIDATION, "tests/test_cache_control.py",
      *PURE], None),
    ("scrapy_rfc9309/core/state.py",
     ["tests/test_mutants_state.py", "tests/test_mutants_record.py", *PURE_REVALIDATION, "tests/test_judgement.py",
      *PURE], None),
    ("scrapy_rfc9309/lifecycle/fetch.py", ["tests/test_mutants_fetch.py", "tests/test_revalidation.py"], None),
    ("scrapy_rfc9309/core/changes.py", ["tests/test_mutants_changes.py", "tests/test_changes.py"], None),
    ("scrapy_rfc9309/lifecycle/change_signal.py", ["tests/test_mutants_change_signal.py", "tests/test_changes.py"],
     None),
    ("scrapy_rfc9309/core/robots_body.py", ["tests/test_mutants_robots_body.py", "tests/test_groups.py", *PURE], None),
    # The size bounds of the syntax: the bounds, normalize, decode, has_long_line.
    ("scrapy_rfc9309/core/syntax.py", ["tests/test_mutants_robots_body.py", *PURE], "36-39,140-193"),
    ("scrapy_rfc9309/core/limited_json.py",
     ["tests/test_mutants_bounded.py", "tests/test_tdmrep.py", "tests/test_record.py", *PURE], None),
    ("scrapy_rfc9309/stores/record.py", ["tests/test_mutants_record.py", "tests/test_record.py", *PURE], None),
    ("scrapy_rfc9309/lifecycle/idle_watch.py",
     ["tests/test_mutants_waiting.py", "tests/test_held_idle.py", "tests/test_idle_progress.py", "-k",
      "test_mutants_waiting or test_held_idle or progress_line or keeps_itself_open or closes_itself"
      " or slow_robots_txt_of_another or retry_in_flight_that_succeeds or shared_slots"], None),
    ("scrapy_rfc9309/lifecycle/waiting.py",
     ["tests/test_mutants_waiting.py", "tests/test_middleware_hold.py", "tests/test_failure_paths.py", "-k",
      "not parked_as_their and (max_wait_counts or retry_in_flight or evicted or raises_for_robots"
      " or unexpected_exception or not test_failure_paths)"], None),
    ("scrapy_rfc9309/lifecycle/parking.py",
     ["tests/test_mutants_parking.py", "tests/test_middleware_hold.py", "tests/test_held_idle.py", "-k",
      "not parked_as_their"], None),
    ("scrapy_rfc9309/enforcement/actions.py", ["tests/test_mutants_actions.py", *PURE], None),
    ("scrapy_rfc9309/enforcement/release_memo.py", ["tests/test_mutants_release_memo.py", "tests/test_release_memo.py"],
     None),
]


def _annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The (line, column) spans of the module's annotations and ``TYPE_CHECKING`` tests."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        found: list[ast.expr | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
            found += [argument.annotation for argument in every if argument is not None]
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        elif isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            found.append(node.test)
        for expr in found:
            if expr is not None and expr.end_lineno is not None and expr.end_col_offset is not None:
                spans.append(((expr.lineno, expr.col_offset), (expr.end_lineno, expr.end_col_offset)))
    return spans


def _filter(session: Path, module: Path, sample: int | None, lines: list[range] | None = None) -> None:
    """Mark the annotation mutants (and, with ``lines``, those on other lines; with ``sample``, the
    mutants not drawn) as not to run."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    spans = _annotation_spans(module.read_text(encoding="utf-8"))
    with use_db(str(session)) as db:
        annotations, elsewhere, others = [], [], []
        for item in db.pending_work_items:
            mutation = item.mutations[0]
            position = tuple(mutation.start_pos)
            if any(start <= position < end for start, end in spans):
                annotations.append(item.job_id)
            elif lines is not None and not any(position[0] in span for span in lines):
                elsewhere.append(item.job_id)
            else:
                others.append(item.job_id)
        db.set_multiple_results(annotations, WorkResult(output="annotation", worker_outcome=WorkerOutcome.SKIPPED))
        db.set_multiple_results(elsewhere, WorkResult(output="other lines", worker_outcome=WorkerOutcome.SKIPPED))
        if sample is not None and sample < len(others):
            drawn = set(random.Random(str(module)).sample(sorted(others), sample))
            left = [job for job in others if job not in drawn]
            db.set_multiple_results(left, WorkResult(output="not drawn", worker_outcome=WorkerOutcome.SKIPPED))


def campaign(module: str, tests: list[str], timeout: float, sample: int | None,
             lines: list[range] | None = None) -> dict[str, int | str]:
    """One module's campaign in a copy of the checkout; its counts."""
    work = Path(tempfile.mkdtemp(prefix="scrapy-rfc9309-mutate-"))
    copy = work / "checkout"
    shutil.copytree(ROOT, copy, ignore=IGNORED)
    imported = subprocess.run([sys.executable, "-c", "import scrapy_rfc9309; print(scrapy_rfc9309.__file__)"],
                              cwd=copy, capture_output=True, text=True, check=True).stdout.strip()
    if not imported.startswith(str(copy)):
        raise SystemExit(f"the copy's tests would import {imported}, not the copy's package")
    command = " ".join([shlex.quote(sys.executable), "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                        *map(shlex.quote, tests)])
    config = work / "cosmic-ray.toml"
    quoted = command.replace("\\", "\\\\").replace('"', '\\"')
    config.write_text(f"""[cosmic-ray]
module-path = "{module}"
timeout = {timeout}
excluded-modules = []
test-command = "{quoted}"

[cosmic-ray.distributor]
name = "local"
""")
    session = work / "session.sqlite"
    bindir = Path(sys.executable).parent
    cosmic_ray = str(bindir / "cosmic-ray")
    for step in (["baseline", str(config)], ["init", str(config), str(session)], None,
                 ["exec", str(config), str(session)]):
        if step is None:
            _filter(session, copy / module, sample, lines)
            continue
        done = subprocess.run([cosmic_ray, *step], cwd=copy, check=False)
        if done.returncode:
            raise SystemExit(f"cosmic-ray {step[0]} failed (exit status {done.returncode}); the copy is in {work}")
    subprocess.run([str(bindir / "cr-report"), "--show-diff", "--surviving-only", str(session)], check=False)
    with sqlite3.connect(session) as db:
        outcomes = dict(db.execute("SELECT test_outcome, COUNT(*) FROM work_results GROUP BY test_outcome"))
        skipped = dict(db.execute("SELECT output, COUNT(*) FROM work_results WHERE worker_outcome = 'SKIPPED' "
                                  "GROUP BY output"))
        total = db.execute("SELECT COUNT(*) FROM work_items").fetchone()[0]
    counts: dict[str, int | str] = {
        "module": module, "mutants": total, "annotation": skipped.get("annotation", 0),
        "not run": skipped.get("not drawn", 0) + skipped.get("other lines", 0), "killed": outcomes.get("KILLED", 0),
        "survived": outcomes.get("SURVIVED", 0), "incompetent": outcomes.get("INCOMPETENT", 0),
        "session": str(session)}
    return counts


def _line(counts: dict[str, int | str]) -> str:
    killed, survived = int(counts["killed"]), int(counts["survived"])
    return (f"{counts['module']}: {counts['mutants']} mutants, {counts['annotation']} in annotations (not run), "
            f"{counts['not run']} not drawn or on other lines (not run), {killed} killed, {survived} survived, "
            f"{counts['incompetent']} incompetent; kill rate {100 * killed / max(1, killed + survived):.1f} %. "
            f"Session: {counts['session']}")


def _spans(lines: str | None) -> list[range] | None:
    """``FIRST-LAST[,FIRST-LAST...]`` as ranges of line numbers."""
    if not lines:
        return None
    return [range(int(first), int(last) + 1) for first, last in (span.split("-") for span in lines.split(","))]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds one mutant's tests may take")
    parser.add_argument("--sample", type=int, default=None, help="run this many mutants, drawn at random")
    parser.add_argument("--lines", default=None,
                        help="run only the mutants on these lines of the module: FIRST-LAST[,FIRST-LAST...]")
    parser.add_argument("--all", action="store_true", help="run every campaign of CAMPAIGNS")
    options, rest = parser.parse_known_args(argv)
    if options.all:
        runs = CAMPAIGNS
    elif len(rest) >= 2:
        runs = [(rest[0], rest[1:], options.lines)]
    else:
        parser.print_help(sys.stderr)
        return 2
    summary = [_line(campaign(module, tests, options.timeout, options.sample, _spans(lines)))
               for module, tests, lines in runs]
    print("\n".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
