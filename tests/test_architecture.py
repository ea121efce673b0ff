"""The architecture holds: ``lint-imports`` keeps every contract of ``[tool.importlinter]`` in
pyproject.toml (the pure folders import neither Scrapy nor Twisted, the layers import downward
only, no import cycles, the package never imports its public paths), as ``make test`` checks it; and
a copy of the package with one upward import breaks the layers contract, so the check is live."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from optional import missing

ROOT = Path(__file__).resolve().parent.parent
#: Runs import-linter's command in the interpreter of the suite.
LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", LINT], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module", autouse=True)
def _import_linter() -> None:
    try:
        import importlinter  # noqa: F401
    except ImportError:
        missing("import-linter is not installed")


def test_every_contract_is_kept() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 4 kept, 0 broken." in done.stdout, done.stdout


def test_an_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    """The core importing the meta keys' module (a layer above it) in a copy of the checkout."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copytree(ROOT / "scrapy_rfc9309", tmp_path / "scrapy_rfc9309",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    documents = tmp_path / "scrapy_rfc9309" / "core" / "documents.py"
    text = documents.read_text(encoding="utf-8")
    future = "from __future__ import annotations\n"
    documents.write_text(text.replace(future, future + "from ..meta import FETCH_META  # noqa: F401\n", 1),
                         encoding="utf-8")
    # The copy first on the path: the graph is built from it, not from the installed checkout.
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = lint_imports(tmp_path, env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Layers import downward only BROKEN" in done.stdout, done.stdout
    assert "scrapy_rfc9309.core.documents -> scrapy_rfc9309.meta" in done.stdout, done.stdout
    assert "Contracts: 3 kept, 1 broken." in done.stdout, done.stdout
