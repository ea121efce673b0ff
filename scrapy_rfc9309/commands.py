"""The plugin's Scrapy commands: ``scrapy robotstxt`` explains a verdict, and
``scrapy settings`` shows the settings with the add-ons' changes.

``scrapy robotstxt URL [--agent TOKEN] [--file PATH]``: explain a verdict.

Fetches the URL's robots.txt through the same code path as the middleware (the
engine, the downloader middlewares, the RFC's status, redirect and size rules) and
prints the access result, the lifetime, the verdict and the deciding line. With
``ROBOTSTXT_TDMREP`` on, the origin's tdmrep.json is fetched too, and the rule that
applies to the URL printed.
``--file`` checks a local robots.txt without fetching anything.

The exit status is the verdict, for scripts: 0 allowed, 1 disallowed (or held:
the robots.txt is unreachable; or a TDM reservation that ``ROBOTSTXT_USAGE_DENY``
enforces), 2 a usage error (no URL, a URL that cannot be
parsed, an unreadable ``--file``), 3 no verdict (the check itself failed; see the
log).

``scrapy robotstxt audit DIRECTORY... [--json] [--allow-unsealed]``: audit the ledgers
(``ROBOTSTXT_LEDGER``) of a crawl or of a fleet, read together (see :mod:`.audit`). Exit
status: 0 everything verifies, 1 a problem (listed), 2 a usage error (no directory, a
directory that is missing, unreadable or not a ledger). A run that did not end cleanly
(its last segment not sealed) is a problem unless ``--allow-unsealed``. The first
argument ``audit`` selects the audit: a URL whose host is ``audit`` needs its scheme
(``http://audit/``).

``scrapy settings [--get NAME ...]`` is Scrapy's command, with the settings as a
crawl gets them: after the project's add-ons (``ADDONS``) have changed them. Up to
Scrapy 2.19 Scrapy's own command prints them before any add-on runs (Scrapy issue
7010), so that with ``ADDONS = {"scrapy_rfc9309.Addon": 0}`` it would print
``ROBOTSTXT_OBEY = False`` and no ``ROBOTSTXT_*`` default. A Scrapy whose command
applies the add-ons itself (it then has a ``--spider`` option) runs unchanged.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from scrapy import Spider
from scrapy.commands import ScrapyCommand
from scrapy.commands.settings import Command as ScrapySettingsCommand
from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings
from scrapy.utils.url import add_http_if_no_scheme

from . import _compat, matcher_in_use
from .access import Access, Cause, OriginState
from .agent import product_token
from .audit import LedgerError, audit, format_text
from .middleware import RobotsTxtMiddleware
from .origin import Origin
from .robotstxt import RobotsTxt, parse

__all__ = ["ALLOWED", "DISALLOWED", "NO_VERDICT", "USAGE_ERROR", "RobotstxtCommand", "SettingsCommand", "exit_status",
           "explain", "explain_tdmrep", "run_audit", "url_problem"]

#: Why an unreachable robots.txt disallows, and what becomes of the origin's requests.
_UNREACHABLE_VERDICT = {
    Cause.TRANSIENT: "robots.txt unreachable: complete disallow, requests are held",
    Cause.REFUSED: "robots.txt unreachable, connections refused: complete disallow, requests are held for up to "
                   "ROBOTSTXT_MAX_WAIT_REFUSED",
    Cause.NO_HOST: "the host name does not resolve: requests are dropped",
    Cause.CANNOT_REQUEST: "Scrapy cannot make the robots.txt request with these settings: requests are dropped",
}
#: Exit statuses of the command.
ALLOWED, DISALLOWED, USAGE_ERROR, NO_VERDICT = 0, 1, 2, 3


def url_problem(url: str, fetch: bool = True) -> str | None:
    """Why ``url`` cannot be checked, or None: it must parse as an absolute URL
    with a host and a valid port (and, to be fetched, an http or https scheme)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"not a URL ({exc})"
    if not parts.hostname or not parts.hostname.strip() or any(c.isspace() for c in parts.netloc):
        return "no host"
    if port == 0:
        return "port 0"
    if fetch and parts.scheme.lower() not in ("http", "https"):
        return f"a {parts.scheme} URL: only http and https robots.txt files are fetched (use --file)"
    return None


def exit_status(robots: RobotsTxt | None, url: str, agent: str, state: OriginState | None = None) -> int:
    """The command's exit status for the verdict :func:`explain` reports."""
    if robots is None:
        held = state is not None and state.access is Access.UNREACHABLE
        return DISALLOWED if held else ALLOWED
    return ALLOWED if robots.allowed(url, agent) else DISALLOWED


