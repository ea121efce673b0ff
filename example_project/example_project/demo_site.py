"""A local demo site for the ``demo`` spider and ``python -m example_project.demo``.

Several *origins*, each a ``twisted.web`` server listening on port 0 of its own
loopback address (``127.0.0.1``, ``127.0.0.2``, ...; Linux routes all of 127/8 to
``lo``), so that every origin has its own robots.txt, exactly as distinct hosts on
the Internet would. Where only ``127.0.0.1`` can be listened on (macOS, unless the
addresses are added to ``lo0``), or with ``DEMO_ONE_ADDRESS=1`` in the environment,
every origin listens on ``127.0.0.1``, each on a port of its own: RFC 9309's origin
is scheme, host and port, so they are still distinct origins. Each is an
``Origin`` of the test suite's loopback servers (``tests/servers`` of the clone this
project belongs to, which the benchmarks use too; the wheel does not carry them)
whose every path is answered by this module's routes and pages. The servers run in
the reactor of the crawl itself: start the site once Scrapy has installed its reactor
(``AsyncCrawlerProcess(...)`` does that, and a running spider may start it too),
before its URLs are requested.

``python -m example_project.demo_site`` serves the site on its own until Ctrl-C, to
try ``scrapy robotstxt`` (or a browser) on its origins.

Each origin serves a robots.txt that shows one part of RFC 9309, and a few small
HTML pages whose links lead to allowed and disallowed paths. Every request an
origin receives is logged in ``origin.hits`` (robots.txt fetches included), so the
demo can show what really reached the server.
"""

from __future__ import annotations

import html
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy_rfc9309.tdmrep import TDMREP_PATH

__all__ = ["BEYOND_LIMIT_RULE", "DEMO_SETTINGS", "DemoOrigin", "DemoSite", "Hit", "build_site", "demo_addresses"]

#: What a route returns: (status, headers, body).
Reply = tuple[int, dict[str, str], bytes]
#: A route: called with how many times its path was requested (1 for the first time).
Route = Callable[[int], Reply]

TEXT = {"Content-Type": "text/plain; charset=utf-8"}

#: The clone's test tree (``example_project/`` sits beside ``tests/``), whose loopback servers
#: (``tests/servers``) serve the site.
TESTS = Path(__file__).resolve().parents[2] / "tests"


def _servers() -> Any:
    """The test suite's loopback servers (``import servers``): from ``PYTHONPATH`` when it names
    them (a copy of the project outside the clone), else from the clone's ``tests/``. Imported when
    the site starts, so that the project's spiders load without them."""
    if (TESTS / "servers").is_dir() and str(TESTS) not in sys.path:
        sys.path.append(str(TESTS))
    try:
        import servers
        import servers.loopback
    except ImportError as exc:
        raise ImportError(
            f"The demo site runs from a clone of scrapy-rfc9309: its servers are the test suite's "
            f"(tests/servers), not part of the installed package, and {TESTS} has none. Run it from the clone, "
            f"or put the clone's tests/ directory on PYTHONPATH ({exc})."
        ) from exc
    return servers


#: What a crawl of the demo site changes in the project settings, so that it finishes
#: in a few seconds (the ``demo`` spider applies them when it serves the site itself).
DEMO_SETTINGS: dict[str, Any] = {
    "ROBOTSTXT_RETRY_DELAY": 0.5,  # the "recovering" origin's robots.txt is retried after 0.5 s, then 1 s
    "ROBOTSTXT_RETRY_MAX_DELAY": 2.0,
    "ROBOTSTXT_MAX_WAIT": 20.0,  # a request held longer is dropped (the demo never gets there)
    "DOWNLOAD_DELAY": 0,  # the polite delays of settings.py would make the demo take a minute
    "AUTOTHROTTLE_ENABLED": False,
    "DOWNLOAD_TIMEOUT": 10,
    "CLOSESPIDER_TIMEOUT": 50,  # a safety net: the demo takes a few seconds
    "HTTPPROXY_ENABLED": False,  # loopback traffic must not go to a proxy from the environment
    # Each origin's /.well-known/tdmrep.json too (one more request per origin; the ai-prefs origin
    # reserves TDM rights on a page). Nothing is dropped for it: ROBOTSTXT_USAGE_DENY is not set.
    "ROBOTSTXT_TDMREP": True,
}
BEYOND_LIMIT_RULE = "Disallow: /beyond-limit/"


