"""``scrapy robotstxt report``: the figures gathered in the audit's one pass (over the ledgers of
tests/ledger_writer.py, written from docs/ledger-format.md), their bounds (hosts folded, time
buckets, tallies), the HTML page with every site-controlled text escaped, and the command in a
subprocess. The page in a real browser, over a real crawl's ledger: tests/test_report_browser.py."""

from __future__ import annotations

import html
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_writer import Run, write_version
from test_audit import ROBOTS_C, A, B, C, Fleet, build, tdm_ledger
from test_command import scrapy

from scrapy_rfc9309.commands.report import progress_line
from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.evidence.audit import audit
from scrapy_rfc9309.evidence.report_figures import Tally, Timeline, busiest_hosts, report_figures
from scrapy_rfc9309.evidence.report_html import render
from scrapy_rfc9309.evidence.verdict_check import origin_of

HOSTILE = "<script>alert(\"x\")</script>'\"&"
ROBOTS_HOSTILE = f"User-agent: *\nDisallow: /{HOSTILE}\n".encode()


# -- the audit's origin of a URL ---------------------------------------------------------------
URL_PARTS = st.text(st.sampled_from("aAz0.:/?#@[]%\t -_\\é"), max_size=12)


@settings(max_examples=400, deadline=None)
@given(scheme=st.sampled_from(["http", "HTTPS", "ftp", "x", ""]), sep=st.sampled_from(["://", ":/", "//", ":"]),
       authority=URL_PARTS, rest=URL_PARTS)
def test_the_remembered_origin_of_a_url_is_origin_from_url(scheme: str, sep: str, authority: str, rest: str) -> None:
    url = f"{scheme}{sep}{authority}{rest}"
    assert origin_of(url) == Origin.from_url(url)


# -- bounded aggregates --------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(times=st.lists(st.floats(min_value=1.6e9, max_value=1.9e9, allow_nan=False), min_size=1, max_size=300),
       buckets=st.integers(min_value=1, max_value=50))
def test_a_timeline_keeps_every_count_in_its_bucket_within_its_bound(times: list[float], buckets: int) -> None:
    timeline = Timeline(buckets)
    for index, when in enumerate(times):
        timeline.add(when, "even" if index % 2 == 0 else "odd")
    shown = timeline.as_dict()
    assert 1 <= len(shown["buckets"]) <= buckets
    assert sum(sum(bucket.values()) for bucket in shown["buckets"]) == len(times)
    width, start = shown["width"], shown["start"]
    assert math.log2(width).is_integer() and start % width == 0
    # Each time counted in the bucket that holds it.
    expected = [0] * len(shown["buckets"])
    for when in times:
        expected[math.floor(when / width) - math.floor(start / width)] += 1
    assert [sum(bucket.values()) for bucket in shown["buckets"]] == expected
    # The narrowest width that fits the span: half of it would need more buckets.
    if width > 1:
        half = width / 2
        assert math.floor(max(times) / half) - math.floor(min(times) / half) + 1 > buckets


def test_a_tally_counts_keys_beyond_its_limit_as_others() -> None:
    tally = Tally(2)
    for key in ["a", "b", "a", "c", "a", "b", "d"]:
        tally.add(key)
    assert tally.counts == {"a": 3, "b": 2} and tally.other == 2
    assert tally.as_dict(1) == {"top": [["a", 3]], "not_listed": 4}


# -- the figures of a ledger -----------------------------------------------------------------
def figures(fleet: Fleet, **kwargs: object) -> dict:
    result, data = report_figures([fleet.one, fleet.two], **kwargs)  # type: ignore[arg-type]
    assert result.exit_status() == 0
    return json.loads(json.dumps(data))  # what --json writes


