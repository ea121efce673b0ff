"""The report's page in a real browser: the ledger of a real crawl (two local origins, one with
rules, one without a robots.txt), its report opened through ``file://`` in headless Chromium with
the network off (tests/browser.py): its tables have the rows the figures say, its charts the marks,
drawn; nothing logged to the console, nothing requested but the page. Skipped on a developer's
machine without Debian's ``chromium`` and ``chromium-driver`` (or Selenium), a failure under CI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest_twisted
from browser import chromium, console_errors, open_offline, requests
from crawl import run_crawl
from middleware_support import mw_settings, text
from optional import missing

from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.evidence.report_figures import report_figures
from scrapy_rfc9309.evidence.report_html import KINDS, render

ROBOTS = "User-agent: *\nDisallow: /private\nDisallow: /*.pdf$\n"


def _base(url: str) -> str:
    origin = Origin.from_url(url)
    assert origin is not None
    return origin.base


def _require_browser() -> None:
    if chromium() is None:
        missing("chromium and chromedriver are not installed (.ci/run installs Debian's chromium and "
                "chromium-driver)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing("selenium is not installed")


@pytest_twisted.inlineCallbacks
def test_the_report_of_a_real_crawl_renders_offline_in_chromium(origins: Any, tmp_path: Path) -> Any:
    _require_browser()
    ruled, bare = origins("127.0.0.1"), origins("127.0.0.2")
    ruled["/robots.txt"] = text(ROBOTS)
    urls = [ruled.url(path) for path in ("/a", "/b", "/private/x", "/doc.pdf", "/private/y")] + [
        bare.url(path) for path in ("/a", "/b")]
    ledger = tmp_path / "ledger"
    result = yield run_crawl(urls, mw_settings(ROBOTSTXT_LEDGER=str(ledger), ROBOTSTXT_LEDGER_RESPONSES=True))
    assert len(result.responses) == 4
    audited, data = report_figures([ledger])
    assert audited.exit_status() == 0
    page = tmp_path / "report.html"
    page.write_text(render(data), encoding="utf-8")
    hosts = {host["host"]: host for host in data["hosts"]}
    assert set(hosts) == {_base(ruled.url("/")), _base(bare.url("/"))}

    session = open_offline()
    try:
        session.get(page.as_uri())
        assert session.title.startswith("robots.txt compliance report")
        # The table of hosts: a row per host, its verdicts by kind, as the figures say.
        header = [cell.text for cell in session.find_elements("css selector", "table.hosts thead th")]
        assert header == ["host", *(kind for kind, _ in KINDS), "responses"]
        rows = [[cell.text for cell in row.find_elements("css selector", "td")]
                for row in session.find_elements("css selector", "table.hosts tbody tr")]
        assert sorted(rows) == sorted(
            [host, *(str(figures["verdicts"][kind]) for kind, _ in KINDS), str(figures["responses"]["received"])]
            for host, figures in hosts.items())
        ruled_row = next(row for row in rows if row[0] == _base(ruled.url("/")))
        assert (ruled_row[1], ruled_row[4]) == ("2", "3")  # allowed, disallowed
        # The rules that blocked most, in the ruled host's section.
        rules = [[cell.text for cell in row.find_elements("css selector", "td")]
                 for row in session.find_elements("css selector", "#host-0 table.rules tbody tr")]
        agent = hosts[_base(ruled.url("/"))]["rules"]["top"][0]["agent"] or "*"  # the token the crawl judged
        assert rules == [[agent, "Disallow: /private", "2", "2"], [agent, "Disallow: /*.pdf$", "3", "1"]]
        # The charts: one for the whole run and one per host, each bar drawn with its count.
        charts = session.find_elements("css selector", "svg.chart")
        assert len(charts) == 1 + len(hosts)
        bars = session.find_elements("css selector", "svg.chart rect.bar")
        drawn = [(bar.get_attribute("data-kind"), int(bar.get_attribute("data-count")), bar.rect["height"])
                 for bar in bars]
        assert all(height > 0 for _, _, height in drawn)
        assert sum(count for _, count, _ in drawn) == 2 * sum(data["totals"]["verdicts"].values())
        assert {kind for kind, _, _ in drawn} == {"allowed", "disallowed"}
        # Nothing went wrong, nothing was fetched but the page itself.
        assert console_errors(session) == []
        assert set(requests(session)) == {page.as_uri()}
    finally:
        session.quit()
