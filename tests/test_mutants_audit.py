"""The audit (scrapy_rfc9309/evidence/audit.py) at the edges its tests left unchecked: a version's
body exactly at the size bound, a record naming a version of the other document, a manifest whose
last line is over the line bound, a version file whose recorded name is not its digest. Each kills a
mutant the audit's tests leave alive (docs/development.md, "Mutation testing")."""

from __future__ import annotations

from pathlib import Path

import pytest
from ledger_writer import Run, read_lines, segment, write_lines, write_version
from test_audit import ROBOTS_A1, RUN1, TDM_SETTINGS, A, Fleet, _edit_version_file, _relink, audited, build, has, killed

from scrapy_rfc9309.evidence.audit import CORRUPT, MISMATCH, UNSEALED, audit, format_text
from scrapy_rfc9309.evidence.format import MANIFEST, VERSIONS_DIR, version_name


@pytest.fixture
def fleet(tmp_path: Path) -> Fleet:
    return build(tmp_path)


def test_a_version_as_large_as_the_bound_is_read(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    import scrapy_rfc9309.evidence.audit as module

    monkeypatch.setattr(module, "MAX_VERSION_BYTES", len(ROBOTS_A1))  # a1's body, to the byte
    result = audited(fleet)
    a1 = version_name(fleet.a1)
    assert not [p for p in result.problems if p.file.endswith(a1)], format_text(result)
    monkeypatch.setattr(module, "MAX_VERSION_BYTES", len(ROBOTS_A1) - 1)
    result = audited(fleet)
    assert has(result, fleet.one / VERSIONS_DIR / a1, None, CORRUPT, "a body over 0 MiB")


def test_a_robots_txt_state_naming_a_tdmrep_json_version(tmp_path: Path) -> None:
    directory = tmp_path / "swapped"
    tdm = write_version(directory, "http://a.test/.well-known/tdmrep.json", b"[]", document="tdmrep.json")
    run = Run(directory, RUN1)
    run.state(A, tdm)  # line 2: a robots.txt state
    run.close()
    result = audit([directory])
    assert [(p.line, p.kind) for p in result.problems] == [(2, MISMATCH)], format_text(result)
    assert "is a tdmrep.json, not a robots.txt" in result.problems[0].message


@pytest.mark.parametrize("ended", [True, False])
def test_a_manifest_whose_last_line_is_over_the_line_bound_is_corrupt(fleet: Fleet, ended: bool) -> None:
    """Not a line cut short by a killed process (that is short): a last line over 1 MiB is corrupt,
    whether it ends the file with a line break or one byte past the bound without one."""
    import scrapy_rfc9309.evidence.files as module

    path = fleet.one / MANIFEST
    lines = read_lines(path)
    start = b'{"k":"start","run":"'
    last = start + b"x" * (1 << 21) + b'"}\n' if ended else start + b"x" * (module.MAX_LINE_BYTES + 1 - len(start))
    write_lines(path, [*lines, last])
    result = audited(fleet)
    assert has(result, path, len(lines) + 1, CORRUPT, "over 1 MiB"), format_text(result)
    assert not has(result, path, len(lines) + 1, UNSEALED, ""), format_text(result)


def test_a_version_whose_recorded_name_is_not_its_digest_proves_no_verdict(fleet: Fleet) -> None:
    """Its bytes may be whatever a forger chose: no verdict naming it verifies, so no response after one."""
    path = fleet.one / VERSIONS_DIR / version_name(fleet.a2)
    _edit_version_file(path, f"WARC-RFC9309-Version: {fleet.a2}".encode(),
                       f"WARC-RFC9309-Version: {fleet.a1}".encode())
    result = audited(fleet)
    assert has(result, path, None, CORRUPT, "not its name"), format_text(result)
    unproven = "without an earlier allowed verdict of the same request that verified"
    assert has(result, segment(fleet.one, fleet.run1, 2), 9, MISMATCH, unproven), format_text(result)
    assert has(result, segment(fleet.two, fleet.run2, 1), 9, MISMATCH, unproven), format_text(result)


def test_a_version_file_with_a_warcinfo_record_is_read_for_its_response(fleet: Fleet) -> None:
    """Only the response record is the version: another record type beside it is not a second one."""
    from warcio.warcwriter import WARCWriter

    path = fleet.one / VERSIONS_DIR / version_name(fleet.a1)
    with open(path, "ab") as handle:
        writer = WARCWriter(handle, gzip=True)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "an archiver"}))
    result = audited(fleet)
    assert not [p for p in result.problems if p.file == str(path)], format_text(result)
    assert "robots.txt parsed 200" in format_text(result)


def test_the_report_tables_first_column_is_left_aligned(fleet: Fleet) -> None:
    text = format_text(audited(fleet))
    rows = [line for line in text.splitlines() if "a.test " in line and line.strip().startswith("http")]
    assert rows and all(row.startswith("  http://a.test ") for row in rows), text


