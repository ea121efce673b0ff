"""Scrapy's reactorless mode (``TWISTED_REACTOR_ENABLED = False``, Scrapy 2.15 and later) as a user
meets it: a script running ``AsyncCrawlerProcess`` with the add-on (``tests/reactorless_crawl.py``),
and ``scrapy robotstxt`` with ``-s TWISTED_REACTOR_ENABLED=False``, each in a process of its own,
against loopback origins served from a thread of this process (:class:`ThreadedOrigin`).

These run in both runs of the suite; the rest of the suite crawls reactorless in the reactorless
run (``make test-reactorless``, docs/development.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import ThreadedOrigin

from scrapy_rfc9309.runtime import compat as _compat

HERE = Path(__file__).resolve().parent
RULES = "User-agent: *\nDisallow: /private\n"
PAGE = (200, {"Content-Type": "text/html; charset=utf-8"}, b"<html><body>page</body></html>")

pytestmark = pytest.mark.skipif(_compat.SCRAPY_VERSION < (2, 15),
                                reason="Scrapy's reactorless mode came with Scrapy 2.15")


def _env() -> dict[str, str]:
    # No proxy for loopback traffic, no project from the environment.
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("SCRAPY_")}
    env["COLUMNS"] = "200"
    return env


def crawl(tmp_path: Path, urls: list[str], **settings: Any) -> dict[str, Any]:
    """Run ``reactorless_crawl.py`` on ``urls``; its JSON report, once it exited 0 without a traceback."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"urls": urls, "settings": settings}))
    # The timeout is a safety net: a crawl that hangs fails here instead of holding the suite.
    run = subprocess.run([sys.executable, str(HERE / "reactorless_crawl.py"), str(spec)], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-5000:]
    assert "Traceback" not in run.stderr, run.stderr[-5000:]
    report: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["reactor_installed"] is False
    report["log"] = run.stderr
    return report


def robotstxt_stat(report: dict[str, Any], key: str) -> int:
    return int(report["stats"].get(f"robotstxt/{key}", 0))


@pytest.fixture
def site() -> Iterator[ThreadedOrigin]:
    """Pages under /public and /private answer 200; robots.txt is set by the test."""
    with ThreadedOrigin(default=PAGE) as server:
        yield server


@pytest.fixture(params=["memory", "disk", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """The settings of each store."""
    if request.param == "disk":
        return {"ROBOTSTXT_STORE": "disk", "ROBOTSTXT_STORE_PATH": str(tmp_path / "store")}
    if request.param == "redis":
        return {"ROBOTSTXT_STORE": "redis", "ROBOTSTXT_REDIS_URL": request.getfixturevalue("redis_url")}
    return {}


def test_a_crawl_without_a_reactor_fetches_robots_txt_and_obeys_it(tmp_path, site, store):
    site.route("/robots.txt", 200, RULES)
    public = [site.url("/public/1"), site.url("/public/2")]
    private = site.url("/private/1")

    report = crawl(tmp_path, [*public, private], **store)

    assert sorted(item["url"] for item in report["items"]) == public
    assert report["errors"] == [[private, "RobotsTxtForbidden"]]
    assert robotstxt_stat(report, "request_count") == 1
    assert robotstxt_stat(report, "parsed") == 1
    assert robotstxt_stat(report, "forbidden") == 1
    if store:
        assert robotstxt_stat(report, "store_saved") == 1
    assert report["stats"]["finish_reason"] == "finished"
    # robots.txt first, once; the disallowed page never requested.
    paths = site.paths()
    assert paths[0] == "/robots.txt" and sorted(paths[1:]) == ["/public/1", "/public/2"]
    assert "ImportError" not in report["log"]


def test_a_crawl_without_a_reactor_holds_then_drops_the_requests_of_an_unreachable_origin(tmp_path, site):
    site.route("/robots.txt", 503, "down")
    urls = [site.url("/public/1"), site.url("/public/2")]

    report = crawl(tmp_path, urls, ROBOTSTXT_MAX_WAIT=1, ROBOTSTXT_RETRY_DELAY=0.2, ROBOTSTXT_RETRY_MAX_DELAY=0.4)

    # 503: unreachable, the requests held, robots.txt retried, then dropped at ROBOTSTXT_MAX_WAIT.
    assert report["items"] == []
    assert sorted(report["errors"]) == sorted([url, "RobotsTxtUnreachable"] for url in urls)
    assert robotstxt_stat(report, "held") == 2
    assert robotstxt_stat(report, "dropped_unreachable") == 2
    assert robotstxt_stat(report, "retry") >= 1
    assert report["stats"]["finish_reason"] == "finished"
    paths = site.paths()
    assert len(paths) >= 2 and set(paths) == {"/robots.txt"}  # retried, and no page ever requested


def test_the_command_without_a_reactor_fetches_and_explains(tmp_path, site):
    site.route("/robots.txt", 200, RULES)
    url = site.url("/private/x")

    run = subprocess.run([sys.executable, "-m", "scrapy", "robotstxt", url, "-s", "TWISTED_REACTOR_ENABLED=False"],
                         cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60, check=False)

    assert run.returncode == 1, run.stderr  # the exit status is the verdict: disallowed
    assert "Access:     parsed (status 200" in run.stdout, run.stdout
    assert "Verdict:    disallowed (Disallow: /private, line 2)" in run.stdout
    assert "Traceback" not in run.stderr
    assert site.paths() == ["/robots.txt"]


@pytest.mark.parametrize("asked", [True, False], ids=["set", "default"])
def test_dns_warmup_is_off_without_a_reactor_and_says_so_when_set(tmp_path, site, asked):
    site.route("/robots.txt", 200, RULES)
    settings: dict[str, Any] = {"ROBOTSTXT_STORE": "disk", "ROBOTSTXT_STORE_PATH": str(tmp_path / "store")}
    if asked:
        settings["ROBOTSTXT_DNS_WARMUP"] = True

    report = crawl(tmp_path, [site.url("/public/1")], **settings)

    # The lookups would go through Twisted's resolver, which a crawl without a reactor does not use.
    warned = "ROBOTSTXT_DNS_WARMUP is off: it needs a Twisted reactor" in report["log"]
    assert warned is asked  # a warning for a setting made, none for the default
    assert robotstxt_stat(report, "dns_warmup") == 0
    assert [item["url"] for item in report["items"]] == [site.url("/public/1")]
