"""``scrapy robotstxt audit``: ledgers written by a test-side writer that follows
docs/ledger-format.md (tests/ledger_writer.py), audited intact, after each kind of
tampering, and after a ``kill -9``; and the command itself in a subprocess."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ledger_writer import Run, read_lines, rewrite_manifest, segment, write_lines, write_version
from test_command import scrapy

from scrapy_rfc9309.evidence.audit import (
    CORRUPT,
    MISMATCH,
    MISSING,
    ORPHAN,
    UNSEALED,
    Audit,
    LedgerError,
    Problem,
    audit,
    format_text,
)
from scrapy_rfc9309.evidence.format import MANIFEST, RUNS_DIR, VERSIONS_DIR, version_name
from scrapy_rfc9309.evidence.observer import Observer

A, B, C = "http://a.test", "http://b.test", "https://c.test"
ROBOTS_A1 = b"User-agent: *\nDisallow: /private\n"
ROBOTS_A2 = b"User-agent: *\nDisallow: /\nAllow: /open\n"
ROBOTS_C = b"User-agent: *\nContent-Usage: train-ai=n\nDisallow: /x\n"
RUN1 = "20260921T120000Z-host-100-0000aaaa"
RUN2 = "20260921T120500Z-other_host-200-0000bbbb"


@dataclass
class Fleet:
    one: Path
    two: Path
    run1: Run
    run2: Run
    a1: str
    a2: str
    b404: str
    c: str


def build(tmp_path: Path) -> Fleet:
    """Two directories of a fleet: run 1 (three segments) in ``one``, run 2 in ``two``; the
    versions of a.test are in ``one`` only, except the first, which ``two`` wrote too. Run 1 is
    of format 2 (its heads without the settings: a process of an earlier version of the package),
    run 2 of format 3."""
    one, two = tmp_path / "one", tmp_path / "two"
    a1 = write_version(one, "http://a.test/robots.txt", ROBOTS_A1)
    a2 = write_version(one, "http://a.test/robots.txt", ROBOTS_A2)
    b404 = write_version(one, "http://b.test/robots.txt", b"<h1>Not found</h1>", status=404)
    c = write_version(one, "https://c.test/robots.txt", ROBOTS_C, redirects=["https://c.test/robots.txt"],
                      final_url="https://www.c.test/robots.txt")
    assert write_version(two, "http://a.test/robots.txt", ROBOTS_A1) == a1

    run1 = Run(one, RUN1, version=2)
    run1.verdict("http://a.test/page", "f1", "held", None)  # line 2: a.test's robots.txt not known yet
    run1.state(A, a1)
    run1.verdict("http://a.test/page", "f1", "allowed", a1)
    run1.verdict("http://a.test/private/x", "f2", "disallowed", a1, ["Disallow", "/private", 2])  # line 5
    run1.response("http://a.test/page", "f1")
    run1.verdict("http://a.test/robots.txt", "f9", "not_judged", None, why="dont_obey_robotstxt")
    run1.rotate()
    run1.state(B, b404, access="unavailable", status=404)
    run1.verdict("http://b.test/any", "f3", "allowed", b404)
    run1.verdict("http://b.test/late", "f4", "dropped", None, why="closing")
    run1.response("http://b.test/any", "f3", status=200)
    run1.state(A, a2)
    run1.verdict("http://a.test/open/1", "f5", "allowed", a2, ["Allow", "/open", 3])
    run1.verdict("http://a.test/other", "f6", "disallowed", a2, ["Disallow", "/", 2])
    run1.response("http://a.test/open/1", "f5", status=404)
    run1.rotate()
    run1.state(C, c)
    run1.verdict("https://c.test/a", "f7", "usage_denied", c, up="content-usage: train-ai=n (line 2)")
    run1.verdict("https://c.test/b", "f8", "allowed", c, up="content-usage: train-ai=n (line 2)")
    run1.response("https://c.test/b", "f8", d="usage_denied")
    run1.verdict("https://c.test/c", "f10", "requeued", None)
    run1.close()

    run2 = Run(two, RUN2)
    run2.state("http://a.test:80", a1)  # the same origin, its port written
    run2.verdict("http://a.test/one", "g1", "allowed", a1)
    run2.verdict("http://a.test/one", "g1", "allowed", a1)  # a duplicate request (dont_filter)
    run2.response("http://a.test/one", "g1")
    run2.response("http://a.test/one", "g1")
    run2.state(A, a2)  # a2 is only in directory one
    run2.verdict("http://a.test/open/2", "g2", "allowed", a2, ["Allow", "/open", 3])
    run2.response("http://a.test/open/2", "g2")
    run2.close()
    return Fleet(one, two, run1, run2, a1, a2, b404, c)


def problems(result: Audit, kind: str | None = None) -> list[Problem]:
    return [problem for problem in result.problems if kind is None or problem.kind == kind]


def has(result: Audit, path: Path, line: int | None, kind: str, words: str) -> bool:
    return any(p.file == str(path) and p.line == line and p.kind == kind and words in p.message
               for p in result.problems)


@pytest.fixture
def fleet(tmp_path: Path) -> Fleet:
    return build(tmp_path)


def audited(fleet: Fleet) -> Audit:
    return audit([fleet.one, fleet.two])


# -- an intact ledger ---------------------------------------------------------------------
def test_an_intact_fleet_verifies_with_its_counts(fleet: Fleet) -> None:
    result = audited(fleet)
    assert result.problems == []
    assert result.exit_status() == 0
    assert result.versions == 4
    origins = result.origins
    assert sorted(origins) == [A, B, C]
    a = origins[A]
    assert a.requests == {"held": 1, "allowed": 5, "disallowed": 2, "not_judged": 1}
    assert sum(a.responses.values()) == 5
    assert [use.digest for use in sorted(a.versions.values(), key=lambda use: use.first)] == [fleet.a1, fleet.a2]
    first = a.versions[fleet.a1]
    assert (first.document, first.access, first.status) == ("robots.txt", "parsed", 200)
    assert first.first < first.last
    b = origins[B]
    assert b.requests == {"allowed": 1, "dropped": 1}
    assert b.dropped == {"closing": 1}
    assert (b.versions[fleet.b404].access, b.versions[fleet.b404].status) == ("unavailable", 404)
    c = origins[C]
    assert c.requests == {"usage_denied": 1, "allowed": 1, "requeued": 1}
    assert c.responses == {"usage_denied": 1}
    runs = {run.run: run for run in result.runs}
    assert (runs[RUN1].segments, runs[RUN1].records, runs[RUN1].ending) == (3, 22, "ended")
    assert (runs[RUN2].segments, runs[RUN2].ending) == (1, "ended")


def test_one_directory_of_the_fleet_alone_misses_the_version_the_other_holds(fleet: Fleet) -> None:
    result = audit([fleet.two])
    assert [(p.kind, p.line) for p in problems(result)][:1] == [(MISSING, 7)]
    assert fleet.a2 in result.problems[0].message
    assert result.exit_status() == 1


def test_a_segment_left_plain_beside_its_gzip_form_is_the_same_segment(fleet: Fleet) -> None:
    closed = segment(fleet.one, fleet.run1, 2)
    plain = segment(fleet.one, fleet.run1, 2, closed=False)
    plain.write_bytes(gzip.decompress(closed.read_bytes()))  # killed between the rename and the unlink
    assert audited(fleet).problems == []
    lines = read_lines(plain)
    write_lines(plain, lines[:-1])
    result = audited(fleet)
    assert has(result, plain, None, CORRUPT, "differ")


def test_temporary_files_are_ignored(fleet: Fleet) -> None:
    (fleet.one / "runs" / f"{RUN1}-000004.jsonl.gz.tmp").write_bytes(b"partial")
    (fleet.one / VERSIONS_DIR / f"{'0' * 64}.123.tmp").write_bytes(b"partial")
    assert audited(fleet).problems == []


# -- tampering ----------------------------------------------------------------------------
@pytest.mark.parametrize("closed", [True, False])
def test_one_byte_edited_in_a_record(tmp_path: Path, closed: bool) -> None:
    fleet = build(tmp_path)
    path = segment(fleet.one, fleet.run1, 1)
    if not closed:  # the same bytes as an open segment of a killed run
        plain = segment(fleet.one, fleet.run1, 3, closed=False)
        plain.write_bytes(gzip.decompress(segment(fleet.one, fleet.run1, 3).read_bytes()))
        segment(fleet.one, fleet.run1, 3).unlink()
        path = plain
        target = 3  # the usage_denied verdict: "train-ai" becomes "train-AI"
        lines = read_lines(path)
        lines[target - 1] = lines[target - 1].replace(b"train-ai", b"train-AI")
    else:
        target = 5  # the disallowed verdict of /private/x becomes allowed
        lines = read_lines(path)
        lines[target - 1] = lines[target - 1].replace(b'"d":"disallowed"', b'"d":"Disallowed"')
    write_lines(path, lines)
    result = audited(fleet)
    assert has(result, path, target + 1, CORRUPT, "chain breaks")
    assert result.exit_status(allow_unsealed=True) == 1


def test_a_byte_edited_in_the_compressed_bytes(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 2)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    result = audited(fleet)
    assert any(p.file == str(path) and p.kind == CORRUPT for p in result.problems)
    assert result.exit_status() == 1


def test_a_record_deleted(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 1)
    lines = read_lines(path)
    del lines[3]  # the allowed verdict of f1 (line 4)
    write_lines(path, lines)
    result = audited(fleet)
    assert has(result, path, 4, CORRUPT, "chain breaks")
    # f1's response now has no allowed verdict before it.
    assert has(result, path, 5, MISMATCH, "without an earlier allowed verdict")


def test_two_records_reordered(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 2)
    lines = read_lines(path)
    lines[2], lines[3] = lines[3], lines[2]
    write_lines(path, lines)
    result = audited(fleet)
    assert has(result, path, 3, CORRUPT, "chain breaks")


def test_records_at_the_end_removed_the_seal_kept(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 2)
    lines = read_lines(path)
    write_lines(path, [*lines[:-3], lines[-1]])
    result = audited(fleet)
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(path), len(lines) - 2, CORRUPT)]
    assert "chain breaks" in result.problems[0].message


def test_records_at_the_end_removed_the_seals_link_mended(fleet: Fleet) -> None:
    """The seal's own link made to fit the records kept: its count and hash still tell."""
    from scrapy_rfc9309.evidence.format import GENESIS, chain, link

    path = segment(fleet.one, fleet.run1, 2)
    lines = read_lines(path)
    kept, previous = lines[:-3], GENESIS
    for line in kept:
        previous = chain(previous, line[:-1])
    seal = json.loads(lines[-1])
    seal["p"] = link(previous)
    write_lines(path, [*kept, json.dumps(seal, separators=(",", ":")).encode() + b"\n"])
    result = audited(fleet)
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(path), len(kept) + 1, CORRUPT)]
    assert "the seal (n 9" in result.problems[0].message


