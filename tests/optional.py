"""Optional components a test needs: skipped when absent on a developer's machine,
a failure under CI (``CI=true``), where the test extras install them."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["missing"]


def missing(what: str) -> NoReturn:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{what} (required under CI: pip install -e '.[test]')")
    pytest.skip(what)
