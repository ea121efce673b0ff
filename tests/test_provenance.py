"""The provenance of items (ROBOTSTXT_PROVENANCE, ProvenanceMiddleware) in real crawls against
local origins, and its per-item check against the ledger (evidence.item_check, ``scrapy
robotstxt audit --item``)."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import attrs
import pytest
import pytest_twisted
import scrapy
from crawl import ListSpider, run_crawl
from ledger_writer import read_lines, records, write_lines
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler
from servers import Static

from scrapy_rfc9309.components.provenance_middleware import MAX_JSON_CHARS, ProvenanceMiddleware, provenance
from scrapy_rfc9309.config import Config
from scrapy_rfc9309.core.verdict import Judgement, Kind
from scrapy_rfc9309.evidence.format import SEGMENT_RE
from scrapy_rfc9309.evidence.item_check import MAX_LIST, MAX_TEXT, check_items, format_items
from scrapy_rfc9309.exceptions import RobotsTxtConfigError
from scrapy_rfc9309.meta import PREFERENCES_META
from scrapy_rfc9309.usage.preferences import Statement, build

ON: dict[str, Any] = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "ROBOTSTXT_USER_AGENT": "MyBot",
                      "ROBOTSTXT_PROVENANCE": "provenance"}
ROBOTS = "User-agent: *\nContent-Usage: train-ai=n\nAllow: /\nDisallow: /private\n"


class Page(scrapy.Item):
    url = scrapy.Field()
    provenance = scrapy.Field()


class BarePage(scrapy.Item):
    url = scrapy.Field()


@dataclasses.dataclass
class DataPage:
    url: str
    provenance: dict[str, Any] | None = None


@attrs.define
class AttrsPage:
    url: str
    provenance: dict[str, Any] | None = None


class ItemSpider(ListSpider):
    """Yields one item of ``kind`` per response (and follows links with ``follow=True``)."""

    name = "items"
    kind: Any = dict

    def parse(self, response: Any, **kwargs: Any) -> Any:
        for output in super().parse(response, **kwargs):
            if isinstance(output, dict) and self.kind is not dict:
                output = self.kind(url=output["url"])
            yield output


def _site(origins: Any) -> Any:
    a = origins()
    a.robots(ROBOTS)
    a["/"] = Static(b'<html><head><title>t</title></head><body><a href="/next">n</a></body></html>',
                    headers={"Content-Type": "text/html", "Content-Usage": "search=y"})
    a["/next"] = Static(b"<html><body>next</body></html>", headers={"Content-Type": "text/html"})
    return a


def _by_url(result: Any) -> dict[str, Any]:
    return {(item["url"] if isinstance(item, dict) else item.url): item for item in result.items}


@pytest_twisted.inlineCallbacks
def test_dict_items_of_a_followed_request_carry_their_own_response(origins, tmp_path):
    a = _site(origins)
    ledger = tmp_path / "ledger"

    result = yield run_crawl(ItemSpider, {**ON, "ROBOTSTXT_LEDGER": str(ledger)}, urls=[a.url("/")], follow=True)

    items = _by_url(result)
    assert sorted(items) == [a.url("/"), a.url("/next")]
    home, following = items[a.url("/")]["provenance"], items[a.url("/next")]["provenance"]
    assert home["v"] == 1 and home["verdict"] == "allowed" and home["token"] == "mybot"
    assert home["url"] == home["request_url"] == a.url("/")
    assert following["url"] == a.url("/next")  # its own response, not the page it was followed from
    assert home["rule"] == {"directive": "Allow", "pattern": "/", "line": 3}
    assert home["robots"]["status"] == 200 and home["robots"]["access"] == "parsed"
    # By category and by source: robots.txt's Content-Usage rule and the page's Content-Usage header.
    assert home["usage"]["categories"]["train-ai"]["value"] == "n"
    assert home["usage"]["categories"]["search"] == {"value": "y", "sources": ["Content-Usage header"]}
    assert {s["source"] for s in home["usage"]["sources"]} == {"robots.txt", "content-usage-header"}
    assert "search" not in following["usage"]["categories"]  # /next sends no header
    # Its verdict record: the one the ledger wrote for this request, with its version and chain hash.
    verdicts = {r["u"]: r for r in records(ledger, "verdict")}
    for item in (home, following):
        record = verdicts[item["request_url"]]
        assert item["robots"]["digest"] == record["ver"] is not None
        assert item["ledger"]["seg"] == 1
        assert item["ledger"]["run"] == SEGMENT_RE.match(next((ledger / "runs").iterdir()).name)["run"]
    assert home["ledger"]["seq"] != following["ledger"]["seq"]
    assert result.stats["robotstxt/provenance/items"] == 2
    assert check_items([ledger], _export(tmp_path, result.items)).verified == 2


@pytest.mark.parametrize("kind", [Page, DataPage, AttrsPage], ids=["scrapy.Item", "dataclass", "attrs"])
@pytest_twisted.inlineCallbacks
def test_item_classes_get_the_field_through_itemadapter(origins, kind):
    a = _site(origins)

    result = yield run_crawl(type("Spider", (ItemSpider,), {"kind": kind}), ON, urls=[a.url("/")])

    (item,) = result.items
    assert isinstance(item, kind)
    assert item["provenance"]["verdict"] == "allowed" if kind is Page else item.provenance["verdict"] == "allowed"
    assert (item["provenance"] if kind is Page else item.provenance)["ledger"] is None  # no ledger: none named


@pytest_twisted.inlineCallbacks
def test_an_item_class_without_the_field_is_a_spider_error_naming_it(origins):
    a = _site(origins)

    result = yield run_crawl(type("Spider", (ItemSpider,), {"kind": BarePage}), ON, urls=[a.url("/")])

    assert result.items == []
    errors = [m for m in result.messages(logging.ERROR) if "Spider error" in m]
    assert errors, result.messages(logging.WARNING)
    traced = [r for r in result.log_records
              if r.exc_info and "BarePage has no field 'provenance'" in str(r.exc_info[1])]
    assert traced and "ROBOTSTXT_PROVENANCE" in str(traced[0].exc_info[1])
    assert result.stats["spider_exceptions/RobotsTxtProvenanceError"] == 1


class StartItemSpider(ItemSpider):
    async def start(self):  # type: ignore[override]
        yield {"url": "from-start"}
        async for request in super().start():
            yield request


@pytest_twisted.inlineCallbacks
def test_items_not_derived_from_a_response_are_left_alone(origins):
    a = _site(origins)

    result = yield run_crawl(StartItemSpider, ON, urls=[a.url("/")])

    items = _by_url(result)
    assert items["from-start"] == {"url": "from-start"}
    assert items[a.url("/")]["provenance"]["verdict"] == "allowed"


@pytest_twisted.inlineCallbacks
def test_a_request_not_judged_says_so(origins):
    a = _site(origins)

    result = yield run_crawl([Request(a.url("/"), meta={"dont_obey_robotstxt": True})], ON)

    (item,) = result.items
    assert item["provenance"]["verdict"] == "not_judged"
    assert item["provenance"]["rule"] is None and item["provenance"]["robots"] is None


@pytest_twisted.inlineCallbacks
def test_off_by_default(origins):
    a = _site(origins)

    result = yield run_crawl([a.url("/")], {k: v for k, v in ON.items() if k != "ROBOTSTXT_PROVENANCE"})

    (item,) = result.items
    assert "provenance" not in item
    assert "robotstxt/provenance/items" not in result.stats


@pytest.mark.parametrize("value", ["has space", "1st", 3, ["provenance"]])
def test_a_bad_field_name_fails_at_start_up_naming_the_setting(value):
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_PROVENANCE must be an item field name"):
        Config.from_settings(get_crawler(settings_dict={"ROBOTSTXT_PROVENANCE": value}).settings)
    assert Config.from_settings(get_crawler(settings_dict={"ROBOTSTXT_PROVENANCE": "prov_1"}).settings).provenance \
        == "prov_1"
    with pytest.raises(NotConfigured):
        ProvenanceMiddleware(get_crawler(settings_dict={"ROBOTSTXT_OBEY": True}))


def test_what_a_site_controls_is_bounded():
    """A response whose sources state many long statements, labels and directives: the
    provenance keeps MAX_LIST of each list and MAX_TEXT of each text, within MAX_JSON_CHARS."""
    long = "x" * 100_000
    statements = [Statement("x-robots-tag", f"{n:02d} {long}", {f"{m:02d}{long}": "n" for m in range(50)}, long,
                            frozenset(f"{m:02d}{long}" for m in range(50)), policy=long) for n in range(50)]
    url = "http://h/" + "p" * 100_000
    request = Request(url, meta={PREFERENCES_META: build(statements)})
    response = scrapy.http.HtmlResponse(url, request=request, body=b"")
    made = provenance(response, request, Judgement(Kind.NOT_JUDGED, url, "bot"), 0.0, ("a" * 1000,) * 50)
    text = json.dumps(made, ensure_ascii=False)
    assert len(text) < MAX_JSON_CHARS, len(text)
    assert len(made["usage"]["sources"]) == MAX_LIST and made["usage"]["more"]["sources"] == 50 - MAX_LIST
    assert max(len(s["text"]) for s in made["usage"]["sources"]) == MAX_TEXT
    assert len(made["purpose_tokens"]) == MAX_LIST
    assert len(made["usage"]["categories"]) == MAX_LIST and made["usage"]["more"]["categories"] == 50 - MAX_LIST
    assert all(len(c["sources"]) == MAX_LIST for c in made["usage"]["categories"].values())


# -- the per-item check ----------------------------------------------------------------------------

def _export(tmp_path: Path, items: list[Any], name: str = "items.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(dict(item)) + "\n" for item in items))
    return path


@pytest.fixture
def crawled(origins, tmp_path) -> Any:
    """A real crawl's ledger and exported items (with provenance)."""

    @pytest_twisted.inlineCallbacks
    def crawl() -> Any:
        a = _site(origins)
        ledger = tmp_path / "ledger"
        result = yield run_crawl(ItemSpider, {**ON, "ROBOTSTXT_LEDGER": str(ledger)}, urls=[a.url("/")], follow=True)
        return ledger, _export(tmp_path, sorted(result.items, key=lambda item: item["url"]))

    return crawl