def explain(robots: RobotsTxt | None, url: str, agent: str, state: OriginState | None = None,
            stored: bool = False) -> list[str]:
    """The report's lines; ``stored`` when the state came from ``ROBOTSTXT_STORE``
    rather than a fetch by this command."""
    token = product_token(agent) or "(none: only the '*' group applies)"
    lines = [f"URL:        {url}", f"Agent:      {agent}", f"Token:      {token}"]
    if state is not None:
        outcome = state.outcome
        assert outcome is not None
        lines.append(f"robots.txt: {outcome.url if not outcome.redirects else outcome.redirects[-1]}")
        status = outcome.status if outcome.status is not None else "-"
        detail = f", {outcome.detail}" if outcome.detail else ""
        lines.append(f"Access:     {state.access.value} (status {status}{detail})")
        if outcome.redirects:
            lines.append(f"Redirects:  {len(outcome.redirects)}: " + " -> ".join(outcome.redirects))
        if outcome.truncated:
            lines.append("Size:       cut at ROBOTSTXT_MAX_SIZE; later rules ignored")
        if stored:
            lines.append(f"Stored:     fetched {time.time() - state.fetched_at:.0f} s ago (ROBOTSTXT_STORE), "
                         "not fetched again")
        lifetime = state.expires_at - time.time()
        label = "Retry in:  " if state.access is Access.UNREACHABLE else "Lifetime:  "
        lines.append(f"{label} {lifetime:.0f} s")
    if robots is None:
        if state is not None and state.access is Access.UNREACHABLE:
            lines.append(f"Verdict:    disallowed ({_UNREACHABLE_VERDICT[state.cause]})")
        else:
            lines.append("Verdict:    allowed (no robots.txt applies)")
        return lines
    verdict = robots.verdict(url, agent)
    group = verdict.token or "none"
    lines.append(f"Group:      {group!r}")
    lines.append(f"Verdict:    {'allowed' if verdict.allowed else 'disallowed'} ({verdict})")
    delay = robots.crawl_delay(agent)
    if delay is not None:
        lines.append(f"Crawl-delay: {delay:g} s")
    usage = robots.usage(url, agent)
    if usage:
        lines.append(f"Usage:      {usage}")
    if robots.sitemaps:
        lines.append("Sitemaps:   " + ", ".join(robots.sitemaps))
    return lines


def explain_tdmrep(state: OriginState | None, url: str, enforced: bool) -> tuple[list[str], bool]:
    """The report's lines for the origin's tdmrep.json, and whether the URL's
    request would be dropped for a TDM reservation (``enforced``: with
    ``ROBOTSTXT_USAGE_DENY`` listing a category a reservation denies)."""
    if state is None or state.outcome is None:
        return ["TDMRep:     no verdict (the spider closed)"], False
    outcome = state.outcome
    status = outcome.status if outcome.status is not None else "-"
    detail = f", {outcome.detail}" if outcome.detail and outcome.detail != f"status {status}" else ""
    lines = [f"TDMRep:     {outcome.url} ({state.access.value}, status {status}{detail})"]
    tdmrep = state.tdmrep
    if tdmrep is None:
        held = state.access is Access.UNREACHABLE
        lines.append("TDM rule:   unknown (unreachable): requests are held" if held and enforced else
                     "TDM rule:   unknown (unreachable)" if held else "TDM rule:   none (no tdmrep.json)")
        return lines, held and enforced
    entry = tdmrep.entry_for(url)
    if entry is None:
        lines.append("TDM rule:   none applies")
        return lines, False
    dropped = entry.reserved and enforced
    consequence = ": dropped (ROBOTSTXT_USAGE_DENY)" if dropped else ""
    lines.append(f"TDM rule:   {entry}{consequence}")
    return lines, dropped