def test_records_at_the_end_removed_with_the_seal(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 2)
    write_lines(path, read_lines(path)[:-3])
    result = audited(fleet)
    assert has(result, path, None, CORRUPT, "closed (gzip) segment without a seal")
    assert result.exit_status(allow_unsealed=True) == 1


def test_the_last_closed_segment_truncated_with_its_seal_is_not_a_killed_run(fleet: Fleet) -> None:
    """A killed process never leaves a gzip segment without its seal: this one was cut."""
    path = segment(fleet.one, fleet.run1, 3)
    write_lines(path, read_lines(path)[:-2])
    result = audited(fleet)
    # The manifest's end line names the seal removed too.
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(path), None, CORRUPT),
                                                                   (str(fleet.one / MANIFEST), 2, CORRUPT)]
    assert "closed (gzip) segment without a seal" in result.problems[0].message
    assert result.exit_status(allow_unsealed=True) == 1


def test_a_segment_removed_from_the_middle_of_a_run(fleet: Fleet) -> None:
    segment(fleet.one, fleet.run1, 2).unlink()
    result = audited(fleet)
    assert has(result, segment(fleet.one, fleet.run1, 3), None, MISSING, "segment 2 of run")
    assert {run.run: run.ending for run in result.runs}[RUN1] == "incomplete"


def test_the_last_segment_of_a_run_removed(fleet: Fleet) -> None:
    segment(fleet.one, fleet.run1, 3).unlink()
    result = audited(fleet)
    assert has(result, segment(fleet.one, fleet.run1, 2), None, MISSING, "later segments are missing")
    assert result.exit_status(allow_unsealed=True) == 1


def test_the_first_segment_of_a_run_removed(fleet: Fleet) -> None:
    segment(fleet.one, fleet.run1, 1).unlink()
    result = audited(fleet)
    assert has(result, segment(fleet.one, fleet.run1, 2), None, MISSING, "segment 1 of run")


def test_a_segment_replaced_by_one_of_another_run_position(fleet: Fleet) -> None:
    """Segments swapped: the heads name other numbers and their prev links break."""
    two, three = segment(fleet.one, fleet.run1, 2), segment(fleet.one, fleet.run1, 3)
    data = two.read_bytes()
    two.write_bytes(three.read_bytes())
    three.write_bytes(data)
    result = audited(fleet)
    assert has(result, two, 1, CORRUPT, "head names run")
    assert has(result, two, 1, CORRUPT, "prev")


def test_a_version_file_edited(fleet: Fleet, tmp_path: Path) -> None:
    """The body rewritten (Disallow: /private -> /privat), the name kept."""
    scratch = tmp_path / "scratch"
    edited = write_version(scratch, "http://a.test/robots.txt", ROBOTS_A1.replace(b"/private", b"/privat"))
    path = fleet.one / VERSIONS_DIR / version_name(fleet.a1)
    os.replace(scratch / VERSIONS_DIR / version_name(edited), path)
    result = audit([fleet.one])
    assert has(result, path, None, CORRUPT, "digest")
    assert result.exit_status() == 1


def test_a_version_file_damaged(fleet: Fleet) -> None:
    path = fleet.one / VERSIONS_DIR / version_name(fleet.c)
    path.write_bytes(path.read_bytes()[:-40])
    result = audited(fleet)
    # The file's problem, and the verdicts it no longer proves: not a "missing" version.
    assert [(p.file, p.line, p.kind) for p in result.problems][:1] == [(str(path), None, CORRUPT)]
    assert MISSING not in {p.kind for p in result.problems}
    assert has(result, segment(fleet.one, fleet.run1, 3), 5, MISMATCH, "without an earlier allowed verdict")


def test_a_version_file_missing(fleet: Fleet) -> None:
    (fleet.one / VERSIONS_DIR / version_name(fleet.b404)).unlink()
    result = audited(fleet)
    # Reported once, at its first reference: run 1's state of b.test, line 2 of segment 2.
    missing = problems(result, MISSING)
    assert [(p.file, p.line) for p in missing] == [(str(segment(fleet.one, fleet.run1, 2)), 2)]
    # The allowed verdict it stood for cannot be verified: its response is not proven either.
    assert has(result, segment(fleet.one, fleet.run1, 2), 5, MISMATCH, "without an earlier allowed verdict")


def _rewrite_chain(path: Path, edit: dict[int, dict[str, object]]) -> None:
    """Rewrite a segment with records changed and its chain, its seal and the next segment's
    head recomputed: what someone able to rewrite whole files consistently can do (the chain
    cannot show it; the verdict's recomputation can)."""
    from scrapy_rfc9309.evidence.format import GENESIS, SEGMENT_RE, chain, link, segment_name

    records = [json.loads(line) for line in read_lines(path)]
    out, previous = [], GENESIS
    for number, record in enumerate(records, 1):
        record.update(edit.get(number, {}))
        record["p"] = link(previous) if number > 1 else ""
        if record["k"] == "seal":
            record["h"], record["n"] = previous.hex(), number - 1
        line = json.dumps(record, separators=(",", ":")).encode()
        out.append(line + b"\n")
        previous = chain(previous, line)
    write_lines(path, out)
    match = SEGMENT_RE.match(path.name)
    assert match is not None
    following = path.with_name(segment_name(match["run"], int(match["seg"]) + 1, closed=True))
    if records[-1]["k"] == "seal" and following.exists():
        _rewrite_chain(following, {1: {"prev": records[-1]["h"]}})
    elif records[-1]["k"] == "seal":  # the run's last segment: its end in the manifest, and the manifest's chain
        rewrite_manifest(path.parent.parent, {match["run"]: {"h": records[-1]["h"]}})


def test_an_unavailable_robots_txt_without_a_version_allows_without_one(tmp_path: Path) -> None:
    """A robots.txt request refused by another component (no HTTP status): unavailable, no version;
    its allowed verdicts name none. A disallowed verdict, or an origin not in that state, cannot."""
    directory = tmp_path / "refused"
    directory.mkdir()
    run = Run(directory, RUN1)
    run.write("state", o="http://r.test:80", doc="robots.txt", src="fetch", access="unavailable", ver=None,
              status=None, err=None, exp=run.clock + 60)
    run.verdict("http://r.test/a", "r1", "allowed", None)
    run.response("http://r.test/a", "r1")
    run.verdict("http://r.test/b", "r2", "disallowed", None, ["Disallow", "/", 2])  # line 5
    run.verdict("http://other.test/c", "r3", "allowed", None)  # line 6
    run.close()
    result = audit([directory])
    assert [(p.line, p.kind) for p in result.problems] == [(5, MISMATCH), (6, MISMATCH)]
    assert result.origins["http://r.test"].responses == {"passed": 1}