@pytest_twisted.inlineCallbacks
def test_the_check_passes_on_a_real_crawl_export(crawled):
    ledger, items = yield crawled()

    check = check_items([ledger], items)

    assert (check.items, check.with_provenance, check.verified, check.problems) == (2, 2, 2, []), format_items(check)
    assert check.exit_status() == 0


@pytest.mark.parametrize(("edit", "field"), [
    (lambda p: p.update(verdict="disallowed"), "provenance.verdict"),
    (lambda p: p["rule"].update(line=4), "provenance.rule"),
    (lambda p: p["robots"].update(digest="0" * 64), "provenance.robots.digest"),
    (lambda p: p["ledger"].update(seq=p["ledger"]["seq"] - 1), "provenance.ledger.hash"),
    (lambda p: p["ledger"].update(hash="0" * 64), "provenance.ledger.hash"),
    (lambda p: p.update(request_url=p["request_url"] + "x"), "provenance.request_url"),
    (lambda p: p["ledger"].update(seg=2), "provenance.ledger.seg"),
    (lambda p: p["ledger"].update(seq=10_000), "provenance.ledger.seq"),
])
@pytest_twisted.inlineCallbacks
def test_an_edited_provenance_is_named_by_line_and_field(crawled, edit, field):
    ledger, items = yield crawled()
    lines = items.read_text().splitlines()
    item = json.loads(lines[1])
    edit(item["provenance"])
    lines[1] = json.dumps(item)
    items.write_text("\n".join(lines) + "\n")

    check = check_items([ledger], items)

    assert [(p.line, p.field) for p in check.problems] == [(2, field)], format_items(check)
    assert check.verified == 1 and check.exit_status() == 1


