"""The pure folders (``core``, ``usage``, ``evidence``: parsing, matching, URL normalisation, the
state model, the verdict, usage preferences, the ledger's format and audit), the public paths of
their code, the stored record form and the meta keys import neither Scrapy nor Twisted: they run
where those are not installed. The ``pure`` contract of ``[tool.importlinter]`` checks the imports
the code writes; this test imports every such module, package ``__init__`` chains included, with
Scrapy and Twisted refused."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import scrapy_rfc9309

PACKAGE = Path(scrapy_rfc9309.__file__).resolve().parent

#: The folders whose every module is pure.
PURE_FOLDERS = ("core", "usage", "evidence")
#: Pure modules outside them: the public paths of the folders' code, the record form, the meta keys.
PURE_MODULES = ("access", "origin", "judgement", "tdmrep", "changes", "audit", "record", "stores.record", "meta")

SCRIPT = """
import importlib, importlib.abc, sys

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


def pure_modules() -> list[str]:
    """Every module of the pure folders (found by walking them) and the pure modules outside them."""
    found = []
    for folder in PURE_FOLDERS:
        found.append(folder)
        found += [f"{folder}.{info.name}" for info in pkgutil.walk_packages([str(PACKAGE / folder)], prefix="")]
    return [*found, *PURE_MODULES]


def test_the_walk_finds_the_pure_folders_modules() -> None:
    modules = pure_modules()
    assert {"core.matcher", "core.verdict", "core.usage_rules", "usage.preferences", "evidence.audit"} <= set(modules)
    assert len(modules) >= 25, modules


def test_the_core_runs_without_scrapy_or_twisted() -> None:
    # Run beside the package the suite imports (the checkout, or site-packages under tox), so that the
    # child imports that package, not the source tree's: its walk lists the installed C accelerator.
    done = subprocess.run([sys.executable, "-c", SCRIPT, *pure_modules()], cwd=PACKAGE.parent, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pure"
