"""What the benchmark scripts share: the checkout they run from, medians and their spread, markdown
tables, the commit and the resident memory.

The scripts are plain files of a checkout, not installed. The origins and ``redis-server`` they
measure against are the test suite's loopback servers, ``tests/servers``, which the wheel does not
carry: :func:`tests_on_path` puts the checkout's ``tests/`` directory on ``sys.path`` so that
``import servers`` finds them.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The test tree: ``servers`` (the loopback origins and ``redis-server``) and the suite's helpers.
TESTS = ROOT / "tests"


def tests_on_path() -> None:
    """Make ``import servers`` import the checkout's ``tests/servers``."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))


def median(values: Iterable[float | None]) -> float:
    """The median of the values that are there (not None, not NaN: a run that did not finish); NaN if none."""
    present = [v for v in values if v is not None and v == v]
    return statistics.median(present) if present else float("nan")


def fmt(value: float | None, digits: int = 2) -> str:
    """``value`` with ``digits`` decimals, ``-`` when there is none."""
    if value is None or value != value:
        return "-"
    return f"{value:,.{digits}f}"


def spread(values: Sequence[float | None], digits: int = 2, unit: str = "") -> str:
    """``median [min, max]`` of the values that are there, ``-`` when there are none."""
    present = [v for v in values if v is not None and v == v]
    if not present:
        return "-"
    return (f"{fmt(median(present), digits)}{unit} [{fmt(min(present), digits)}{unit}, "
            f"{fmt(max(present), digits)}{unit}]")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def commit(root: Path = ROOT, ref: str = "HEAD") -> str:
    """The short commit of ``ref`` in the checkout at ``root`` (empty when git cannot tell)."""
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", ref], capture_output=True, text=True,
                              timeout=60, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def rss_kb() -> int:
    """The process's resident memory now (KiB), from /proc (0 where there is none)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except (OSError, ValueError, IndexError):
        return 0