def test_the_figures_are_the_audits_counts_and_what_the_records_say(tmp_path: Path) -> None:
    fleet = build(tmp_path)
    data = figures(fleet)
    alone = audit([fleet.one, fleet.two]).as_dict()
    assert data["audit"]["ok"] and data["audit"]["problem_count"] == {}
    hosts = {host["host"]: host for host in data["hosts"]}
    assert list(hosts) == [A, C, B]  # by verdicts, most first
    for origin in alone["origins"]:  # the same counts as the audit's, per host
        requests = dict(origin["requests"])
        assert requests.pop("dropped_by") == dict(hosts[origin["origin"]]["dropped"]["reasons"]["top"])
        assert hosts[origin["origin"]]["verdicts"] == requests
        assert hosts[origin["origin"]]["responses"] == origin["responses"]
    a, b, c = hosts[A], hosts[B], hosts[C]
    assert a["rules"]["top"] == [{"agent": "testbot", "directive": "Disallow", "pattern": "/private", "line": 2,
                                  "count": 1},
                                 {"agent": "testbot", "directive": "Disallow", "pattern": "/", "line": 2, "count": 1}]
    assert b["dropped"] == {"count": 1, "reasons": {"top": [["closing", 1]], "not_listed": 0}}
    assert [v["digest"] for v in a["documents"]["versions"]] == [fleet.a1, fleet.a2]
    assert [(e["doc"], e["access"], e["status"]) for e in b["documents"]["events"]] == [
        ("robots.txt", "unavailable", 404)]
    # Run 1 is of format 2 (no settings): its usage_denied verdict is not recomputed against them.
    assert c["usage"]["denied"] == {"(not recomputed: the run's head records no settings)": 1}
    assert c["usage"]["responses_denied"] == 1
    assert c["protocols"][1]["statements"]["top"] == [["content-usage: train-ai=n (line 2)", 2]]
    assert data["totals"]["verdicts"]["allowed"] == 7 and data["totals"]["hosts"] == 3
    assert data["totals"]["records"] == sum(run["records"] for run in data["runs"]) == 31
    assert [run["format"] for run in data["runs"]] == [2, 3]
    assert data["runs"][1]["settings"]["read"] == ["robots.txt", "headers"]
    assert data["enforced"]["same_in_every_run"] is False
    assert sum(sum(bucket.values()) for bucket in data["timeline"]["buckets"]) == sum(
        data["totals"]["verdicts"].values())
    assert data["other_hosts"] is None


def test_usage_denied_verdicts_name_the_categories_the_run_denied(tmp_path: Path) -> None:
    directory = tmp_path / "ledger"
    version = write_version(directory, f"{C}/robots.txt", ROBOTS_C)
    run = Run(directory, settings={"deny": ["train-ai"]})
    run.state(C, version)
    run.verdict(f"{C}/a", "f1", "usage_denied", version, up="content-usage: train-ai=n (line 2)")
    run.verdict(f"{C}/x/1", "f2", "disallowed", version, ["Disallow", "/x", 3])
    run.close()
    result, data = report_figures([directory])
    assert result.exit_status() == 0
    [host] = data["hosts"]
    assert host["usage"]["denied"] == {"train-ai": 1}
    assert data["enforced"] == {"same_in_every_run": True, "settings": {
        "purpose": [], "deny": ["train-ai"], "read": ["robots.txt", "headers"], "tdm": False, "crawl_delay": False,
        "vocab": "aipref-vocab-2026-08"}}


def test_hosts_beyond_the_cap_are_folded_and_counted(tmp_path: Path) -> None:
    fleet = build(tmp_path)
    data = figures(fleet, max_hosts=1)
    assert [host["host"] for host in data["hosts"]] == [A]
    other = data["other_hosts"]
    assert other["count"] == 2
    assert other["verdicts"]["allowed"] == 2 and other["verdicts"]["dropped"] == 1
    assert other["verdicts"]["usage_denied"] == 1
    page = render(data)
    assert 'id="other-hosts"' in page and "2 other hosts" in page


def test_the_hosts_listed_are_those_with_the_most_verdicts(tmp_path: Path) -> None:
    """The host met first has the fewest verdicts: the two busiest are listed, the most first,
    each with all its records, and the page says how many were left out."""
    directory = tmp_path / "ledger"
    hosts = {f"http://h{index}.test": count for index, count in enumerate((1, 3, 2, 5, 1))}
    run = Run(directory)
    digests = {host: write_version(directory, f"{host}/robots.txt", b"User-agent: *\nDisallow: /x\n")
               for host in hosts}
    for host, digest in digests.items():
        run.state(host, digest)
    for host, count in hosts.items():
        for index in range(count):
            run.verdict(f"{host}/{index}", f"{host}{index}", "allowed", digests[host])
            run.response(f"{host}/{index}", f"{host}{index}")
    run.close()
    result, data = report_figures([directory], max_hosts=2)
    assert result.exit_status() == 0
    assert [(host["host"], host["verdicts"]["allowed"], host["responses"]["received"]) for host in data["hosts"]] \
        == [("http://h3.test", 5, 5), ("http://h1.test", 3, 3)]
    assert data["other_hosts"]["count"] == 3 and data["other_hosts"]["verdicts"]["allowed"] == 4
    page = render(data)
    assert "3 hosts with fewer are left out" in page and "3 other hosts (fewer verdicts than the 2 listed" in page


