"""The per-item check (evidence.item_check) on ledgers written from docs/ledger-format.md alone
(tests/ledger_writer.py) and items whose provenance names their records as docs/provenance.md
says: what passes, and each field of a mismatch named with the item's line. Pure, fast: the
module's mutation testing runs these (the real crawls' checks are in test_provenance.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from ledger_writer import Run, read_lines, segment, write_version

from scrapy_rfc9309.evidence import item_check
from scrapy_rfc9309.evidence.audit import LedgerError
from scrapy_rfc9309.evidence.item_check import ItemProblem, check_items, cut, format_items, shown_rule

ROBOTS = b"User-agent: *\nAllow: /\nDisallow: /private\n"
ORIGIN = "http://h.test"


class Ledger:
    """A run of verdicts, each with the provenance its item carries."""

    def __init__(self, directory: Path, purpose: list[str] | None = None, robots: bytes = ROBOTS,
                 read: list[str] | None = None) -> None:
        self.directory = directory
        self.run = Run(directory, settings={"purpose": purpose or [], **({"read": read} if read else {})})
        self.digest = write_version(directory, f"{ORIGIN}/robots.txt", robots)
        self.run.state(ORIGIN, self.digest)
        self.items: list[dict[str, Any]] = []

    def verdict(self, path: str, **extra: Any) -> dict[str, Any]:
        url = f"{ORIGIN}{path}"
        self.run.verdict(url, f"fp{len(self.items)}", "allowed", self.digest, ["Allow", "/", 2], **extra)
        provenance = {
            "v": 1, "url": url, "request_url": url, "status": 200, "fetched": self.run.clock + 0.5,
            "verdict": "allowed", "token": "testbot", "purpose_tokens": extra.get("pt", self.run.settings["purpose"]),
            "rule": shown_rule("Allow", "/", 2),
            "robots": {"url": f"{ORIGIN}/robots.txt", "access": "parsed", "status": 200, "fetched": 0.0,
                       "digest": self.digest},
            "usage": {"categories": {}, "sources": [], "directives": []}, "tdmrep": None,
            "ledger": {"run": self.run.run, "seg": self.run.segment, "seq": self.run.count,
                       "hash": self.run.hash.hex()},
        }
        item = {"url": url, "provenance": provenance}
        self.items.append(item)
        return item

    def export(self, path: Path, items: list[Any] | None = None) -> Path:
        path.write_text("".join((item if isinstance(item, str) else json.dumps(item)) + "\n"
                                for item in (self.items if items is None else items)))
        return path


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    made = Ledger(tmp_path / "ledger")
    made.verdict("/a")
    made.verdict("/b")
    made.run.rotate()
    made.verdict("/c")
    made.run.close()
    return made


def problems(check: Any) -> list[tuple[int, str]]:
    return [(p.line, p.field) for p in check.problems]


def test_every_item_verifies(ledger: Ledger, tmp_path: Path) -> None:
    check = check_items([ledger.directory], ledger.export(tmp_path / "items.jsonl"))
    assert (check.items, check.with_provenance, check.verified, check.problems, check.more) == (3, 3, 3, [], 0)
    assert check.exit_status() == 0
    assert format_items(check).splitlines() == [
        f"Items: {tmp_path / 'items.jsonl'}: 3 read, 3 with a provenance, 3 tied to a verified verdict record",
        "Items: OK"]
    assert check.as_dict() == {"file": str(tmp_path / "items.jsonl"), "ok": True, "items": 3, "with_provenance": 3,
                               "verified": 3, "problem_count": 0, "problems": []}


def test_items_without_provenance_and_blank_lines_are_not_checked(ledger: Ledger, tmp_path: Path) -> None:
    items = ledger.export(tmp_path / "items.jsonl", [{"url": "from-start"}, "", ledger.items[0]])
    check = check_items([ledger.directory], items)
    assert (check.items, check.with_provenance, check.verified, check.problems) == (2, 1, 1, [])
    assert check.exit_status() == 0


def test_the_field_name_is_the_one_given(ledger: Ledger, tmp_path: Path) -> None:
    renamed = [{"url": item["url"], "origin": item["provenance"]} for item in ledger.items]
    check = check_items([ledger.directory], ledger.export(tmp_path / "items.jsonl", renamed), "origin")
    assert check.verified == 3
    ledger.items[0]["provenance"]["verdict"] = "held"
    renamed[0]["origin"]["verdict"] = "held"
    check = check_items([ledger.directory], ledger.export(tmp_path / "items.jsonl", renamed), "origin")
    assert problems(check) == [(1, "origin.verdict")]
    assert check_items([ledger.directory], ledger.export(tmp_path / "items.jsonl", renamed)).with_provenance == 0


@pytest.mark.parametrize(("key", "value", "field"), [
    ("verdict", "disallowed", "provenance.verdict"),
    ("token", "otherbot", "provenance.token"),
    ("request_url", f"{ORIGIN}/z", "provenance.request_url"),
    ("rule", shown_rule("Allow", "/", 3), "provenance.rule"),
    ("rule", None, "provenance.rule"),
    ("purpose_tokens", ["ai-bot"], "provenance.purpose_tokens"),
])
def test_a_field_that_differs_from_the_record_is_named(ledger: Ledger, tmp_path: Path, key: str, value: object,
                                                       field: str) -> None:
    ledger.items[1]["provenance"][key] = value
    check = check_items([ledger.directory], ledger.export(tmp_path / "items.jsonl"))
    assert problems(check) == [(2, field)]
    assert repr(value) in check.problems[0].message and "says" in check.problems[0].message
    assert check.verified == 2 and check.exit_status() == 1
    assert format_items(check).splitlines()[-1] == "Items: 1 problem"
    assert str(check.problems[0]).startswith(f"item line 2: {field}: ")


def test_the_robots_version_is_compared(ledger: Ledger, tmp_path: Path) -> None:
    ledger.items[2]["provenance"]["robots"]["digest"] = "0" * 64
    assert problems(check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))) == [
        (3, "provenance.robots.digest")]
    ledger.items[2]["provenance"]["robots"] = None
    assert problems(check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))) == [
        (3, "provenance.robots.digest")]


def test_a_request_with_its_own_purpose_tokens(tmp_path: Path) -> None:
    made = Ledger(tmp_path / "ledger", purpose=["ai-bot"])
    made.verdict("/a")
    made.verdict("/b", pt=[])
    made.run.close()
    assert check_items([made.directory], made.export(tmp_path / "i.jsonl")).verified == 2
    made.items[1]["provenance"]["purpose_tokens"] = ["ai-bot"]
    made.items[0]["provenance"]["purpose_tokens"] = []
    assert problems(check_items([made.directory], made.export(tmp_path / "i.jsonl"))) == [
        (1, "provenance.purpose_tokens"), (2, "provenance.purpose_tokens")]
    del made.items[0]["provenance"]["purpose_tokens"]  # not stated: not compared
    assert problems(check_items([made.directory], made.export(tmp_path / "i.jsonl"))) == [
        (2, "provenance.purpose_tokens")]


def test_a_fetch_before_its_verdict(ledger: Ledger, tmp_path: Path) -> None:
    recorded = ledger.items[0]["provenance"]["fetched"] - 0.5
    ledger.items[0]["provenance"]["fetched"] = recorded - 0.0005  # the record's time rounded: still after
    assert check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl")).problems == []
    ledger.items[0]["provenance"]["fetched"] = recorded - 0.01
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))
    assert problems(check) == [(1, "provenance.fetched")]
    assert "before its verdict was recorded" in check.problems[0].message


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"hash": "0" * 64}, "provenance.ledger.hash", "but the chain hash of"),
    ({"seq": 4}, "provenance.ledger.hash", "but the chain hash of"),
    ({"seq": 99}, "provenance.ledger.seq", "has no line 99 (5 lines)"),
    ({"seg": 3}, "provenance.ledger.seg", "segment 3 of run"),
    ({"run": "20260921T120000Z-host-100-0000bbbb"}, "provenance.ledger.seg", "is not in the ledger"),
])
def test_a_record_the_ledger_does_not_have(ledger: Ledger, tmp_path: Path, change: dict[str, Any], field: str,
                                           words: str) -> None:
    ledger.items[0]["provenance"]["ledger"].update(change)
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))
    assert problems(check) == [(1, field)]
    assert words in check.problems[0].message, check.problems[0].message


def test_a_record_that_is_not_a_verdict(ledger: Ledger, tmp_path: Path) -> None:
    # Line 2 of segment 1 is the state record: the item names it with its right chain hash.
    lines = read_lines(segment(ledger.directory, ledger.run, 1))
    from scrapy_rfc9309.evidence.format import chain

    hashed = chain(chain(b"", lines[0][:-1]), lines[1][:-1]).hex()
    ledger.items[0]["provenance"]["ledger"].update(seq=2, hash=hashed)
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))
    assert problems(check) == [(1, "provenance.ledger.seq")]
    assert "is a 'state' record, not a verdict" in check.problems[0].message


@pytest.mark.parametrize("edited", [2, 3, 4])
def test_an_edited_ledger(ledger: Ledger, tmp_path: Path, edited: int) -> None:
    """A record edited before an item's record breaks its chain; one after it (or the seal) fails
    the segment's audit: either way the item is not tied to verified evidence."""
    path = segment(ledger.directory, ledger.run, 1)
    lines = read_lines(path)
    record = json.loads(lines[edited - 1])
    record["t"] = record["t"] + 1
    lines[edited - 1] = json.dumps(record, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(gzip.compress(b"".join(lines)))
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))
    if edited == 2:  # before both items of segment 1: their records' chain breaks
        assert problems(check) == [(1, "provenance.ledger.hash"), (2, "provenance.ledger.hash")]
        assert "breaks at or before this record" in check.problems[0].message
    elif edited == 3:  # the first item's own record
        assert problems(check) == [(1, "provenance.ledger.hash"), (2, "provenance.ledger.hash")]
    else:  # after the first item's record: its links hold, its segment does not verify
        assert problems(check) == [(1, "provenance.ledger"), (2, "provenance.ledger.hash")]
        assert "its segment does not verify" in check.problems[0].message
    assert check.verified == 1  # segment 2's item