def test_the_reports_last_line_for_a_killed_run(tmp_path: Path) -> None:
    directory, _ = killed(tmp_path)
    result = audit([directory])
    assert format_text(result).splitlines()[-1] == "Result: FAILED (exit 1)"
    assert format_text(result, allow_unsealed=True).splitlines()[-1] == (
        "Result: everything written verifies; runs that did not end cleanly accepted (--allow-unsealed) (exit 0)")


def _tdm_run(tmp_path: Path, tdm_body: bytes, tdm_state: bool, d: str, path: str) -> Path:
    """A run of ROBOTSTXT_TDMREP: a robots.txt allowing all, a tdmrep.json version (its state written
    or not), one verdict ``d`` on ``path`` judged with that version."""
    directory = tmp_path / "tdm"
    origin = "http://t.test"
    robots = write_version(directory, f"{origin}/robots.txt", b"User-agent: *\nAllow: /\n")
    tdm = write_version(directory, f"{origin}/.well-known/tdmrep.json", tdm_body, document="tdmrep.json")
    run = Run(directory, RUN1, settings=TDM_SETTINGS)
    run.state(origin, robots)
    if tdm_state:
        run.state(origin, tdm, document="tdmrep.json")
    run.verdict(f"{origin}{path}", "t1", d, robots, ["Allow", "/", 2], tv=tdm)
    run.close()
    return directory


def test_a_tdm_verdict_without_the_runs_tdmrep_json_state(tmp_path: Path) -> None:
    directory = _tdm_run(tmp_path, b'[{"location": "/reserved/", "tdm-reservation": 1}]', False, "tdm_reserved",
                         "/reserved/a")
    result = audit([directory])
    assert [(p.line, p.kind) for p in result.problems] == [(3, MISMATCH)], format_text(result)
    assert "the run's last state of the origin names no state" in result.problems[0].message


def test_a_whole_tdmrep_json_ending_in_a_cut_character_reserves_nothing(tmp_path: Path) -> None:
    """Not cut by the size limit (its version says so): bytes that are not UTF-8 make it unreadable,
    as the crawl read it, so its reservation is not one."""
    body = b'[{"location": "/reserved/", "tdm-reservation": 1}]\xc3'
    result = audit([_tdm_run(tmp_path, body, True, "allowed", "/reserved/a")])
    assert result.problems == [], format_text(result)
    result = audit([_tdm_run(tmp_path / "2", body, True, "tdm_reserved", "/reserved/a")])
    assert [(p.line, p.kind) for p in result.problems] == [(4, MISMATCH)], format_text(result)


def test_a_parsed_robots_txt_state_without_a_version_allows_nothing_without_one(tmp_path: Path) -> None:
    """Only an unavailable robots.txt (no file) allows without a version."""
    directory = tmp_path / "forged"
    directory.mkdir()
    run = Run(directory, RUN1)
    run.write("state", o="http://r.test:80", doc="robots.txt", src="fetch", access="parsed", ver=None,
              status=200, err=None, exp=run.clock + 60)
    run.verdict("http://r.test/a", "r1", "allowed", None)  # line 3
    run.close()
    result = audit([directory])
    assert (3, MISMATCH) in [(p.line, p.kind) for p in result.problems], format_text(result)


def test_the_report_names_the_usage_denied_responses_of_an_origin(fleet: Fleet) -> None:
    lines = format_text(audited(fleet)).splitlines()
    assert [line for line in lines if "responses usage-denied" in line] == ["    responses usage-denied: 1"]
    c = lines.index("  https://c.test")
    assert "    responses usage-denied: 1" in lines[c:c + 4]


def test_the_reports_tables_are_aligned(fleet: Fleet) -> None:
    lines = format_text(audited(fleet)).splitlines()
    start = lines.index("Requests per origin") + 1
    table = lines[start:start + 4]  # its header and one row per origin
    assert [row.split()[0] for row in table] == ["origin", "http://a.test", "http://b.test", "https://c.test"]
    assert len({len(row) for row in table}) == 1, table  # every column as wide in every row


def test_a_seal_counting_more_records_than_its_segment_holds(fleet: Fleet) -> None:
    path = segment(fleet.one, fleet.run1, 1)
    seal = len(read_lines(path))
    _relink(path, {seal: {"n": seal}})  # one more than the records before it; its hash kept
    result = audited(fleet)
    assert has(result, path, seal, CORRUPT, "does not match the records before it"), format_text(result)


def test_a_version_over_the_bound_names_the_bound_in_mib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import scrapy_rfc9309.evidence.audit as module

    monkeypatch.setattr(module, "MAX_VERSION_BYTES", 1 << 20)
    directory = tmp_path / "large"
    large = write_version(directory, "http://a.test/robots.txt", b"#" * ((1 << 20) + 1))
    run = Run(directory, RUN1)
    run.state(A, large)
    run.close()
    result = audit([directory])
    assert has(result, directory / VERSIONS_DIR / version_name(large), None, CORRUPT,
               "a body over 1 MiB (not read)"), format_text(result)
