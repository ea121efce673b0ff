"""``scrapy settings --get NAME`` in a project, run as a real command in a subprocess: it
shows the settings a crawl gets, with the changes of the project's add-ons, so that with
the add-on every ``ROBOTSTXT_*`` setting shows the value in force."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import crawl
import pytest_twisted
from crawl import run_crawl
from scrapy.settings import Settings

from scrapy_rfc9309 import Addon, _compat
from scrapy_rfc9309.config import DEFAULTS, SETTINGS

ADDON = 'ADDONS = {"scrapy_rfc9309.Addon": 0}\n'
EXPLICIT = (
    "ROBOTSTXT_OBEY = True\n"
    "DOWNLOADER_MIDDLEWARES = {\n"
    '    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,\n'
    '    "scrapy_rfc9309.RobotsTxtMiddleware": 100,\n'
    "}\n"
)


def project(root: Path, settings: str) -> Path:
    """A project as ``scrapy startproject`` lays it out, with ``settings`` as its settings.py."""
    (root / "scrapy.cfg").write_text("[settings]\ndefault = myproject.settings\n")
    package = root / "myproject"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text('BOT_NAME = "myproject"\n' + settings)
    return root


def settings_command(cwd: Path, *args: str) -> str:
    """The output of ``scrapy settings ARGS`` run in ``cwd``; the command must succeed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_") and not k.lower().endswith("_proxy")}
    run = subprocess.run([sys.executable, "-m", "scrapy", "settings", *args], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    return run.stdout.strip()


def test_with_the_addon_every_setting_shows_its_default(tmp_path: Path) -> None:
    root = project(tmp_path, ADDON)

    assert settings_command(root, "--get", "ROBOTSTXT_CACHE_TTL") == "86400.0"
    assert settings_command(root, "--getbool", "ROBOTSTXT_OBEY") == "True"
    # One setting of each kind (every setting's default: test_the_addon_sets_each_default_...).
    kinds = {spec.kind: spec for spec in SETTINGS if spec.default is not None}
    assert set(kinds) == {"int", "float", "bool", "str", "list", "object"}
    for spec in kinds.values():
        assert settings_command(root, "--get", spec.name) == str(spec.default), spec.name
    middlewares = json.loads(settings_command(root, "--get", "DOWNLOADER_MIDDLEWARES"))
    assert middlewares["scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"] is None
    assert sorted(priority for key, priority in middlewares.items() if "scrapy_rfc9309" in key) == [100, 101]


def test_the_project_and_the_command_line_win_over_the_addon(tmp_path: Path) -> None:
    root = project(tmp_path, ADDON + "ROBOTSTXT_CACHE_TTL = 3600\nROBOTSTXT_OBEY = False\n")

    assert settings_command(root, "--get", "ROBOTSTXT_CACHE_TTL") == "3600"
    assert settings_command(root, "--get", "ROBOTSTXT_CACHE_TTL", "-s", "ROBOTSTXT_CACHE_TTL=60") == "60"
    assert settings_command(root, "--getbool", "ROBOTSTXT_OBEY") == "False"
    assert settings_command(root, "--getfloat", "ROBOTSTXT_RETRY_DELAY") == "5.0"


def test_without_addons_the_command_shows_what_scrapy_shows(tmp_path: Path) -> None:
    """No add-on: the project's settings as Scrapy's own command prints them (no
    ``ROBOTSTXT_*`` default appears: the explicit set-up does not change the settings)."""
    root = project(tmp_path, EXPLICIT)

    assert settings_command(root, "--get", "BOT_NAME") == "myproject"
    assert settings_command(root, "--getbool", "ROBOTSTXT_OBEY") == "True"
    assert settings_command(root, "--get", "ROBOTSTXT_CACHE_TTL") == "None"
    assert settings_command(root, "--getlist", "ROBOTSTXT_USAGE_DENY") == "[]"


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
    """What ``scrapy settings`` prints (``_compat.settings_with_addons``) is what a crawl's
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
