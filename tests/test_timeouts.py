"""Every test has a timeout: a test that waits for something that never happens fails, and the run goes
on (tests/deadline.py, pytest-timeout's settings in pyproject.toml). Run here on a few deliberately hanging
tests, in a pytest of their own, in this run's mode (on the reactor, or reactorless)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import reactorless
from optional import missing

HERE = Path(__file__).resolve().parent

HANGING = '''
import time

import pytest
import pytest_twisted
from twisted.internet import defer


@pytest_twisted.inlineCallbacks
def test_a_lost_wake_up():
    yield defer.Deferred()  # nobody ever fires it


@pytest_twisted.ensureDeferred
async def test_a_lost_wake_up_awaited():
    await defer.Deferred()


def test_the_next_test_runs():
    assert True
'''

BLOCKING = '''
import time


def test_a_test_that_blocks_the_loop():
    time.sleep(3600)


def test_never_reached():
    assert True
'''


HANGING_CRAWL = '''
import pytest_twisted
from crawl import run_crawl
from servers import Stall

ENABLE = {"DOWNLOADER_MIDDLEWARES": {"scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
                                     "scrapy_rfc9309.RobotsTxtMiddleware": 100},
          "DOWNLOAD_TIMEOUT": 3600, "ROBOTSTXT_MAX_WAIT": 3600}


@pytest_twisted.inlineCallbacks
def test_a_crawl_waiting_for_a_robots_txt_that_never_comes(origins):
    site = origins()
    site["/robots.txt"] = Stall()
    yield run_crawl([site.url("/page/1"), site.url("/page/2")], ENABLE)


def test_the_next_test_runs():
    assert True
'''


def _require_timeout(config: pytest.Config) -> None:
    if not config.pluginmanager.hasplugin("timeout"):
        missing("pytest-timeout is not installed: no test of this run has a timeout, and a hanging test hangs the run")


def test_every_test_has_a_timeout(pytestconfig):
    """The suite's timeouts come from pytest-timeout (pyproject.toml: timeout, timeout_method): without it
    every deadline is silently off. A developer's machine skips this; CI (CI=true) fails."""
    _require_timeout(pytestconfig)
    assert float(pytestconfig.getini("timeout")) > 0
    assert pytestconfig.getini("timeout_method") == "thread"


def test_the_suite_can_run_on_every_cpu():
    """make test and tox run the suite with pytest-xdist (-n); a developer's machine without it skips
    this (and runs the suite in one process, with plain pytest), CI (CI=true) fails."""
    if importlib.util.find_spec("xdist") is None:
        missing("pytest-xdist is not installed: make test and tox run the suite with -n")


def _run(tmp_path: Path, source: str, timeout: float) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("pytest_timeout") is None:
        missing("pytest-timeout is not installed: the timeouts this test checks are off")
    for helper in ("conftest.py", "deadline.py", "reactorless.py", "optional.py", "crawl.py"):
        shutil.copy(HERE / helper, tmp_path / helper)
    shutil.copytree(HERE / "servers", tmp_path / "servers")
    (tmp_path / "pytest.ini").write_text(f"[pytest]\ntimeout = {timeout}\ntimeout_method = thread\n")
    (tmp_path / "test_hanging.py").write_text(source)
    mode = ["-p", "no:twisted", "--reactor=none"] if reactorless.is_reactorless() else ["--reactor=asyncio"]
    # subprocess.run's own timeout fails this test should the run hang after all.
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *mode, "test_hanging.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_a_test_waiting_for_a_wake_up_that_never_comes_fails_and_the_run_goes_on(tmp_path):
    run = _run(tmp_path, HANGING, timeout=4)

    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    for name in ("test_a_lost_wake_up", "test_a_lost_wake_up_awaited"):
        failed = [line for line in lines if line.startswith(f"FAILED test_hanging.py::{name} ")]
        assert failed and "TestTimedOut" in failed[0], run.stdout
    assert "PASSED test_hanging.py::test_the_next_test_runs" in lines, run.stdout
    assert "did not end within 2 s" in run.stdout


def test_a_test_blocking_the_loop_ends_the_run_at_its_timeout(tmp_path):
    run = _run(tmp_path, BLOCKING, timeout=4)

    assert run.returncode != 0
    assert "Timeout" in run.stderr + run.stdout and "test_a_test_that_blocks_the_loop" in run.stderr + run.stdout
    assert "time.sleep(3600)" in run.stderr + run.stdout  # the stack of where it hung


def test_a_crawl_that_does_not_end_fails_saying_so_with_what_it_holds_and_its_log(tmp_path):
    run = _run(tmp_path, HANGING_CRAWL, timeout=8)

    assert run.returncode == 1, run.stdout + run.stderr
    assert "PASSED test_hanging.py::test_the_next_test_runs" in run.stdout.splitlines(), run.stdout
    assert "TestTimedOut" in run.stdout and "this crawl did not end" in run.stdout, run.stdout
    # What it holds (the two requests waiting for the stalled robots.txt fetch) and its log.
    assert "robots.txt: 2 requests waiting" in run.stdout and "1 fetches in flight" in run.stdout, run.stdout
    assert "log lines:" in run.stdout and "Spider opened" in run.stdout, run.stdout