def test_the_busiest_hosts_are_counted_within_a_bound(tmp_path: Path) -> None:
    """Counted exactly up to ``counted`` hosts; beyond, a host with a large share of the verdicts
    is kept among hundreds met once, and the count is bounded."""
    directory = tmp_path / "ledger"
    heavy = "http://heavy.test"
    run = Run(directory)
    for index in range(400):  # the heavy host comes after 300 others, then every other verdict
        run.verdict(f"http://h{index}.test/", f"f{index}", "dropped", None, why="no_host")
        if index >= 300:
            run.verdict(f"{heavy}/{index}", f"g{index}", "dropped", None, why="no_host")
    run.verdict("http://h7.test/again", "again", "dropped", None, why="no_host")
    run.close()
    assert busiest_hosts([directory], 2, counted=500) == [heavy, "http://h7.test"]
    assert busiest_hosts([directory], 1, counted=8) == [heavy]


@pytest.mark.parametrize(("cfg", "applied", "cell"), [
    ({"crawl_delay": True, "crawl_delay_max": 60.0}, 2.5, "<td>2.5 s</td>"),
    ({"crawl_delay": True, "crawl_delay_max": 1}, 1.0, "<td>1 s (capped)</td>"),
    ({"crawl_delay": False, "crawl_delay_max": 60.0}, 0.0, "<td>none (ROBOTSTXT_CRAWL_DELAY off)</td>"),
    ({"crawl_delay": True}, None, "<td>not recorded (the run's head has no ROBOTSTXT_CRAWL_DELAY_MAX)</td>"),
])
def test_the_crawl_delay_each_version_gives_the_runs_agent_and_the_one_applied(
        tmp_path: Path, cfg: dict[str, Any], applied: float | None, cell: str) -> None:
    """Stated: what the version says for the run's agent; applied: that capped at the run's
    ROBOTSTXT_CRAWL_DELAY_MAX when ROBOTSTXT_CRAWL_DELAY is on, from the run's head."""
    directory = tmp_path / "ledger"
    version = write_version(directory, f"{A}/robots.txt", b"User-agent: testbot\nCrawl-delay: 2.5\nDisallow: /x\n")
    run = Run(directory, settings=cfg)
    run.state(A, version)
    run.verdict(f"{A}/y", "f1", "allowed", version)
    run.close()
    _, data = report_figures([directory])
    assert data["hosts"][0]["crawl_delay"] == [{
        "version": version, "agent": "testbot", "delay": 2.5, "obeyed": cfg["crawl_delay"],
        "cap": cfg.get("crawl_delay_max"), "applied": applied}]
    page = render(data)
    assert "<td>2.5 s</td>" in page and html.unescape(cell) in html.unescape(page), page


def test_held_requests_name_the_error_of_the_unreachable_robots_txt(tmp_path: Path) -> None:
    directory = tmp_path / "ledger"
    run = Run(directory)
    run.write("state", o=A, doc="robots.txt", src="fetch", access="unreachable", ver=None, status=None,
              err="ConnectionRefusedError", exp=0)
    run.verdict(f"{A}/y", "f1", "held", None)
    run.verdict(f"{A}/y", "f1", "dropped", None, why="max_wait")
    run.close()
    result, data = report_figures([directory])
    assert result.exit_status() == 0, result.problems
    [host] = data["hosts"]
    assert host["held"]["reasons"]["top"] == [["robots.txt unreachable: ConnectionRefusedError", 1]]
    assert host["dropped"]["reasons"]["top"] == [["max_wait", 1]]