def test_a_verdict_the_archived_robots_txt_does_not_give(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 1)
    _rewrite_chain(path, {5: {"d": "allowed", "r": None}})
    result = audited(fleet)
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(path), 5, MISMATCH)]
    assert "Disallow: /private, line 2" in result.problems[0].message


def test_a_verdict_turned_over_with_its_rule_kept(fleet: Fleet) -> None:
    """a.test/open/1 recorded disallowed by the Allow rule that allows it."""
    path = segment(fleet.one, fleet.run1, 2)
    _rewrite_chain(path, {7: {"d": "disallowed"}})
    result = audited(fleet)
    assert [(p.line, p.kind) for p in result.problems] == [(7, MISMATCH), (9, MISMATCH)]
    assert "disallowed, but version" in result.problems[0].message


def test_a_rule_the_archived_robots_txt_does_not_give(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 2)
    _rewrite_chain(path, {7: {"r": ["Allow", "/open", 4]}})
    result = audited(fleet)
    # The verdict, and the response it no longer proves.
    assert [(p.line, p.kind) for p in result.problems] == [(7, MISMATCH), (9, MISMATCH)]
    assert "Allow: /open, line 3" in result.problems[0].message


def test_a_verdict_tied_to_a_version_not_in_force(fleet: Fleet) -> None:
    """The /private/x verdict claims version a2 while the run's state says a1."""
    path = segment(fleet.one, fleet.run1, 1)
    _rewrite_chain(path, {5: {"ver": fleet.a2, "r": ["Disallow", "/", 2]}})
    result = audited(fleet)
    assert [(p.line, p.kind) for p in result.problems] == [(5, MISMATCH)]
    assert "last state" in result.problems[0].message


def test_a_verdict_tied_to_another_origins_robots_txt(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 2)
    # b.test's 404 version declared a.test's, and the verdict of b.test/any made a.test/any's.
    _rewrite_chain(path, {2: {"o": A}, 3: {"o": A, "u": "http://a.test/any"}})
    result = audited(fleet)
    assert [(p.line, p.kind) for p in result.problems] == [(3, MISMATCH), (5, MISMATCH)]
    assert "is the robots.txt of http://b.test/robots.txt" in result.problems[0].message


def test_a_usage_preference_the_archived_robots_txt_does_not_give(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 3)
    _rewrite_chain(path, {3: {"up": "no usage preference"}})
    result = audited(fleet)
    assert [(p.line, p.kind) for p in result.problems] == [(3, MISMATCH)]


def test_a_response_without_an_allowed_verdict(fleet: Fleet) -> None:
    path = segment(fleet.two, fleet.run2, 1)
    # A third response for g1 (two allowed verdicts), then one for the disallowed-nothing fingerprint zz.
    records = [json.loads(line) for line in read_lines(path)]
    extra = {"k": "response", "t": 0, "p": "", "fp": "g1", "u": "http://a.test/one", "s": 200, "d": "passed"}
    records.insert(6, extra)
    records.insert(7, {**extra, "fp": "zz", "u": "http://a.test/zz"})
    write_lines(path, [json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records])
    _rewrite_chain(path, {})
    result = audited(fleet)
    assert [(p.line, p.kind) for p in result.problems] == [(7, MISMATCH), (8, MISMATCH)]


def test_a_response_after_a_disallowed_verdict(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 1)
    records = [json.loads(line) for line in read_lines(path)]
    records.insert(5, {"k": "response", "t": 0, "p": "", "fp": "f2", "u": "http://a.test/private/x", "s": 200,
                       "d": "passed"})
    write_lines(path, [json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records])
    _rewrite_chain(path, {})
    result = audited(fleet)
    assert [(p.line, p.kind) for p in result.problems] == [(6, MISMATCH)]


#: ROBOTSTXT_TDMREP on, with ROBOTSTXT_USAGE_DENY a category a TDM reservation denies.
TDM_SETTINGS = {"deny": ["train-ai"], "read": ["robots.txt", "headers", "tdmrep.json"], "tdm": True}


def tdm_ledger(tmp_path: Path) -> tuple[Path, Path]:
    """A crawl with ROBOTSTXT_TDMREP: a robots.txt that allows everything, a tdmrep.json that
    reserves /reserved/."""
    directory = tmp_path / "tdm"
    origin = "http://t.test"
    robots = write_version(directory, f"{origin}/robots.txt", b"User-agent: *\nAllow: /\n")
    tdm = write_version(directory, f"{origin}/.well-known/tdmrep.json",
                        b'[{"location": "/reserved/", "tdm-reservation": 1}]', document="tdmrep.json")
    run = Run(directory, RUN1, settings=TDM_SETTINGS)
    run.state(origin, robots)
    run.state(origin, tdm, document="tdmrep.json")
    run.verdict(f"{origin}/reserved/a", "t1", "tdm_reserved", robots, ["Allow", "/", 2], tv=tdm)  # line 4
    run.verdict(f"{origin}/free", "t2", "allowed", robots, ["Allow", "/", 2], tv=tdm)
    run.response(f"{origin}/free", "t2")
    run.close()
    return directory, segment(directory, run, 1)


def test_tdm_reserved_verdicts_are_recomputed_from_the_archived_tdmrep_json(tmp_path: Path) -> None:
    directory, path = tdm_ledger(tmp_path)
    result = audit([directory])
    assert result.problems == []
    assert result.origins["http://t.test"].requests == {"tdm_reserved": 1, "allowed": 1}
    assert [use.document for use in result.origins["http://t.test"].versions.values()] == ["robots.txt",
                                                                                         "tdmrep.json"]
    _rewrite_chain(path, {4: {"u": "http://t.test/free/a"}})
    result = audit([directory])
    assert [(p.line, p.kind) for p in result.problems] == [(4, MISMATCH)]
    assert "does not reserve http://t.test/free/a" in result.problems[0].message
    _rewrite_chain(path, {4: {"tv": None}})
    result = audit([directory])
    assert [(p.line, p.kind) for p in result.problems] == [(4, MISMATCH)]
    assert "without a tdmrep.json version" in result.problems[0].message