@dataclass(frozen=True)
class Hit:
    """One request as an origin received it, and what it answered."""

    at: float  # time.time() when the request arrived
    path: str  # path and query, as in the request line
    status: int
    size: int  # body bytes sent
    location: str | None = None  # the Location of a redirect


def _page(title: str, links: list[str], head: str = "") -> bytes:
    items = "".join(f'<li><a href="{html.escape(link)}">{html.escape(link)}</a></li>' for link in links)
    return (
        f"<!doctype html><html><head><title>{html.escape(title)}</title>{head}</head>"
        f"<body><h1>{html.escape(title)}</h1><ul>{items}</ul></body></html>"
    ).encode()


class DemoOrigin:
    """One origin: robots.txt (or whatever ``routes`` say) plus HTML ``pages``."""

    def __init__(self, name: str, host: str, about: str) -> None:
        self.name = name
        self.host = host
        self.about = about
        self.port = 0
        self.crawl = True  # whether the demo spider starts from this origin's home page
        self.routes: dict[str, Route] = {}
        self.pages: dict[str, list[str]] = {}
        self.hits: list[Hit] = []
        self.notes: dict[str, Any] = {}  # facts about the robots.txt served, for the summary
        self._counts: dict[str, int] = {}
        self._server: Any = None  # the servers.Origin serving it, once started

    # -- building -----------------------------------------------------------------
    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base + path

    def page(self, path: str, *links: str) -> None:
        """Serve an HTML page at ``path`` that links to ``links``."""
        self.pages[path] = list(links)

    def route(self, path: str, route: Route) -> None:
        self.routes[path] = route

    def robots(self, body: str | Callable[[], str], status: int = 200) -> None:
        """Serve ``body`` (text, or a function giving it) as /robots.txt with ``status``."""
        self.route("/robots.txt", lambda _n: (status, TEXT, (body() if callable(body) else body).encode()))

    # -- serving ------------------------------------------------------------------
    def answer(self, path: str) -> Reply:
        """The answer to a request for ``path`` (path and query), logged in ``hits``."""
        count = self._counts[path] = self._counts.get(path, 0) + 1
        plain = path.split("?", 1)[0]
        route = self.routes.get(path) or self.routes.get(plain)
        if route is not None:
            status, headers, body = route(count)
        elif plain in self.pages:
            status, headers = 200, {"Content-Type": "text/html; charset=utf-8"}
            body = _page(f"{self.name}: {plain}", self.pages[plain])
        else:
            status, headers, body = 404, TEXT, b"Not found\n"
        self.hits.append(Hit(time.time(), path, status, len(body), headers.get("Location")))
        return status, headers, body

    def start(self) -> DemoOrigin:
        servers = _servers()

        def static(_origin: Any, hit: Any) -> Any:
            status, headers, body = self.answer(hit.path)
            return servers.Static(body, status, headers)

        answer = servers.Dynamic(static)  # every request answered from the routes and pages
        server = servers.Origin(self.host)
        server.default = answer
        # An Origin answers an unconfigured robots.txt and tdmrep.json with a 404 itself.
        server["/robots.txt"] = server[TDMREP_PATH] = answer
        self._server = server.start()
        self.port = server.port
        return self

    def stop(self) -> Any:
        return self._server.stop() if self._server is not None else None

    # -- reading the log ------------------------------------------------------------
    def robots_hits(self) -> list[Hit]:
        return [hit for hit in self.hits if hit.path.endswith("robots.txt")]

    def page_hits(self) -> list[Hit]:
        return [hit for hit in self.hits if not hit.path.endswith(("robots.txt", TDMREP_PATH))]


def demo_addresses(count: int) -> list[str]:
    """The addresses of ``count`` origins: ``127.0.0.1`` to ``127.0.0.<count>`` where this
    machine can listen on them all, otherwise (or with ``DEMO_ONE_ADDRESS`` set to
    anything but ``0`` or nothing) ``127.0.0.1`` for every origin."""
    addresses = [f"127.0.0.{n}" for n in range(1, count + 1)]
    if (os.environ.get("DEMO_ONE_ADDRESS", "0") not in ("", "0")
            or _servers().loopback.unusable_address(addresses) is not None):
        return ["127.0.0.1"] * count
    return addresses


