"""The core (parsing, matching, URL normalisation, the access-result policy and the
stored record form) imports neither Scrapy nor Twisted: it runs where they are not
installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CORE = ["parser", "matcher", "urlnorm", "agent", "usage", "usage.robotstxt_records", "robotstxt", "access", "record",
        "origin", "usage.vocabulary", "usage.preferences", "usage.response_sources", "usage.html_head",
        "tdmrep", "documents", "ledger_format", "audit", "judgement",
        "meta", "bounded", "changes"]

SCRIPT = """
import importlib.abc, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("scrapy", "twisted"):
            raise ImportError(f"the core imported {name}")
        return None

sys.meta_path.insert(0, Refuse())
import scrapy_rfc9309
for module in sys.argv[1:]:
    importlib.import_module(f"scrapy_rfc9309.{module}")
robots = scrapy_rfc9309.parse(b"User-agent: *\\nDisallow: /private\\n")
assert not robots.allowed("https://h/private/x", "bot") and robots.allowed("https://h/x", "bot")
print("pure")
"""


def test_the_core_runs_without_scrapy_or_twisted() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, *CORE], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pure"
