"""Optional components a test needs: skipped when absent on a developer's machine,
a failure under CI (``CI=true``), where the test extras install them."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["missing", "require_redis_server"]


def missing(what: str) -> NoReturn:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{what} (required under CI: pip install -e '.[test]')")
    pytest.skip(what)


def require_redis_server() -> str:
    """The path of ``redis-server``: a test that needs it is skipped without it on a
    developer's machine and fails under CI, where ``.ci/run`` installs it."""
    from servers import redis_server_binary

    path = redis_server_binary()
    if path is None:
        message = "redis-server is not installed (.ci/run installs it with the system package manager)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return path
