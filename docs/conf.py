"""Sphinx configuration of the scrapy-rfc9309 documentation.

The pages are Markdown (MyST). The settings page's table is written at build time
from ``scrapy_rfc9309.config.SETTINGS`` (the table the code reads its defaults
from) into ``_generated/settings-table.md``, which ``settings.md`` includes, so the
page cannot drift from the code. The API pages use autodoc on the installed
package (``make venv`` installs it editable, Read the Docs installs it too).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

try:
    import scrapy_rfc9309
except ImportError:  # a checkout whose package is not installed: autodoc imports it from there
    sys.path.insert(0, str(HERE.parent))
    import scrapy_rfc9309
from scrapy_rfc9309.config import settings_table  # noqa: E402 (after the import above, which may set the path)

project = "scrapy-rfc9309"
author = "scrapy-rfc9309 developers"
copyright = "scrapy-rfc9309 developers"
release = scrapy_rfc9309.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# _generated/ holds included fragments, not pages of their own.
exclude_patterns = ["_build", "_generated", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Methods that Scrapy documents (RobotParser.from_crawler, SitemapSpider.start) are
# documented there: their docstrings use labels of Scrapy's own site.
autodoc_inherit_docstrings = False
autodoc_default_options = {"members": True, "show-inheritance": True}
# No intersphinx: the build runs without network access (CI), and a reference to
# Scrapy's or Python's classes in a signature stays plain text (not nitpicky).
nitpicky = False

html_theme = "furo"
html_title = f"scrapy-rfc9309 {release}"


def write_settings_table() -> Path:
    """Write the settings table from the code's table; return the file written."""
    target = HERE / "_generated" / "settings-table.md"
    target.parent.mkdir(exist_ok=True)
    text = settings_table() + "\n"
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")
    return target


write_settings_table()