def test_items_that_are_no_provenance(ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = [
        "[1]", "{not json", {"provenance": "x"}, {"provenance": {"v": 2}}, {"provenance": {"v": 1}},
        {"provenance": {"v": 1, "ledger": {"run": "r", "seg": True, "seq": 2, "hash": "h"}}},
        {"provenance": {"v": 1, "ledger": {"run": 1, "seg": 1, "seq": 2, "hash": "h"}}},
        {"provenance": {"v": 1, "ledger": {"run": "r", "seg": 1, "seq": "2", "hash": "h"}}},
        {"provenance": {"v": 1, "ledger": {"run": "r", "seg": 1, "seq": 2, "hash": None}}},
        '{"provenance": null, "long": "' + "x" * 3000 + '"}', ledger.items[0],
    ]
    monkeypatch.setattr(item_check, "MAX_ITEM_BYTES", 2000)
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl", bad))
    assert problems(check) == [
        (1, "item"), (2, "item"), (3, "provenance"), (4, "provenance.v"), (5, "provenance.ledger"),
        (6, "provenance.ledger.seg"), (7, "provenance.ledger.run"), (8, "provenance.ledger.seq"),
        (9, "provenance.ledger.hash"), (10, "item")]
    assert check.problems[-1].message == "a line over 2,000 bytes (not read)"
    assert (check.items, check.with_provenance, check.verified) == (10, 8, 1)


def test_problems_past_the_limit_are_counted(ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(item_check, "MAX_PROBLEMS", 1)
    for item in ledger.items:
        item["provenance"].update(verdict="held", token="otherbot")
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))
    assert len(check.problems) == 1 and check.more == 5
    assert check.exit_status() == 1 and check.as_dict()["problem_count"] == 6
    assert format_items(check).splitlines()[-2:] == ["  ... and 5 more problems", "Items: 6 problems"]


