"""Signals sent by the middleware, in addition to Scrapy's ``robots_parsed``.

Connect with ``crawler.signals.connect(handler, signal=scrapy_rfc9309.signals.robotstxt_fetched)``.
"""

from __future__ import annotations

__all__ = [
    "robotstxt_changed",
    "robotstxt_content_usage",
    "robotstxt_fetched",
    "robotstxt_sitemaps",
    "robotstxt_usage_preferences",
    "robotstxt_verdict",
]

#: Sent after every robots.txt fetch, whatever its result, with keyword
#: arguments ``origin`` (a :class:`scrapy_rfc9309.origin.Origin`), ``state`` (the
#: origin's :class:`scrapy_rfc9309.access.OriginState`: ``access``, ``robots``,
#: ``outcome`` with status, redirects and truncation, ``expires_at``) and
#: ``request`` (the request that caused the fetch, or None).
robotstxt_fetched = object()

#: Sent when a fetched robots.txt lists Sitemap URLs, with ``origin``,
#: ``sitemaps`` (list of URLs, file order, no duplicates) and ``request``.
robotstxt_sitemaps = object()

#: Sent for a request whose applicable group carries a usage preference
#: (``Content-Usage`` or ``Content-Signal``), with ``request`` and ``preference``
#: (a :class:`scrapy_rfc9309.usage.UsagePreference`).
robotstxt_content_usage = object()

#: Sent for a downloaded response about which some source states a usage preference
#: or robots directive (robots.txt, tdmrep.json, the ``Content-Usage``,
#: ``tdm-reservation``/``tdm-policy`` and ``X-Robots-Tag`` headers, and with
#: ``ROBOTSTXT_USAGE_META`` the head's meta tags), before it is judged, with
#: ``request``, ``response`` and ``preferences`` (a
#: :class:`scrapy_rfc9309.usage.preferences.Preferences`).
robotstxt_usage_preferences = object()

#: Sent for every verdict on a request, as the middleware acts on it (before an allowed
#: request is released, before a refused one's exception is raised), with ``request``
#: and ``judgement`` (a :class:`scrapy_rfc9309.judgement.Judgement`: its ``kind``, the
#: document states it rests on, the deciding ``rule``, the ``usage`` preference and
#: ``tdm_entry`` that applied, the product ``token``). A request held and then released
#: or dropped gets two. Handlers connected before the spider opens are sent it; while none
#: is connected the middleware does not send it.
robotstxt_verdict = object()
#: Sent when a refetch gives a robots.txt whose rules or usage preferences differ, for
#: the crawl's agents, from the copy it replaces (once per change), with ``origin``,
#: ``old`` and ``new`` (the :class:`scrapy_rfc9309.access.OriginState` before and after:
#: ``robots``, ``outcome``) and ``change`` (a :class:`scrapy_rfc9309.changes.RobotsChange`:
#: per agent, the rules added and removed, the Crawl-delay, the usage rules and categories).
robotstxt_changed = object()