def test_problems_beyond_the_listed_ones_are_counted(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    import scrapy_rfc9309.evidence.audit as module

    monkeypatch.setattr(module, "MAX_PROBLEMS", 2)
    (fleet.one / VERSIONS_DIR / version_name(fleet.b404)).unlink()  # 1 missing, 1 response not proven
    segment(fleet.one, fleet.run1, 3).unlink()  # 1 missing, the manifest's end, c's version left orphan
    result = audited(fleet)
    assert len(result.problems) == 2
    assert result.kinds == {MISSING: 2, MISMATCH: 1, CORRUPT: 1, ORPHAN: 1}
    assert result.exit_status() == 1
    text = module.format_text(result)
    assert "Problems (5)" in text and "... and 3 more, not listed" in text
    assert result.as_dict()["problem_count"] == {CORRUPT: 1, MISMATCH: 1, MISSING: 2, ORPHAN: 1}


def test_hostile_files_are_reported_not_read(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line too long, JSON nested deeper than the stack, a version too large, a version file of two
    responses: each a problem, none read whole or crashing the audit."""
    import scrapy_rfc9309.evidence.audit as module

    long_line = segment(fleet.one, fleet.run1, 2)
    lines = read_lines(long_line)
    write_lines(long_line, [*lines[:3], b'{"k":"' + b"x" * (2 << 20) + b'"}\n', *lines[3:]])
    nested = segment(fleet.two, fleet.run2, 1)
    lines = read_lines(nested)
    write_lines(nested, [*lines[:2], b"[" * 200_000 + b"]" * 200_000 + b"\n", *lines[2:]])
    two_responses = fleet.one / VERSIONS_DIR / version_name(fleet.b404)
    with open(two_responses, "ab") as handle:  # a second gzip member: another WARC record
        handle.write((fleet.one / VERSIONS_DIR / version_name(fleet.a1)).read_bytes())
    monkeypatch.setattr(module, "MAX_VERSION_BYTES", 35)  # ROBOTS_A2 (39 bytes) is too large now, ROBOTS_A1 (33) is not
    result = audited(fleet)
    assert has(result, long_line, 4, CORRUPT, "a line over 1024 KiB")
    assert has(result, nested, 3, CORRUPT, "not a JSON object")
    assert has(result, two_responses, None, CORRUPT, "more than one response record")
    assert has(result, fleet.one / VERSIONS_DIR / version_name(fleet.a2), None, CORRUPT, "a body over 0 MiB")


# -- kill -9 ------------------------------------------------------------------------------
def killed(tmp_path: Path) -> tuple[Path, Path]:
    directory = tmp_path / "killed"
    version = write_version(directory, "http://a.test/robots.txt", ROBOTS_A1)
    run = Run(directory, RUN1)
    run.state(A, version)
    run.verdict("http://a.test/1", "k1", "allowed", version)
    run.response("http://a.test/1", "k1")
    run.rotate()
    run.verdict("http://a.test/private/2", "k2", "disallowed", version, ["Disallow", "/private", 2])
    run.verdict("http://a.test/3", "k3", "allowed", version)
    run.response("http://a.test/3", "k3")
    run.kill()
    return directory, segment(directory, run, 2, closed=False)


@pytest.mark.parametrize(("written", "read"), [(None, "all"), ("all", "all"), ("refused", "refused"),
                                               ("some", None)])
def test_a_runs_head_says_which_responses_it_records(tmp_path: Path, written: str | None, read: str | None) -> None:
    version = write_version(tmp_path, "http://a.test/robots.txt", ROBOTS_A1)
    run = Run(tmp_path, RUN1, responses=written)
    run.state(A, version)
    run.verdict("http://a.test/1", "k1", "allowed", version)
    run.close()
    result = audit([tmp_path])
    if read is None:
        assert [(p.line, p.kind) for p in result.problems] == [(1, CORRUPT)]
        assert "head's resp 'some'" in result.problems[0].message
        return
    assert result.problems == [] and result.runs[0].responses == read
    assert ("responses passed to the spider not recorded" in format_text(result)) is (read == "refused")
    assert result.as_dict()["runs"][0]["responses"] == read


def test_a_killed_run_verifies_and_reports_the_missing_seal(tmp_path: Path) -> None:
    directory, open_segment = killed(tmp_path)
    result = audit([directory])
    assert [(p.file, p.kind) for p in result.problems] == [(str(open_segment), UNSEALED)]
    assert "not sealed" in result.problems[0].message and "4 complete records verify" in result.problems[0].message
    assert result.runs[0].ending == "not sealed"
    assert result.exit_status() == 1
    assert result.exit_status(allow_unsealed=True) == 0
    assert result.origins[A].requests == {"allowed": 2, "disallowed": 1}


def test_a_killed_run_with_a_torn_last_line(tmp_path: Path) -> None:
    directory, open_segment = killed(tmp_path)
    with open(open_segment, "ab") as handle:
        handle.write(b'{"k":"verdict","t":1789992099.0,"p":"0123')
    result = audit([directory])
    assert [p.kind for p in result.problems] == [UNSEALED]
    assert "interrupted write" in result.problems[0].message
    assert result.exit_status(allow_unsealed=True) == 0


def test_a_run_killed_as_it_rotated(tmp_path: Path) -> None:
    """Its last segment sealed (no end) but left plain: not sealed, not a missing segment."""
    directory, open_segment = killed(tmp_path)
    with open(open_segment, "ab") as handle:
        handle.write(json.dumps({"k": "seal", "t": 1789992099.0, "p": "", "n": 4, "h": ""}).encode())
    lines = read_lines(open_segment)
    write_lines(open_segment, [*lines[:-1], lines[-1] + b"\n"])
    _rewrite_chain(open_segment, {})
    result = audit([directory])
    assert [(p.file, p.kind) for p in result.problems] == [(str(open_segment), UNSEALED)]
    assert "killed as it rotated" in result.problems[0].message
    assert result.exit_status(allow_unsealed=True) == 0
    # Its gzip form without the next segment: a run whose end was removed.
    write_lines(open_segment.with_name(open_segment.name + ".gz"), read_lines(open_segment))
    open_segment.unlink()
    result = audit([directory])
    assert [p.kind for p in result.problems] == [MISSING]


def test_a_killed_run_with_a_verdict_its_robots_txt_does_not_give(tmp_path: Path) -> None:
    """Both are listed: the verdict, and the missing seal."""
    directory, open_segment = killed(tmp_path)
    _rewrite_chain(open_segment, {2: {"d": "allowed", "r": None}})
    result = audit([directory])
    assert [(p.line, p.kind) for p in result.problems] == [(2, MISMATCH), (None, UNSEALED)]
    assert result.runs[0].ending == "not sealed"
    assert result.exit_status(allow_unsealed=True) == 1


def test_a_killed_run_with_an_edited_record_is_corrupt(tmp_path: Path) -> None:
    directory, open_segment = killed(tmp_path)
    lines = read_lines(open_segment)
    lines[1] = lines[1].replace(b"/private/2", b"/privatE/2")
    write_lines(open_segment, lines)
    result = audit([directory])
    assert has(result, open_segment, 3, CORRUPT, "chain breaks")
    assert result.exit_status(allow_unsealed=True) == 1


def test_a_torn_line_in_a_closed_segment_is_corrupt(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 2)
    lines = read_lines(path)
    write_lines(path, [*lines[:-1], lines[-1][:-5]])
    result = audited(fleet)
    assert has(result, path, len(lines), CORRUPT, "no line break")


# -- usage errors -------------------------------------------------------------------------
def test_what_is_not_a_ledger_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="no such directory"):
        audit([tmp_path / "absent"])
    with pytest.raises(LedgerError, match="not a ledger directory"):
        audit([tmp_path])
    with pytest.raises(LedgerError, match="no ledger directory"):
        audit([])


# -- the command --------------------------------------------------------------------------
def test_the_command_exit_statuses_and_json(fleet: Fleet, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = scrapy(cwd, "robotstxt", "audit", str(fleet.one), str(fleet.two))
    assert done.returncode == 0, done.stderr
    assert "Result: everything verifies (exit 0)" in done.stdout
    row = next(line.split() for line in done.stdout.splitlines() if line.strip().startswith(A))
    assert row == [A, "5", "2", "1", "0", "0", "0", "0", "1", "5"]

    done = scrapy(cwd, "robotstxt", "audit", "--json", str(fleet.one), str(fleet.two))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["exit"] == 0 and report["problems"] == []
    a = next(origin for origin in report["origins"] if origin["origin"] == A)
    assert a["requests"]["allowed"] == 5 and a["responses"]["received"] == 5
    assert [version["digest"] for version in a["versions"]] == [fleet.a1, fleet.a2]

    segment(fleet.one, fleet.run1, 2).unlink()
    done = scrapy(cwd, "robotstxt", "audit", "--json", str(fleet.one), str(fleet.two))
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert [p["kind"] for p in report["problems"]] == [MISSING, ORPHAN]  # b404 was named in segment 2 only
    assert report["problems"][0]["file"] == str(segment(fleet.one, fleet.run1, 3))

    done = scrapy(cwd, "robotstxt", "audit", str(tmp_path / "absent"))
    assert done.returncode == 2 and "no such directory" in done.stderr
    done = scrapy(cwd, "robotstxt", "audit")
    assert done.returncode == 2 and "at least one ledger directory" in done.stderr
    done = scrapy(cwd, "robotstxt", "audit", str(cwd))
    assert done.returncode == 2 and "not a ledger directory" in done.stderr


def test_the_command_and_a_killed_run(tmp_path: Path) -> None:
    directory, _ = killed(tmp_path)
    done = scrapy(tmp_path, "robotstxt", "audit", str(directory))
    assert done.returncode == 1
    assert "unsealed: not sealed" in done.stdout and "Result: FAILED (exit 1)" in done.stdout
    done = scrapy(tmp_path, "robotstxt", "audit", "--allow-unsealed", str(directory))
    assert done.returncode == 0, done.stdout


# -- memory ---------------------------------------------------------------------------------
def _long_run(directory: Path, pairs: int) -> None:
    version = write_version(directory, "http://a.test/robots.txt", ROBOTS_A1)
    run = Run(directory, RUN1)
    run.state(A, version)
    for index in range(pairs):
        url = f"http://a.test/page/{index}"
        run.verdict(url, f"fp{index:08d}", "allowed", version)
        run.response(url, f"fp{index:08d}")
        if index % 2000 == 1999:
            run.rotate()
    run.close()


def test_memory_follows_the_requests_awaiting_a_response_not_the_ledger(tmp_path: Path) -> None:
    """Ten times the records, each response right after its verdict: the memory the audit
    holds while it reads stays where it was (the files are streamed). Its peak is not compared:
    reading a version file takes a transient buffer of its bound (64 MiB) that would hide it."""
    held = []
    for pairs in (2_000, 20_000):
        directory = tmp_path / str(pairs)
        _long_run(directory, pairs)
        result, memory = _held(directory)
        held.append(memory)
        assert result.problems == []
        assert result.origins[A].requests["allowed"] == pairs == sum(result.origins[A].responses.values())
    assert held[1] - held[0] < 500_000, held


def _unanswered_run(directory: Path, allowed: int, responses: str) -> None:
    """A run of ``allowed`` allowed verdicts most of which never get a response record: with
    ``resp`` ``refused`` every 50th gets a ``usage_denied`` one (the others were passed to the
    spider, unrecorded), with ``all`` two in three get a ``passed`` one (the third failed), each a
    few verdicts after its own."""
    version = write_version(directory, "http://a.test/robots.txt", ROBOTS_A1)
    run = Run(directory, RUN1, responses=responses,
              settings={"deny": ["train-ai"], "read": ["robots.txt", "headers"]})
    run.state(A, version)
    answered = (lambda index: index % 50 == 0) if responses == "refused" else (lambda index: index % 3 != 2)
    for index in range(allowed):
        run.verdict(f"http://a.test/page/{index}", f"fp{index:08d}", "allowed", version)
        earlier = index - 5
        if earlier >= 0 and answered(earlier):
            run.response(f"http://a.test/page/{earlier}", f"fp{earlier:08d}",
                         d="usage_denied" if responses == "refused" else "passed")
        if index % 2000 == 1999:
            run.rotate()
    run.close()


def _held(directory: Path, inner: Observer | None = None) -> tuple[Audit, int]:
    """Audit ``directory`` (telling ``inner`` of its records: the report's figures) with an
    observer that samples the memory held (tracemalloc's current size) every 100 records: the
    audit and the largest sample. The peak would measure the transient buffers of reading a file
    (a version file is read into a buffer of its bound)."""
    import tracemalloc

    samples = [0]

    def sample() -> None:
        samples.append(tracemalloc.get_traced_memory()[0])

    tracemalloc.start()
    try:
        result = audit([directory], observer=_Sampler(sample, inner))
        sample()
    finally:
        tracemalloc.stop()
    return result, max(samples)


class _Sampler(Observer):
    def __init__(self, sample: Callable[[], None], inner: Observer | None = None) -> None:
        self.sample, self.inner, self.count = sample, inner, 0

    def started(self, versions: Any, segments: int) -> None:
        if self.inner is not None:
            self.inner.started(versions, segments)

    def segment(self, run: str, number: int) -> None:
        if self.inner is not None:
            self.inner.segment(run, number)

    def record(self, kind: str, record: dict[str, Any], origin: str | None, denied: tuple[str, ...]) -> None:
        if self.inner is not None:
            self.inner.record(kind, record, origin, denied)
        self.count += 1
        if not self.count % 100:
            self.sample()


@pytest.mark.parametrize("responses", ["refused", "all"])
def test_memory_is_bounded_when_allowed_verdicts_get_no_response(tmp_path: Path, responses: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The allowed verdicts awaiting their response are the latest AWAITING of the run (here
    500, to see the bound at test sizes): ten times the verdicts, most never answered (a run
    that records refused responses only, or one whose requests failed), and the memory the
    audit and the report hold stays where it was; every response still finds its verdict."""
    from scrapy_rfc9309.evidence import verdict_check
    from scrapy_rfc9309.evidence.report_figures import Figures

    monkeypatch.setattr(verdict_check, "AWAITING", 500)
    held: dict[str, list[int]] = {"audit": [], "report": []}
    for allowed in (2_000, 20_000):
        directory = tmp_path / str(allowed)
        _unanswered_run(directory, allowed, responses)
        figures = Figures()
        for name, inner in (("audit", None), ("report", figures)):
            result, memory = _held(directory, inner)
            held[name].append(memory)
            assert result.problems == [], result.problems[:3]
            assert result.origins[A].requests["allowed"] == allowed
            answered = result.origins[A].responses["usage_denied" if responses == "refused" else "passed"]
            assert answered == len(range(0, allowed - 5, 50 if responses == "refused" else 1)) - (
                0 if responses == "refused" else len(range(2, allowed - 5, 3)))
        assert sum(figures.verdicts.values()) == allowed
    for name, (small, large) in held.items():
        # Unbounded, the 18,000 more verdicts awaiting would hold some 2 MB more.
        assert large - small < 500_000, (name, held)


def _window_run(directory: Path, allowed: int) -> tuple[Run, str]:
    """A run (refused responses) whose state is line 2, then ``allowed`` allowed verdicts ``fp0``... (lines 3...)."""
    version = write_version(directory, "http://a.test/robots.txt", ROBOTS_A1)
    run = Run(directory, RUN1, responses="refused", settings={"deny": ["train-ai"], "read": ["robots.txt", "meta"]})
    run.state(A, version)
    for index in range(allowed):
        run.verdict(f"http://a.test/page/{index}", f"fp{index}", "allowed", version)
    return run, version


def test_a_response_whose_verdict_lies_beyond_the_window_is_settled_after_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A response whose allowed verdict is older than the latest AWAITING awaiting (here 10: a
    slow download in a broad crawl) is settled by reading the run again: the audit passes and
    counts it for its verdict's origin, in the report too; a fingerprint allowed twice, both
    verdicts beyond the window, proves two responses, and one within the window proves three
    responses no more."""
    from scrapy_rfc9309.evidence import verdict_check
    from scrapy_rfc9309.evidence.report_figures import report_figures

    monkeypatch.setattr(verdict_check, "AWAITING", 10)
    directory = tmp_path / "beyond"
    run, version = _window_run(directory, 0)
    run.verdict("http://a.test/twice", "twice", "allowed", version)
    run.verdict("http://a.test/twice", "twice", "allowed", version)
    for index in range(12):
        run.verdict(f"http://a.test/page/{index}", f"fp{index}", "allowed", version)
        if index == 5:
            run.rotate()  # the verdicts beyond the window are in the run's first segment
    run.response("http://a.test/page/2", "fp2", d="usage_denied")  # 9 newer await: in the window
    run.response("http://a.test/page/1", "fp1", d="usage_denied")  # 10 newer: beyond it
    run.response("http://a.test/twice", "twice", d="usage_denied")
    run.response("http://a.test/twice", "twice", d="usage_denied")
    run.close()
    result, figures = report_figures([directory])
    assert result.problems == [], result.problems
    assert result.origins[A].responses == {"usage_denied": 4}
    assert figures["totals"]["responses"] == {"received": 4, "usage_denied": 4}

    directory = tmp_path / "twice"
    run, version = _window_run(directory, 0)
    run.verdict("http://a.test/twice", "twice", "allowed", version)
    run.verdict("http://a.test/twice", "twice", "allowed", version)
    for _ in range(3):
        run.response("http://a.test/twice", "twice", d="usage_denied")
    run.close()
    problems = audit([directory]).problems
    assert [(problem.line, problem.kind) for problem in problems] == [(7, MISMATCH)], problems
    assert "read again" not in problems[0].message


def test_a_forged_response_beyond_the_window_is_still_a_mismatch(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A response of a fingerprint no allowed verdict of the run names, read while verdicts were
    forgotten, is a mismatch once the run is read again; a genuine one beside it is settled."""
    from scrapy_rfc9309.evidence import verdict_check

    monkeypatch.setattr(verdict_check, "AWAITING", 10)
    run, _ = _window_run(tmp_path, 12)
    run.response("http://a.test/page/0", "forged", d="usage_denied")  # line 15
    run.response("http://a.test/page/0", "fp0", d="usage_denied")
    run.close()
    result = audit([tmp_path])
    assert [(problem.line, problem.kind) for problem in result.problems] == [(15, MISMATCH)], result.problems
    assert "read again after the run: none is left for it" in result.problems[0].message
    assert result.origins[A].responses == {"usage_denied": 2}


def test_a_response_beyond_the_window_whose_verdict_was_used_is_a_mismatch(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A fingerprint's only allowed verdict, used up by its response within the window, proves no
    second response read after it left the window (a replayed response), nor does a verdict
    written after that response."""
    from scrapy_rfc9309.evidence import verdict_check

    monkeypatch.setattr(verdict_check, "AWAITING", 10)
    run, version = _window_run(tmp_path, 1)
    run.response("http://a.test/page/0", "fp0", d="usage_denied")  # line 4: uses the verdict of line 3
    for index in range(1, 12):
        run.verdict(f"http://a.test/page/{index}", f"fp{index}", "allowed", version)
    run.response("http://a.test/page/0", "fp0", d="usage_denied")  # line 16: beyond the window, nothing left
    run.verdict("http://a.test/page/0", "fp0", "allowed", version)  # line 17: after it
    run.close()
    result = audit([tmp_path])
    assert [(problem.line, problem.kind) for problem in result.problems] == [(16, MISMATCH)], result.problems
    assert result.origins[A].responses == {"usage_denied": 2}


def test_responses_beyond_the_pending_bound_are_reported_not_settled(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """At most PENDING responses of a run (here 2) wait to be settled after it: a further one is
    reported as not settled (the audit fails), never passed unchecked; those kept are settled."""
    from scrapy_rfc9309.evidence import verdict_check

    monkeypatch.setattr(verdict_check, "AWAITING", 2)
    monkeypatch.setattr(verdict_check, "PENDING", 2)
    run, _ = _window_run(tmp_path, 6)  # fp0 to fp3 forgotten
    for index in range(3):
        run.response(f"http://a.test/page/{index}", f"fp{index}", d="usage_denied")  # lines 9, 10, 11
    run.close()
    result = audit([tmp_path])
    assert [(problem.line, problem.kind) for problem in result.problems] == [(11, MISMATCH)], result.problems
    assert result.problems[0].message.startswith("not settled: ")
    assert "2 such responses of the run already wait" in result.problems[0].message
    assert result.origins[A].responses == {"usage_denied": 3}


# -- runs of one directory, its manifest, version files, anchors ------------------------------
RUN3 = "20260921T121000Z-host-300-0000cccc"
A_OLD = b"User-agent: *\nDisallow: /old\n"


def three_runs(tmp_path: Path) -> tuple[Path, list[Run], list[str]]:
    """Three runs one after the other in one directory (the second rotated once); each names a
    version of its own. Returns the directory, the runs and their versions."""
    directory = tmp_path / "three"
    runs, digests = [], []
    for name, body in ((RUN1, A_OLD), (RUN2, ROBOTS_A1), (RUN3, ROBOTS_A2)):
        digest = write_version(directory, "http://a.test/robots.txt", body)
        run = Run(directory, name)
        rule = ["Allow", "/open", 3] if body == ROBOTS_A2 else None
        run.state(A, digest)
        run.verdict("http://a.test/open/1", f"{name[-4:]}1", "allowed", digest, rule)
        run.response("http://a.test/open/1", f"{name[-4:]}1")
        if name == RUN2:
            run.rotate()
        run.verdict("http://a.test/open/2", f"{name[-4:]}2", "allowed", digest, rule)
        run.close()
        runs.append(run)
        digests.append(digest)
    assert audit([directory]).problems == []
    return directory, runs, digests


def _run_files(directory: Path, run: Run) -> list[Path]:
    return sorted((directory / RUNS_DIR).glob(f"{run.run}-*"))


def test_a_whole_run_deleted_is_found_by_the_manifest(tmp_path: Path) -> None:
    directory, runs, digests = three_runs(tmp_path)
    for path in _run_files(directory, runs[1]):  # the middle run, every segment
        path.unlink()
    result = audit([directory])
    assert result.kinds == {MISSING: 1, ORPHAN: 1}, format_text(result)
    assert has(result, directory / MANIFEST, 3, MISSING, f"run {RUN2} is in the manifest, but none of its segments")
    assert has(result, directory / VERSIONS_DIR / version_name(digests[1]), None, ORPHAN, "no record names")


def test_a_whole_run_deleted_with_its_manifest_lines_rechained_is_found_by_the_next_run(tmp_path: Path) -> None:
    """The manifest rewritten without the run, its chain recomputed: the next run's head names
    the start line as it was."""
    directory, runs, digests = three_runs(tmp_path)
    for path in _run_files(directory, runs[0]):  # the oldest run
        path.unlink()
    (directory / VERSIONS_DIR / version_name(digests[0])).unlink()
    lines = (directory / MANIFEST).read_bytes().splitlines()
    (directory / MANIFEST).write_bytes(b"".join(line + b"\n" for line in lines[2:]))
    rewrite_manifest(directory, {})
    result = audit([directory])
    assert result.kinds == {MISSING: 2}, format_text(result)  # the two later runs' heads
    assert has(result, directory / MANIFEST, None, MISSING, f"run {RUN2}'s head names manifest line")


def test_the_runs_directory_emptied(tmp_path: Path) -> None:
    directory, _, _ = three_runs(tmp_path)
    for path in (directory / RUNS_DIR).iterdir():
        path.unlink()
    result = audit([directory])
    assert result.kinds == {MISSING: 3, ORPHAN: 3}, format_text(result)
    assert result.exit_status() == 1


def test_the_manifest_deleted(tmp_path: Path) -> None:
    directory, _, _ = three_runs(tmp_path)
    (directory / MANIFEST).unlink()
    result = audit([directory])
    assert has(result, directory / MANIFEST, None, MISSING, "the directory's manifest is missing")
    assert sum("head names manifest line" in p.message for p in problems(result, MISSING)) == 3


def test_a_manifest_line_edited(tmp_path: Path) -> None:
    directory, _, _ = three_runs(tmp_path)
    path = directory / MANIFEST
    path.write_bytes(path.read_bytes().replace(b'"segs":2', b'"segs":3'))  # the middle run's end line
    result = audit([directory])
    assert has(result, path, 5, CORRUPT, "the manifest's chain breaks here")
    assert has(result, path, 4, CORRUPT, f"run {RUN2} ended at segment 3")


def test_a_manifest_line_cut_by_a_killed_process_is_unsealed_elsewhere_corrupt(tmp_path: Path) -> None:
    """The last line without its end (a process killed as it wrote it) is what ``unsealed`` means:
    ``--allow-unsealed`` accepts it. A last line longer than any written is damage."""
    directory, _, _ = three_runs(tmp_path)
    path = directory / MANIFEST
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"k":"start","run":"20260921T1230')
    result = audit([directory])
    assert result.kinds == {UNSEALED: 1}, format_text(result)
    assert has(result, path, 7, UNSEALED, "the manifest's last line was cut short")
    assert result.exit_status() == 1 and result.exit_status(allow_unsealed=True) == 0
    path.write_bytes(whole + b"x" * (2 << 20))  # no process writes a line over 1 MiB
    result = audit([directory])
    assert has(result, path, 7, CORRUPT, "a line cut short, or over 1 MiB")
    assert UNSEALED not in result.kinds, format_text(result)


def test_the_newest_run_deleted_is_found_only_against_an_anchor(tmp_path: Path) -> None:
    """What the chain cannot show: the newest run removed with its manifest lines. The head
    exported at its end, kept outside, shows it."""
    directory, runs, digests = three_runs(tmp_path)
    anchor = runs[2].head
    assert anchor is not None and audit([directory], [anchor]).problems == []
    assert audit([directory], [anchor]).anchors == {anchor: f"{directory / MANIFEST}:6"}
    for path in _run_files(directory, runs[2]):
        path.unlink()
    (directory / VERSIONS_DIR / version_name(digests[2])).unlink()
    lines = (directory / MANIFEST).read_bytes().splitlines()
    (directory / MANIFEST).write_bytes(b"".join(line + b"\n" for line in lines[:4]))
    assert audit([directory]).problems == []  # consistent: nothing shows the run was there
    result = audit([directory], [anchor])
    assert [(p.kind, p.line) for p in result.problems] == [(MISSING, None)]
    assert f"the anchor {anchor} is the hash of no line of the manifest" in result.problems[0].message
    assert result.anchors == {anchor: None}
    # An earlier head stays valid: the history up to it is intact.
    assert audit([directory], [runs[1].head or ""]).problems == []
    with pytest.raises(LedgerError, match="not a SHA-256"):
        audit([directory], ["abc"])


def test_the_anchor_on_the_command_line(tmp_path: Path) -> None:
    directory, runs, _ = three_runs(tmp_path)
    anchor = runs[2].head
    assert anchor is not None
    done = scrapy(tmp_path, "robotstxt", "audit", "--anchor", anchor, str(directory))
    assert done.returncode == 0, done.stdout + done.stderr
    done = scrapy(tmp_path, "robotstxt", "audit", "--json", "--anchor", anchor, "--anchor", "0" * 64, str(directory))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["anchors"] == [{"hash": anchor, "found": f"{directory / MANIFEST}:6"},
                                 {"hash": "0" * 64, "found": None}]
    assert report["heads"] == {str(directory): anchor}


def test_an_orphan_version_file(tmp_path: Path) -> None:
    directory, _, _ = three_runs(tmp_path)
    stray = write_version(directory, "http://z.test/robots.txt", b"User-agent: *\nAllow: /\n")
    result = audit([directory])
    assert [(p.file, p.kind) for p in result.problems] == [
        (str(directory / VERSIONS_DIR / version_name(stray)), ORPHAN)]


def _edit_version_file(path: Path, old: bytes, new: bytes) -> None:
    """Edit the WARC record's bytes (same length: its Content-Length stays right), gzip again."""
    data = gzip.decompress(path.read_bytes())
    assert data.count(old) == 1 and len(old) == len(new)
    path.write_bytes(gzip.compress(data.replace(old, new)))


@pytest.mark.parametrize(("old", "new"), [
    (b"Content-Type: text/plain", b"Content-Type: text/plaim"),  # an archived HTTP header
    (b"WARC-Date: 2026-09-21T12:00:00Z", b"WARC-Date: 2026-09-22T12:00:00Z"),
    (b"WARC-RFC9309-Lifetime: 86400", b"WARC-RFC9309-Lifetime: 96400"),
    (b"WARC-RFC9309-Source: fetch", b"WARC-RFC9309-Source: store"),
], ids=["http header", "warc-date", "lifetime", "source"])
def test_a_version_file_field_outside_the_digest_edited(tmp_path: Path, old: bytes, new: bytes) -> None:
    directory, runs, digests = three_runs(tmp_path)
    path = directory / VERSIONS_DIR / version_name(digests[1])
    _edit_version_file(path, old, new)
    result = audit([directory])
    # The digest still verifies; the state record naming the file's bytes does not.
    state = segment(directory, runs[1], 1)
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(state), 2, CORRUPT)], format_text(result)
    assert "its file's bytes are not those this record names" in result.problems[0].message


def _relink(path: Path, edit: dict[int, dict[str, object]]) -> None:
    """Edit records of a segment and recompute its links, keeping its seal as it was."""
    from scrapy_rfc9309.evidence.format import GENESIS, chain, link

    out, previous = [], GENESIS
    for number, raw in enumerate(read_lines(path), 1):
        record = json.loads(raw)
        record.update(edit.get(number, {}))
        if number > 1:
            record["p"] = link(previous)
        line = json.dumps(record, separators=(",", ":")).encode()
        out.append(line + b"\n")
        previous = chain(previous, line)
    write_lines(path, out)


def test_a_rotated_segment_edited_its_links_recomputed_its_seal_kept(tmp_path: Path) -> None:
    """Only the seal's hash shows it: every link verifies, and the next head still names the seal."""
    directory, runs, _ = three_runs(tmp_path)
    path = segment(directory, runs[1], 1)
    lines = read_lines(path)
    assert json.loads(lines[2])["k"] == "verdict" and json.loads(lines[-1])["k"] == "seal"
    _relink(path, {3: {"u": "http://a.test/other"}})
    result = audit([directory])
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(path), len(lines), CORRUPT)], \
        format_text(result)
    assert "the seal" in result.problems[0].message and "does not match" in result.problems[0].message


def test_a_rotated_segment_edited_its_links_and_seal_recomputed(tmp_path: Path) -> None:
    """The seal rewritten too: the next segment's head names the seal as it was."""
    directory, runs, _ = three_runs(tmp_path)
    path = segment(directory, runs[1], 1)
    _relink(path, {3: {"u": "http://a.test/other"}})
    lines = read_lines(path)
    from scrapy_rfc9309.evidence.format import GENESIS, chain

    previous = GENESIS
    for raw in lines[:-1]:
        previous = chain(previous, raw[:-1])
    _relink(path, {len(lines): {"h": previous.hex()}})
    result = audit([directory])
    following = segment(directory, runs[1], 2)
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(following), 1, CORRUPT)], \
        format_text(result)
    assert "head's prev is not the seal hash" in result.problems[0].message


