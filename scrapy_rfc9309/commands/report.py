"""``scrapy robotstxt report LEDGER... [-o FILE.html] [--json FILE.json]``: the report of a
verdict ledger for people (one self-contained HTML page) and the same figures as JSON, gathered
by the audit's one pass over the files (:mod:`scrapy_rfc9309.evidence.report_figures`). A
progress line goes to stderr. Exit status: the audit's (0 everything verifies, 1 a problem, both
with the report written), 2 a usage error."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

from scrapy.exceptions import UsageError

from ..evidence.audit_result import LedgerError, format_text
from ..evidence.report_figures import report_figures
from ..evidence.report_html import render

__all__ = ["DEFAULT_OUTPUT", "progress_line", "run_report"]

#: The page's file when ``-o`` is not given.
DEFAULT_OUTPUT = "robotstxt-report.html"


def progress_line(stream: TextIO, clock: Callable[[], float] = time.monotonic,
                  every: float = 0.5) -> Callable[[int, int, int], None]:
    """A progress callback writing ``records read, segment i of n`` to ``stream``, at most once
    per ``every`` seconds of ``clock`` (and at the last segment): on a terminal one line
    rewritten in place, elsewhere one line each time."""
    tty = stream.isatty()
    last = [float("-inf")]

    def tell(records: int, segment: int, total: int) -> None:
        now = clock()
        if now - last[0] < every and segment < total:
            return
        last[0] = now
        line = f"robotstxt report: {records:,} records read, segment {segment} of {total}"
        stream.write(f"\r{line}" if tty else f"{line}\n")
        stream.flush()

    return tell


def run_report(directories: list[str], opts: argparse.Namespace, stderr: TextIO | None = None) -> int:
    """Write the report's page (and JSON); return the audit's exit status."""
    if opts.file or opts.agent or opts.purposes:
        raise UsageError("--file, --agent and --purpose do not apply to 'report'")
    if not directories:
        raise UsageError("give at least one ledger directory: scrapy robotstxt report LEDGER...")
    if opts.json is True:
        raise UsageError("report: --json takes the file to write the figures to (--json report.json)")
    stream = sys.stderr if stderr is None else stderr
    output = opts.output or DEFAULT_OUTPUT
    try:
        result, data = report_figures(directories, opts.anchors, opts.allow_unsealed, progress_line(stream),
                                      generated=time.time())
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
    if stream.isatty():
        stream.write("\n")
    page = render(data)
    try:
        _write(output, page)
        if opts.json:
            _write(opts.json, json.dumps(data, indent=1) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write the report: {exc}") from None
    status = result.exit_status(opts.allow_unsealed)
    verdict = format_text(result, opts.allow_unsealed).rsplit("\n", 1)[-1]
    print(f"Report of {', '.join(directories)} written to {output}"
          + (f", its figures to {opts.json}" if opts.json else "")
          + f": {data['totals']['records']:,} records, {data['totals']['hosts']:,} hosts. Audit {verdict[0].lower()}"
          + verdict[1:])
    return status


def _write(path: str, text: str) -> None:
    """Write ``text`` to ``path`` whole: a temporary file renamed over it."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)
