"""The documentation shows the code's settings: the settings page's table is generated
from :data:`scrapy_rfc9309.config.SETTINGS` (``docs/conf.py``) and committed, and is
current; every setting appears with its type, default and an example that
:class:`Config` accepts, and Config reads every entry of the table. The pages read
whole as plain Markdown (on a forge, in a checkout): Markdown links that lead to a file
and heading of the checkout, no MyST roles."""

from __future__ import annotations

import html
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from optional import missing
from scrapy.settings import Settings

from scrapy_rfc9309.config import DEFAULTS, SETTINGS, Config, _shown, settings_table

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _load_conf() -> object:
    spec = importlib.util.spec_from_file_location("docs_conf", DOCS / "conf.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settings_page_holds_the_table_the_code_makes():
    """Regenerated, the committed page is unchanged (else: ``make settings-table``)."""
    conf = _load_conf()
    page = (DOCS / "settings.md").read_text(encoding="utf-8")
    assert conf.settings_page(page) == page, "docs/settings.md is stale: run make settings-table"  # type: ignore[attr-defined]
    table = page[page.index(conf.TABLE_START) + len(conf.TABLE_START):page.index(conf.TABLE_END)]  # type: ignore[attr-defined]
    assert table.strip() == settings_table()


def test_a_stale_table_is_found_and_written_again(tmp_path, monkeypatch):
    conf = _load_conf()
    page = (DOCS / "settings.md").read_text(encoding="utf-8")
    stale = page.replace("| `ROBOTSTXT_MAX_REDIRECTS` | int | `5` |", "| `ROBOTSTXT_MAX_REDIRECTS` | int | `6` |")
    assert stale != page and conf.settings_page(stale) == page  # type: ignore[attr-defined]
    copy = tmp_path / "settings.md"
    copy.write_text(stale, encoding="utf-8")
    monkeypatch.setattr(conf, "SETTINGS_PAGE", copy)
    assert conf.write_settings_table() is True  # type: ignore[attr-defined]
    assert copy.read_text(encoding="utf-8") == page
    assert conf.write_settings_table() is False  # type: ignore[attr-defined]


def test_the_api_page_is_the_one_the_docstrings_make_and_reads_on_a_forge():
    """docs/api.md is generated from api-docstrings.md (autodoc, for Sphinx) and the docstrings:
    current, without a directive a forge would show raw, and naming every object documented."""
    conf = _load_conf()
    page = (DOCS / "api.md").read_text(encoding="utf-8")
    source = (DOCS / "api-docstrings.md").read_text(encoding="utf-8")

    assert conf.api_page() == page, "docs/api.md is stale: run make settings-table"  # type: ignore[attr-defined]
    assert "{eval-rst}" not in page and ".. auto" not in page
    documented = re.findall(r"^\.\. auto(?:function|class|exception|data):: (\S+)", source, re.M)
    assert len(documented) > 30
    listed = re.findall(r"^\| `([\w.]+)` \| (.*) \|$", page, re.M)
    assert {name for name, _ in listed} >= set(documented)
    middleware = dict(listed)["scrapy_rfc9309.RobotsTxtMiddleware"]
    assert middleware == "Downloader middleware enforcing robots.txt per RFC 9309."
    assert all(summary for _, summary in listed), [name for name, summary in listed if not summary]
    # Every section of the docstring page, with its prose, is in the readable one (links use their anchors).
    assert re.findall(r"^## .*$", source, re.M) == re.findall(r"^## .*$", page, re.M)
    assert "import neither Scrapy nor Twisted;" in page


def test_a_stale_api_page_is_found_and_written_again(tmp_path, monkeypatch):
    conf = _load_conf()
    page = (DOCS / "api.md").read_text(encoding="utf-8")
    copy = tmp_path / "api.md"
    copy.write_text(page.replace("| `scrapy_rfc9309.parse` |", "| `scrapy_rfc9309.parse_it` |"), encoding="utf-8")
    monkeypatch.setattr(conf, "API_PAGE", copy)
    assert conf.write_api_page() is True  # type: ignore[attr-defined]
    assert copy.read_text(encoding="utf-8") == page
    assert conf.write_api_page() is False  # type: ignore[attr-defined]


def test_the_table_shows_every_setting_with_its_type_default_and_example():
    rows = settings_table().splitlines()
    assert rows[0] == "| setting | type | default | range | meaning | example |"
    cells = {row.split(" | ")[0].strip("| `"): [c.strip() for c in row.strip("|").split(" | ")] for row in rows[2:]}
    assert set(cells) == {spec.name for spec in SETTINGS}
    assert len(rows) == len(SETTINGS) + 2
    for spec in SETTINGS:
        name, kind, default, _span, summary, example = cells[spec.name]
        assert name == f"`{spec.name}`"
        assert kind == spec.type_name and kind
        assert default == _shown(spec.default) == _shown(DEFAULTS[spec.name])
        assert summary == spec.summary
        assert example.startswith(f"`{spec.name} = ") and example.endswith("`")


def test_every_example_is_a_value_config_accepts():
    for spec in SETTINGS:
        assert spec.example is not None, spec.name
        assert spec.example != spec.default, spec.name
        Config.from_settings(Settings({spec.name: spec.example}))


def test_the_readme_links_to_the_settings_page_and_states_no_defaults_of_its_own():
    text = README.read_text(encoding="utf-8")
    assert "(docs/settings.md)" in text
    # The defaults are stated once, on the generated page: the README names no setting's default.
    assert not re.search(r"\| `ROBOTSTXT_\w+` \|", text)


def _cells(row: str) -> list[str]:
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", "", cell)).split())
            for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]