class _ExplainSpider(Spider):
    name = "robotstxt_explain"

    def __init__(self, url: str, agent: str, lines: list[str], status: list[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.url = url
        self.agent = agent
        self.lines = lines
        self.status = status

    async def start(self) -> AsyncIterator[Any]:
        middleware = self.crawler.get_downloader_middleware(RobotsTxtMiddleware)
        if middleware is None:
            raise UsageError("scrapy_rfc9309.RobotsTxtMiddleware is not enabled")
        started = time.time()
        state = await middleware.fetch_state(self.url)
        robots = None if state is None or state.access is Access.UNAVAILABLE else state.robots
        if state is not None and state.access is Access.UNREACHABLE and robots is not None:
            self.lines.append("(unreachable now; the last good copy applies)")
        stored = state is not None and state.fetched_at < started
        self.lines.extend(explain(robots, self.url, self.agent, state, stored))
        status = exit_status(robots, self.url, self.agent, state)
        if middleware.tdm is not None and status == ALLOWED:
            lines, dropped = explain_tdmrep(await middleware.fetch_tdmrep_state(self.url), self.url,
                                            bool(middleware.tdm_deny))
            self.lines.extend(lines)
            status = DISALLOWED if dropped else status
        self.status.append(status)
        return
        yield


class RobotstxtCommand(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_LEVEL": "WARNING", "ROBOTSTXT_OBEY": True, "ADDONS": {"scrapy_rfc9309.Addon": 0}}

    def syntax(self) -> str:
        return "[options] URL | audit [--json] [--allow-unsealed] [--anchor HASH]... DIRECTORY..."

    def short_desc(self) -> str:
        return "Explain what robots.txt says about a URL (RFC 9309)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--agent", "-a", dest="agent", default=None,
                            help="product token or User-Agent string, by default ROBOTSTXT_USER_AGENT or USER_AGENT")
        parser.add_argument("--file", "-f", dest="file", default=None,
                            help="check this local robots.txt instead of fetching one")
        parser.add_argument("--json", dest="json", action="store_true",
                            help="audit: print the report as JSON")
        parser.add_argument("--allow-unsealed", dest="allow_unsealed", action="store_true",
                            help="audit: exit 0 for a run that did not end cleanly when what it wrote verifies")
        parser.add_argument("--anchor", dest="anchors", action="append", default=[], metavar="HASH",
                            help="audit: a head the crawl logged at its end, kept outside: it must be in the manifest")

    def long_desc(self) -> str:
        return (
            "Explain what robots.txt says about a URL (RFC 9309): the access result, the group, the verdict "
            "and the line that decides it. Exit status: 0 allowed, 1 disallowed or held (robots.txt "
            "unreachable), 2 usage error (such as a URL that cannot be parsed), 3 no verdict.\n\n"
            "robotstxt audit DIRECTORY... checks the ledgers ROBOTSTXT_LEDGER wrote (a fleet's directories "
            "together): every record chain and seal, every archived robots.txt version, every verdict "
            "recomputed, every response tied to an allowed verdict. Exit status: 0 everything verifies, 1 "
            "problems (listed; a run that did not end cleanly is one unless --allow-unsealed), 2 usage error. "
            "A URL whose host is 'audit' needs its scheme (http://audit/)."
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args[:1] == ["audit"]:
            self.exitcode = run_audit(args[1:], opts)
            return
        if opts.json or opts.allow_unsealed or opts.anchors:
            raise UsageError("--json, --allow-unsealed and --anchor go with 'audit DIRECTORY...'")
        if len(args) != 1:
            raise UsageError("give exactly one URL")
        url = add_http_if_no_scheme(args[0].strip())
        problem = url_problem(url, fetch=not opts.file)
        if problem:
            raise UsageError(f"cannot check {args[0]!r}: {problem}")
        assert self.settings is not None
        agent = opts.agent or self.settings.get("ROBOTSTXT_USER_AGENT") or self.settings.get("USER_AGENT")
        matcher_line = f"Matcher:    {matcher_in_use()}"
        if opts.file:
            try:
                with open(opts.file, "rb") as handle:
                    body = handle.read()
            except OSError as exc:
                raise UsageError(f"cannot read --file {opts.file}: {exc.strerror or exc}") from None
            # The file stands for the URL's robots.txt: relative Sitemap values are joined with that.
            origin = Origin.from_url(url)
            robots = parse(body, url=origin.robots_url if origin is not None else None)
            print("\n".join([f"File:       {opts.file}", *explain(robots, url, agent), matcher_line]))
            self.exitcode = exit_status(robots, url, agent)
            return
        lines: list[str] = []
        status: list[int] = []
        assert self.crawler_process is not None
        self.settings.set("ROBOTSTXT_USER_AGENT", agent, "cmdline")
        self.crawler_process.crawl(_ExplainSpider, url=url, agent=agent, lines=lines, status=status)
        self.crawler_process.start()
        if not lines:
            self.exitcode = NO_VERDICT
            print("No verdict: the check failed (see the log above)", file=sys.stderr)
            return
        print("\n".join([*lines, matcher_line]))
        self.exitcode = status[0] if status else NO_VERDICT


def run_audit(directories: list[str], opts: argparse.Namespace) -> int:
    """``scrapy robotstxt audit``: print the report, return the exit status."""
    if opts.file or opts.agent:
        raise UsageError("--file and --agent do not apply to 'audit'")
    if not directories:
        raise UsageError("give at least one ledger directory: scrapy robotstxt audit DIRECTORY...")
    try:
        result = audit(directories, opts.anchors)
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
    if opts.json:
        print(json.dumps(result.as_dict(opts.allow_unsealed), indent=2))
    else:
        print(format_text(result, opts.allow_unsealed))
    return result.exit_status(opts.allow_unsealed)


class SettingsCommand(ScrapySettingsCommand):
    """``scrapy settings``, with the changes of the project's add-ons."""

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if "spider" in vars(opts):  # Scrapy's own command applies the add-ons (and a spider's settings)
            super().run(args, opts)
            return
        assert self.settings is not None
        settings = _compat.settings_with_addons(self.settings)
        if opts.get:
            value = settings.get(opts.get)
            print(json.dumps(value.copy_to_dict()) if isinstance(value, BaseSettings) else value)
        elif opts.getbool:
            print(settings.getbool(opts.getbool))
        elif opts.getint:
            print(settings.getint(opts.getint))
        elif opts.getfloat:
            print(settings.getfloat(opts.getfloat))
        elif opts.getlist:
            print(settings.getlist(opts.getlist))
