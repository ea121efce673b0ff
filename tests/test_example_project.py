"""The example project, run from its own directory as a user runs it (no PYTHONPATH):
``python -m example_project.demo`` (``make demo``) runs offline and its summary shows
what RFC 9309 makes the middleware do on each demo origin; ``scrapy crawl demo``
serves the demo site itself; ``scrapy robotstxt URL`` uses the project's settings."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent / "example_project"
#: The console script, as a user types it (``python -m scrapy`` would put the current
#: directory on the path, which ``scrapy`` itself does not).
SCRAPY = Path(sys.executable).with_name("scrapy" + (".exe" if os.name == "nt" else ""))


def _env(**extra: str) -> dict[str, str]:
    """This environment without PYTHONPATH, a project from SCRAPY_* variables, a proxy or
    DEMO_ONE_ADDRESS, plus ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "DEMO_ONE_ADDRESS") and not key.startswith("SCRAPY_")
        and not key.lower().endswith("_proxy")
    }
    return {**env, **extra}


def _start(*args: str | Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(arg) for arg in args], cwd=PROJECT, env=_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    try:
        stdout, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


#: The demo site's layouts: an address per origin (127.0.0.1 to 127.0.0.9), and what a machine
#: that listens on 127.0.0.1 alone (macOS) gets, forced with DEMO_ONE_ADDRESS: a port per origin.
LAYOUTS = {"addresses": {}, "one-address": {"DEMO_ONE_ADDRESS": "1"}}
#: A demo origin's base URL, in either layout.
BASE = r"http://127\.0\.0\.\d+:\d+"