def test_the_built_settings_page_shows_every_setting_with_its_type_default_and_example(tmp_path):
    """The page as Sphinx builds it (HTML), row by row."""
    if importlib.util.find_spec("sphinx") is None:
        missing("Sphinx is not installed (pip install '.[docs]')")
    out = tmp_path / "html"
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", "-d", str(tmp_path / "doctrees"), str(DOCS), str(out),
         str(DOCS / "settings.md")],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert run.returncode == 0, run.stderr
    page = (out / "settings.html").read_text(encoding="utf-8")
    rows = [_cells(row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S)]
    assert rows[0] == ["setting", "type", "default", "range", "meaning", "example"]
    shown = {row[0]: row for row in rows[1:]}
    assert set(shown) == {spec.name for spec in SETTINGS}
    for spec in SETTINGS:
        _name, kind, default, _span, _summary, example = shown[spec.name]
        assert kind == spec.type_name, spec.name
        assert default == _shown(spec.default).strip("`"), spec.name
        assert example.startswith(f"{spec.name} = "), spec.name


def test_config_defaults_are_the_table_defaults():
    config = Config.from_settings(Settings())
    policy = config.policy
    read = {
        "ROBOTSTXT_USER_AGENT": config.user_agent,
        "ROBOTSTXT_PURPOSE_TOKENS": list(config.purpose_tokens),
        "ROBOTSTXT_MAX_SIZE": config.max_size,
        "ROBOTSTXT_MAX_REDIRECTS": policy.max_redirects,
        "ROBOTSTXT_CACHE_TTL": policy.ttl,
        "ROBOTSTXT_CACHE_MIN_TTL": policy.min_ttl,
        "ROBOTSTXT_CACHE_SIZE": config.cache_size,
        "ROBOTSTXT_RETRY_DELAY": policy.retry_delay,
        "ROBOTSTXT_RETRY_MAX_DELAY": policy.retry_max_delay,
        "ROBOTSTXT_MAX_WAIT": policy.max_wait,
        "ROBOTSTXT_MAX_WAIT_REFUSED": policy.max_wait_refused,
        "ROBOTSTXT_MAX_WAIT_IDLE": config.max_wait_idle,
        "ROBOTSTXT_KEEP_CACHED": policy.keep_cached,
        "ROBOTSTXT_REVALIDATE": policy.revalidate,
        "ROBOTSTXT_CRAWL_DELAY": config.crawl_delay,
        "ROBOTSTXT_CRAWL_DELAY_MAX": config.crawl_delay_max,
        "ROBOTSTXT_USAGE_DENY": list(config.usage_deny),
        "ROBOTSTXT_USAGE_EXTENSIONS": list(config.usage_extensions),
        "ROBOTSTXT_MAX_WAITING": config.max_waiting,
        "ROBOTSTXT_STORE": config.store,
        "ROBOTSTXT_STORE_LOCK_TTL": config.store_lock_ttl,
        "ROBOTSTXT_STORE_RETRY_DELAY": config.store_retry_delay,
        "ROBOTSTXT_STORE_TIMEOUT": config.store_timeout,
        "ROBOTSTXT_DNS_WARMUP": config.dns_warmup,
        "ROBOTSTXT_USAGE_HEADERS": config.usage_headers,
        "ROBOTSTXT_USAGE_META": config.usage_meta,
        "ROBOTSTXT_USAGE_META_MAX_BYTES": config.usage_meta_max_bytes,
        "ROBOTSTXT_TDMREP": config.tdmrep,
        "ROBOTSTXT_LEDGER": config.ledger,
        "ROBOTSTXT_LEDGER_ROTATE_BYTES": config.ledger_rotate_bytes,
        "ROBOTSTXT_LEDGER_RESPONSES": config.ledger_responses,
        "ROBOTSTXT_PROVENANCE": config.provenance,
    }
    for name, value in read.items():
        assert value == DEFAULTS[name], name
    # Unset, ROBOTSTXT_CONCURRENT_FETCHES is CONCURRENT_REQUESTS (16 by default).
    assert DEFAULTS["ROBOTSTXT_CONCURRENT_FETCHES"] is None and config.concurrent_fetches == 16
    # The store's own settings are read by the stores (disk path, Redis URL and prefix).
    assert set(DEFAULTS) - set(read) == {
        "ROBOTSTXT_STORE_PATH", "ROBOTSTXT_REDIS_URL", "ROBOTSTXT_REDIS_PREFIX", "ROBOTSTXT_REDIS_CLUSTER",
        "ROBOTSTXT_CONCURRENT_FETCHES",
    }