# -- escaping ------------------------------------------------------------------------------
def test_every_site_controlled_text_is_escaped_in_the_page(tmp_path: Path) -> None:
    directory = tmp_path / "ledger"
    version = write_version(directory, f"{A}/robots.txt", ROBOTS_HOSTILE)
    run = Run(directory)
    run.state(A, version)
    url = f"{A}/{HOSTILE}/page"
    run.verdict(url, "f1", "disallowed", version, ["Disallow", f"/{HOSTILE}", 2])
    run.verdict(f"{A}/z", "f2", "dropped", None, why=f"<img src=x onerror=alert(1)>{HOSTILE}")
    run.close()
    result, data = report_figures([directory])
    assert result.exit_status() == 0, result.problems
    assert data["hosts"][0]["rules"]["top"][0]["pattern"] == f"/{HOSTILE}"
    page = render(data)
    assert "<script" not in page and "<img" not in page and "onerror=alert(1)>" not in page
    assert "Disallow: /&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#x27;&quot;&amp;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    # Nothing is loaded and nothing runs, whatever a text might have slipped through.
    assert "default-src 'none'" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)


def test_a_chart_has_a_mark_per_kind_and_bucket_with_its_count(tmp_path: Path) -> None:
    fleet = build(tmp_path)
    data = figures(fleet)
    page = render(data)
    marks = re.findall(r'<rect class="bar" data-kind="(\w+)" data-count="(\d+)"', page)
    whole = data["timeline"]["buckets"]
    per_host = [bucket for host in data["hosts"] for bucket in host["timeline"]["buckets"]]
    assert len(marks) == sum(1 for bucket in [*whole, *per_host] for count in bucket.values() if count)
    assert sum(int(count) for _, count in marks) == 2 * sum(data["totals"]["verdicts"].values())


# -- the command -------------------------------------------------------------------------------
def test_progress_is_told_at_most_every_interval_and_at_the_end() -> None:
    now = [0.0]
    stream = io.StringIO()
    tell = progress_line(stream, clock=lambda: now[0], every=1.0)
    tell(0, 1, 3)
    now[0] = 0.5
    tell(50_000, 1, 3)  # too soon
    now[0] = 1.2
    tell(100_000, 2, 3)
    now[0] = 1.3
    tell(120_000, 3, 3)  # the last segment: told
    assert stream.getvalue().splitlines() == [
        "robotstxt report: 0 records read, segment 1 of 3",
        "robotstxt report: 100,000 records read, segment 2 of 3",
        "robotstxt report: 120,000 records read, segment 3 of 3"]