def test_an_anchor_in_upper_case_hex_is_the_same_anchor(tmp_path: Path) -> None:
    directory, runs, _ = three_runs(tmp_path)
    anchor = runs[1].head
    assert anchor is not None and anchor != anchor.upper()
    result = audit([directory], [anchor.upper()])
    assert result.problems == [], format_text(result)
    assert result.anchors == {anchor: f"{directory / MANIFEST}:4"}
    done = scrapy(tmp_path, "robotstxt", "audit", "--anchor", anchor.upper(), str(directory))
    assert done.returncode == 0, done.stdout + done.stderr


# -- the format document's definitions, pinned ------------------------------------------------
#: The worked example of docs/ledger-format.md ("Versions"), its digest computed by hand from the
#: document's formula (hashlib over the bytes the document shows), not by the package.
GOLDEN_FIELDS = ("robots.txt", "http://example.com/robots.txt", ["http://example.com/robots.txt"],
                 "https://example.com/robots.txt", 200, "parsed")
GOLDEN_BODY = "User-agent: *\nDisallow: /café\n".encode()
GOLDEN_DIGEST = "9b92c7ef5bc56bf746b3ce3eee565e64c7d6d630a6b058c02e3709ae03503abd"


def test_the_version_digest_is_the_format_documents_golden_value() -> None:
    from scrapy_rfc9309.evidence.format import version_digest

    document = (Path(__file__).parent.parent / "docs" / "ledger-format.md").read_text()
    assert GOLDEN_DIGEST in document  # the example the document works through
    assert '[1,"robots.txt","http://example.com/robots.txt",["http://example.com/robots.txt"],' \
           '"https://example.com/robots.txt",200,"parsed"]\nUser-agent: *\nDisallow: /café\n```' in document
    assert version_digest(*GOLDEN_FIELDS, GOLDEN_BODY) == GOLDEN_DIGEST  # type: ignore[arg-type]
    # The test writer computes it from the document too.
    from ledger_writer import version_digest as written

    assert written(*GOLDEN_FIELDS, GOLDEN_BODY) == GOLDEN_DIGEST  # type: ignore[arg-type]


