"""One verdict, told the same way: for each kind of verdict, a real crawl and
``scrapy robotstxt URL`` with the same settings agree on the outcome, the printed
verdict and the exit status.

The origins are :class:`ThreadedOrigin` servers (threads of this process), so that the
crawl (in the test's reactor or loop) and the command (a subprocess) reach the same
servers. The crawl's verdicts are read from the ``robotstxt_verdict`` signal (the first
verdict on each URL: a held request's is ``held``), its exceptions and the ledger.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from crawl import ListSpider, run_crawl
from reactorless import command_options
from servers import ThreadedOrigin
from test_command import field

from scrapy_rfc9309.core.verdict import Judgement, Kind
from scrapy_rfc9309.exceptions import (
    RobotsTxtForbidden,
    RobotsTxtTdmReserved,
    RobotsTxtUnreachable,
    RobotsTxtUsageDenied,
)
from scrapy_rfc9309.signals import robotstxt_verdict

ROBOTS = (
    "User-agent: *\n"  # line 1
    "Disallow: /private\n"  # line 2
    "Allow: /\n"  # line 3
    "Content-Usage: /ai/ train-ai=n\n"  # line 4
)
TDMREP = '[{"location": "/r/*", "tdm-reservation": 1}, {"location": "/", "tdm-reservation": 0}]'
SETTINGS = {"ROBOTSTXT_USAGE_DENY": "train-ai", "ROBOTSTXT_TDMREP": "True"}
DEAD_HOST = "nonexistent-host.invalid"


class VerdictSpider(ListSpider):
    """Records the first verdict on each URL (the ``robotstxt_verdict`` signal)."""

    name = "verdicts"

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.verdicts = {}
        crawler.signals.connect(spider.judged, signal=robotstxt_verdict)
        return spider

    def judged(self, request: Any, judgement: Judgement) -> None:
        self.verdicts.setdefault(request.url, judgement)


@pytest.fixture
def servers() -> Iterator[dict[str, ThreadedOrigin]]:
    with ThreadedOrigin("127.0.0.1") as rules, ThreadedOrigin("127.0.0.2") as missing, \
            ThreadedOrigin("127.0.0.3") as busy:
        rules.route("/robots.txt", 200, ROBOTS)
        rules.route("/.well-known/tdmrep.json", 200, TDMREP, Content_Type="application/json")
        for path in ("/page", "/private/x", "/ai/x", "/r/x"):
            rules.route(path, 200, "<html></html>", Content_Type="text/html")
        missing.route("/page", 200, "<html></html>", Content_Type="text/html")
        busy.route("/robots.txt", 503, "busy")
        yield {"rules": rules, "missing": missing, "busy": busy}


def _command(tmp_path: Path, url: str) -> subprocess.Popen[str]:
    """``scrapy robotstxt URL``, started: the commands run beside each other and beside the crawl
    (:func:`_finished` waits for one)."""
    options = [item for name, value in SETTINGS.items() for item in ("-s", f"{name}={value}")]
    return subprocess.Popen([sys.executable, "-m", "scrapy", "robotstxt", url, *options, *command_options()],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finished(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    # A bound for a command that hangs, far above what it takes on a loaded machine.
    stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)



def _addresses(text: str) -> str:
    """``text`` with the memory addresses of object reprs (``at 0x7f...``) blanked."""
    return re.sub(r" at 0x[0-9a-f]+", " at 0x", text)


def _ledger_verdicts(directory: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted((directory / "runs").iterdir()):
        opener: Any = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as handle:
            for line in handle:
                record = json.loads(line)
                if record["k"] == "verdict":
                    found.setdefault(record["u"], []).append(record["d"])
    return found


#: URL (server, path) -> the kind of its first verdict, and the exception a crawl ends it with.
CASES = [
    ("rules", "/page", Kind.ALLOWED, None),
    ("rules", "/private/x", Kind.FORBIDDEN, RobotsTxtForbidden),
    ("rules", "/ai/x", Kind.USAGE_DENIED, RobotsTxtUsageDenied),
    ("rules", "/r/x", Kind.TDM_RESERVED, RobotsTxtTdmReserved),
    ("missing", "/page", Kind.ALLOWED, None),  # robots.txt 404: unavailable, everything allowed
    ("busy", "/page", Kind.HELD, RobotsTxtUnreachable),  # held, then dropped after ROBOTSTXT_MAX_WAIT
    ("dead", "/page", Kind.DROPPED, RobotsTxtUnreachable),  # a host name that does not resolve
]


@pytest_twisted.inlineCallbacks
def test_the_crawl_and_the_command_tell_the_same_verdict(servers, tmp_path):
    def url(server: str, path: str) -> str:
        return f"http://{DEAD_HOST}{path}" if server == "dead" else servers[server].url(path)

    urls = [url(server, path) for server, path, _, _ in CASES]
    ledger = tmp_path / "ledger"
    settings = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, **SETTINGS, "ROBOTSTXT_MAX_WAIT": 2,
                "ROBOTSTXT_RETRY_DELAY": 0.5, "ROBOTSTXT_LEDGER": str(ledger)}

    commands = [_command(tmp_path, address) for address in urls]
    try:
        result = yield run_crawl(VerdictSpider, settings, urls=urls)
        told = [_finished(command) for command in commands]
    finally:
        for command in commands:
            if command.poll() is None:
                command.kill()
                command.communicate()

    verdicts = result.crawler.spider.verdicts
    recorded = _ledger_verdicts(ledger)
    for (_, _, kind, error), address, command in zip(CASES, urls, told, strict=True):
        judgement = verdicts[address]
        printed = field(command.stdout, "Verdict")
        assert judgement.kind is kind, (address, judgement)
        assert recorded[address][0] == kind.value  # the ledger's first record of the URL
        # The same verdict, but for the memory addresses an error's text may name (each process has its own).
        assert _addresses(printed) == _addresses(str(judgement)), (address, command.stdout, command.stderr)
        assert command.returncode == (0 if kind is Kind.ALLOWED else 1), (address, command.stderr)
        errors = result.errors_for(address)
        if error is None:
            assert address in result.responses and errors == []
        else:
            (exception,) = errors
            assert type(exception) is error
            assert exception.judgement is not None  # the exception carries the verdict acted on
            if kind is not Kind.HELD:
                assert exception.judgement == judgement
            else:  # held, then dropped once waiting no longer helps
                assert exception.judgement.kind is Kind.DROPPED and exception.judgement.reason == "max_wait"
    # The close summary counts every kind.
    (summary,) = [m for m in result.messages() if m.startswith("robots.txt verdicts:")]
    assert summary.startswith("robots.txt verdicts: 2 allowed, 1 disallowed by robots.txt, 1 usage denied by "
                              "robots.txt, 1 TDM rights reserved by tdmrep.json, 2 dropped for their robots.txt"), \
        summary