def test_the_command_writes_the_page_and_the_json(tmp_path: Path) -> None:
    fleet = build(tmp_path)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = scrapy(cwd, "robotstxt", "report", str(fleet.one), str(fleet.two), "-o", "r.html", "--json", "r.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "written to r.html, its figures to r.json" in done.stdout and "everything verifies" in done.stdout
    assert re.search(r"robotstxt report: \d+ records read, segment \d+ of 4", done.stderr)
    data = json.loads((cwd / "r.json").read_text())
    expected = figures(fleet)
    assert {**data, "generated": None} == {**expected, "generated": None}
    assert (cwd / "r.html").read_text() == render(data)
    # --json without its file, and the audit's --json unchanged (before or after its directories).
    assert scrapy(cwd, "robotstxt", "report", str(fleet.one), "--json").returncode == 2
    assert json.loads(scrapy(cwd, "robotstxt", "audit", "--json", str(fleet.one), str(fleet.two)).stdout)["ok"]
    assert json.loads(scrapy(cwd, "robotstxt", "--json", "audit", str(fleet.one), str(fleet.two)).stdout)["ok"]
    # A ledger with a problem: the report is written, the exit status is the audit's.
    (fleet.one / "manifest.jsonl").unlink()
    done = scrapy(cwd, "robotstxt", "report", str(fleet.one), str(fleet.two))
    assert done.returncode == 1 and (cwd / "robotstxt-report.html").exists()
    assert "FAILED" in (cwd / "robotstxt-report.html").read_text()


# -- what each protocol said, and the bounds of a host's lists -----------------------------------
def test_each_protocol_says_what_its_verdicts_say(tmp_path: Path) -> None:
    directory, _ = tdm_ledger(tmp_path)
    result, data = report_figures([directory])
    assert result.exit_status() == 0, result.problems
    [host] = data["hosts"]
    robots, usage, tdmrep, responses = host["protocols"]
    assert robots["said"] == {"allowed": 2, "disallowed": 0}  # allowed and tdm_reserved: robots.txt allowed both
    assert (robots["versions"], robots["states"]) == (1, {"parsed": 1})
    assert (tdmrep["versions"], tdmrep["states"], tdmrep["said"]) == (1, {"parsed": 1}, {"tdm_reserved": 1})
    assert tdmrep["read"] and tdmrep["rules"]["not_listed"] == 0 and len(tdmrep["rules"]["top"]) == 1
    assert host["usage"]["tdm_reserved"] == 1 and host["usage"]["denied"] == {}
    assert usage["said"] == {"usage_denied": 0} and responses["said"] == {"usage_denied": 0}
    assert responses["read"] and usage["read"]  # the run read headers (TDM_SETTINGS), and robots.txt


def test_a_hosts_lists_keep_the_first_and_last_states_and_cut_long_texts(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import scrapy_rfc9309.evidence.report_figures as module

    monkeypatch.setattr(module, "MAX_DELAYS", 1)
    directory = tmp_path / "ledger"
    run = Run(directory)
    for number in range(module.MAX_EVENTS + 5):
        run.write("state", o=A, doc="robots.txt", src="fetch", access="unreachable", ver=None, status=None,
                  err=f"error {number} " + "x" * 400, exp=0)
    first = write_version(directory, f"{A}/robots.txt", b"User-agent: *\nCrawl-delay: 1\n")
    second = write_version(directory, f"{A}/robots.txt", b"User-agent: *\nCrawl-delay: 2\n")
    for number, version in enumerate((first, second)):
        run.state(A, version)
        run.verdict(f"{A}/{number}", f"f{number}", "allowed", version)
    run.close()
    result, data = report_figures([directory])
    assert result.exit_status() == 0, result.problems
    [host] = data["hosts"]
    events = host["documents"]["events"]
    assert host["documents"]["events_total"] == module.MAX_EVENTS + 7
    errors = [event["error"] for event in events]
    half = module.MAX_EVENTS // 2
    assert len(events) == module.MAX_EVENTS
    assert [error.split()[1] for error in errors[:half]] == [str(n) for n in range(half)]
    assert [error and error.split()[1] for error in errors[half:]] == [
        *(str(n) for n in range(half + 7, module.MAX_EVENTS + 5)), None, None]
    assert all(len(error) == module.MAX_TEXT + 3 and error.endswith("x...") for error in errors[:half])
    assert host["crawl_delay"] == [  # MAX_DELAYS: 1
        {"version": first, "agent": "testbot", "delay": 1.0, "obeyed": False, "cap": None, "applied": 0.0}]


@pytest.mark.parametrize(("cfg", "expected"), [
    ({"crawl_delay": True, "crawl_delay_max": 30}, (True, 30.0)),
    ({"crawl_delay": True, "crawl_delay_max": 0}, (True, 0.0)),
    ({"crawl_delay": False, "crawl_delay_max": 0.5}, (False, 0.5)),
    ({"crawl_delay": True, "crawl_delay_max": -0.5}, (True, None)),
    ({"crawl_delay": True, "crawl_delay_max": True}, (True, None)),
    ({"crawl_delay": "yes", "crawl_delay_max": "30"}, (None, None)),
    ("not settings", (None, None)),
])
def test_a_heads_crawl_delay_setting_is_read_only_as_recorded(cfg: object, expected: tuple[Any, Any]) -> None:
    from scrapy_rfc9309.evidence.report_figures import pacing

    assert pacing(cfg) == expected


@pytest.mark.parametrize(("delay", "obeyed", "cap", "applied"), [
    (2.5, True, 60.0, 2.5), (2.5, True, 1.0, 1.0), (2.5, True, 0.0, 0.0), (None, True, 60.0, 0.0),
    (None, True, None, 0.0), (2.5, False, 60.0, 0.0), (2.5, False, None, 0.0), (2.5, True, None, None),
    (2.5, None, 60.0, None), (None, None, None, None),
])
def test_the_crawl_delay_applied(delay: float | None, obeyed: bool | None, cap: float | None,
                                 applied: float | None) -> None:
    """Capped when obeyed; none when not obeyed or none stated; unknown where the head does not say."""
    from scrapy_rfc9309.evidence.report_figures import applied_delay

    assert applied_delay(delay, obeyed, cap) == applied
