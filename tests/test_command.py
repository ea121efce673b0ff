"""``scrapy robotstxt URL [--agent X] [--file PATH]`` run as a real command in a subprocess.

The fetch-mode tests serve robots.txt from a :class:`servers.ThreadedOrigin`, an
``http.server`` in a thread of this process (not the Twisted origins: the test does not run the
reactor while it waits for the subprocess); the server records every path it receives.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from reactorless import command_options
from servers import ThreadedOrigin

REPO = Path(__file__).resolve().parent.parent

ROBOTS = (
    "User-agent: *\n"  # line 1
    "Disallow: /private\n"  # line 2
    "Allow: /private/ok\n"  # line 3
    "Crawl-delay: 2.5\n"  # line 4
    "Content-Usage: train-ai=n\n"  # line 5
    "Sitemap: https://example.com/sitemap.xml\n"  # line 6
    "Sitemap: https://example.com/news.xml\n"  # line 7
    "\n"  # line 8
    "User-agent: ExampleBot\n"  # line 9
    "Disallow: /eb\n"  # line 10
)


def _env(columns: int = 200) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        # No proxy for loopback traffic, and no project from the environment.
        if not k.lower().endswith("_proxy") and not k.startswith("SCRAPY_")
    }
    # The package as installed (editable in .venv, a wheel under tox), never the checkout put
    # first: under tox that would be the source tree without the accelerator built for its Python.
    env["COLUMNS"] = str(columns)
    return env


def scrapy(cwd: Path, *args: str, columns: int = 200) -> subprocess.CompletedProcess[str]:
    """``python -m scrapy ARGS`` in ``cwd`` (a directory without scrapy.cfg); a command, not
    ``scrapy -h``, runs without a reactor in the reactorless run."""
    assert not (cwd / "scrapy.cfg").exists()
    mode = command_options() if args[:1] == ("robotstxt",) else []
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args, *mode],
        cwd=cwd,
        env=_env(columns),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def field(output: str, name: str) -> str:
    """The value of the report line ``Name: value`` (the first one)."""
    for line in output.splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {name!r} line in:\n{output}")


def has_field(output: str, name: str) -> bool:
    return any(line.startswith(f"{name}:") for line in output.splitlines())


# --------------------------------------------------------------------------- --file mode


@pytest.fixture
def robots_file(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_text(ROBOTS)
    return path


def test_file_mode_explains_a_disallowed_url(tmp_path, robots_file):
    run = scrapy(tmp_path, "robotstxt", "https://example.com/private/x", "--file", str(robots_file))

    assert run.returncode == 1, run.stderr  # the exit status is the verdict: disallowed
    out = run.stdout
    assert field(out, "File") == str(robots_file)
    assert field(out, "URL") == "https://example.com/private/x"
    assert field(out, "Agent").startswith("Scrapy/")
    assert field(out, "Token") == "scrapy"
    assert field(out, "Group") == "'*'"
    assert field(out, "Verdict") == "disallowed (Disallow: /private, line 2)"
    assert field(out, "Crawl-delay") == "2.5 s"
    assert field(out, "Usage") == "content-usage: train-ai=n (line 5)"
    assert field(out, "Sitemaps") == "https://example.com/sitemap.xml, https://example.com/news.xml"
    # Nothing was fetched, so there is no access result.
    assert not has_field(out, "Access")


def test_file_mode_explains_an_allowed_url(tmp_path, robots_file):
    run = scrapy(tmp_path, "robotstxt", "https://example.com/private/ok/1", "--file", str(robots_file))

    assert run.returncode == 0, run.stderr
    assert field(run.stdout, "Verdict") == "allowed (Allow: /private/ok, line 3)"

    run = scrapy(tmp_path, "robotstxt", "https://example.com/public", "-f", str(robots_file))

    assert field(run.stdout, "Verdict") == "allowed (no rule matched)"


@pytest.mark.parametrize("agent", ["ExampleBot", "Mozilla/5.0 (compatible; ExampleBot/1.0; +https://e.com/bot)"])
def test_file_mode_with_an_agent_uses_its_group(tmp_path, robots_file, agent):
    blocked = scrapy(tmp_path, "robotstxt", "https://example.com/eb/1", "--agent", agent, "--file", str(robots_file))
    free = scrapy(tmp_path, "robotstxt", "https://example.com/private/x", "-a", agent, "--file", str(robots_file))

    assert (blocked.returncode, free.returncode) == (1, 0), blocked.stderr + free.stderr
    assert field(blocked.stdout, "Agent") == agent
    assert field(blocked.stdout, "Token") == "examplebot"
    assert field(blocked.stdout, "Group") == "'examplebot'"
    assert field(blocked.stdout, "Verdict") == "disallowed (Disallow: /eb, line 10)"
    assert field(free.stdout, "Verdict") == "allowed (no rule matched)"
    # The ExampleBot group has no Crawl-delay or usage records of its own ('*' does).
    assert not has_field(free.stdout, "Crawl-delay")
    assert not has_field(free.stdout, "Usage")


def test_file_mode_robots_txt_itself_is_always_allowed(tmp_path):
    path = tmp_path / "robots.txt"
    path.write_text("User-agent: *\nDisallow: /\n")

    run = scrapy(tmp_path, "robotstxt", "https://example.com/robots.txt", "--file", str(path))

    assert field(run.stdout, "Verdict") == "allowed (/robots.txt is always allowed)"


def test_no_url_is_a_usage_error(tmp_path):
    run = scrapy(tmp_path, "robotstxt")

    assert run.returncode == 2
    assert "give exactly one URL" in run.stderr


def test_a_missing_file_is_a_usage_error(tmp_path):
    run = scrapy(tmp_path, "robotstxt", "https://example.com/", "--file", str(tmp_path / "nope.txt"))

    assert run.returncode == 2
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("url", ["http://[::1", "", "http://example.com:65536/x", "http://", "https://:80/x",
                                 "http://exa mple.com/x"])
@pytest.mark.parametrize("mode", ["file", "fetch"])
def test_a_url_that_cannot_be_parsed_is_a_usage_error(tmp_path, robots_file, url, mode):
    args = ["--file", str(robots_file)] if mode == "file" else []

    run = scrapy(tmp_path, "robotstxt", url, *args)

    assert run.returncode == 2, run.stdout + run.stderr
    assert f"cannot check {url!r}" in run.stderr
    assert not has_field(run.stdout, "Verdict")
    assert "Traceback" not in run.stderr


def test_a_non_http_url_is_not_fetched(tmp_path):
    run = scrapy(tmp_path, "robotstxt", "ftp://example.com/x")

    assert run.returncode == 2
    assert "only http and https" in run.stderr


def test_file_mode_joins_relative_sitemaps_with_the_urls_robots_txt(tmp_path):
    path = tmp_path / "robots.txt"
    path.write_bytes(b"User-agent: *\nDisallow: /private\nSitemap: /sitemap.xml\nSitemap: /s\xe9.xml\n")

    run = scrapy(tmp_path, "robotstxt", "https://example.com/page", "--file", str(path))

    assert run.returncode == 0, run.stderr
    assert field(run.stdout, "Sitemaps") == "https://example.com/sitemap.xml, https://example.com/s%E9.xml"


def test_the_report_names_the_matcher_in_use(tmp_path, robots_file):
    import scrapy_rfc9309

    run = scrapy(tmp_path, "robotstxt", "https://example.com/x", "--file", str(robots_file))

    assert field(run.stdout, "Matcher") == scrapy_rfc9309.matcher_in_use()
    if scrapy_rfc9309.ACCELERATED:
        assert field(run.stdout, "Matcher").startswith("C accelerator")


# --------------------------------------------------------------------------- fetch mode


@pytest.fixture
def http_server() -> Iterator[ThreadedOrigin]:
    with ThreadedOrigin() as server:
        yield server


def redirected_robots(server: ThreadedOrigin, **headers: str) -> None:
    server.route("/robots.txt", 301, Location=server.url("/real-robots.txt"))
    server.route("/real-robots.txt", 200, ROBOTS, **headers)


def test_fetch_mode_follows_a_redirect_and_reports_access_lifetime_and_verdict(tmp_path, http_server):
    redirected_robots(http_server, Cache_Control="max-age=3600")
    url = http_server.url("/private/x")

    run = scrapy(tmp_path, "robotstxt", url)

    assert run.returncode == 1, run.stderr
    out = run.stdout
    assert field(out, "URL") == url
    assert field(out, "robots.txt") == http_server.url("/real-robots.txt")
    assert "Access:     parsed (status 200" in out
    assert "Redirects:  1" in out
    assert field(out, "Redirects") == "1: " + http_server.url("/real-robots.txt")
    lifetime = int(re.search(r"^Lifetime:\s+(\d+) s$", out, re.M).group(1))  # type: ignore[union-attr]
    assert 3500 <= lifetime <= 3600
    assert field(out, "Verdict") == "disallowed (Disallow: /private, line 2)"
    assert field(out, "Crawl-delay") == "2.5 s"
    assert field(out, "Sitemaps") == "https://example.com/sitemap.xml, https://example.com/news.xml"
    # One robots.txt request plus the redirect target, and never the page itself.
    assert http_server.paths() == ["/robots.txt", "/real-robots.txt"]


def test_fetch_mode_allowed_url_and_default_lifetime(tmp_path, http_server):
    http_server.route("/robots.txt", 200, ROBOTS)

    run = scrapy(tmp_path, "robotstxt", http_server.url("/public/page"), "--agent", "ExampleBot")

    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "Access:     parsed (status 200" in out
    assert not has_field(out, "Redirects")
    assert field(out, "Lifetime") == "86400 s"  # ROBOTSTXT_CACHE_TTL, no Cache-Control
    assert field(out, "Token") == "examplebot"
    assert field(out, "Verdict") == "allowed (no rule matched)"
    assert http_server.paths() == ["/robots.txt"]


def test_fetch_mode_uses_settings_given_on_the_command_line(tmp_path, http_server):
    http_server.route("/robots.txt", 200, ROBOTS)

    run = scrapy(tmp_path, "robotstxt", http_server.url("/eb/x"), "-s", "ROBOTSTXT_USER_AGENT=ExampleBot",
                 "-s", "ROBOTSTXT_CACHE_TTL=100", "-s", "ROBOTSTXT_CACHE_MIN_TTL=10")

    assert run.returncode == 1, run.stderr
    assert field(run.stdout, "Lifetime") == "100 s"
    assert field(run.stdout, "Token") == "examplebot"
    assert field(run.stdout, "Verdict") == "disallowed (Disallow: /eb, line 10)"


def test_fetch_mode_with_a_disk_store_answers_from_the_store_the_second_time(tmp_path, http_server):
    http_server.route("/robots.txt", 200, ROBOTS)
    store = ["-s", "ROBOTSTXT_STORE=disk", "-s", f"ROBOTSTXT_STORE_PATH={tmp_path / 'store'}"]

    first = scrapy(tmp_path, "robotstxt", http_server.url("/private/x"), *store)
    second = scrapy(tmp_path, "robotstxt", http_server.url("/private/x"), *store)

    assert first.returncode == second.returncode == 1, second.stderr
    assert http_server.paths() == ["/robots.txt"]  # fetched by the first run only
    assert not has_field(first.stdout, "Stored")
    assert field(second.stdout, "Stored").endswith("s ago (ROBOTSTXT_STORE), not fetched again")
    verdict = "disallowed (Disallow: /private, line 2)"
    assert field(second.stdout, "Verdict") == field(first.stdout, "Verdict") == verdict


@pytest.mark.parametrize(("path", "status"), [("/private/x", 1), ("/private/ok/1", 0), ("/public", 0)])
def test_fetch_mode_exit_status_is_the_verdict(tmp_path, http_server, path, status):
    http_server.route("/robots.txt", 200, ROBOTS)

    run = scrapy(tmp_path, "robotstxt", http_server.url(path))

    assert run.returncode == status, run.stderr
    assert field(run.stdout, "Verdict").startswith("allowed" if status == 0 else "disallowed")
    assert field(run.stdout, "Matcher")


def test_no_verdict_is_exit_status_3(tmp_path, http_server):
    """The middleware is off (``ROBOTSTXT_OBEY=False`` on the command line): nothing to
    ask, so no verdict, which a script must not read as allowed or disallowed."""
    http_server.route("/robots.txt", 200, ROBOTS)

    run = scrapy(tmp_path, "robotstxt", http_server.url("/private/x"), "-s", "ROBOTSTXT_OBEY=False")

    assert run.returncode == 3, run.stdout + run.stderr
    assert not has_field(run.stdout, "Verdict")
    assert "No verdict" in run.stderr


def test_fetch_mode_404_is_unavailable_and_allows(tmp_path, http_server):
    http_server.route("/robots.txt", 404, "User-agent: *\nDisallow: /\n")

    run = scrapy(tmp_path, "robotstxt", http_server.url("/private/x"))

    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "Access:     unavailable (status 404" in out
    assert field(out, "Verdict").startswith("allowed")
    assert http_server.paths() == ["/robots.txt"]


@pytest.mark.parametrize("status", [503, 429])
def test_fetch_mode_5xx_is_unreachable_and_disallows(tmp_path, http_server, status):
    http_server.route("/robots.txt", status, "User-agent: *\nAllow: /\n")

    run = scrapy(tmp_path, "robotstxt", http_server.url("/public/x"))

    assert run.returncode == 1, run.stderr  # held: a complete disallow for now
    out = run.stdout
    assert f"Access:     unreachable (status {status})" in out  # the status once
    assert field(out, "Verdict") == (f"held (robots.txt unreachable (status {status}): complete disallow until a "
                                     "fetch succeeds)")
    assert has_field(out, "Retry in")
    # Fetched once; the command does not wait for retries.
    assert http_server.paths() == ["/robots.txt"]


def test_fetch_mode_connection_refused_is_unreachable(tmp_path):
    # A port that was just free: bind, note it, close.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    run = scrapy(tmp_path, "robotstxt", f"http://127.0.0.1:{port}/x")

    assert run.returncode == 1, run.stderr
    assert "Access:     unreachable (status -" in run.stdout
    verdict = field(run.stdout, "Verdict")
    assert verdict.startswith("held (robots.txt unreachable (") and "refused" in verdict.lower(), verdict
    assert verdict.endswith("): complete disallow until a fetch succeeds)")
    assert "ROBOTSTXT_MAX_WAIT" not in run.stdout  # the verdict and the state, not crawl advice


def test_fetch_mode_a_host_that_does_not_resolve_is_dropped_not_held(tmp_path):
    run = scrapy(tmp_path, "robotstxt", "http://nonexistent-host.invalid/x")

    assert run.returncode == 1, run.stderr
    assert "Access:     unreachable (status -" in run.stdout
    verdict = field(run.stdout, "Verdict")
    assert verdict.startswith("dropped (robots.txt: for a host name that does not resolve ("), verdict


def test_fetch_mode_a_url_without_a_scheme_is_not_reported_allowed(tmp_path, http_server):
    http_server.route("/robots.txt", 200, ROBOTS)
    schemeless = http_server.url("/private/x").removeprefix("http://")

    run = scrapy(tmp_path, "robotstxt", schemeless)

    assert run.returncode == 1, run.stderr
    assert field(run.stdout, "Verdict").startswith("disallowed"), run.stdout


# --------------------------------------------------------------------------- help


def test_scrapy_help_lists_the_command(tmp_path):
    run = scrapy(tmp_path, "-h")

    assert run.returncode == 0, run.stderr
    (line,) = [line for line in run.stdout.splitlines() if line.split()[:1] == ["robotstxt"]]
    assert "Explain what robots.txt says about a URL" in line


def test_robotstxt_help_shows_usage_and_options(tmp_path):
    run = scrapy(tmp_path, "robotstxt", "-h")

    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "scrapy robotstxt [options] URL" in out
    assert "--agent" in out
    assert "--file" in out
    assert "Explain what robots.txt says about a URL (RFC 9309)" in out


def test_robotstxt_help_is_not_mangled_at_80_columns(tmp_path):
    run = scrapy(tmp_path, "robotstxt", "-h", columns=80)

    headings = [
        previous.strip()
        for previous, line in zip(run.stdout.splitlines(), run.stdout.splitlines()[1:], strict=False)
        if line and set(line) <= {"=", "-"}
    ]
    assert headings == ["Usage", "Options", "Global Options"]


TDMREP_RULES = ('[{"location": "/reserved/", "tdm-reservation": 1, "tdm-policy": "https://example.com/p.json"},'
                ' {"location": "/", "tdm-reservation": 0}]')


#: ROBOTS without its Content-Usage record (which would deny train-ai before the tdmrep.json is asked).
ROBOTS_NO_USAGE = ROBOTS.replace("Content-Usage: train-ai=n\n", "")


def test_fetch_mode_with_tdmrep_reports_the_rule_and_an_enforced_reservation(tmp_path, http_server):
    http_server.route("/robots.txt", 200, ROBOTS_NO_USAGE)
    http_server.route("/.well-known/tdmrep.json", 200, TDMREP_RULES, Content_Type="application/json")
    tdm = ("-s", "ROBOTSTXT_TDMREP=True")
    reserved = http_server.url("/reserved/x")

    shown = scrapy(tmp_path, "robotstxt", reserved, *tdm)
    enforced = scrapy(tmp_path, "robotstxt", reserved, *tdm, "-s", "ROBOTSTXT_USAGE_DENY=train-ai")
    open_url = scrapy(tmp_path, "robotstxt", http_server.url("/public/x"), *tdm, "-s", "ROBOTSTXT_USAGE_DENY=train-ai")
    forbidden = scrapy(tmp_path, "robotstxt", http_server.url("/private/x"), *tdm)
    without = scrapy(tmp_path, "robotstxt", reserved)

    tdmrep_url = http_server.url("/.well-known/tdmrep.json")
    assert shown.returncode == 0, shown.stderr
    assert field(shown.stdout, "TDMRep") == f"{tdmrep_url} (parsed, status 200)"
    assert field(shown.stdout, "TDM rule") == (f"TDM rights reserved (rule 0, location '/reserved/', tdm-policy "
                                               f"https://example.com/p.json, of {tdmrep_url})")
    assert enforced.returncode == 1, enforced.stderr
    assert field(enforced.stdout, "TDM rule") == field(shown.stdout, "TDM rule")  # the rule, told once
    assert field(enforced.stdout, "Verdict") == (f"reserved ({field(shown.stdout, 'TDM rule')}; "
                                                 "ROBOTSTXT_USAGE_DENY denies train-ai)")
    assert open_url.returncode == 0, open_url.stderr
    assert field(open_url.stdout, "TDM rule").startswith("TDM rights not reserved (rule 1, location '/'")
    # A URL the robots.txt forbids is not judged by the tdmrep.json; without the setting it is not fetched.
    assert forbidden.returncode == 1 and not has_field(forbidden.stdout, "TDMRep")
    assert without.returncode == 0 and not has_field(without.stdout, "TDMRep")
    assert http_server.paths().count("/.well-known/tdmrep.json") == 3


def test_fetch_mode_with_tdmrep_and_no_file(tmp_path, http_server):
    http_server.route("/robots.txt", 200, ROBOTS_NO_USAGE)

    run = scrapy(tmp_path, "robotstxt", http_server.url("/reserved/x"), "-s", "ROBOTSTXT_TDMREP=True",
                 "-s", "ROBOTSTXT_USAGE_DENY=train-ai")

    assert run.returncode == 0, run.stderr
    assert field(run.stdout, "TDMRep") == http_server.url("/.well-known/tdmrep.json") + " (unavailable, status 404)"
    assert field(run.stdout, "TDM rule") == "none (no tdmrep.json)"