def test_every_setting_can_be_changed():
    changed = {
        "ROBOTSTXT_CACHE_TTL": 120, "ROBOTSTXT_MAX_WAIT": 7, "ROBOTSTXT_STORE_TIMEOUT": 3, "ROBOTSTXT_CACHE_SIZE": 5,
    }
    config = Config.from_settings(Settings(changed))
    assert (config.policy.ttl, config.policy.max_wait, config.store_timeout, config.cache_size) == (120, 7, 3, 5)


def _slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading (lower case, punctuation dropped, spaces to hyphens)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    """The headings' anchors of ``page``, and its MyST targets (``(name)=`` lines, which MyST resolves
    and a forge shows as the page)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return ({_slug(match) for match in re.findall(r"^#{1,6} (.+)$", text, re.M)}
            | set(re.findall(r"^\((.+)\)=$", text, re.M)))


def _relative_links(text: str) -> list[str]:
    """The targets of the Markdown links of ``text`` that are not URLs (no scheme, no ``//``)."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:|//", t, re.I)]


def _broken_links(text: str, where: Path = README) -> list[str]:
    """The relative links of ``text`` (the page ``where``, the README by default) that lead to no
    file of the checkout, or to no heading of the page they name."""
    broken = []
    for target in _relative_links(text):
        path, _, anchor = target.partition("#")
        page = (where.parent / path).resolve() if path else where
        if not page.exists() or ROOT not in page.parents:
            broken.append(f"{target}: no {path} in the checkout")
        elif anchor and (page.is_dir() or anchor not in _anchors(page)):
            broken.append(f"{target}: no heading #{anchor} in {path}")
    return broken


def test_every_relative_link_of_the_readme_leads_to_a_file_and_heading_of_the_checkout():
    assert _broken_links(README.read_text(encoding="utf-8")) == []


def test_the_readme_links_to_every_page_of_the_documentation():
    text = README.read_text(encoding="utf-8")
    pages = set(re.findall(r"^(\w+)$", (DOCS / "index.md").read_text(encoding="utf-8"), re.M))
    assert {"quickstart", "troubleshooting", "changelog"} <= pages
    linked = {Path(t.partition("#")[0]).stem for t in _relative_links(text) if t.startswith("docs/")}
    assert pages <= linked, sorted(pages - linked)


def _without_code(text: str) -> str:
    """``text`` without its fenced blocks and code spans (which may show a link as an example)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"(`+).+?\1", "", text)


def _pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def test_every_relative_link_of_the_documentation_leads_to_a_file_and_heading_of_the_checkout():
    broken = {page.name: _broken_links(_without_code(page.read_text(encoding="utf-8")), page) for page in _pages()}
    assert {name: links for name, links in broken.items() if links} == {}


#: A MyST role (``{doc}`page```, ``{class}`~x.Y```): raw text on a forge.
_ROLE = re.compile(r"\{[a-z:]+\}`[^`]*`")


def _prose(text: str) -> str:
    """``text`` without its fenced blocks and double-backtick code spans (which may show a role)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"``.+?``", "", text)


