"""``make mutate``: mutation testing of one module of the decision code with cosmic-ray.

    python tests/mutate.py scrapy_rfc9309/enforcement/release_memo.py tests/test_release_memo.py [more test files]

cosmic-ray changes the module one mutation at a time (an operator swapped, a constant changed, a
condition negated, ...) and runs the given tests on each mutant: a mutant the tests fail on is killed,
one they pass on survived, a behaviour change the tests do not notice. It edits the module in place,
so this runs it in a copy of the checkout (in a temporary directory, kept with its session for
``cr-report``), never in the checkout itself; the copy's tests import the copy's package (the current
directory comes first on ``sys.path``). Prints the survivors with their diffs, and the kill rate.
A whole module's campaign takes one test run per mutant: run it on the module you change, with the
tests that guard it (docs/development.md, "Mutation testing").
"""

from __future__ import annotations

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
#: Seconds a mutant's test run may take (a mutant that loops is killed by it).
TIMEOUT = 300.0


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    module, tests = argv[0], argv[1:]
    work = Path(tempfile.mkdtemp(prefix="scrapy-rfc9309-mutate-"))
    copy = work / "checkout"
    shutil.copytree(ROOT, copy, ignore=IGNORED)
    imported = subprocess.run([sys.executable, "-c", "import scrapy_rfc9309; print(scrapy_rfc9309.__file__)"],
                              cwd=copy, capture_output=True, text=True, check=True).stdout.strip()
    if not imported.startswith(str(copy)):
        print(f"the copy's tests would import {imported}, not the copy's package", file=sys.stderr)
        return 1
    command = " ".join([shlex.quote(sys.executable), "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                        *map(shlex.quote, tests)])
    config = work / "cosmic-ray.toml"
    quoted = command.replace('"', '\\"')
    config.write_text(f"""[cosmic-ray]
module-path = "{module}"
timeout = {TIMEOUT}
excluded-modules = []
test-command = "{quoted}"

[cosmic-ray.distributor]
name = "local"
""")
    session = work / "session.sqlite"
    bindir = Path(sys.executable).parent
    cosmic_ray = str(bindir / "cosmic-ray")
    for step in (["baseline", str(config)], ["init", str(config), str(session)], ["exec", str(config), str(session)]):
        done = subprocess.run([cosmic_ray, *step], cwd=copy, check=False)
        if done.returncode:
            print(f"cosmic-ray {step[0]} failed (exit status {done.returncode}); the copy is in {work}",
                  file=sys.stderr)
            return done.returncode
    subprocess.run([str(bindir / "cr-report"), "--show-diff", "--surviving-only", str(session)], check=False)
    with sqlite3.connect(session) as db:
        outcomes = dict(db.execute("SELECT test_outcome, COUNT(*) FROM work_results GROUP BY test_outcome"))
    killed, survived, incompetent = (outcomes.get(name, 0) for name in ("KILLED", "SURVIVED", "INCOMPETENT"))
    print(f"{module}: {killed + survived + incompetent} mutants, {killed} killed, {survived} survived, "
          f"{incompetent} incompetent (not runnable); kill rate {100 * killed / max(1, killed + survived):.1f} %. "
          f"Session: {session}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
