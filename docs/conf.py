"""Sphinx configuration of the scrapy-rfc9309 documentation.

The pages are Markdown (MyST) that read as plain Markdown too (on a forge, in a
checkout): links are Markdown links, ``[text](page.md#heading)``, which MyST resolves.
The settings page's table is generated from ``scrapy_rfc9309.config.SETTINGS`` (the
table the code reads its defaults from) and committed in ``settings.md`` between two
comments; ``python docs/conf.py`` (``make settings-table``) writes it again, and a
build whose page holds another table warns (``make docs`` fails), as a test does, so
the page cannot drift from the code. The API pages use autodoc on the installed
package (``make venv`` installs it editable, Read the Docs installs it too).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from sphinx.util import logging

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
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

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


SETTINGS_PAGE = HERE / "settings.md"
#: The comments around the generated table in the settings page.
TABLE_START = ("<!-- The table below is generated from scrapy_rfc9309.config.SETTINGS by `make settings-table` "
               "(python docs/conf.py): change the code's table, not this one. -->")
TABLE_END = "<!-- End of the generated table. -->"


def settings_page(text: str) -> str:
    """``text`` (the settings page) with the table between its comments generated again."""
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    return f"{text[:start]}\n\n{settings_table()}\n\n{text[end:]}"


def write_settings_table() -> bool:
    """Write the settings page's table from the code's table; return whether it changed."""
    text = SETTINGS_PAGE.read_text(encoding="utf-8")
    new = settings_page(text)
    if new != text:
        SETTINGS_PAGE.write_text(new, encoding="utf-8")
    return new != text


def _check_settings_table(app: Any) -> None:
    text = SETTINGS_PAGE.read_text(encoding="utf-8")
    if settings_page(text) != text:
        logging.getLogger(__name__).warning(
            "docs/settings.md: its settings table is not the one scrapy_rfc9309.config.SETTINGS makes; "
            "run `make settings-table` and commit the page")


def setup(app: Any) -> None:
    app.connect("builder-inited", _check_settings_table)


if __name__ == "__main__":
    print("docs/settings.md", "written" if write_settings_table() else "already current")
