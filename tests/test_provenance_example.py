"""The example project's crawl with provenance on, as the docs show it (docs/provenance.md):
``scrapy crawl demo -s ROBOTSTXT_PROVENANCE=provenance -s ROBOTSTXT_LEDGER=... -O items.jsonl``,
then ``scrapy robotstxt audit LEDGER --item items.jsonl``: passing on the export, failing, with the
item's line and field named, on an item whose provenance was edited."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_example_project import SCRAPY, _finish, _start


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    home = tmp_path_factory.mktemp("provenance-demo")
    items, ledger = home / "items.jsonl", home / "ledger"
    done = _finish(_start(SCRAPY, "crawl", "demo", "-s", "ROBOTSTXT_PROVENANCE=provenance", "-s",
                          f"ROBOTSTXT_LEDGER={ledger}", "-O", items, "-L", "INFO"))
    assert done.returncode == 0, done.stderr
    return items, ledger


def _audit(ledger: Path, items: Path) -> subprocess.CompletedProcess[str]:
    return _finish(_start(SCRAPY, "robotstxt", "audit", ledger, "--item", items))


def test_every_page_item_carries_its_provenance(crawl: tuple[Path, Path]) -> None:
    items, _ = crawl
    pages = [json.loads(line) for line in items.read_text().splitlines()]
    assert pages and all(page["provenance"]["url"] == page["url"] for page in pages)
    assert all(page["provenance"]["verdict"] == "allowed" and page["provenance"]["ledger"] for page in pages)


def test_the_audit_passes_on_the_export(crawl: tuple[Path, Path]) -> None:
    items, ledger = crawl
    done = _audit(ledger, items)
    count = len(items.read_text().splitlines())
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{count} read, {count} with a provenance, {count} tied to a verified verdict record" in done.stdout
    assert done.stdout.rstrip().endswith("Items: OK")


@pytest.mark.parametrize(("key", "value", "field"), [
    ("verdict", "disallowed", "provenance.verdict"),
    ("rule", {"directive": "Allow", "pattern": "/private/", "line": 1}, "provenance.rule"),
])
def test_the_audit_fails_on_an_edited_item(crawl: tuple[Path, Path], tmp_path: Path, key: str, value: object,
                                            field: str) -> None:
    items, ledger = crawl
    lines = items.read_text().splitlines()
    item = json.loads(lines[2])
    item["provenance"][key] = value
    lines[2] = json.dumps(item)
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join(lines) + "\n")

    done = _audit(ledger, edited)

    assert done.returncode == 1, done.stdout + done.stderr
    assert f"item line 3: {field}: " in done.stdout, done.stdout
    assert "Items: 1 problem" in done.stdout