@dataclass
class DemoSite:
    origins: list[DemoOrigin] = field(default_factory=list)

    @property
    def one_address(self) -> bool:
        """Whether every origin is on the same address (a port each)."""
        return len({origin.host for origin in self.origins}) == 1

    def add(self, name: str, host: str, about: str) -> DemoOrigin:
        origin = DemoOrigin(name, host, about)
        self.origins.append(origin)
        return origin

    def __getitem__(self, name: str) -> DemoOrigin:
        return next(origin for origin in self.origins if origin.name == name)

    def start(self) -> DemoSite:
        for origin in self.origins:
            origin.start()
        return self

    def stop(self) -> None:
        for origin in self.origins:
            origin.stop()

    def home_pages(self) -> list[str]:
        return [origin.url("/") for origin in self.origins if origin.crawl]


def _oversized_robots(size: int = 700_000, rule_at: int = 600_000) -> tuple[str, int]:
    """A robots.txt of about ``size`` bytes: a rule at the top, comment lines as
    padding, and ``BEYOND_LIMIT_RULE`` at about byte ``rule_at`` (after the 512000
    bytes a crawler must read). Returns the text and the rule's byte offset."""
    head = '# robots.txt of the "oversized" demo origin: about 700 KB\nUser-agent: *\nDisallow: /top-secret/\n'
    lines = [head]
    length = len(head)
    number = 0
    while length < rule_at:
        number += 1
        line = f"# padding line {number:06d}: comments may be long, but a crawler only reads the first 500 KiB\n"
        lines.append(line)
        length += len(line)
    offset = length
    lines.append(BEYOND_LIMIT_RULE + "\n")
    length += len(BEYOND_LIMIT_RULE) + 1
    while length < size:
        number += 1
        line = f"# padding line {number:06d}\n"
        lines.append(line)
        length += len(line)
    return "".join(lines), offset


