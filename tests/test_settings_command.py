"""The add-on's settings as a crawl gets them, shown by ``python -m scrapy_rfc9309.config``
(``--get NAME``, ``-s NAME=VALUE``, ``--table``), run as a real command in a subprocess in a
project; and ``scrapy settings``, which stays Scrapy's own command: the package adds no
``settings`` command to the projects of its environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import crawl
import pytest
import pytest_twisted
from crawl import run_crawl
from scrapy.settings import Settings

from scrapy_rfc9309 import Addon
from scrapy_rfc9309.config import DEFAULTS, SETTINGS, settings_table
from scrapy_rfc9309.exceptions import RobotsTxtConfigError
from scrapy_rfc9309.runtime import compat as _compat

ADDON = 'ADDONS = {"scrapy_rfc9309.Addon": 0}\n'
EXPLICIT = (
    "ROBOTSTXT_OBEY = True\n"
    "DOWNLOADER_MIDDLEWARES = {\n"
    '    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,\n'
    '    "scrapy_rfc9309.RobotsTxtMiddleware": 100,\n'
    "}\n"
)
#: The first line of the listing when the project's ADDONS lack the add-on.
ADDED = "# The project's ADDONS lack scrapy_rfc9309.Addon: shown as a crawl with it added."


def project(root: Path, settings: str) -> Path:
    """A project as ``scrapy startproject`` lays it out, with ``settings`` as its settings.py."""
    root.mkdir(exist_ok=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = myproject.settings\n")
    package = root / "myproject"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text('BOT_NAME = "myproject"\n' + settings)
    return root


def command(cwd: Path, *args: str, status: int = 0) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` run in ``cwd`` (no project from SCRAPY_* variables, no proxy); it must exit
    with ``status``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_") and not k.lower().endswith("_proxy")}
    run = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
                         check=False)
    assert run.returncode == status, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    return run


def settings_command(cwd: Path, *args: str) -> str:
    """The output of ``scrapy settings ARGS`` (Scrapy's command) run in ``cwd``."""
    return command(cwd, "-m", "scrapy", "settings", *args).stdout.strip()


def config(cwd: Path, *args: str) -> str:
    """The output of ``python -m scrapy_rfc9309.config ARGS`` run in ``cwd``."""
    return command(cwd, "-m", "scrapy_rfc9309.config", *args).stdout.strip()


def listing(text: str) -> dict[str, tuple[str, str]]:
    """The rows of the listing: name -> (value, source)."""
    rows = [line for line in text.splitlines() if not line.startswith("#")]
    assert re.split(r"\s{2,}", rows[0]) == ["name", "value", "source"], text
    found = {}
    for row in rows[1:]:
        name, value, source = re.split(r"\s{2,}", row)
        found[name] = (value, source)
    return found


# ---------------------------------------------------------------------- scrapy settings: Scrapy's own


def test_the_package_adds_no_settings_command() -> None:
    """Its only Scrapy command is ``robotstxt``: ``scrapy settings`` stays Scrapy's in every project
    of the environment (a ``settings`` entry point would replace Scrapy's own)."""
    commands = {entry.name: entry.value for entry in distribution("scrapy-rfc9309").entry_points
                if entry.group == "scrapy.commands"}
    assert commands == {"robotstxt": "scrapy_rfc9309.commands:RobotstxtCommand"}


def test_scrapy_settings_is_scrapys_own_in_a_project_without_the_addon(tmp_path: Path) -> None:
    """Scrapy's command, as Scrapy prints the settings: the project's value, Scrapy's default of
    ``ROBOTSTXT_OBEY`` where the project sets none, and no ``ROBOTSTXT_*`` setting of the add-on."""
    explicit = project(tmp_path / "explicit", EXPLICIT)
    plain = project(tmp_path / "plain", "")

    assert settings_command(explicit, "--get", "ROBOTSTXT_OBEY") == "True"
    assert settings_command(plain, "--get", "ROBOTSTXT_OBEY") == "False"
    assert settings_command(plain, "--get", "BOT_NAME") == "myproject"
    assert settings_command(explicit, "--get", "ROBOTSTXT_CACHE_TTL") == "None"
    assert settings_command(explicit, "--getlist", "ROBOTSTXT_USAGE_DENY") == "[]"
    assert "Get settings values" in settings_command(plain, "-h")  # Scrapy's description of its command


# ------------------------------------------------------------------ python -m scrapy_rfc9309.config


def test_with_the_addon_every_setting_shows_its_default(tmp_path: Path) -> None:
    root = project(tmp_path, ADDON)

    assert config(root, "--get", "ROBOTSTXT_CACHE_TTL") == "86400.0"
    assert config(root, "--get", "ROBOTSTXT_OBEY") == "True"
    # One setting of each kind (every setting's default: test_the_addon_sets_each_default_...).
    kinds = {spec.kind: spec for spec in SETTINGS if spec.default is not None}
    assert set(kinds) == {"int", "float", "bool", "str", "list", "object"}
    for spec in kinds.values():
        assert config(root, "--get", spec.name) == str(spec.default), spec.name
    middlewares = json.loads(config(root, "--get", "DOWNLOADER_MIDDLEWARES"))
    assert middlewares["scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"] is None
    assert sorted(priority for key, priority in middlewares.items() if "scrapy_rfc9309" in key) == [100, 101]


def test_the_listing_names_each_value_and_its_source(tmp_path: Path) -> None:
    """Every setting of the table, with ``ROBOTSTXT_OBEY``: its value and the priority it was set at
    (the project's, the command line's, the add-on's; ``default``: the package's default)."""
    root = project(tmp_path, ADDON + "ROBOTSTXT_CACHE_TTL = 3600\n")

    shown = listing(config(root, "-s", "ROBOTSTXT_MAX_WAIT=30"))

    assert list(shown) == ["ROBOTSTXT_OBEY", *DEFAULTS]
    assert shown["ROBOTSTXT_OBEY"] == ("True", "addon")
    assert shown["ROBOTSTXT_CACHE_TTL"] == ("3600", "project")
    assert shown["ROBOTSTXT_MAX_WAIT"] == ("30", "cmdline")
    assert shown["ROBOTSTXT_RETRY_DELAY"] == ("5.0", "default")
    assert shown["ROBOTSTXT_USER_AGENT"] == ("None", "default")
    for name, value in DEFAULTS.items():
        if name not in ("ROBOTSTXT_CACHE_TTL", "ROBOTSTXT_MAX_WAIT"):
            assert shown[name] == (str(value), "default"), name


def test_the_project_and_the_command_line_win_over_the_addon(tmp_path: Path) -> None:
    root = project(tmp_path, ADDON + "ROBOTSTXT_CACHE_TTL = 3600\nROBOTSTXT_OBEY = False\n")

    assert config(root, "--get", "ROBOTSTXT_CACHE_TTL") == "3600"
    assert config(root, "--get", "ROBOTSTXT_CACHE_TTL", "-s", "ROBOTSTXT_CACHE_TTL=60") == "60"
    assert config(root, "--get", "ROBOTSTXT_OBEY") == "False"
    assert config(root, "--get", "ROBOTSTXT_RETRY_DELAY") == "5.0"


def test_a_project_without_the_addon_is_shown_as_a_crawl_with_it(tmp_path: Path) -> None:
    """The explicit set-up (no add-on): the values the middleware uses, which are the add-on's
    defaults, and the listing says the add-on was added."""
    root = project(tmp_path, EXPLICIT + "ROBOTSTXT_RETRY_DELAY = 2\n")

    text = config(root)

    assert text.splitlines()[0] == ADDED
    shown = listing(text)
    assert shown["ROBOTSTXT_OBEY"] == ("True", "project")
    assert shown["ROBOTSTXT_RETRY_DELAY"] == ("2", "project")
    assert shown["ROBOTSTXT_CACHE_TTL"] == ("86400.0", "default")
    assert config(root, "--get", "ROBOTSTXT_CACHE_MIN_TTL") == "60.0"
    assert ADDED not in config(project(tmp_path / "with", ADDON))


def test_outside_a_project_scrapys_defaults_with_the_addon(tmp_path: Path) -> None:
    shown = listing(config(tmp_path))

    assert shown["ROBOTSTXT_OBEY"] == ("True", "addon")
    assert shown["ROBOTSTXT_CACHE_TTL"] == ("86400.0", "default")


def test_the_table_and_usage_errors(tmp_path: Path) -> None:
    assert config(tmp_path, "--table") == settings_table()
    for wrong in (["-s", "ROBOTSTXT_CACHE_TTL"], ["--get"], ["--get", "X", "--table"]):
        run = command(tmp_path, "-m", "scrapy_rfc9309.config", *wrong, status=2)
        assert run.stderr.startswith("usage: python -m scrapy_rfc9309.config"), run.stderr


def test_the_addon_sets_each_default_below_every_other_priority() -> None:
    settings = Settings({"ROBOTSTXT_CACHE_TTL": 60, "ADDONS": {Addon: 0}}, priority="project")

    Addon().update_settings(settings)

    assert settings.getfloat("ROBOTSTXT_CACHE_TTL") == 60
    assert settings.getpriority("ROBOTSTXT_CACHE_TTL") == 20
    for name, value in DEFAULTS.items():
        if name != "ROBOTSTXT_CACHE_TTL" and value is not None:
            assert settings[name] == value and settings.getpriority(name) == 0, name
    # A list default is a copy: a crawl that changes its own cannot change the next one's.
    assert settings["ROBOTSTXT_USAGE_DENY"] is not DEFAULTS["ROBOTSTXT_USAGE_DENY"]


@pytest_twisted.inlineCallbacks
def test_the_settings_shown_are_those_of_a_crawl(origins):
    """What ``python -m scrapy_rfc9309.config`` prints (``_compat.settings_with_addons``) is what a crawl's
    ``crawler.settings`` hold, and the settings given are left as they were."""
    a = origins()
    a.robots("User-agent: *\nDisallow: /private\n")
    given = {**crawl.BASE_SETTINGS, "ADDONS": {"scrapy_rfc9309.Addon": 0}, "ROBOTSTXT_MAX_WAIT": 30}
    given.pop("ROBOTSTXT_OBEY")  # the add-on turns it on
    settings = Settings(given)

    shown = _compat.settings_with_addons(settings)
    result = yield run_crawl([a.url("/page"), a.url("/private/x")], given)

    crawled = result.crawler.settings
    assert [e.url for e in result.errors] == [a.url("/private/x")]
    for name in [*DEFAULTS, "ROBOTSTXT_OBEY", "BOT_NAME", "DOWNLOAD_TIMEOUT"]:
        assert shown.get(name) == crawled.get(name), name
    assert shown.getdict("DOWNLOADER_MIDDLEWARES") == crawled.getdict("DOWNLOADER_MIDDLEWARES")
    assert shown.getfloat("ROBOTSTXT_MAX_WAIT") == 30 and shown.getfloat("ROBOTSTXT_CACHE_TTL") == 86400
    assert "ROBOTSTXT_CACHE_TTL" not in settings and not settings.getbool("ROBOTSTXT_OBEY")


# ---------------------------------------------------------------------- setting names the plugin does not know


def test_the_config_command_refuses_an_unknown_setting_name_naming_the_closest(tmp_path: Path) -> None:
    root = project(tmp_path / "p", ADDON + 'ROBOTSTXT_USAGE_DENNY = ["train-ai"]\n')

    in_project = command(root, "-m", "scrapy_rfc9309.config", status=1)
    given = command(tmp_path, "-m", "scrapy_rfc9309.config", "-s", "ROBOTSTXT_USER_AGNET=ExampleBot", status=1)

    assert "ROBOTSTXT_USAGE_DENNY is not a setting of scrapy_rfc9309 or Scrapy" in in_project.stderr
    assert "did you mean ROBOTSTXT_USAGE_DENY?" in in_project.stderr
    assert "did you mean ROBOTSTXT_USER_AGENT?" in given.stderr
    assert in_project.stdout == given.stdout == ""
    # Scrapy's own ROBOTSTXT_* settings are accepted.
    config(tmp_path, "-s", "ROBOTSTXT_PARSER=scrapy.robotstxt.ProtegoRobotParser", "-s", "ROBOTSTXT_OBEY=True")


@pytest_twisted.inlineCallbacks
def test_an_unknown_setting_name_stops_the_crawl_at_start_up(origins):
    a = origins()
    a.robots("User-agent: *\nDisallow: /private\n")

    with pytest.raises(RobotsTxtConfigError) as info:
        yield run_crawl([a.url("/page")], {"ADDONS": {"scrapy_rfc9309.Addon": 0},
                                           "ROBOTSTXT_USAGE_DENNY": ["train-ai"]})

    assert "ROBOTSTXT_USAGE_DENNY is not a setting of scrapy_rfc9309 or Scrapy" in str(info.value)
    assert "did you mean ROBOTSTXT_USAGE_DENY?" in str(info.value)
    assert a.requests == []  # neither robots.txt nor a page was fetched


class _NewerScrapy:
    """An add-on standing for a newer Scrapy: it sets a ``ROBOTSTXT_*`` setting of its own at
    Scrapy's ``default`` priority, as Scrapy's default settings are set."""

    def update_settings(self, settings: Settings) -> None:
        settings.set("ROBOTSTXT_SOMETHING_NEW", True, "default")


@pytest_twisted.inlineCallbacks
def test_scrapys_own_robotstxt_settings_do_not_stop_the_crawl(origins):
    a = origins()
    a.robots("User-agent: *\nDisallow: /private\n")
    settings = {"ADDONS": {"scrapy_rfc9309.Addon": 0, _NewerScrapy: 1}, "ROBOTSTXT_USER_AGENT": "ExampleBot",
                "ROBOTSTXT_PARSER": "scrapy.robotstxt.ProtegoRobotParser"}

    result = yield run_crawl([a.url("/page"), a.url("/private/x")], settings)

    assert [e.url for e in result.errors] == [a.url("/private/x")]
    assert a.url("/page") in [url for url, _ in result.downloaded]
    assert result.crawler.settings.getpriority("ROBOTSTXT_SOMETHING_NEW") == 0
