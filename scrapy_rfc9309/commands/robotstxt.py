"""The plugin's Scrapy command: ``scrapy robotstxt`` explains a verdict.

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

``scrapy robotstxt report LEDGER... [-o FILE.html] [--json FILE.json]``: the report of the
ledgers for people, and its figures as JSON (see :mod:`.report`).

``scrapy robotstxt audit DIRECTORY... [--json] [--allow-unsealed]``: audit the ledgers
(``ROBOTSTXT_LEDGER``) of a crawl or of a fleet, read together (see :mod:`.audit`). Exit
status: 0 everything verifies, 1 a problem (listed), 2 a usage error (no directory, a
directory that is missing, unreadable or not a ledger). A run that did not end cleanly
(its last segment not sealed) is a problem unless ``--allow-unsealed``. With ``--item FILE``,
the provenance of exported items is checked against the ledger too
(:mod:`~scrapy_rfc9309.evidence.item_check`). The first
argument ``audit`` selects the audit: a URL whose host is ``audit`` needs its scheme
(``http://audit/``).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Spider
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.utils.url import add_http_if_no_scheme

from ..addon import Addon
from ..components.robotstxt_middleware import RobotsTxtMiddleware
from ..components.usage_middleware import UsageMiddleware
from ..config import Config
from ..core.accelerator import matcher_in_use
from ..core.origins import Origin
from ..core.product_tokens import product_token
from ..core.state import Access, Cause, FetchOutcome, OriginState, Policy
from ..core.verdict import Enforced, Judgement, Kind, judge
from ..evidence.audit import LedgerError, audit, format_text
from ..evidence.item_check import check_items, format_items
from ..exceptions import RobotsTxtConfigError
from ..runtime import compat as _compat
from .report import run_report
from .settings import addon_listed

if TYPE_CHECKING:
    from scrapy.settings import Settings

__all__ = ["ALLOWED", "DISALLOWED", "NO_VERDICT", "USAGE_ERROR", "RobotstxtCommand", "crawl_use", "exit_status",
           "explain", "explain_tdmrep", "held_line", "run_audit", "url_problem"]

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


def exit_status(judgement: Judgement) -> int:
    """The command's exit status for ``judgement``: 0 for a request a crawl with the
    same settings releases, 1 for one it refuses, holds or drops."""
    return ALLOWED if judgement.kind is Kind.ALLOWED else DISALLOWED


def explain(judgement: Judgement, agent: str | bytes, state: OriginState | None = None, stored: bool = False,
            response_read: tuple[str, ...] = (), purposes: tuple[str, ...] = (), delay_cap: float | None = None,
            held: str | None = None, delay_off: str = "ROBOTSTXT_CRAWL_DELAY is off") -> list[str]:
    """The report's lines: the request, the origin's robots.txt state, the verdict
    and what it rests on. ``state``: the state fetched (None: a ``--file``);
    ``stored`` when it came from ``ROBOTSTXT_STORE`` rather than a fetch by this
    command; ``response_read``: the categories of ``ROBOTSTXT_USAGE_DENY`` that a
    response's own headers or meta tags may still deny (the verdict then depends on
    the response); ``delay_cap``: ``ROBOTSTXT_CRAWL_DELAY_MAX`` where a crawl applies
    the Crawl-delay, None where it does not (``delay_off`` says why); ``held``: what a crawl does with a held
    request (:func:`held_line`)."""
    url = judgement.url
    token = judgement.token or "(none: only the '*' group applies)"
    text = agent.decode("latin-1") if isinstance(agent, bytes) else agent
    lines = [f"URL:        {url}", f"Agent:      {text}", f"Token:      {token}"]
    if purposes:
        lines.append(f"Purpose:    {', '.join(purposes)} (their groups must allow it too)")
    if state is not None:
        lines.extend(_state_lines(state, stored))
    robots = None if judgement.robots is None else judgement.robots.robots
    if robots is not None and judgement.kind not in (Kind.HELD, Kind.DROPPED):
        lines.append(f"Group:      {(robots.group_agents(agent) or 'none')!r}")
    lines.append(f"Verdict:    {judgement}")
    if held is not None and judgement.kind is Kind.HELD:
        lines.append(f"Held:       {held}")
    if robots is not None:
        delay = robots.crawl_delay(agent)
        if delay is not None:
            lines.append(_delay_line(delay, delay_cap, delay_off))
        usage = judgement.usage or robots.usage(url, agent)
        if usage and not judgement.usage and not robots.allowed(url, agent):
            # A path the agent may not crawl has no usage preference (draft-ietf-aipref-attach-05, section 3.1).
            lines.append("Usage:      none (a path it may not crawl has none: draft-ietf-aipref-attach-05, 3.1)")
        elif usage:
            lines.append(f"Usage:      {usage}")
        if robots.sitemaps:
            lines.append("Sitemaps:   " + ", ".join(robots.sitemaps))
    if response_read and judgement.kind is Kind.ALLOWED:
        lines.append(f"Response:   its headers may still deny {', '.join(response_read)} (ROBOTSTXT_USAGE_DENY): "
                     "a crawl reads them when the response arrives")
    return lines


def _delay_line(delay: float, cap: float | None, off: str) -> str:
    """The Crawl-delay line: the delay a crawl applies, or that it applies none and why."""
    if cap is None:
        return f"Crawl-delay: none applied (the file asks {delay:g} s; {off})"
    if delay > cap:
        return f"Crawl-delay: {cap:g} s (the file asks {delay:g} s; capped at ROBOTSTXT_CRAWL_DELAY_MAX)"
    return f"Crawl-delay: {delay:g} s"


def held_line(state: OriginState, policy: Policy, max_wait_idle: float, now: float) -> str:
    """What a crawl does with a request held for the unreachable document of ``state``:
    it fetches the document again at each retry and gives the request up at the
    origin's give-up time (``ROBOTSTXT_MAX_WAIT``, or ``ROBOTSTXT_MAX_WAIT_REFUSED`` for
    refused connections, from the first failed fetch), or ``ROBOTSTXT_MAX_WAIT_IDLE``
    after held requests became all that is left of the crawl, whichever comes first."""
    setting = "ROBOTSTXT_MAX_WAIT_REFUSED" if state.cause is Cause.REFUSED else "ROBOTSTXT_MAX_WAIT"
    left = max(0.0, state.give_up_at(policy) - now)
    return (f"a crawl keeps the request waiting, fetches again at each retry, and gives it up in {left:.0f} s "
            f"({setting}, from the first failed fetch) or {max_wait_idle:g} s after held requests are all that "
            "is left of it (ROBOTSTXT_MAX_WAIT_IDLE), whichever comes first")


def _state_lines(state: OriginState, stored: bool) -> list[str]:
    """The origin's robots.txt state: where it was read, its access result, each once."""
    outcome = state.outcome
    assert outcome is not None
    lines = [f"robots.txt: {outcome.url if not outcome.redirects else outcome.redirects[-1]}"]
    status = outcome.status if outcome.status is not None else "-"
    detail = outcome.detail
    detail = f", {detail}" if detail and detail != f"status {status}" else ""
    lines.append(f"Access:     {state.access.value} (status {status}{detail})")
    if outcome.redirects:
        lines.append(f"Redirects:  {len(outcome.redirects)}: " + " -> ".join(outcome.redirects))
    if outcome.truncated:
        lines.append("Size:       cut at ROBOTSTXT_MAX_SIZE; later rules ignored")
    if state.access is Access.UNREACHABLE and state.robots is not None:
        lines.append(f"Good copy:  fetched {time.time() - (state.good_at or state.fetched_at):.0f} s ago, applies")
    if stored:
        lines.append(f"Stored:     fetched {time.time() - state.fetched_at:.0f} s ago (ROBOTSTXT_STORE), "
                     "not fetched again")
    label = "Retry in:  " if state.access is Access.UNREACHABLE else "Lifetime:  "
    lines.append(f"{label} {state.expires_at - time.time():.0f} s")
    return lines