def test_the_ledgers_own_problems_fail_the_check(ledger: Ledger, tmp_path: Path) -> None:
    killed = Ledger(tmp_path / "killed")
    killed.verdict("/a")
    killed.run.kill()  # unsealed: everything it wrote verifies, the run did not end cleanly
    check = check_items([killed.directory], killed.export(tmp_path / "i.jsonl"))
    assert check.problems == [] and check.verified == 1
    assert check.exit_status() == 1 and check.exit_status(allow_unsealed=True) == 0
    assert check.as_dict(allow_unsealed=True)["ok"] and not check.as_dict()["ok"]


def test_a_ledger_that_is_not_one_and_items_that_cannot_be_read(ledger: Ledger, tmp_path: Path) -> None:
    with pytest.raises(LedgerError):
        check_items([tmp_path / "nowhere"], ledger.export(tmp_path / "i.jsonl"))
    with pytest.raises(OSError):
        check_items([ledger.directory], tmp_path / "missing.jsonl")


def test_the_bounds_are_those_documented() -> None:
    # docs/provenance.md, "Bounds": a URL 4,096 characters, other texts 200, lists 10 entries.
    assert (item_check.MAX_URL, item_check.MAX_TEXT, item_check.MAX_LIST) == (4096, 200, 10)


def test_texts_are_cut_the_same_on_both_sides() -> None:
    assert cut("x" * 10, 10) == "x" * 10
    assert cut("x" * 11, 10) == "x" * 7 + "..."
    assert shown_rule("Disallow", "/p" * 500, 3)["pattern"] == cut("/p" * 500)
    assert str(ItemProblem(4, "provenance.rule", "m")) == "item line 4: provenance.rule: m"


