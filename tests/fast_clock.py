"""A fast clock for the waits of held requests, so that a test can crawl with the default
``ROBOTSTXT_*`` durations (``ROBOTSTXT_MAX_WAIT_REFUSED`` 30 s, retries from 5 s) in a few
seconds.

:func:`fast_clock` makes the modules that decide how long an origin has been unreachable,
when it is fetched again and when its held requests are given up (``lifecycle.waiting``,
``lifecycle.retries``, ``lifecycle.states``, ``lifecycle.fetches``, ``lifecycle.fetch_report``,
``components.robotstxt_middleware``, ``components.verdict_path``: their ``time``, and the ``_now``
the last two bind) read a wall clock that runs ``speed`` times faster than
time, and makes ``waiting``'s and ``retries``' timers (retries, give-up deadlines) fire ``speed`` times
sooner. They all read the same clock, so every state, deadline and verdict is as at the
default settings, compressed. What it leaves on real time: Scrapy (downloads, its
timeouts), the parking's batches, and the idle watch (``ROBOTSTXT_MAX_WAIT_IDLE``, 120 s,
then comes later than on the fast clock: it cannot end a wait sooner than the defaults).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from scrapy_rfc9309.components import robotstxt_middleware as middleware
from scrapy_rfc9309.components import verdict_path
from scrapy_rfc9309.lifecycle import fetch_report, fetches, retries, states, waiting
from scrapy_rfc9309.runtime import loop

__all__ = ["fast_clock"]


class _FastTime:
    """Stands for the :mod:`time` module in the patched modules: ``time()`` runs ``speed``
    times faster from the moment it is made; everything else is :mod:`time`'s."""

    def __init__(self, speed: float) -> None:
        self.speed = speed
        self.start = time.time()

    def time(self) -> float:
        return self.start + (time.time() - self.start) * self.speed

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def fast_clock(monkeypatch: pytest.MonkeyPatch, speed: float) -> _FastTime:
    """Run the waits of held requests ``speed`` times faster for the rest of the test; the
    clock they read is returned."""
    clock = _FastTime(speed)
    for module in (waiting, retries, states, fetches, fetch_report, middleware):
        monkeypatch.setattr(module, "time", clock)
    for module in (middleware, verdict_path):  # the clock they bind once, for speed
        monkeypatch.setattr(module, "_now", clock.time)

    def call_later(delay: float, func: Callable[..., Any], *args: Any) -> loop.Timer:
        return loop.call_later(delay / speed, func, *args)

    for module in (waiting, retries):
        monkeypatch.setattr(module, "call_later", call_later)
    return clock
