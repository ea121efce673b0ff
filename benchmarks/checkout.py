"""The clone the benchmarks run from (they are plain scripts of a checkout, not installed).

The origins and ``redis-server`` they measure against are the test suite's loopback servers,
``tests/servers``, which the wheel does not carry: :func:`tests_on_path` puts the checkout's
``tests/`` directory on ``sys.path`` so that ``import servers`` finds them.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The test tree: ``servers`` (the loopback origins and ``redis-server``) and the suite's helpers.
TESTS = ROOT / "tests"


def tests_on_path() -> None:
    """Make ``import servers`` import the checkout's ``tests/servers``."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