def build_site() -> DemoSite:
    """The demo origins (not started)."""
    site = DemoSite()
    address = iter(demo_addresses(9))

    ordinary = site.add("ordinary", next(address), "robots.txt with Disallow/Allow rules, a wildcard and a Sitemap")
    ordinary.robots(lambda: (
        '# robots.txt of the "ordinary" demo origin\n'
        "User-agent: *\n"
        "Disallow: /\n"
        "\n"
        "User-agent: DemoBot\n"
        "Disallow: /private/\n"
        "Allow: /private/press/\n"
        "Disallow: /*.pdf$\n"
        "Disallow: /search\n"
        "\n"
        f"Sitemap: {ordinary.url('/sitemap.xml')}\n"
    ))
    ordinary.page("/", "/about.html", "/docs/", "/private/", "/search?q=robots")
    ordinary.page("/about.html", "/", "/private/press/kit.html")
    ordinary.page("/docs/", "/docs/manual.html", "/docs/manual.pdf")
    ordinary.page("/docs/manual.html", "/docs/")
    ordinary.page("/private/press/kit.html", "/", "/private/salaries.html")
    for path in ("/private/", "/private/salaries.html", "/docs/manual.pdf", "/search"):
        ordinary.page(path)  # served if asked for; robots.txt says not to ask

    missing = site.add("missing", next(address), "robots.txt is a 404 page whose body says 'Disallow: /'")
    missing.notes["body"] = "User-agent: *\nDisallow: /\n"
    missing.robots(missing.notes["body"], status=404)
    missing.page("/", "/shop.html", "/private/ledger.html")
    missing.page("/shop.html", "/")
    missing.page("/private/ledger.html", "/")

    recovering = site.add("recovering", next(address), "robots.txt answers 503 twice, then 200")
    recovering.route("/robots.txt", lambda n: (
        (503, TEXT, b"Service Unavailable\n") if n <= 2
        else (200, TEXT, b"User-agent: *\nDisallow: /drafts/\n")
    ))
    recovering.page("/", "/news.html", "/drafts/next-week.html")
    recovering.page("/news.html", "/")
    recovering.page("/drafts/next-week.html", "/")

    redirected = site.add("redirected", next(address), "robots.txt redirects 301 -> 302 -> a file on another origin")
    rules_host = site.add("rules-host", next(address), "serves the file the redirected origin's robots.txt leads to")
    rules_host.crawl = False
    redirected.route("/robots.txt", lambda _n: (301, {**TEXT, "Location": "/old/robots.txt"}, b"Moved\n"))
    redirected.route("/old/robots.txt", lambda _n: (
        302, {**TEXT, "Location": rules_host.url("/shared/robots.txt")}, b"Found\n"))
    rules_host.robots("User-agent: *\nAllow: /\n")  # its own, not used: nothing on it is crawled
    rules_host.route("/shared/robots.txt", lambda _n: (200, TEXT, b"User-agent: *\nDisallow: /members/\n"))
    redirected.page("/", "/blog.html", "/members/", "/members/profile.html")
    redirected.page("/blog.html", "/")

    oversized = site.add("oversized", next(address), "a ~700 KB robots.txt, one rule beyond byte 512000")
    body, offset = _oversized_robots()
    oversized.notes.update(size=len(body), beyond_offset=offset)
    oversized.robots(body)
    oversized.page("/", "/top-secret/plans.html", "/beyond-limit/page.html", "/public.html")
    oversized.page("/public.html", "/")
    oversized.page("/beyond-limit/page.html", "/")
    oversized.page("/top-secret/plans.html", "/")

    slow = site.add("slow-crawl", next(address), "robots.txt asks for 'Crawl-delay: 1'")
    slow.robots("User-agent: *\nCrawl-delay: 1\nDisallow: /admin/\n")
    slow.page("/", "/p1.html", "/p2.html", "/p3.html", "/admin/")
    for path in ("/p1.html", "/p2.html", "/p3.html", "/admin/"):
        slow.page(path, "/")

    prefs = site.add("ai-prefs", next(address), "robots.txt has a 'Content-Usage: train-ai=n' record, "
                     "tdmrep.json reserves TDM rights on /articles/2.html")
    prefs.robots("User-agent: *\nContent-Usage: train-ai=n\nAllow: /\n")
    prefs.route(TDMREP_PATH, lambda _n: (200, {"Content-Type": "application/json"}, json.dumps([
        {"location": "/articles/2.html$", "tdm-reservation": 1, "tdm-policy": prefs.url("/tdm-policy.json")},
        {"location": "/", "tdm-reservation": 0},
    ]).encode()))
    prefs.page("/", "/articles/1.html", "/articles/2.html")
    prefs.page("/articles/1.html", "/")
    prefs.page("/articles/2.html", "/")

    sources = site.add("usage-sources", next(address),
                       "usage preferences in response headers and meta tags, beside robots.txt")
    sources.robots("User-agent: *\nAllow: /\nContent-Usage: train-ai=y\n")
    html_type = {"Content-Type": "text/html; charset=utf-8"}
    # path -> (what it shows, response headers, head markup, links)
    shown: dict[str, tuple[str, dict[str, str], str, tuple[str, ...]]] = {
        "/content-usage.html": ("a Content-Usage header", {"Content-Usage": "train-ai=n, search=y"}, "", ()),
        "/x-robots-tag.html": ("X-Robots-Tag for DemoBot", {"X-Robots-Tag": "demobot: noai, nofollow"}, "",
                               ("/not-followed.html",)),
        "/meta-robots.html": ("meta robots", {}, '<meta name="robots" content="noindex, noai">', ()),
        "/tdm-header.html": ("tdm-reservation header",
                             {"tdm-reservation": "1", "tdm-policy": "https://publisher.example/tdm-policy.json"}, "",
                             ()),
        "/tdm-meta.html": ("tdm-reservation meta tag", {}, '<meta name="tdm-reservation" content="1">', ()),
    }
    sources.notes["pages"] = {path: what for path, (what, _h, _m, _l) in shown.items()}
    for path, (what, headers, head, links) in shown.items():
        body = _page(f"usage-sources: {what}", ["/", *links], head)
        sources.route(path, lambda _n, h={**html_type, **headers}, b=body: (200, h, b))
    sources.page("/", *shown)
    sources.page("/not-followed.html", "/")  # linked only from a nofollow page
    return site


def main() -> None:
    """Serve the demo site until interrupted."""
    from twisted.internet import reactor

    site = build_site().start()
    for origin in site.origins:
        print(f"{origin.name:>11}  {origin.base}/  {origin.about}")
    print("Serving until Ctrl-C; try: scrapy robotstxt " + site["ordinary"].url("/private/x"), flush=True)
    reactor.run()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