@pytest.fixture(scope="module", params=list(LAYOUTS))
def layout(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def runs(layout: str,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    """``python -m example_project.demo`` and ``scrapy crawl demo -O pages.jsonl``, run side
    by side (each serves its own demo site on free ports)."""
    items = tmp_path_factory.mktemp("crawl") / "pages.jsonl"
    ledger = tmp_path_factory.mktemp("ledger") / "demo-ledger"
    demo = _start(sys.executable, "-m", "example_project.demo", DEMO_LEDGER=str(ledger), **LAYOUTS[layout])
    crawl = _start(SCRAPY, "crawl", "demo", "-O", items, "-L", "INFO", **LAYOUTS[layout])
    done = {"demo": _finish(demo), "crawl": _finish(crawl)}
    done["crawl"].stdout = items.read_text() if items.exists() else ""
    yield done


@pytest.fixture(scope="module")
def demo(runs: dict[str, subprocess.CompletedProcess[str]]) -> subprocess.CompletedProcess[str]:
    return runs["demo"]


@pytest.fixture(scope="module")
def sections(demo: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """The summary cut into ``{"ordinary": "...", ..., "stats": "..."}``."""
    assert demo.returncode == 0, f"stdout:\n{demo.stdout}\nstderr:\n{demo.stderr}"
    found: dict[str, str] = {}
    name = None
    for line in demo.stdout.splitlines():
        header = re.match(r"\[\d+\] ([\w-]+):", line)
        if header or line == "stats:":
            name = header.group(1) if header else "stats"
            found[name] = ""
        elif name is not None:
            found[name] += line + "\n"
    return found


def fetched(section: str) -> set[str]:
    match = re.search(r"^\s*fetched \(\d+\): (.*)$", section, re.M)
    assert match, section
    return set() if match.group(1) == "none" else set(match.group(1).split(", "))


def blocked(section: str) -> dict[str, str]:
    """Blocked path -> the rule that blocked it (``"Disallow: /x/, line 2"``)."""
    return dict(re.findall(r"^ {6}(\S+)\s+by (.+?) \(group '[^']*'\)$", section, re.M))


def test_project_has_the_startproject_layout() -> None:
    assert (PROJECT / "scrapy.cfg").is_file()
    assert (PROJECT / "example_project" / "settings.py").is_file()
    assert (PROJECT / "example_project" / "spiders" / "__init__.py").is_file()
    listed = subprocess.run([SCRAPY, "list"], cwd=PROJECT, env=_env(), capture_output=True, text=True, timeout=60,
                            check=False)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["demo", "real_sites"]


def test_each_demo_origin_is_an_origin_of_its_own(layout: str, sections: dict[str, str]) -> None:
    """One loopback address per origin, or (where only 127.0.0.1 works) one port per origin."""
    bases = {name: re.search(r"origin: (http://\S+)", text).group(1)  # type: ignore[union-attr]
             for name, text in sections.items() if name != "stats"}
    assert len(set(bases.values())) == len(bases) == 9
    hosts = {base.rsplit(":", 1)[0] for base in bases.values()}
    assert hosts == ({"http://127.0.0.1"} if layout == "one-address" else {f"http://127.0.0.{n}" for n in range(1, 10)})


def test_demo_runs_offline_and_ends_by_itself(demo: subprocess.CompletedProcess[str], sections: dict[str, str]) -> None:
    """The crawl ends on its own (``finished``, not a close timeout) within the run's hang guard;
    how long it takes is the retry schedule's and the delays' (README), not bounded here."""
    assert "Traceback" not in demo.stderr, demo.stderr
    assert re.search(r"crawl finished in [\d.]+ s \(finished\)", demo.stdout), demo.stdout
    assert set(sections) >= {
        "ordinary", "missing", "recovering", "redirected", "oversized", "slow-crawl", "ai-prefs", "usage-sources",
        "stats",
    }
    assert "!!" not in demo.stdout  # no blocked page reached a server
    assert "other errors" not in demo.stdout


def test_ordinary_rules_block_with_their_line(sections: dict[str, str]) -> None:
    ordinary = sections["ordinary"]
    assert "access result: parsed (status 200" in ordinary
    assert "rules of group 'demobot' apply" in ordinary
    assert blocked(ordinary) == {
        "/private/": "Disallow: /private/, line 6",
        "/private/salaries.html": "Disallow: /private/, line 6",
        "/docs/manual.pdf": "Disallow: /*.pdf$, line 8",
        "/search?q=robots": "Disallow: /search, line 9",
    }
    # Allow: /private/press/ is longer than Disallow: /private/, so it wins.
    assert fetched(ordinary) == {"/", "/about.html", "/docs/", "/docs/manual.html", "/private/press/kit.html"}
    assert re.search(r"sitemaps: http://127\.0\.0\.1:\d+/sitemap\.xml", ordinary)  # the first origin is on .1
    assert "held: none" in ordinary


def test_missing_robots_txt_allows_everything(sections: dict[str, str]) -> None:
    missing = sections["missing"]
    assert "access result: unavailable (status 404)" in missing
    assert fetched(missing) == {"/", "/shop.html", "/private/ledger.html"}
    assert "blocked (0): none" in missing
    assert "not obeyed" in missing


def test_recovering_requests_are_held_then_released(sections: dict[str, str]) -> None:
    recovering = sections["recovering"]
    assert "robots.txt served: 503, 503, 200" in recovering
    assert re.search(r"held \(1\): / for \d+\.\d s", recovering)
    assert "released (1): /" in recovering
    assert fetched(recovering) == {"/", "/news.html"}
    assert blocked(recovering) == {"/drafts/next-week.html": "Disallow: /drafts/, line 2"}


def test_redirected_rules_apply_to_the_initial_origin(sections: dict[str, str]) -> None:
    redirected = sections["redirected"]
    rules_host = re.search(r"origin: (\S+)", sections["rules-host"]).group(1)  # type: ignore[union-attr]
    assert f"robots.txt served: 301 -> /old/robots.txt, 302 -> {rules_host}/shared/robots.txt" in redirected
    assert "redirects followed: 2" in redirected
    assert blocked(redirected) == {
        "/members/": "Disallow: /members/, line 2",
        "/members/profile.html": "Disallow: /members/, line 2",
    }
    assert fetched(redirected) == {"/", "/blog.html"}
    assert "requests received: /shared/robots.txt (200)" in sections["rules-host"]


def test_oversized_robots_txt_is_cut_at_the_limit(sections: dict[str, str]) -> None:
    oversized = sections["oversized"]
    assert "only the first 512,000 bytes read" in oversized
    assert "'Disallow: /beyond-limit/' sits at byte" in oversized and ": not obeyed" in oversized
    assert "/beyond-limit/page.html" in fetched(oversized)
    assert blocked(oversized) == {"/top-secret/plans.html": "Disallow: /top-secret/, line 3"}


def test_crawl_delay_and_ai_preferences_are_shown(sections: dict[str, str]) -> None:
    slow = sections["slow-crawl"]
    assert "Crawl-delay for DemoBot: 1 s" in slow
    assert fetched(slow) == {"/", "/p1.html", "/p2.html", "/p3.html"}
    assert blocked(slow) == {"/admin/": "Disallow: /admin/, line 3"}
    prefs = sections["ai-prefs"]
    assert "Content-Usage for DemoBot: 'train-ai=n' (line 2)" in prefs
    assert fetched(prefs) == {"/", "/articles/1.html", "/articles/2.html"}


def test_each_usage_source_is_shown_with_the_answer(sections: dict[str, str]) -> None:
    usage = sections["usage-sources"]
    assert fetched(usage) == {"/", "/content-usage.html", "/x-robots-tag.html", "/meta-robots.html",
                              "/tdm-header.html", "/tdm-meta.html"}
    # robots.txt says train-ai=y everywhere; each page's own source says n, and n wins.
    for source in ("Content-Usage header", "X-Robots-Tag header", '<meta name="robots">', "tdm-reservation header",
                   '<meta name="tdm-reservation">'):
        assert f"answer: train-ai=n (from {source})" in usage, source
    assert "/robots.txt line 3 (Content-Usage): train-ai=y" in usage
    assert "search=n (from <meta name=\"robots\">)" in usage
    assert "not followed (NofollowMiddleware)" in usage
def test_a_tdm_reservation_is_shown(sections: dict[str, str]) -> None:
    """The demo turns ROBOTSTXT_TDMREP on: the ai-prefs origin's tdmrep.json reserves one page,
    which the crawl reports and still fetches (ROBOTSTXT_USAGE_DENY is not set)."""
    prefs = sections["ai-prefs"]
    assert re.search(r"tdmrep\.json: /articles/2\.html: TDM rights reserved \(rule 0, location '/articles/2\.html\$', "
                     r"tdm-policy http://\S+/tdm-policy\.json\); fetched", prefs)
    assert "/articles/1.html: TDM" not in prefs
    stats = dict(re.findall(r"^\s+(\S+): (.*)$", sections["stats"], re.M))
    assert stats["robotstxt/tdmrep/parsed"] == "1"
    assert stats["robotstxt/tdmrep/unavailable"] == "7"  # the other crawled origins (usage-sources too) have none


def test_stats(sections: dict[str, str]) -> None:
    stats = dict(re.findall(r"^\s+(\S+): (.*)$", sections["stats"], re.M))
    assert stats["finish_reason"] == "finished"
    assert stats["robotstxt/held"] == "1"
    assert stats["robotstxt/released"] == "1"
    assert stats["robotstxt/truncated"] == "1"
    assert stats["robotstxt/unavailable"] == "1"
    assert stats["robotstxt/unreachable"] == "2"
    assert stats["robotstxt/redirect_count"] == "2"
    assert stats["robotstxt/forbidden"] == "9"


def test_scrapy_crawl_demo_serves_the_demo_site_itself(runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    crawl = runs["crawl"]
    log = crawl.stderr
    assert crawl.returncode == 0, log
    assert "Traceback" not in log and "No module named" not in log, log
    serving = re.search(rf"Serving the demo site: ordinary ({BASE}), missing {BASE}, recovering ({BASE})", log)
    assert serving, log
    ordinary, recovering = serving.groups()
    assert "'finish_reason': 'finished'" in log
    # The demo's own settings apply: the recovering origin is retried after 0.5 s, not the project's 5 s.
    assert re.search(re.escape(f"robots.txt of {recovering} unreachable (status 503): complete disallow. ")
                     + r"Its requests are held for up to \d+ s, retrying in 0\.5 s", log)
    assert (f"Blocked by Disallow: /private/, line 6 of {ordinary}/robots.txt: {ordinary}/private/salaries.html"
            in log)
    pages = [json.loads(line) for line in crawl.stdout.splitlines()]
    paths = {page["url"].removeprefix(ordinary) for page in pages if page["url"].startswith(ordinary + "/")}
    assert paths == {"/", "/about.html", "/docs/", "/docs/manual.html", "/private/press/kit.html"}
    # 22 pages of the robots.txt origins, 6 of usage-sources (its nofollow page's link is not followed).
    assert len(pages) == 28
    assert "Demo site stopped. 28 pages fetched, 9 requests blocked by robots.txt" in log


def test_scrapy_robotstxt_uses_the_project_settings() -> None:
    """``scrapy robotstxt URL`` from the project directory, against the demo site served
    by ``python -m example_project.demo_site``: the project's agent and its group decide."""
    site = _start(sys.executable, "-m", "example_project.demo_site")
    try:
        assert site.stdout is not None
        url = None
        for line in site.stdout:
            found = re.search(r"try: scrapy robotstxt (\S+)", line)
            if found:
                url = found.group(1)
                break
        assert url is not None and url.startswith("http://127.0.0.1:"), url
        done = subprocess.run([SCRAPY, "robotstxt", url], cwd=PROJECT, env=_env(), capture_output=True, text=True,
                              timeout=60, check=False)
    finally:
        site.terminate()
        site.communicate(timeout=30)
    assert done.returncode == 1, done.stderr  # the exit status is the verdict: 1, disallowed
    report = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in done.stdout.splitlines() if ":" in line}
    assert report["Agent"] == "DemoBot"  # ROBOTSTXT_USER_AGENT of example_project/settings.py
    assert report["Token"] == "demobot"
    assert report["Access"] == "parsed (status 200)"
    assert report["Group"] == "'demobot'"
    assert report["Verdict"] == "disallowed (Disallow: /private/, line 6)"


def test_demo_writes_its_ledger_and_the_audit_verifies_it(demo: subprocess.CompletedProcess[str],
                                                           sections: dict[str, str]) -> None:
    """The demo crawls with ROBOTSTXT_LEDGER and runs ``scrapy robotstxt audit`` on it: every
    verdict recomputed from the archived robots.txt, every page fetched tied to its allowed verdict."""
    out = demo.stdout
    assert "$ scrapy robotstxt audit" in out
    assert "Result: everything verifies (exit 0)" in out, out
    assert "ended, responses passed to the spider not recorded" in out, out
    assert re.search(r"^Ledger audit of \S+: 1 run, 1 segment, \d+ records, \d+ versions$", out, re.M), out
    table = dict(re.findall(rf"^  ({BASE})((?:\s+\d+){{9}})$", out, re.M))
    for name in ("ordinary", "recovering", "oversized"):
        section = sections[name]
        base = re.search(rf"origin: ({BASE})", section).group(1)  # type: ignore[union-attr]
        allowed, disallowed, held, _dropped, _denied, _tdm, _requeued, _not_judged, responses = (
            int(n) for n in table[base].split())
        # Each page fetched has its allowed verdict; the responses passed to the spider are implied by them
        # (ROBOTSTXT_LEDGER_RESPONSES is off), so none is recorded.
        assert (allowed, responses) == (len(fetched(section)), 0), (name, table[base], section)
        assert disallowed == len(blocked(section)), (name, table[base], section)
        logged = re.search(r"^\s*held \((\d+)\)", section, re.M)  # the requests held in the downloader
        assert (held >= int(logged.group(1)) > 0) if name == "recovering" else (held == 0 and not logged), (
            name, table[base], section)


def test_a_copy_outside_the_clone_loads_its_spiders_and_names_the_servers_the_demo_needs(tmp_path: Path) -> None:
    """The demo site's servers are the test suite's (tests/servers), which the installed package does not
    carry: a copy of the project elsewhere lists its spiders without them, and its demo site says where
    they are; with the clone's tests/ on PYTHONPATH it is served."""
    import shutil

    copy = tmp_path / "project"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("__pycache__", ".scrapy", "demo-ledger"))
    listed = subprocess.run([SCRAPY, "list"], cwd=copy, env=_env(), capture_output=True, text=True, timeout=60,
                            check=False)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["demo", "real_sites"]
    alone = subprocess.run([sys.executable, "-m", "example_project.demo_site"], cwd=copy, env=_env(),
                           capture_output=True, text=True, timeout=60, check=False)
    assert alone.returncode == 1
    assert "The demo site runs from a clone of scrapy-rfc9309" in alone.stderr, alone.stderr
    served = subprocess.Popen([sys.executable, "-m", "example_project.demo_site"], cwd=copy,
                              env=_env(PYTHONPATH=str(PROJECT.parent / "tests")), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert served.stdout is not None
        line = next((line for line in served.stdout if "try: scrapy robotstxt" in line), None)
    finally:
        served.terminate()
        served.communicate(timeout=30)
    assert line is not None and "http://127.0.0.1:" in line


def _audit_report(text: str, number_of: dict[str, int]) -> dict[str, object]:
    """The demo's audit report in ``text``, by origin number (``number_of``: an origin's base URL
    to its number in the demo's summary), without what changes from run to run: ports, times, run
    names, digests, column widths, the order of origins and of versions."""
    report = text[text.index("$ scrapy robotstxt audit"):]
    report = report[:report.index("\nResult: ") + 1] + report[report.index("\nResult: ") + 1:].splitlines()[0]

    def origin(found: re.Match[str]) -> str:
        return f"origin-{number_of[found.group(0)]}"

    report = re.sub(BASE, origin, report)
    header = re.search(r"^Ledger audit of (\S+): 1 run, 1 segment, (\d+) records, (\d+) versions$", report, re.M)
    assert header is not None, report
    rows = {name: [int(n) for n in numbers.split()]
            for name, numbers in re.findall(r"^  (origin-\d+)((?:\s+\d+){9})$", report, re.M)}
    versions: dict[str, list[str]] = {}
    current = None
    for line in report[report.index("Versions per origin"):report.index("Runs")].splitlines()[1:]:
        if re.fullmatch(r"  origin-\d+", line):
            current = line.strip()
            versions[current] = []
        elif line.strip():
            assert current is not None, line
            # "<digest>  robots.txt parsed 200  used <time> to <time>": the document, access and status.
            versions[current].append(" ".join(line.split()[1:4]))
    runs = report[report.index("Runs"):report.index("\nResult: ")].replace(f"({header.group(1)})", "(LEDGER)")
    runs = re.sub(r"\d{8}T\d{6}Z-\S+", "RUN", runs)
    runs = re.sub(r"\d+ records", "N records", runs)
    return {"ledger": header.group(1), "records": int(header.group(2)), "versions": int(header.group(3)),
            "rows": rows, "by origin": {name: sorted(found) for name, found in versions.items()},
            "runs": runs.strip(), "result": report.splitlines()[-1]}


def test_the_audit_shown_in_the_compliance_page_is_the_demos(demo: subprocess.CompletedProcess[str]) -> None:
    """docs/compliance.md shows the audit ``make demo`` prints: the same origins, counts per
    origin, versions, run line and result. Only the number of requests held for the origin whose
    robots.txt answers 503 at first depends on timing (one record each): the page's may differ,
    the records without them may not."""
    numbers: dict[str, int] = {}
    for number, base in re.findall(rf"^\[(\d+)\] [\w-]+:.*\n\s+origin: ({BASE})$", demo.stdout, re.M):
        numbers[base] = int(number)
    page = (PROJECT.parent / "docs" / "compliance.md").read_text()
    documented = {f"http://127.0.0.{n}:{port}": int(n)
                  for n, port in re.findall(r"http://127\.0\.0\.(\d+):(\d+)", page)}

    shown = _audit_report(page, documented)
    ran = _audit_report(demo.stdout, numbers)

    held = {name: {origin: row.pop(2) for origin, row in report["rows"].items()}  # type: ignore[attr-defined]
            for name, report in (("shown", shown), ("ran", ran))}
    assert {origin: n > 0 for origin, n in held["shown"].items()} == {
        origin: n > 0 for origin, n in held["ran"].items()}, held
    assert (shown.pop("records") - sum(held["shown"].values())  # type: ignore[operator]
            == ran.pop("records") - sum(held["ran"].values())), (shown, ran)  # type: ignore[operator]
    assert shown.pop("ledger") == "demo-ledger"
    ran.pop("ledger")  # the test's ledger directory
    assert shown == ran
