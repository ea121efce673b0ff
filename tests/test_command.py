"""``scrapy robotstxt URL [--agent X] [--file PATH]`` run as a real command in a subprocess.

The fetch-mode tests serve robots.txt from a :class:`servers.ThreadedOrigin`, an
``http.server`` in a thread of this process (not the Twisted origins: the test does not run the
reactor while it waits for the subprocess); the server records every path it receives.
"""

from __future__ import annotations

import json
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
    assert field(out, "Crawl-delay") == "none applied (the file asks 2.5 s; ROBOTSTXT_CRAWL_DELAY is off)"
    # attach-05, section 3.1: "no preferences are implied for resources that are disallowed".
    assert field(out, "Usage") == "none (a path it may not crawl has none: draft-ietf-aipref-attach-05, 3.1)"
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
    assert field(out, "Crawl-delay") == "none applied (the file asks 2.5 s; ROBOTSTXT_CRAWL_DELAY is off)"
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


def test_with_robotstxt_obey_off_the_verdict_is_the_plugins_and_the_crawl_line_says_so(tmp_path, http_server):
    """``ROBOTSTXT_OBEY=False`` on the command line: the plugin still judges (with its defaults),
    and one line says that a crawl with these settings obeys no robots.txt."""
    http_server.route("/robots.txt", 200, ROBOTS)

    run = scrapy(tmp_path, "robotstxt", http_server.url("/private/x"), "-s", "ROBOTSTXT_OBEY=False")

    assert run.returncode == 1, run.stdout + run.stderr
    assert field(run.stdout, "Verdict") == "disallowed (Disallow: /private, line 2)"
    assert field(run.stdout, "Crawl") == "the project's crawl obeys no robots.txt (ROBOTSTXT_OBEY is False)"
    assert field(run.stdout, "Crawl-delay") == ("none applied (the file asks 2.5 s; the project's crawl obeys no "
                                                "robots.txt)")
    assert "Traceback" not in run.stderr


def test_outside_a_project_there_is_no_crawl_line(tmp_path, http_server):
    http_server.route("/robots.txt", 200, ROBOTS)

    run = scrapy(tmp_path, "robotstxt", http_server.url("/public"))

    assert run.returncode == 0, run.stderr
    assert not has_field(run.stdout, "Crawl")


@pytest.mark.parametrize(("settings", "delay"), [
    (["-s", "ROBOTSTXT_CRAWL_DELAY=True"], "2.5 s"),
    (["-s", "ROBOTSTXT_CRAWL_DELAY=True", "-s", "ROBOTSTXT_CRAWL_DELAY_MAX=1"],
     "1 s (the file asks 2.5 s; capped at ROBOTSTXT_CRAWL_DELAY_MAX)"),
    ([], "none applied (the file asks 2.5 s; ROBOTSTXT_CRAWL_DELAY is off)"),
])
@pytest.mark.parametrize("mode", ["file", "fetch"])
def test_the_crawl_delay_is_printed_as_a_crawl_applies_it(tmp_path, http_server, robots_file, settings, delay, mode):
    http_server.route("/robots.txt", 200, ROBOTS)
    args = ["--file", str(robots_file)] if mode == "file" else []

    run = scrapy(tmp_path, "robotstxt", http_server.url("/public"), *args, *settings)

    assert run.returncode == 0, run.stderr
    assert field(run.stdout, "Crawl-delay") == delay


@pytest.mark.parametrize("argument", ["not-a-url", "nohost/x"])
def test_an_argument_without_a_scheme_that_names_no_host_is_a_usage_error(tmp_path, argument):
    run = scrapy(tmp_path, "robotstxt", argument)

    assert run.returncode == 2, run.stdout + run.stderr
    assert f"cannot check {argument!r}: no scheme" in run.stderr
    assert not has_field(run.stdout, "Verdict")


@pytest.mark.parametrize(("setting", "closest"), [
    ("ROBOTSTXT_USAGE_DENNY=train-ai", "ROBOTSTXT_USAGE_DENY"),
    ("ROBOTSTXT_USER_AGNET=ExampleBot", "ROBOTSTXT_USER_AGENT"),
    ("robotstxt_crawl_delay=True", "ROBOTSTXT_CRAWL_DELAY"),
])
def test_an_unknown_setting_name_is_a_usage_error_naming_the_closest(tmp_path, http_server, setting, closest):
    http_server.route("/robots.txt", 200, ROBOTS)

    run = scrapy(tmp_path, "robotstxt", http_server.url("/public"), "-s", setting)

    assert run.returncode == 2, run.stdout + run.stderr
    name = setting.split("=")[0]
    assert f"{name} is not a setting of scrapy_rfc9309 or Scrapy" in run.stderr
    assert f"did you mean {closest}?" in run.stderr
    assert "Traceback" not in run.stderr
    assert http_server.paths() == []  # refused before anything is fetched


def test_a_setting_value_the_plugin_refuses_is_a_usage_error(tmp_path, http_server):
    run = scrapy(tmp_path, "robotstxt", http_server.url("/public"), "-s", "ROBOTSTXT_MAX_SIZE=lots")

    assert run.returncode == 2, run.stdout + run.stderr
    assert "ROBOTSTXT_MAX_SIZE must be a number" in run.stderr
    assert "Traceback" not in run.stderr


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
    held = field(out, "Held")
    assert held.startswith("a crawl keeps the request waiting, fetches again at each retry, and gives it up in ")
    assert re.search(r"gives it up in (89\d|900) s \(ROBOTSTXT_MAX_WAIT, from the first failed fetch\) or 120 s "
                     r"after held requests are all that is left of it \(ROBOTSTXT_MAX_WAIT_IDLE\)", held), held
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
    # What a crawl does: a refused connection is waited for ROBOTSTXT_MAX_WAIT_REFUSED, not ROBOTSTXT_MAX_WAIT.
    assert re.search(r"gives it up in (2\d|30) s \(ROBOTSTXT_MAX_WAIT_REFUSED, ", field(run.stdout, "Held"))


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