def test_the_test_writer_follows_the_document_not_the_package() -> None:
    """tests/ledger_writer.py computes digests, chains and names from docs/ledger-format.md."""
    import ast

    tree = ast.parse((Path(__file__).parent / "ledger_writer.py").read_text())
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not any(name.startswith("scrapy_rfc9309") for name in imported), imported


# -- verdicts the audit recomputes -----------------------------------------------------------------
def test_a_disallowed_verdict_turned_allowed_with_its_disallow_rule_kept(fleet: Fleet) -> None:
    """a.test/private/x recorded allowed, still naming the Disallow rule that refuses it."""
    path = segment(fleet.one, fleet.run1, 1)
    _rewrite_chain(path, {5: {"d": "allowed"}})
    result = audited(fleet)
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(path), 5, MISMATCH)]
    assert "allowed, but version" in result.problems[0].message
    assert "disallows http://a.test/private/x" in result.problems[0].message


@pytest.mark.parametrize(("number", "line", "d", "url"), [
    (1, 2, "held", "http://b.test/page"), (1, 7, "not_judged", "http://b.test/robots.txt"),
    (2, 4, "dropped", "http://a.test/late"), (3, 6, "requeued", "http://a.test/c")])
def test_an_unjudged_verdict_of_another_origins_url(fleet: Fleet, number: int, line: int, d: str, url: str) -> None:
    """A held, dropped, requeued or not-judged record (no version to recompute) whose URL is of
    another origin than the one it names."""
    path = segment(fleet.one, fleet.run1, number)
    record = json.loads(read_lines(path)[line - 1])
    assert record["d"] == d
    _rewrite_chain(path, {line: {"u": url}})
    result = audited(fleet)
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(path), line, MISMATCH)]
    assert f"the URL {url!r} is not of the origin {record['o']!r}" in result.problems[0].message