def test_the_pages_use_markdown_links_not_myst_roles():
    found = {page.name: _ROLE.findall(_prose(page.read_text(encoding="utf-8"))) for page in [README, *_pages()]}
    assert {name: roles for name, roles in found.items() if roles} == {}


def test_a_myst_role_is_found():
    assert _ROLE.findall(_prose("see {doc}`settings` and {class}`~scrapy_rfc9309.Rule`; ``{doc}`shown` ``")) == [
        "{doc}`settings`", "{class}`~scrapy_rfc9309.Rule`"]


def test_the_readme_names_each_page_once_in_its_list_of_pages():
    text = README.read_text(encoding="utf-8")
    items = re.findall(r"^- \[([^\]]+)\]\(([^)]+)\)", text, re.M)
    assert len(items) >= 10
    assert len(set(items)) == len(items), sorted(item for item in items if items.count(item) > 1)


def test_a_broken_relative_link_is_found():
    text = ("[a](docs/quickstart.md) [b](docs/no-such-page.md) [c](docs/troubleshooting.md#run-modes) "
            "[d](docs/troubleshooting.md#no-such-heading) [e](https://example.com/docs/x.md) [f](../outside.md) "
            "[g](docs/) [h](#license) [i](#nowhere)")
    assert _broken_links(text) == [
        "docs/no-such-page.md: no docs/no-such-page.md in the checkout",
        "docs/troubleshooting.md#no-such-heading: no heading #no-such-heading in docs/troubleshooting.md",
        "../outside.md: no ../outside.md in the checkout",
        "#nowhere: no heading #nowhere in ",
    ]


#: What is outside the ledger, in the same words on the three pages that promise what it records.
NOT_HTTP = ("The ledger records the verdicts on http(s) requests. A request whose URL is not http(s) (`ftp:`, "
            "`s3:`, `file:`, `data:`) is released with a `not_judged` verdict (reason `not_http`): counted in the "
            "close summary and sent with `robotstxt_verdict`, not written to the ledger. The plugin's own requests "
            "have no verdict: its robots.txt and tdmrep.json fetches (the ledger records their results as `state` "
            "records with the versions) and the parking's keeper (`data:,`, never downloaded).")


def test_the_pages_that_promise_the_ledger_say_what_is_outside_it():
    for page in ("README.md", "docs/compliance.md", "docs/ledger-format.md"):
        text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        assert NOT_HTTP in text, page