@pytest_twisted.inlineCallbacks
def test_an_edited_verdict_record_breaks_the_items_chain(crawled):
    ledger, items = yield crawled()
    (segment,) = (ledger / "runs").iterdir()
    lines = read_lines(segment)
    first = json.loads(items.read_text().splitlines()[0])["provenance"]["ledger"]["seq"]
    record = json.loads(lines[first - 1])
    record["d"] = "disallowed"
    lines[first - 1] = json.dumps(record, separators=(",", ":")).encode()
    write_lines(segment, lines)

    check = check_items([ledger], items)

    assert (1, "provenance.ledger.hash") in [(p.line, p.field) for p in check.problems], format_items(check)
    assert check.exit_status() == 1


def test_items_that_are_not_objects_and_bad_provenance_versions(tmp_path):
    ledger = tmp_path / "ledger"
    (ledger / "runs").mkdir(parents=True)
    items = tmp_path / "items.jsonl"
    items.write_text('[1]\n{"url": "a"}\n{"provenance": {"v": 2}}\n{"provenance": {"v": 1, "ledger": null}}\n'
                     '{"provenance": {"v": 1, "ledger": {"run": "r", "seg": "1", "seq": 2, "hash": "h"}}}\n')

    check = check_items([ledger], items)

    assert [(p.line, p.field) for p in check.problems] == [
        (1, "item"), (3, "provenance.v"), (4, "provenance.ledger"), (5, "provenance.ledger.seg")]
    assert (check.items, check.with_provenance, check.verified) == (5, 3, 0)