def test_a_long_pattern_and_url_compare_cut(tmp_path: Path) -> None:
    long = "/" + "q" * 5000
    made = Ledger(tmp_path / "ledger", robots=f"User-agent: *\nAllow: {long}\nDisallow: /\n".encode())
    url = f"{ORIGIN}{long}"
    made.run.verdict(url, "fp", "allowed", made.digest, ["Allow", long, 2])
    item = {"provenance": {"v": 1, "request_url": cut(url, item_check.MAX_URL), "verdict": "allowed",
                           "token": "testbot", "rule": shown_rule("Allow", long, 2), "robots": {"digest": made.digest},
                           "ledger": {"run": made.run.run, "seg": 1, "seq": made.run.count,
                                      "hash": made.run.hash.hex()}}}
    made.run.close()
    check = check_items([made.directory], made.export(tmp_path / "i.jsonl", [item]))
    assert check.problems == [] and check.verified == 1



def test_a_line_of_the_limit_is_read(ledger: Ledger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps(ledger.items[0])
    monkeypatch.setattr(item_check, "MAX_ITEM_BYTES", len(text) + 1)  # the line and its line break
    assert check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl", [text])).verified == 1
    monkeypatch.setattr(item_check, "MAX_ITEM_BYTES", len(text))
    assert problems(check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl", [text]))) == [(1, "item")]


@pytest.mark.parametrize("garbage", [b"not json", b"[" * 100_000 + b"]" * 100_000], ids=["not-json", "deep"])
def test_a_line_that_is_no_record_before_the_items(ledger: Ledger, tmp_path: Path, garbage: bytes) -> None:
    path = segment(ledger.directory, ledger.run, 1)
    lines = read_lines(path)
    lines[1] = garbage + b"\n"
    path.write_bytes(gzip.compress(b"".join(lines)))
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))
    assert problems(check)[:2] == [(1, "provenance.ledger.hash"), (2, "provenance.ledger.hash")]


def test_a_segment_in_both_forms_is_read_once(ledger: Ledger, tmp_path: Path) -> None:
    """A process killed as it compressed leaves a segment's plain form beside its gzip one."""
    closed = segment(ledger.directory, ledger.run, 1)
    segment(ledger.directory, ledger.run, 1, closed=False).write_bytes(gzip.decompress(closed.read_bytes()))
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))
    assert check.verified == 3 and check.problems == []


