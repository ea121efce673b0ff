"""``python -m example_project.demo`` (``make demo``): the example project, offline.

Run from the project directory (the one with ``scrapy.cfg``), as ``scrapy crawl`` is.

Starts the local demo site (``demo_site.py``: one origin per loopback address, each
with a robots.txt that shows one part of RFC 9309), crawls it with the ``demo``
spider and the project's settings (``settings.py``), and prints per origin what
happened: the robots.txt access result, the pages fetched, the pages robots.txt
blocked and by which rule, and the requests held while a robots.txt was
unreachable. Everything runs in one process and one reactor, on 127.0.0.x only
(on 127.0.0.1 alone, a port per origin, where the machine has no other loopback
address: see ``demo_site.demo_addresses``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.utils.reactor import install_reactor

try:
    from scrapy.crawler import AsyncCrawlerProcess as CrawlerProcess  # Scrapy 2.14 and later
except ImportError:
    from scrapy.crawler import CrawlerProcess  # type: ignore[assignment]
from scrapy.settings import Settings

from scrapy_rfc9309 import RobotParser, RobotsTxt, RobotsTxtMiddleware
from scrapy_rfc9309 import signals as robotstxt_signals
from scrapy_rfc9309.judgement import Judgement, Kind
from scrapy_rfc9309.origin import Origin

from .demo_site import BEYOND_LIMIT_RULE, DEMO_SETTINGS, DemoOrigin, DemoSite, build_site
from .spiders.demo import DemoSpider

#: Where the demo crawl keeps its verdict ledger (emptied at each run): ``demo-ledger`` in the
#: project directory, or ``DEMO_LEDGER``; ``scrapy robotstxt audit`` checks it afterwards.
LEDGER_DIR = os.environ.get("DEMO_LEDGER") or "demo-ledger"

#: The report of the ledger (``scrapy robotstxt report``), written beside it: its page and its JSON.
REPORT_PAGE, REPORT_JSON = f"{LEDGER_DIR}-report.html", f"{LEDGER_DIR}-report.json"

#: The summary needs no log below warnings.
RUN_SETTINGS: dict[str, Any] = {**DEMO_SETTINGS, "LOG_LEVEL": "WARNING", "ROBOTSTXT_LEDGER": LEDGER_DIR}


class Observer:
    """Collects, during the crawl, what the spider's records and the server logs do
    not show: the robots.txt files parsed (the ``robots_parsed`` signal), the
    requests held (the ``robotstxt_verdict`` signal: every verdict, as the middleware acts
    on it) and the middleware itself (for each origin's access result)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.parsed: dict[str, RobotsTxt] = {}  # origin base URL -> the last file parsed
        self.held: dict[str, list[tuple[str, float]]] = defaultdict(list)  # base URL -> [(url, when)]
        self.middleware: RobotsTxtMiddleware | None = None
        if hasattr(signals, "robots_parsed"):  # Scrapy 2.18 and later; before, the middleware's state
            crawler.signals.connect(self._robots_parsed, signal=signals.robots_parsed)
        crawler.signals.connect(self._engine_started, signal=signals.engine_started)
        crawler.signals.connect(self._verdict, signal=robotstxt_signals.robotstxt_verdict)

    def _verdict(self, request: Any, judgement: Judgement) -> None:
        if judgement.kind is Kind.HELD:
            origin = Origin.from_url(request.url)
            if origin is not None:
                self.held[origin.base].append((request.url, time.time()))

    def _robots_parsed(self, robotparser: RobotParser, request: Any = None) -> None:
        origin = Origin.from_url(request.url) if request is not None else None
        if origin is not None:
            self.parsed[origin.base] = robotparser.robots

    def _engine_started(self) -> None:
        engine = self.crawler.engine
        assert engine is not None
        for middleware in engine.downloader.middleware.middlewares:
            if isinstance(middleware, RobotsTxtMiddleware):
                self.middleware = middleware

    def state(self, base: str) -> Any:
        """The middleware's state for an origin (an ``OriginState``)."""
        return None if self.middleware is None else self.middleware.state_for(base)


# -- the summary -------------------------------------------------------------------------


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _base(url: str) -> str:
    origin = Origin.from_url(url)
    return origin.base if origin is not None else url


def _served(origin: DemoOrigin) -> str:
    hits = origin.robots_hits()
    if not hits:
        return "never requested"
    return ", ".join(f"{hit.status}" + (f" -> {hit.location}" if hit.location else "") for hit in hits)


def _access(state: Any, robots: RobotsTxt | None, origin: DemoOrigin, agent: str) -> list[str]:
    if state is None:
        return ["access result: none (robots.txt never fetched)"]
    outcome = state.outcome
    status = f"status {outcome.status}" if outcome.status is not None else outcome.error or outcome.reason
    lines = []
    if state.access.value == "parsed":
        read = state.robots.size if state.robots is not None else 0  # the bytes the fetch read
        size = f"{read:,} bytes"
        if outcome.truncated:
            size = f"only the first {read:,} bytes read (ROBOTSTXT_MAX_SIZE)"
        group = robots.group_agents(agent) if robots is not None else ""
        lines.append(f"access result: parsed ({status}, {size}); rules of group '{group or 'none'}' apply")
    elif state.access.value == "unavailable":
        lines.append(f"access result: unavailable ({status}): everything allowed, the body is not read")
    else:
        lines.append(f"access result: unreachable ({status}): complete disallow, requests held")
    if outcome.redirects:
        chain = " -> ".join([origin.url("/robots.txt"), *outcome.redirects])
        lines.append(f"redirects followed: {len(outcome.redirects)} ({chain})")
        lines.append(f"rules fetched from {outcome.url}, applied to {origin.base}")
    if robots is not None and robots.sitemaps:
        lines.append(f"sitemaps: {', '.join(robots.sitemaps)}")
    return lines


def _extras(origin: DemoOrigin, robots: RobotsTxt | None, agent: str, pages_fetched: list[str],
            tdmrep: dict[str, Any]) -> list[str]:
    """What is special about each origin."""
    lines: list[str] = []
    if origin.name == "ordinary" and robots is not None:
        other = robots.verdict(origin.url("/about.html"), "OtherBot")
        lines.append(f"{agent} has a group of its own; a crawler without one (OtherBot) gets group "
                     f"'{other.token}': /about.html -> {other}")
    elif origin.name == "missing":
        said = origin.notes["body"].strip().replace("\n", " / ")
        lines.append(f"the 404 body said '{said}': not obeyed ({len(pages_fetched)} pages fetched)")
    elif origin.name == "oversized" and robots is not None:
        size, offset = origin.notes["size"], origin.notes["beyond_offset"]
        beyond = robots.verdict(origin.url("/beyond-limit/page.html"), agent)
        obeyed = "obeyed" if not beyond.allowed else "not obeyed"
        lines.append(f"the file is {size:,} bytes; '{BEYOND_LIMIT_RULE}' sits at byte {offset:,}: {obeyed}")
    elif origin.name == "slow-crawl" and robots is not None:
        delay = robots.crawl_delay(agent)
        times = sorted(hit.at for hit in origin.page_hits())
        gaps = [b - a for a, b in itertools.pairwise(times)]
        shortest = min(gaps) if gaps else 0.0
        honoured = delay is not None and shortest >= delay * 0.9
        lines.append(f"Crawl-delay for {agent}: {delay:g} s; shortest gap between page requests: {shortest:.2f} s"
                     f" ({'honoured' if honoured else 'not honoured by the middleware'})")
    elif origin.name == "ai-prefs" and robots is not None:
        records = robots.records(agent, "content-usage")
        shown = ", ".join(f"'{value}' (line {line})" for value, line in records) or "none"
        lines.append(f"Content-Usage for {agent}: {shown}; it does not restrict crawling, the pages are fetched")
        for url, entry in sorted(tdmrep.items()):
            if entry is not None and entry.reserved and _base(url) == origin.base:
                lines.append(f"tdmrep.json: {_path(url)}: TDM rights reserved (rule {entry.index}, location "
                             f"'{entry.location}', tdm-policy {entry.policy}); fetched, because "
                             "ROBOTSTXT_USAGE_DENY does not list train-ai (with it, it would be dropped)")
    return lines


def _usage_sources(origin: DemoOrigin, spider: DemoSpider, pages: list[str]) -> list[str]:
    """What each page's sources said (response.meta["robotstxt_preferences"]), and the answer."""
    lines = []
    for path, what in origin.notes["pages"].items():
        preferences = spider.preferences.get(origin.url(path))
        if preferences is None:
            lines.append(f"{path} ({what}): no preference read")
            continue
        said = "; ".join(f"{s.where.replace(origin.base, '')}: {s.text}" for s in preferences.statements)
        answer = ", ".join(f"{category}={value} (from {', '.join(w.replace(origin.base, '') for w in where)})"
                           for category, (value, where) in preferences.combined.items())
        lines.append(f"{path} ({what})")
        lines.append(f"  sources: {said}")
        lines.append(f"  answer: {answer or 'unknown'}" + (f"; directives: {', '.join(sorted(preferences.directives))}"
                                                           if preferences.directives else ""))
    followed = "/not-followed.html" in pages
    lines.append(f"/not-followed.html, linked only from the nofollow page: "
                 f"{'fetched' if followed else 'not followed (NofollowMiddleware)'}")
    return lines


def summary(site: DemoSite, spider: DemoSpider, observer: Observer, stats: dict[str, Any], agent: str,
            elapsed: float) -> str:
    fetched: dict[str, list[str]] = defaultdict(list)
    for url in spider.fetched:
        fetched[_base(url)].append(_path(url))
    blocked: dict[str, list[Any]] = defaultdict(list)
    for item in spider.blocked:
        blocked[_base(item.url)].append(item)
    dropped: dict[str, list[Any]] = defaultdict(list)
    for item in spider.unreachable:
        dropped[_base(item.url)].append(item)

    out = [
        "",
        f"scrapy-rfc9309 demo: {len(site.origins)} origins on "
        f"{'127.0.0.1, a port each' if site.one_address else '127.0.0.x'}, obeying robots.txt as '{agent}'",
        f"crawl finished in {elapsed:.1f} s ({stats.get('finish_reason')})",
    ]
    for number, origin in enumerate(site.origins, 1):
        base = origin.base
        state = observer.state(base)
        # The file parsed, from the robots_parsed signal (the middleware's own copy as a fallback).
        robots = observer.parsed.get(base) or (state.robots if state is not None else None)
        out.append("")
        out.append(f"[{number}] {origin.name}: {origin.about}")
        out.append(f"    origin: {base}")
        if not origin.crawl:
            others = [f"{hit.path} ({hit.status})" for hit in origin.hits]
            out.append(f"    not crawled; requests received: {', '.join(others) or 'none'}")
            continue
        out.append(f"    robots.txt served: {_served(origin)}")
        out.extend(f"    {line}" for line in _access(state, robots, origin, agent))
        pages = sorted(fetched[base])
        out.append(f"    fetched ({len(pages)}): {', '.join(pages) or 'none'}")
        out.append(f"    blocked ({len(blocked[base])}):" + ("" if blocked[base] else " none"))
        for item in sorted(blocked[base], key=lambda i: i.url):
            out.append(f"      {_path(item.url):28} by {item.reason} (group '{item.group}')")
        held = observer.held.get(base, [])
        if held:
            released = [url for url, _t in held if _path(url) in pages or any(b.url == url for b in blocked[base])]
            robots_ok = [hit.at for hit in origin.robots_hits() if hit.status == 200]
            waited = f" for {robots_ok[-1] - held[0][1]:.1f} s" if robots_ok else ""
            out.append(f"    held ({len(held)}): {', '.join(_path(url) for url, _t in held)}{waited}, "
                       f"while robots.txt was unreachable")
            out.append(f"    released ({len(released)}): {', '.join(_path(u) for u in released) or 'none'}"
                       f" (judged by the rules once robots.txt came back)")
        else:
            out.append("    held: none")
        for item in dropped[base]:
            out.append(f"    dropped: {_path(item.url)} ({item.reason})")
        leaked = [hit.path for hit in origin.page_hits() if any(_path(b.url) == hit.path for b in blocked[base])]
        if leaked:
            out.append(f"    !! blocked pages that reached the server anyway: {', '.join(leaked)}")
        out.extend(f"    {line}" for line in _extras(origin, robots, agent, pages, spider.tdmrep))
        if origin.name == "usage-sources":
            out.extend(f"    {line}" for line in _usage_sources(origin, spider, pages))

    if spider.failed:
        out.append("")
        out.append("other errors:")
        out.extend(f"    {url}: {error}" for url, error in spider.failed)
    out.append("")
    out.append("stats:")
    keys = sorted(key for key in stats if key.startswith("robotstxt/"))
    keys += ["downloader/request_count", "item_scraped_count", "finish_reason"]
    for key in keys:
        out.append(f"    {key}: {stats.get(key)}")
    return "\n".join(out)


def project_settings() -> Settings:
    """The project's settings, as ``scrapy crawl`` would load them, with the demo's changes."""
    settings = Settings()
    settings.setmodule("example_project.settings", priority="project")
    settings.setdict(RUN_SETTINGS, priority="cmdline")
    return settings


def audit_ledger() -> int:
    """Run ``scrapy robotstxt audit`` on the demo's ledger, as a user would, and return its exit status."""
    command = [sys.executable, "-m", "scrapy", "robotstxt", "audit", LEDGER_DIR]
    print(f"\nThe verdict ledger: {Path(LEDGER_DIR).resolve()}")
    print(f"$ scrapy robotstxt audit {LEDGER_DIR}", flush=True)
    return subprocess.run(command, check=False).returncode


def report_ledger() -> int:
    """Run ``scrapy robotstxt report`` on the demo's ledger: the page (:data:`REPORT_PAGE`) and its
    figures as JSON beside the ledger; its exit status (the audit's)."""
    command = [sys.executable, "-m", "scrapy", "robotstxt", "report", LEDGER_DIR, "-o", REPORT_PAGE,
               "--json", REPORT_JSON]
    print(f"\n$ scrapy robotstxt report {LEDGER_DIR} -o {REPORT_PAGE} --json {REPORT_JSON}", flush=True)
    done = subprocess.run(command, check=False).returncode
    print(f"The report: {Path(REPORT_PAGE).resolve().as_uri()} (open it in a browser; it loads nothing)")
    return done


def main() -> int:
    shutil.rmtree(LEDGER_DIR, ignore_errors=True)  # one run per demo: the audit reads only this one
    settings = project_settings()
    process = CrawlerProcess(settings)
    if "twisted.internet.reactor" not in sys.modules:
        # Scrapy 2.13 installs its reactor only when the crawl starts; the demo site must run in it.
        install_reactor(settings["TWISTED_REACTOR"], settings["ASYNCIO_EVENT_LOOP"])
    crawler = process.create_crawler(DemoSpider)
    site = build_site().start()
    observer = Observer(crawler)
    process.crawl(crawler, start_urls=site.home_pages())
    print(f"Demo site: {', '.join(f'{o.name} {o.base}' for o in site.origins)}")
    if site.one_address:
        print("(every origin on 127.0.0.1, a port each: this machine cannot listen on 127.0.0.2, or "
              "DEMO_ONE_ADDRESS is set)")
    print(f"Settings: example_project.settings, with {', '.join(f'{k}={v}' for k, v in RUN_SETTINGS.items())}")
    print("Crawling (log at WARNING level below)...", flush=True)
    started = time.monotonic()
    process.start()
    elapsed = time.monotonic() - started
    assert crawler.stats is not None and isinstance(crawler.spider, DemoSpider)
    stats = crawler.stats.get_stats()
    agent = crawler.settings.get("ROBOTSTXT_USER_AGENT")
    print(summary(site, crawler.spider, observer, stats, agent, elapsed))
    sys.stdout.flush()
    audited = audit_ledger()
    reported = report_ledger()
    return 0 if (stats.get("finish_reason") == "finished" and not crawler.spider.failed and audited == 0
                 and reported == 0) else 1


if __name__ == "__main__":
    sys.exit(main())