@pytest_twisted.inlineCallbacks
def test_the_tdmrep_rule_and_its_check(origins, tmp_path):
    a = _site(origins)
    a.tdmrep([{"location": "/", "tdm-reservation": 1, "tdm-policy": "https://h/policy.json"}])
    ledger = tmp_path / "ledger"

    result = yield run_crawl([a.url("/")], {**ON, "ROBOTSTXT_TDMREP": True, "ROBOTSTXT_LEDGER": str(ledger)})

    (item,) = result.items
    assert item["provenance"]["tdmrep"] == {"rule": {"reserved": True, "location": "/", "index": 0,
                                                     "policy": "https://h/policy.json"}}
    assert item["provenance"]["usage"]["categories"]["train-ai"]["value"] == "n"
    assert "tdmrep.json" in {s["source"] for s in item["provenance"]["usage"]["sources"]}
    items = _export(tmp_path, [item])
    assert check_items([ledger], items).verified == 1
    item["provenance"]["tdmrep"]["rule"]["location"] = "/other"
    check = check_items([ledger], _export(tmp_path, [item]))
    assert [(p.line, p.field) for p in check.problems] == [(1, "provenance.tdmrep")], format_items(check)


@pytest_twisted.inlineCallbacks
def test_without_the_response_sources_robotstxt_preferences_are_told(origins):
    """ROBOTSTXT_USAGE_HEADERS off (and meta tags not read): no robotstxt_preferences, the request's
    robots.txt preference (robotstxt_usage) is what the provenance tells."""
    a = _site(origins)

    result = yield run_crawl([a.url("/")], {**ON, "ROBOTSTXT_USAGE_HEADERS": False})

    (item,) = result.items
    usage = item["provenance"]["usage"]
    assert usage["categories"] == {"train-ai": {"value": "n", "sources": [f"{a.url('/robots.txt')} line 2 "
                                                                         "(Content-Usage)"]}}
    assert [s["source"] for s in usage["sources"]] == ["robots.txt"]  # the page's header not read