# -- the settings a run's heads record (format 3), against its verdicts -----------------------------
P = "http://p.test"
ROBOTS_P = b"User-agent: *\nAllow: /\nContent-Usage: /train/ train-ai=n\n\nUser-agent: ai-bot\nDisallow: /no-ai/\n"
#: A purpose token, a usage category denied, response headers read.
P_SETTINGS = {"purpose": ["ai-bot"], "deny": ["train-ai"], "read": ["robots.txt", "headers"]}


def settings_ledger(tmp_path: Path, version: int = 3) -> tuple[Path, Path]:
    """A run with ROBOTSTXT_PURPOSE_TOKENS = ["ai-bot"] and ROBOTSTXT_USAGE_DENY = ["train-ai"],
    rotated once: its verdicts as the middleware gives them under these settings."""
    directory = tmp_path / "settings"
    robots = write_version(directory, f"{P}/robots.txt", ROBOTS_P)
    run = Run(directory, RUN1, settings=P_SETTINGS, version=version)
    run.state(P, robots)
    run.verdict(f"{P}/page", "p1", "allowed", robots, ["Allow", "/", 2])  # line 3
    run.verdict(f"{P}/no-ai/x", "p2", "disallowed", robots, ["Disallow", "/no-ai/", 6], agent="ai-bot")  # line 4
    run.verdict(f"{P}/train/x", "p3", "usage_denied", robots, ["Allow", "/", 2])  # line 5
    run.response(f"{P}/page", "p1")
    run.verdict(f"{P}/img", "p4", "allowed", robots, ["Allow", "/", 2])  # line 7
    run.response(f"{P}/img", "p4", d="usage_denied")  # line 8: its Content-Usage header said train-ai=n
    run.rotate()
    run.verdict(f"{P}/more", "p5", "allowed", robots, ["Allow", "/", 2])
    run.close()
    assert audit([directory]).problems == []
    return directory, segment(directory, run, 1)


def _head_settings(path: Path, **changed: object) -> None:
    head = json.loads(read_lines(path)[0])
    _rewrite_chain(path, {1: {"cfg": {**head["cfg"], **changed}}})


def only(result: Audit, path: Path, line: int, kind: str, words: str) -> None:
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(path), line, kind)], format_text(result)
    assert words in result.problems[0].message, result.problems[0].message


def test_an_allowed_verdict_a_purpose_tokens_group_disallows(tmp_path: Path) -> None:
    directory, path = settings_ledger(tmp_path)
    _rewrite_chain(path, {4: {"d": "allowed", "a": "testbot", "r": ["Allow", "/", 2]}})
    only(audit([directory]), path, 4, MISMATCH, "disallows http://p.test/no-ai/x for the purpose token 'ai-bot'")
    # A request with purpose tokens of its own (robotstxt_purpose_tokens) names them: none here.
    _rewrite_chain(path, {4: {"pt": []}})
    assert audit([directory]).problems == []
    _rewrite_chain(path, {4: {"pt": ["ai-bot"]}})
    only(audit([directory]), path, 4, MISMATCH, "for the purpose token 'ai-bot'")