def test_an_empty_segment_and_one_that_cannot_be_read(ledger: Ledger, tmp_path: Path) -> None:
    closed = segment(ledger.directory, ledger.run, 2)
    whole = closed.read_bytes()
    closed.write_bytes(b"")
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))
    assert problems(check) == [(3, "provenance.ledger.seq")]
    assert check.problems[0].message.endswith("has no line 2 (0 lines)")
    closed.write_bytes(whole[:len(whole) // 2])  # cut short: gzip cannot read it to its end
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))
    assert problems(check) == [(3, "provenance.ledger")]
    assert "cannot be read to line 2" in check.problems[0].message


def test_the_tdmrep_rule_is_compared(tmp_path: Path) -> None:
    made = Ledger(tmp_path / "ledger", read=["robots.txt", "tdmrep.json"])
    tdm = write_version(made.directory, f"{ORIGIN}/.well-known/tdmrep.json",
                        b'[{"location": "/", "tdm-reservation": 0}]', document="tdmrep.json")
    made.run.state(ORIGIN, tdm, document="tdmrep.json")
    item = made.verdict("/a", tv=tdm, tr=[0, "/", 0])
    item["provenance"]["tdmrep"] = {"rule": {"reserved": False, "location": "/", "index": 0, "policy": None}}
    long = "/" + "l" * 500  # a location the provenance keeps cut: compared cut
    made.verdict("/b", tv=tdm, tr=[0, long, 1])["provenance"]["tdmrep"] = {
        "rule": {"reserved": False, "location": cut(long), "index": 1, "policy": None}}
    made.run.close()
    assert check_items([made.directory], made.export(tmp_path / "i.jsonl")).problems == []
    for changed in ({"rule": None}, None, {"rule": {"reserved": True, "location": "/", "index": 0}}):
        item["provenance"]["tdmrep"] = changed
        assert problems(check_items([made.directory], made.export(tmp_path / "i.jsonl"))) == [
            (1, "provenance.tdmrep")]



def test_a_segment_cut_short_after_an_items_record(tmp_path: Path) -> None:
    """The records read before the cut are checked; those after it cannot be read."""
    made = Ledger(tmp_path / "ledger")
    first, _, third = made.verdict("/a"), made.verdict("/b"), made.verdict("/c")  # lines 3, 4 and 5
    made.run.close()
    closed = segment(made.directory, made.run, 1)
    lines = read_lines(closed)
    # The gzip of the segment's first four lines, then a second gzip member cut short.
    closed.write_bytes(gzip.compress(b"".join(lines[:4])) + gzip.compress(b"".join(lines[4:]))[:20])
    check = check_items([made.directory], made.export(tmp_path / "i.jsonl", [first, third]))
    assert problems(check) == [(1, "provenance.ledger"), (2, "provenance.ledger")]
    assert "its segment does not verify" in check.problems[0].message  # read, chained; the audit fails the file
    assert check.problems[1].message.endswith("cannot be read to line 5: Compressed file ended before the "
                                              "end-of-stream marker was reached")


def test_a_file_of_runs_that_is_no_segment(ledger: Ledger, tmp_path: Path) -> None:
    (ledger.directory / "runs" / "0-notes.txt").write_text("not a segment")  # listed first
    check = check_items([ledger.directory], ledger.export(tmp_path / "i.jsonl"))
    assert check.verified == 3 and check.problems == []
    assert check.exit_status() == 1  # the audit reports the file


def test_a_verdict_no_rule_decided(tmp_path: Path) -> None:
    made = Ledger(tmp_path / "ledger", robots=b"User-agent: *\nDisallow: /private\n")
    made.run.verdict(f"{ORIGIN}/x", "fp", "allowed", made.digest, None)  # no rule matched: r is null
    item = {"provenance": {"v": 1, "request_url": f"{ORIGIN}/x", "verdict": "allowed", "token": "testbot",
                           "rule": None, "robots": {"digest": made.digest},
                           "ledger": {"run": made.run.run, "seg": 1, "seq": made.run.count,
                                      "hash": made.run.hash.hex()}}}
    made.run.close()
    assert check_items([made.directory], made.export(tmp_path / "i.jsonl", [item])).verified == 1
    item["provenance"]["rule"] = shown_rule("Disallow", "/private", 2)
    assert problems(check_items([made.directory], made.export(tmp_path / "i.jsonl", [item]))) == [
        (1, "provenance.rule")]