def explain_tdmrep(state: OriginState | None, judgement: Judgement) -> list[str]:
    """The report's lines for the origin's tdmrep.json state and the rule that applies."""
    if state is None or state.outcome is None:
        return ["TDMRep:     unknown (the spider closed)"]
    outcome = state.outcome
    status = outcome.status if outcome.status is not None else "-"
    detail = f", {outcome.detail}" if outcome.detail and outcome.detail != f"status {status}" else ""
    lines = [f"TDMRep:     {outcome.url} ({state.access.value}, status {status}{detail})"]
    if state.tdmrep is None:
        unreachable = state.access is Access.UNREACHABLE
        lines.append("TDM rule:   unknown (unreachable)" if unreachable else "TDM rule:   none (no tdmrep.json)")
        return lines
    entry = judgement.tdm_entry if judgement.tdm_known else state.tdmrep.entry_for(judgement.url)
    lines.append(f"TDM rule:   {entry if entry is not None else 'none applies'}")
    return lines


class _ExplainSpider(Spider):
    name = "robotstxt_explain"

    def __init__(self, url: str, agent: str, lines: list[str], status: list[int], delay_off: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.url = url
        self.agent = agent
        self.lines = lines
        self.status = status
        #: Why the project's crawl applies no Crawl-delay whatever the settings say (None: it may).
        self.delay_off = delay_off

    async def start(self) -> AsyncIterator[Any]:
        middleware = self.crawler.get_downloader_middleware(RobotsTxtMiddleware)
        if middleware is None:  # the command enables the add-on: another add-on of the project turned it off
            raise UsageError("scrapy_rfc9309.RobotsTxtMiddleware is not enabled")
        started = time.time()
        state = await middleware.fetch_state(self.url)
        if state is None:
            return
        enforcement = middleware.parts.verdicts
        token = enforcement.agents.token(self.agent)
        judgement = judge(self.url, self.agent, token, state, time.time(), enforcement.enforced)
        tdm_state = None
        if middleware.tdm is not None and judgement.kind is Kind.ALLOWED:
            tdm_state = await middleware.fetch_tdmrep_state(self.url)
        # The verdict a crawl with these settings gives: judge() as the middleware asks it.
        now = time.time()
        judgement = judge(self.url, self.agent, token, state, now, enforcement.enforced, tdm_state, explain=True)
        config = middleware.config
        unreachable = tdm_state if judgement.document is not None and judgement.document.name != "robots.txt" \
            else state
        held = None
        if judgement.kind is Kind.HELD and unreachable is not None:
            held = held_line(unreachable, config.policy, config.max_wait_idle, now)
        delay_cap = config.crawl_delay_max if config.crawl_delay and self.delay_off is None else None
        self.lines.extend(explain(judgement, self.agent, state, state.fetched_at < started,
                                  _response_read(self.crawler, config), enforcement.enforced.purpose_tokens,
                                  delay_cap, held, self.delay_off or "ROBOTSTXT_CRAWL_DELAY is off"))
        if tdm_state is not None:
            self.lines.extend(explain_tdmrep(tdm_state, judgement))
        self.status.append(exit_status(judgement))
        return
        yield


def _response_read(crawler: Any, config: Config) -> tuple[str, ...]:
    """The categories of ``ROBOTSTXT_USAGE_DENY`` a crawl's UsageMiddleware checks on
    each response (none without it)."""
    if not config.usage_deny or not (config.usage_headers or config.usage_meta):
        return ()
    return config.usage_deny if crawler.get_downloader_middleware(UsageMiddleware) is not None else ()


#: The settings that decide which robots.txt middleware a crawl uses.
_CRAWL_SETTINGS = ("ROBOTSTXT_OBEY", "ADDONS", "DOWNLOADER_MIDDLEWARES")


def crawl_use(settings: Settings, crawl: Settings) -> tuple[str, str | None] | None:
    """What a crawl with ``settings`` (the project's, before the command enables the
    add-on; ``crawl``: the same once its add-ons have run) obeys, in one line, and why it
    applies no Crawl-delay of this plugin's (None: it applies them as
    ``ROBOTSTXT_CRAWL_DELAY`` says). None outside a project when the command line sets
    none of :data:`_CRAWL_SETTINGS`: there is no crawl to tell of."""
    from scrapy.settings import SETTINGS_PRIORITIES
    from scrapy.utils.project import inside_project

    cmdline = SETTINGS_PRIORITIES["cmdline"]
    if not inside_project() and all((settings.getpriority(name) or 0) < cmdline for name in _CRAWL_SETTINGS):
        return None
    if not crawl.getbool("ROBOTSTXT_OBEY"):
        return ("the project's crawl obeys no robots.txt (ROBOTSTXT_OBEY is False)",
                "the project's crawl obeys no robots.txt")
    if _compat.downloader_middleware_enabled(crawl, RobotsTxtMiddleware):
        return "the project's crawl obeys this verdict (scrapy_rfc9309 is enabled)", None
    if _compat.builtin_middleware_enabled(crawl):
        return ("the project's crawl uses Scrapy's built-in RobotsTxtMiddleware, not this plugin, and may judge "
                "otherwise (enable it: ADDONS = {'scrapy_rfc9309.Addon': 0})",
                "the built-in middleware applies none")
    return ("the project's crawl obeys no robots.txt (no robots.txt middleware is enabled)",
            "the project's crawl obeys no robots.txt")


def _checked_url(arg: str, fetch: bool) -> str:
    """``arg`` as the URL to check (``http://`` added when it has no scheme); a
    :class:`UsageError` for one that cannot be checked."""
    raw = arg.strip()
    url = add_http_if_no_scheme(raw)
    problem = url_problem(url, fetch)
    host = urlsplit(url).hostname if problem is None else None
    if host is not None and url != raw and not _looks_like_a_host(host):
        problem = f"no scheme, and {host!r} is not a host name with a domain (give the scheme: http://{raw})"
    if problem:
        raise UsageError(f"cannot check {arg!r}: {problem}")
    return url


def _looks_like_a_host(host: str) -> bool:
    """Whether ``host``, read from an argument without a scheme, names a host: a
    name with a dot, ``localhost`` or an IP address."""
    if "." in host.strip(".") or host == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class RobotstxtCommand(ScrapyCommand):
    requires_project = False
    # The add-on and ROBOTSTXT_OBEY are set in run(), above the project's settings, once what the
    # project's crawl uses is known.
    default_settings = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return ("[options] URL | audit [--json] [--allow-unsealed] [--anchor HASH]... [--item FILE [--item-field "
                "FIELD]] DIRECTORY... | report [-o FILE.html] [--json FILE.json] LEDGER...")

    def short_desc(self) -> str:
        return "Explain what robots.txt says about a URL (RFC 9309)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--purpose", "-p", dest="purposes", action="append", default=None, metavar="TOKEN",
                            help="a purpose token whose group must also allow the URL (repeatable; sets "
                                 "ROBOTSTXT_PURPOSE_TOKENS)")
        parser.add_argument("--agent", "-a", dest="agent", default=None,
                            help="product token or User-Agent string, by default ROBOTSTXT_USER_AGENT or USER_AGENT")
        parser.add_argument("--file", "-f", dest="file", default=None,
                            help="check this local robots.txt instead of fetching one")
        parser.add_argument("--ledger", dest="ledger", action="store_true",
                            help="record the robots.txt this check fetches (its version and state) in the ledger "
                                 "ROBOTSTXT_LEDGER names, as a run of its own (by default the command writes none)")
        parser.add_argument("--json", dest="json", nargs="?", const=True, default=False, metavar="FILE",
                            help="audit: print the report as JSON; report: write its figures to FILE")
        parser.add_argument("--output", "-o", dest="output", default=None, metavar="FILE",
                            help="report: the HTML page to write (default robotstxt-report.html)")
        parser.add_argument("--allow-unsealed", dest="allow_unsealed", action="store_true",
                            help="audit: exit 0 for a run that did not end cleanly when what it wrote verifies")
        parser.add_argument("--anchor", dest="anchors", action="append", default=[], metavar="HASH",
                            help="audit: a head the crawl logged at its end, kept outside: it must be in the manifest")
        parser.add_argument("--item", dest="item", default=None, metavar="FILE",
                            help="audit: also check the provenance of the items of FILE (JSON Lines, as scrapy crawl "
                                 "-O items.jsonl writes) against the ledger")
        parser.add_argument("--item-field", dest="item_field", default=None, metavar="FIELD",
                            help="audit --item: the items' provenance field, by default the project's "
                                 "ROBOTSTXT_PROVENANCE, else 'provenance'")

    _file_status = NO_VERDICT

    def _explain_file(self, url: str, agent: str, body: bytes, delay_off: str | None) -> list[str]:
        assert self.settings is not None
        config = Config.from_settings(self.settings)
        judgement = _file_judgement(self.settings, url, agent, body)
        self._file_status = exit_status(judgement)
        delay_cap = config.crawl_delay_max if config.crawl_delay and delay_off is None else None
        return explain(judgement, agent, purposes=config.purpose_tokens, delay_cap=delay_cap,
                       delay_off=delay_off or "ROBOTSTXT_CRAWL_DELAY is off")

    def long_desc(self) -> str:
        return (
            "Explain what robots.txt says about a URL (RFC 9309): the access result, the group, the verdict "
            "and the line that decides it, judged by this plugin with the project's settings (and the plugin's "
            "defaults) whether or not the project enables it; a 'Crawl:' line says what the project's crawl "
            "uses. Nothing is written to the project's ROBOTSTXT_LEDGER unless --ledger is given. Exit status: "
            "0 allowed, 1 disallowed, held or dropped, 2 usage error (such as a URL that cannot be parsed or a "
            "setting the plugin refuses), 3 no verdict.\n\n"
            "robotstxt audit DIRECTORY... checks the ledgers ROBOTSTXT_LEDGER wrote (a fleet's directories "
            "together): every record chain and seal, every archived robots.txt version, every verdict "
            "recomputed, every response tied to an allowed verdict. Exit status: 0 everything verifies, 1 "
            "problems (listed; a run that did not end cleanly is one unless --allow-unsealed), 2 usage error. "
            "With --item FILE, each exported item's provenance (ROBOTSTXT_PROVENANCE) is checked too: its "
            "verdict record exists, is chained and says what the item says (every mismatch named by item line "
            "and field). "
            "A URL whose host is 'audit' needs its scheme (http://audit/).\n\n"
            "robotstxt report LEDGER... [-o FILE.html] [--json FILE.json] audits the ledgers and writes the report "
            "for people: one self-contained HTML page (the whole run, then per host the documents fetched, the "
            "protocols checked, the verdicts over time, the rules that blocked most, usage categories denied, "
            "Crawl-delay, held and dropped requests) and the same figures as JSON. Exit status: the audit's."
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if isinstance(opts.json, str) and args[:1] != ["report"]:
            # Only report's --json takes a file: elsewhere the word after it is an argument (a directory, or
            # the word audit itself).
            at = 1 if args[:1] == ["audit"] else 0
            args, opts.json = [*args[:at], opts.json, *args[at:]], True
        if args[:1] == ["report"]:
            self.exitcode = run_report(args[1:], opts)
            return
        if opts.output:
            raise UsageError("--output goes with 'report LEDGER...'")
        if args[:1] == ["audit"]:
            if opts.item is not None and opts.item_field is None:
                field = self.settings.get("ROBOTSTXT_PROVENANCE") if self.settings is not None else None
                opts.item_field = field or "provenance"
            self.exitcode = run_audit(args[1:], opts)
            return
        if opts.json or opts.allow_unsealed or opts.anchors or opts.item or opts.item_field:
            raise UsageError("--json, --allow-unsealed, --anchor and --item go with 'audit DIRECTORY...'")
        if len(args) != 1:
            raise UsageError("give exactly one URL")
        url = _checked_url(args[0], fetch=not opts.file)
        assert self.settings is not None
        settings = self.settings
        crawl = _compat.settings_with_addons(settings)
        use = crawl_use(settings, crawl)
        delay_off = None if use is None else use[1]
        ledger = settings.get("ROBOTSTXT_LEDGER")
        if opts.ledger and (opts.file or not ledger):
            raise UsageError("--ledger records the robots.txt a check fetches in the ledger ROBOTSTXT_LEDGER names: "
                             + ("not with --file" if opts.file else "ROBOTSTXT_LEDGER is not set"))
        if not opts.ledger:
            settings.set("ROBOTSTXT_LEDGER", None, "cmdline")
        # Judged by this plugin whatever the project's crawl uses: the add-on added to ADDONS (the
        # project's priority kept) unless the project enables the plugin, and ROBOTSTXT_OBEY on, above
        # the project's and the command line's.
        if not addon_listed(settings) and not _compat.downloader_middleware_enabled(crawl, RobotsTxtMiddleware):
            settings.set_in_component_priority_dict("ADDONS", Addon, 0)
        settings.set("ROBOTSTXT_OBEY", True, "cmdline")
        agent = opts.agent or settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT")
        if opts.purposes:
            settings.set("ROBOTSTXT_PURPOSE_TOKENS", [p for value in opts.purposes for p in value.split(",")],
                         "cmdline")
        try:
            Config.from_settings(_compat.settings_with_addons(settings))
        except RobotsTxtConfigError as exc:  # what the crawl would stop with at start-up
            raise UsageError(str(exc)) from None
        tail = [f"Matcher:    {matcher_in_use()}"]
        if use is not None:
            tail.append(f"Crawl:      {use[0]}")
        if ledger and not opts.ledger:
            tail.append("Ledger:     not written (--ledger records the robots.txt fetched in ROBOTSTXT_LEDGER)")
        elif opts.ledger:
            tail.append(f"Ledger:     the robots.txt fetched recorded in {ledger} (ROBOTSTXT_LEDGER)")
        if opts.file:
            try:
                with open(opts.file, "rb") as handle:
                    body = handle.read()
            except OSError as exc:
                raise UsageError(f"cannot read --file {opts.file}: {exc.strerror or exc}") from None
            print("\n".join([f"File:       {opts.file}", *self._explain_file(url, agent, body, delay_off), *tail]))
            self.exitcode = self._file_status
            return
        lines: list[str] = []
        status: list[int] = []
        assert self.crawler_process is not None
        settings.set("ROBOTSTXT_USER_AGENT", agent, "cmdline")
        self.crawler_process.crawl(_ExplainSpider, url=url, agent=agent, lines=lines, status=status,
                                   delay_off=delay_off)
        self.crawler_process.start()
        if not lines:
            self.exitcode = NO_VERDICT
            print("No verdict: the check failed (see the log above)", file=sys.stderr)
            return
        print("\n".join([*lines, *tail]))
        self.exitcode = status[0] if status else NO_VERDICT


def _file_judgement(settings: Any, url: str, agent: str, body: bytes) -> Judgement:
    """The verdict a crawl with ``settings`` gives ``url`` if its robots.txt were ``body``."""
    config = Config.from_settings(settings)
    origin = Origin.from_url(url)
    # The file stands for the URL's robots.txt: relative Sitemap values are joined with that.
    robots_url = origin.robots_url if origin is not None else url
    now = time.time()
    state = OriginState.initial(FetchOutcome(Access.PARSED, robots_url, 200, body), now, config.policy)
    enforced = Enforced(config.policy, config.usage_deny, purpose_tokens=config.purpose_tokens)
    return judge(url, agent, product_token(agent), state, now, enforced, explain=True)


def run_audit(directories: list[str], opts: argparse.Namespace) -> int:
    """``scrapy robotstxt audit``: print the report, return the exit status."""
    if opts.file or opts.agent or opts.purposes:
        raise UsageError("--file, --agent and --purpose do not apply to 'audit'")
    if not directories:
        raise UsageError("give at least one ledger directory: scrapy robotstxt audit DIRECTORY...")
    try:
        result = audit(directories, opts.anchors)
    except LedgerError as exc:
        raise UsageError(str(exc)) from None
    item = getattr(opts, "item", None)
    if item is not None:
        try:
            check = check_items(directories, item, getattr(opts, "item_field", None) or "provenance", result)
        except OSError as exc:
            raise UsageError(f"--item {item}: {exc.strerror or exc}") from None
        if opts.json:
            print(json.dumps({**result.as_dict(opts.allow_unsealed), "items": check.as_dict(opts.allow_unsealed)},
                             indent=2))
        else:
            print(format_text(result, opts.allow_unsealed))
            print(format_items(check))
        return check.exit_status(opts.allow_unsealed)
    if opts.json:
        print(json.dumps(result.as_dict(opts.allow_unsealed), indent=2))
    else:
        print(format_text(result, opts.allow_unsealed))
    return result.exit_status(opts.allow_unsealed)