def test_an_allowed_verdict_a_denied_usage_category_refuses(tmp_path: Path) -> None:
    directory, path = settings_ledger(tmp_path)
    _rewrite_chain(path, {5: {"d": "allowed"}})
    only(audit([directory]), path, 5, MISMATCH, "allowed, but version")
    assert "denies train-ai for http://p.test/train/x" in audit([directory]).problems[0].message


@pytest.mark.parametrize(("deny", "words"), [([], "denies no usage category"),
                                             (["search"], "denies no usage the run denied")])
def test_a_usage_denied_verdict_for_a_category_the_run_did_not_deny(tmp_path: Path, deny: list[str],
                                                                     words: str) -> None:
    directory, path = settings_ledger(tmp_path)
    _head_settings(path, deny=deny)
    result = audit([directory])
    assert has(result, path, 5, MISMATCH, words), format_text(result)
    assert sum(p.kind == MISMATCH and p.line == 5 for p in result.problems) == 1


@pytest.mark.parametrize(("changed", "words"), [({"read": ["robots.txt"]}, "read no response headers nor meta tags"),
                                                ({"deny": []}, "denied no usage category")])
def test_a_usage_denied_response_the_runs_settings_cannot_give(tmp_path: Path, changed: dict[str, object],
                                                               words: str) -> None:
    directory, path = settings_ledger(tmp_path)
    _head_settings(path, **changed)
    result = audit([directory])
    assert has(result, path, 8, MISMATCH, f"a response usage_denied, but the run's head says it {words}"), \
        format_text(result)


def test_a_run_of_format_2_is_checked_without_its_settings(tmp_path: Path) -> None:
    """What the audit cannot check for an old ledger: its heads do not say the purpose tokens or
    the categories denied, so verdicts that contradict them verify."""
    directory, path = settings_ledger(tmp_path, version=2)
    assert "cfg" not in json.loads(read_lines(path)[0])
    _rewrite_chain(path, {4: {"d": "allowed", "a": "testbot", "r": ["Allow", "/", 2]}, 5: {"d": "allowed"}})
    assert audit([directory]).problems == []


@pytest.mark.parametrize("cfg", [None, "all", {"purpose": "ai-bot"}, {"tdm": 1}])
def test_a_head_whose_settings_are_not_settings(tmp_path: Path, cfg: object) -> None:
    directory, path = settings_ledger(tmp_path)
    head = json.loads(read_lines(path)[0])
    _rewrite_chain(path, {1: {"cfg": cfg if not isinstance(cfg, dict) else {**head["cfg"], **cfg}}})
    result = audit([directory])
    assert has(result, path, 1, CORRUPT, "head's cfg"), format_text(result)


def test_a_later_head_with_other_settings(tmp_path: Path) -> None:
    directory, path = settings_ledger(tmp_path)
    second = path.with_name(path.name.replace("000001", "000002"))
    _head_settings(second, purpose=[])
    only(audit([directory]), second, 1, CORRUPT, "head's cfg differs from the run's first head")


def test_a_run_of_another_vocabulary_revision(tmp_path: Path) -> None:
    directory, path = settings_ledger(tmp_path)
    _head_settings(path, vocab="aipref-vocab-2030-01")
    result = audit([directory])
    assert has(result, path, 1, MISMATCH, "usage vocabulary revision 'aipref-vocab-2030-01'"), format_text(result)


def test_tdm_verdicts_the_runs_settings_cannot_give(tmp_path: Path) -> None:
    directory, path = tdm_ledger(tmp_path)
    # The /free request recorded allowed, moved to a URL the tdmrep.json reserves.
    _rewrite_chain(path, {5: {"u": "http://t.test/reserved/b"}, 6: {"u": "http://t.test/reserved/b"}})
    result = audit([directory])
    assert [(p.line, p.kind) for p in result.problems] == [(5, MISMATCH), (6, MISMATCH)]  # and the response
    assert "reserves TDM rights for http://t.test/reserved/b" in result.problems[0].message
    directory, path = tdm_ledger(tmp_path / "2")
    _head_settings(path, tdm=False)
    only(audit([directory]), path, 4, MISMATCH, "tdm_reserved, but the run's head says TDM reservations were not "
         "enforced")
    _head_settings(path, read=["robots.txt", "headers"])
    result = audit([directory])
    assert [(p.line, p.kind) for p in result.problems] == [(4, MISMATCH), (5, MISMATCH), (6, MISMATCH)]
    assert "says it read no tdmrep.json" in result.problems[0].message


# -- a run killed as it starts or ends, and the runs after it -------------------------------------
RUN4 = "20260921T121500Z-host-400-0000dddd"
RUN5 = "20260921T122000Z-host-500-0000eeee"


def _later_runs(directory: Path, names: tuple[str, ...] = (RUN4, RUN5)) -> list[Run]:
    runs = []
    for name in names:
        digest = write_version(directory, "http://a.test/robots.txt", ROBOTS_A1)
        run = Run(directory, name)
        run.state(A, digest)
        run.verdict("http://a.test/page", f"{name[-4:]}", "allowed", digest)
        run.close()
        runs.append(run)
    return runs


def test_a_run_killed_after_its_last_seal_before_its_end_line_is_not_sealed(tmp_path: Path) -> None:
    directory, _, _ = three_runs(tmp_path)
    run = Run(directory, "20260921T121200Z-host-350-0000c3c3")
    run.verdict("http://a.test/page", "k1", "held", None)
    run.seal_and_kill()
    expected = [(str(directory / MANIFEST), None, UNSEALED)]
    for later in ((), (RUN4,), (RUN5,)):  # and as many runs after it as may come
        _later_runs(directory, later)
        result = audit([directory])
        assert [(p.file, p.line, p.kind) for p in result.problems] == expected, format_text(result)
        assert f"run {run.run} did not end cleanly" in result.problems[0].message
        assert result.exit_status() == 1 and result.exit_status(allow_unsealed=True) == 0
        assert {r.run: r.ending for r in result.runs}[run.run] == "not sealed"
    # The same segment compressed (a manifest cut short after its end line, then appended to): removed.
    plain = segment(directory, run, 1, closed=False)
    write_lines(segment(directory, run, 1), read_lines(plain))
    plain.unlink()
    result = audit([directory])
    assert has(result, directory / MANIFEST, None, MISSING, f"run {run.run} ended, but the manifest has no end line")
    assert result.exit_status(allow_unsealed=True) == 1


@pytest.mark.parametrize("cut", [b'{"k":"end","t":1789992600.0,"p":"', b'{"k":"start","t":1789992'])
def test_a_manifest_line_cut_short_then_ended_by_later_runs(tmp_path: Path, cut: bytes) -> None:
    """A process killed as it wrote its end (or start) line: the next runs end the cut line with
    a line break and chain it as it is; the audit tells it as an interrupted write."""
    directory, _, _ = three_runs(tmp_path)
    path = directory / MANIFEST
    with open(path, "ab") as handle:
        handle.write(cut)
    later = _later_runs(directory)
    result = audit([directory], [later[-1].head or ""])
    assert [(p.file, p.line, p.kind) for p in result.problems] == [(str(path), 7, UNSEALED)], format_text(result)
    assert "cut short by an interrupted write" in result.problems[0].message
    assert result.exit_status(allow_unsealed=True) == 0
    assert [r.ending for r in result.runs] == ["ended"] * 5
    # Not a line any writer begins: damage.
    path.write_bytes(path.read_bytes().replace(cut + b"\n", b"garbage" + cut[7:] + b"\n"))
    _later_runs(directory, ("20260921T123000Z-host-600-0000ffff",))
    assert has(audit([directory]), path, 7, CORRUPT, "not a manifest line")


def test_a_run_killed_before_its_head_is_not_sealed(tmp_path: Path) -> None:
    """Killed between creating its first segment and writing its head: an empty segment beside
    its start line (or its start line cut short)."""
    directory, _, _ = three_runs(tmp_path)
    name = "20260921T121200Z-host-350-0000c3c3"
    empty = directory / RUNS_DIR / f"{name}-000001.jsonl"
    empty.write_bytes(b"")
    with open(directory / MANIFEST, "ab") as handle:
        handle.write(b'{"k":"start","t":1789992720.0,"p":"')
    result = audit([directory])
    assert sorted((p.file, p.kind) for p in result.problems) == [(str(directory / MANIFEST), UNSEALED),
                                                                   (str(empty), UNSEALED)], format_text(result)
    _later_runs(directory)
    result = audit([directory])
    assert sorted((p.file, p.line, p.kind) for p in result.problems) == [
        (str(directory / MANIFEST), 7, UNSEALED), (str(empty), None, UNSEALED)], format_text(result)
    assert result.exit_status(allow_unsealed=True) == 0
