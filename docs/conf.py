"""Sphinx configuration of the scrapy-rfc9309 documentation.

The pages are Markdown (MyST) that read as plain Markdown too (on a forge, in a
checkout): links are Markdown links, ``[text](page.md#heading)``, which MyST resolves.
The settings page's table is generated from ``scrapy_rfc9309.config.SETTINGS`` (the
table the code reads its defaults from) and committed in ``settings.md`` between two
comments; ``python docs/conf.py`` (``make settings-table``) writes it again, and a
build whose page holds another table warns (``make docs`` fails), as a test does, so
the page cannot drift from the code. ``api-docstrings.md`` uses autodoc on the installed
package (``make venv`` installs it editable, Read the Docs installs it too); ``api.md``, the
same page as plain Markdown that a forge renders, is generated from it (each autodoc
directive a table row: the name and the first sentence of its docstring) and committed,
checked the same way.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
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


API_SOURCE = HERE / "api-docstrings.md"
API_PAGE = HERE / "api.md"
_BLOCK = re.compile(r"```\{eval-rst\}\n(.*?)```\n", re.S)
_DIRECTIVE = re.compile(r"^\.\. auto(function|class|exception|data|module):: (\S+)", re.M)
_ROLE = re.compile(r":[\w:]+:`~?([^`<]*?)(?: <[^>]*>)?`")


def _markdown(text: str) -> str:
    """A docstring's reST inline markup as Markdown: ``code``, and a :role:`target` as code (a
    ``~target`` by its last part, a :role:`text <target>` by its text)."""

    def code(found: re.Match[str]) -> str:
        target = found.group(1).strip()
        return f"`{target.rsplit('.', 1)[-1] if found.group(0).split('`')[1].startswith('~') else target}`"

    return _ROLE.sub(code, text).replace("``", "`").replace("|", "\\|")


def _first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring's first paragraph, on one line."""
    if not doc:
        return ""
    paragraph = " ".join(line.strip() for line in doc.strip().split("\n\n")[0].splitlines())
    found = re.match(r"(.+?\.)(\s|$)", paragraph)
    return _markdown(found.group(1) if found else paragraph)


def _data_doc(module_name: str, name: str) -> list[str]:
    """The ``#:`` comment of the data ``module_name.name``. A module that imports the name (a public
    path re-exporting it, the root package) has no comment of its own: the one of the module it is
    imported from is followed, as far as the module that assigns it."""
    from sphinx.pycode import ModuleAnalyzer

    for _ in range(8):  # re-exports of re-exports, but never a loop
        lines = ModuleAnalyzer.for_module(module_name).find_attr_docs().get(("", name))
        if lines:
            return list(lines)
        spec = importlib.util.find_spec(module_name)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            return []
        package = module_name if spec.submodule_search_locations is not None else module_name.rpartition(".")[0]
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
        source = next(((node, alias) for node in tree.body if isinstance(node, ast.ImportFrom)
                       for alias in node.names if (alias.asname or alias.name) == name), None)
        if source is None:
            return []
        node, alias = source
        module_name = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
        name = alias.name
    return []


def _summary(module_name: str, name: str) -> str:
    """The first sentence of ``module_name.name``'s docstring (a ``#:`` comment for data)."""
    obj = getattr(importlib.import_module(module_name), name)
    if inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj):
        return _first_sentence(inspect.getdoc(obj))
    for owner in (module_name, getattr(obj, "__module__", None)):
        if owner:
            lines = _data_doc(owner, name)
            if lines:
                return _first_sentence("\n".join(lines))
    return ""


def _data_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """autodoc: a re-exported data name gets the ``#:`` comment of the module that assigns it (autodoc
    reads the comments of the module it is named in, and without one shows its type's docstring)."""
    if what != "data":
        return
    module_name, _, attr = name.rpartition(".")
    doc = _data_doc(module_name, attr)
    if doc:
        lines[:] = [*doc, ""]


def _rows(block: str) -> list[tuple[str, str]]:
    """The names an eval-rst block documents (a module's: its ``__all__``), each with its summary."""
    rows = []
    for kind, path in _DIRECTIVE.findall(block):
        if kind == "module":
            module = importlib.import_module(path)
            rows += [(f"{path}.{name}", _summary(path, name)) for name in module.__all__]
        else:
            module_name, _, name = path.rpartition(".")
            rows.append((path, _summary(module_name, name)))
    return rows


API_START = ("<!-- This page is generated from api-docstrings.md and the docstrings by `make settings-table` "
             "(python docs/conf.py): change those, not this page. -->")


def api_page() -> str:
    """``api.md``: ``api-docstrings.md`` with each autodoc block as a Markdown table."""
    text = API_SOURCE.read_text(encoding="utf-8")
    rest = text.partition("\n")[2].lstrip("\n").split("\n\n", 1)[1]  # after the title and the page's own note

    def table(found: re.Match[str]) -> str:
        lines = ["| name | what it is |", "|---|---|"]
        lines += [f"| `{name}` | {summary} |" for name, summary in _rows(found.group(1))]
        return "\n".join(lines) + "\n"

    body = _BLOCK.sub(table, rest)
    note = ("Each name with the first sentence of its docstring; every docstring in full is on\n"
            "[API reference: the docstrings](api-docstrings.md), in the built documentation.")
    return f"{API_START}\n\n# API reference\n\n{note}\n\n{body}"


def write_api_page() -> bool:
    """Write ``api.md`` from ``api-docstrings.md`` and the docstrings; return whether it changed."""
    new = api_page()
    old = API_PAGE.read_text(encoding="utf-8") if API_PAGE.exists() else ""
    if new != old:
        API_PAGE.write_text(new, encoding="utf-8")
    return new != old


def _check_settings_table(app: Any) -> None:
    text = SETTINGS_PAGE.read_text(encoding="utf-8")
    if settings_page(text) != text:
        logging.getLogger(__name__).warning(
            "docs/settings.md: its settings table is not the one scrapy_rfc9309.config.SETTINGS makes; "
            "run `make settings-table` and commit the page")
    if not API_PAGE.exists() or API_PAGE.read_text(encoding="utf-8") != api_page():
        logging.getLogger(__name__).warning(
            "docs/api.md is not the page api-docstrings.md and the docstrings make; run `make settings-table` "
            "and commit the page")


def setup(app: Any) -> None:
    app.connect("builder-inited", _check_settings_table)
    app.connect("autodoc-process-docstring", _data_docstring)


if __name__ == "__main__":
    print("docs/settings.md", "written" if write_settings_table() else "already current")
    print("docs/api.md", "written" if write_api_page() else "already current")