# --------------------------------------------------------------------------- in a project


def startproject(root: Path, settings: str = "") -> Path:
    """A project made by ``scrapy startproject`` (its settings.py as generated, ``settings``
    appended); the project's directory."""
    made = subprocess.run([sys.executable, "-m", "scrapy", "startproject", "myproj", str(root / "myproj")],
                          env=_env(), capture_output=True, text=True, timeout=60, check=False)
    assert made.returncode == 0, made.stderr
    project = root / "myproj"
    with (project / "myproj" / "settings.py").open("a") as handle:
        handle.write("\n" + settings)
    return project


def scrapy_in(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m scrapy robotstxt ARGS`` in the project ``project``."""
    assert (project / "scrapy.cfg").exists()
    return subprocess.run([sys.executable, "-m", "scrapy", "robotstxt", *args, *command_options()], cwd=project,
                          env=_env(), capture_output=True, text=True, timeout=60, check=False)


ENABLED = 'ADDONS = {"scrapy_rfc9309.Addon": 0}\n'
#: The plugin enabled without the add-on, its middleware by path.
EXPLICIT = ("ROBOTSTXT_OBEY = True\nDOWNLOADER_MIDDLEWARES = {\n"
            '    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,\n'
            '    "scrapy_rfc9309.RobotsTxtMiddleware": 543,\n}\n')


@pytest.mark.parametrize(("settings", "crawl"), [
    ("", "the project's crawl uses Scrapy's built-in RobotsTxtMiddleware, not this plugin, and may judge otherwise "
         "(enable it: ADDONS = {'scrapy_rfc9309.Addon': 0})"),
    (ENABLED, "the project's crawl obeys this verdict (scrapy_rfc9309 is enabled)"),
    ("ROBOTSTXT_OBEY = False\n", "the project's crawl obeys no robots.txt (ROBOTSTXT_OBEY is False)"),
    (ENABLED + "ROBOTSTXT_OBEY = False\n", "the project's crawl obeys no robots.txt (ROBOTSTXT_OBEY is False)"),
    (EXPLICIT, "the project's crawl obeys this verdict (scrapy_rfc9309 is enabled)"),
    (EXPLICIT + "ROBOTSTXT_OBEY = False\n", "the project's crawl obeys no robots.txt (ROBOTSTXT_OBEY is False)"),
    ('DOWNLOADER_MIDDLEWARES = {"scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None}\n',
     "the project's crawl obeys no robots.txt (no robots.txt middleware is enabled)"),
], ids=["startproject", "enabled", "obey-off", "enabled-obey-off", "explicit", "explicit-obey-off", "no-middleware"])
def test_in_every_project_the_plugin_judges_and_one_line_says_what_the_crawl_uses(tmp_path, http_server,
                                                                                  settings, crawl):
    """A fresh ``scrapy startproject`` project (``ADDONS = {}``, ``ROBOTSTXT_OBEY = True``: the
    built-in middleware), and projects that enable the plugin or obey nothing: the verdict is
    the plugin's, the exit status its, and the ``Crawl:`` line tells what the project's crawl uses."""
    http_server.route("/robots.txt", 200, ROBOTS)
    project = startproject(tmp_path, settings)

    run = scrapy_in(project, http_server.url("/private/x"))

    assert run.returncode == 1, run.stdout + run.stderr
    assert field(run.stdout, "Verdict") == "disallowed (Disallow: /private, line 2)"
    assert field(run.stdout, "Crawl") == crawl
    assert "Traceback" not in run.stderr, run.stderr
    assert http_server.paths() == ["/robots.txt"]  # one middleware fetched it, once


def test_the_command_writes_the_projects_ledger_only_when_asked(tmp_path, http_server):
    http_server.route("/robots.txt", 200, ROBOTS)
    ledger = tmp_path / "ledger"
    project = startproject(tmp_path, ENABLED + f"ROBOTSTXT_LEDGER = {str(ledger)!r}\n")

    quiet = scrapy_in(project, http_server.url("/private/x"))
    assert quiet.returncode == 1, quiet.stderr
    assert field(quiet.stdout, "Ledger") == "not written (--ledger records the robots.txt fetched in ROBOTSTXT_LEDGER)"
    assert not ledger.exists()

    asked = scrapy_in(project, http_server.url("/private/x"), "--ledger")
    assert asked.returncode == 1, asked.stderr
    assert field(asked.stdout, "Ledger") == f"the robots.txt fetched recorded in {ledger} (ROBOTSTXT_LEDGER)"
    audited = subprocess.run([sys.executable, "-m", "scrapy", "robotstxt", "audit", str(ledger), "--json"],
                             cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60, check=False)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    report = json.loads(audited.stdout)
    assert len(report["runs"]) == 1, report
    assert len(list((ledger / "versions").iterdir())) == 1  # the robots.txt fetched, archived

    nowhere = scrapy_in(startproject(tmp_path / "other"), http_server.url("/private/x"), "--ledger")
    assert nowhere.returncode == 2 and "ROBOTSTXT_LEDGER is not set" in nowhere.stderr, nowhere.stderr


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
