"""The audit's check of a ledger directory's manifest (docs/ledger-format.md, "What a checker
does", 3): its chain, and that it and the directory's runs agree. Pure Python.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from .audit_result import CORRUPT, MISSING, UNSEALED, Audit
from .files import MAX_LINE_BYTES
from .files import lines as file_lines
from .format import GENESIS, MANIFEST, RUNS_DIR, chain, link

__all__ = ["check_manifest"]


def check_manifest(result: Audit, problem: Callable[[str, int | None, str, str], None],
                   directory: str) -> dict[str, str]:
    """Check the directory's manifest: its chain, and that it and the runs of the
    directory agree (every run listed has its segments, each run's head names its start
    line, each run's end is its last seal). Returns where each line's chain hash is."""
    path = os.path.join(directory, MANIFEST)
    runs = {report.run: report for report in result.runs if report.directory == directory}
    where: dict[str, str] = {}
    starts: dict[str, str] = {}
    ends: dict[str, tuple[int, dict[str, Any]]] = {}
    previous = GENESIS
    broken = False
    try:
        lines = list(file_lines(path, False))
    except FileNotFoundError:
        lines = []
        if runs:
            problem(path, None, MISSING, "the directory's manifest is missing (deleted): the runs cannot be "
                    "told complete")
    except OSError as exc:
        problem(path, None, CORRUPT, f"cannot be read: {exc}")
        return where
    rest_of_long_line = False
    for number, raw in enumerate(lines, 1):
        if rest_of_long_line:  # the rest of a line over MAX_LINE_BYTES, reported once
            rest_of_long_line = not raw.endswith(b"\n")
            continue
        if len(raw) > MAX_LINE_BYTES or not raw.endswith(b"\n"):
            rest_of_long_line = len(raw) > MAX_LINE_BYTES
            if number == len(lines) and len(raw) <= MAX_LINE_BYTES:  # what a process killed as it wrote leaves
                problem(path, number, UNSEALED, "the manifest's last line was cut short by an interrupted "
                        "write (a process killed as it wrote it)")
            else:
                problem(path, number, CORRUPT, "a line cut short, or over 1 MiB")
            previous = chain(previous, raw.rstrip(b"\n"))
            continue
        line = raw[:-1]
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        # Format 3 names the full chain hash before the line, format 2 its first 16 digits.
        if isinstance(record, dict) and record.get("p") not in (
                (link(previous), previous.hex()) if number > 1 else ("",)) and not broken:
            broken = True
            problem(path, number, CORRUPT, "the manifest's chain breaks here: lines were edited, removed, "
                    "added or reordered here or just before")
        previous = chain(previous, line)
        where[previous.hex()] = f"{path}:{number}"
        if record is None and line.startswith(b'{"k":"') and number < len(lines):
            # A process killed as it wrote the line; the next append ended it with a line break.
            problem(path, number, UNSEALED, "a line cut short by an interrupted write (a process killed "
                    "as it wrote it), ended and chained as it is by the next process to append")
            continue
        run = record.get("run") if isinstance(record, dict) else None
        if not isinstance(run, str) or record.get("k") not in ("start", "end"):
            problem(path, number, CORRUPT, "not a manifest line (a start or end naming a run)")
            continue
        if record["k"] == "start":
            starts[run] = previous.hex()
            if run not in runs:
                problem(path, number, MISSING, f"run {run} is in the manifest, but none of its segments is "
                        f"in {os.path.join(directory, RUNS_DIR)}: it was removed")
        else:
            ends[run] = (number, record)
    result.heads[directory] = previous.hex() if lines else None
    for run, report in runs.items():
        if report.manifest_line is not None and starts.get(run) != report.manifest_line:
            problem(path, None, MISSING, f"run {run}'s head names manifest line "
                    f"{report.manifest_line[:16]}..., which the manifest does not hold: the manifest was "
                    "replaced, cut short or deleted")
        end = ends.get(run)
        if end is None:
            if report.ending == "ended" and report.last_plain:
                # The end line is appended before the last segment is compressed.
                report.ending = "not sealed"
                problem(path, None, UNSEALED, f"run {run} did not end cleanly: killed after it sealed its "
                        "last segment, before it appended its end line (the segment is not compressed)")
            elif report.ending == "ended":
                problem(path, None, MISSING, f"run {run} ended, but the manifest has no end line for it: the "
                        "manifest was cut short")
        elif end[1].get("h") != report.last_seal or end[1].get("segs") != report.last_segment:
            problem(path, end[0], CORRUPT, f"run {run} ended at segment {end[1].get('segs')!r} with seal "
                    f"{str(end[1].get('h'))[:16]}..., its segments end at {report.last_segment} with "
                    f"{str(report.last_seal)[:16]}...: segments were removed, replaced or rewritten")
    return where
