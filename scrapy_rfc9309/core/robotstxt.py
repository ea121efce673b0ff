"""The public object: a parsed robots.txt and its per-agent verdicts."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from .caches import BoundedDict
from .groups import _NO_AGENT, GroupSelector, MergedGroup, _allow_all
from .matcher import Rule
from .robots_body import RobotsBody
from .syntax import DEFAULT_MAX_BYTES, HOST, SITEMAP, parse_text, scan
from .urls import escape_undecodable, path_of
from .usage_rules import UsageIndex, UsagePreference

__all__ = ["RobotsTxt", "Verdict", "parse"]

#: A URL with a scheme (RFC 3986, 3.1): a Sitemap value that is not relative.
_HAS_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:").match
#: Purpose-token plans remembered per file (see :meth:`RobotsTxt.purpose_groups`).
_MAX_PLANS = 8


@dataclass(frozen=True)
class Verdict:
    """A decision with its reason: the deciding rule (``None`` when no rule
    matched), the product token that selected the group (``"*"`` for the global
    group, ``""`` when no group applied) and the canonical path that was matched."""

    allowed: bool
    rule: Rule | None
    token: str
    path: str

    def __bool__(self) -> bool:
        return self.allowed

    def __str__(self) -> str:
        if self.rule is not None:
            return str(self.rule)
        if self.path == "/robots.txt":
            return "/robots.txt is always allowed"
        if not self.token:
            return "no group applies"
        return "no rule matched"


class RobotsTxt(GroupSelector):
    """A parsed robots.txt. Create it with :func:`parse`.

    A crawl asks one file about one or two agents, so the file is kept compactly
    (its bytes until its first question, then its records only, compressed when
    that makes them shorter: see :attr:`body`) and each product token's groups
    are built on its first question, from the groups that token selects only: a
    million files in memory cost little more than their compressed records and
    the rules their crawl obeys. The rules of the group the first question
    builds are kept once, in its matcher, which gives them back as written: the
    kept records leave them out. A question about another token builds that
    token's groups from the records (those of the last few dozen agents are kept).

    ``url`` is the file's own URL when it is known (the last one, after
    redirects). ``sitemaps`` lists the Sitemap URLs in file order, without
    duplicates; a relative one (``Sitemap: /sitemap.xml``) is joined with ``url``
    when it is known, as Scrapy's ``SitemapSpider`` does, and kept as written
    otherwise. Bytes that are not UTF-8 are percent-encoded. ``truncated`` tells
    whether the body was longer than the parsing limit (only the first bytes were
    used); ``size`` is the body's length.

    Its parts: :class:`~scrapy_rfc9309.core.robots_body.RobotsBody` keeps the bytes,
    :class:`~scrapy_rfc9309.core.groups.GroupSelector` builds and remembers the agents'
    merged groups, this class answers the questions (base classes rather than parts:
    one object per file, a broad crawl keeps many).
    """

    __slots__ = ("_purposes",)

    def __init__(self, body: bytes | str = b"", max_bytes: int = DEFAULT_MAX_BYTES, *, speedups: bool = True,
                 url: str | None = None, keep_body: bool = False) -> None:
        RobotsBody.__init__(self, body, max_bytes, speedups, url, keep_body)  # positional: a parse's first call
        # What _forget_groups sets, written here: a file's parse is one call less.
        self._agent, self._group, self._memo, self._allowed = _NO_AGENT, None, None, _allow_all
        self._purposes: BoundedDict[tuple[tuple[str, ...], object], tuple[tuple[str, Any], ...]] | None = None

    def copy(self) -> RobotsTxt:
        """The file with no group built: what is asked of the copy leaves this one
        as it is (a file not asked yet keeps its bytes as fetched; a reduced one
        shares the matcher that holds the rules its records leave out)."""
        other = RobotsTxt.__new__(RobotsTxt)
        self._copy_body(other)
        other._forget_groups()
        other._purposes = None
        return other

    # -- records outside groups ------------------------------------------------------
    def _records(self, kind: int) -> list[str]:
        return [value for found, value, _ in scan(self._text(), self._speedups) if found == kind and value]

    @property
    def sitemaps(self) -> list[str]:
        """The Sitemap URLs (see the class's description)."""
        values = [value if value.isascii() else escape_undecodable(value) for value in self._records(SITEMAP)]
        if self.url is not None:
            values = [_joined(self.url, value) for value in values]
        return list(dict.fromkeys(values))

    @property
    def hosts(self) -> list[str]:
        """The values of Host records, in file order."""
        return self._records(HOST)

    @property
    def agents(self) -> list[str]:
        """The product tokens the file names, lower-cased, in file order."""
        return list(parse_text(self._text(), self._speedups).by_token)

    # -- group selection --------------------------------------------------------
    def group_agents(self, user_agent: str | bytes | None) -> str:
        """The product token whose groups apply: the agent's own token, ``"*"``,
        or ``""`` when no group applies."""
        return self._group_for(user_agent).token

    # -- decisions ----------------------------------------------------------------
    def allowed(self, url: str | bytes, user_agent: str | bytes | None) -> bool:
        """Whether ``user_agent`` may fetch ``url``."""
        if user_agent is self._agent:
            return self._allowed(url)
        return self._group_for(user_agent).matcher.allowed(url)

    def allower(self, user_agent: str | bytes | None) -> Callable[[str | bytes], bool]:
        """:meth:`allowed` for one agent, as a function of the URL (for a caller that
        asks about many URLs for the same agent)."""
        return self._group_for(user_agent).matcher.allowed

    def verdict(self, url: str | bytes, user_agent: str | bytes | None) -> Verdict:
        """The decision for ``url`` with the rule that made it."""
        if not isinstance(url, str):
            url = url.decode("utf-8", "surrogateescape")
        merged = self._group_for(user_agent)
        path = path_of(url)
        rule = self._rule_for(merged, path)
        if rule is None:
            return Verdict(True, None, merged.token, path)
        return Verdict(rule.allow, rule, merged.token, path)

    def deciding_rule(self, url: str | bytes, user_agent: str | bytes | None) -> Rule | None:
        """The rule that decides ``url`` (``None``: no rule matched, the URL is
        allowed): :meth:`verdict`'s rule without the rest of the verdict, for a
        caller that asks for the rule of every request (the verdict ledger)."""
        return self._group_for(user_agent).matcher.url_rule(url)

    def decider(self, user_agent: str | bytes | None) -> Callable[[str | bytes], Rule | None]:
        """:meth:`deciding_rule` for one agent, as a function of the URL."""
        return self._group_for(user_agent).matcher.url_rule

    def rules(self, user_agent: str | bytes | None) -> list[Rule]:
        """The Allow and Disallow rules of the agent's merged group, in file order."""
        return self._group_for(user_agent).matcher.written()

    def _rule_for(self, merged: MergedGroup, path: str) -> Rule | None:
        if path == "/robots.txt":
            return None
        return merged.matcher.best_rule(path)

    # -- other records --------------------------------------------------------------
    def crawl_delay(self, user_agent: str | bytes | None) -> float | None:
        """The Crawl-delay for the agent in seconds, or None: the value written in a
        block of the agent's own user-agent lines (its token's, or ``*``'s when it
        has no group), the largest valid one when there are several. Another
        token's Crawl-delay does not apply even where the two share a group's
        rules (see :class:`~scrapy_rfc9309.core.syntax.Group`)."""
        return self._group_for(user_agent).crawl_delay

    def records(self, user_agent: str | bytes | None, name: str) -> list[tuple[str, int]]:
        """Values and line numbers of a group record (``crawl-delay``,
        ``content-usage``, ``content-signal``) in the agent's merged group
        (Crawl-delay records: those written for the agent, as for :meth:`crawl_delay`)."""
        return [(value, line) for key, value, line in self._group_for(user_agent).records or () if key == name]

    def usage(self, url: str | bytes, user_agent: str | bytes | None) -> UsagePreference:
        """The ``Content-Usage`` / ``Content-Signal`` preferences of the agent's
        group that apply to ``url`` (empty when the group has none). They mean something
        only for a URL the agent may crawl: a disallowed one has none (draft-ietf-aipref-attach-05,
        section 3.1), which callers that judge it first (a verdict, the command) say."""
        merged = self._group_for(user_agent)
        if not merged.usage_records:
            return UsagePreference()
        if not isinstance(url, str):
            url = url.decode("utf-8", "surrogateescape")
        index = merged.usage_index
        if index is None:
            index = merged.usage_index = UsageIndex(merged.usage_records, self._speedups)
        return index.applicable(path_of(url))

    def purpose_groups(self, user_agent: str | bytes | None,
                       purposes: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
        """The product tokens of ``purposes`` whose groups can refuse what the agent's
        group allows, each with its group's matcher: the first token (in order) of each
        group other than the agent's. Tokens the file does not name share ``*``'s group
        (or none): a thousand purpose tokens cost what the few groups they select do.
        Remembered for the last few ``purposes`` and agents asked about (the crawl's
        setting is one tuple, asked for every request)."""
        plans = self._purposes
        if plans is not None:
            for (known, agent), plan in plans.items():
                if known is purposes and (agent is user_agent or agent == user_agent):
                    return plan
            known_plan = plans.get((purposes, user_agent))
            if known_plan is not None:
                return known_plan
        found: list[tuple[str, Any]] = []
        if purposes:
            names = frozenset(self.agents)
            star = "*" if "*" in names else ""
            done = {self.group_agents(user_agent)}
            for purpose in purposes:
                key = purpose if purpose in names else star
                if key not in done:
                    done.add(key)
                    found.append((purpose, self._group_for(purpose).matcher))
        plan = tuple(found)
        if plans is None:
            plans = self._purposes = BoundedDict(_MAX_PLANS)
        plans[purposes, user_agent] = plan
        return plan

    def has_usage(self, user_agent: str | bytes | None) -> bool:
        """Whether the agent's group has any usage-preference record."""
        return bool(self._group_for(user_agent).usage_records)


def parse(body: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES, *, speedups: bool = True,
          url: str | None = None, keep_body: bool = False) -> RobotsTxt:
    """Parse robots.txt content. Never raises on any content; only the first
    ``max_bytes`` bytes are used (RFC 9309, 2.5: at least 500 KiB). With
    ``speedups=False`` the C accelerator is not used even when it is built.
    ``url``, the file's own URL, is the base of relative Sitemap values. With
    ``keep_body`` the file keeps its bytes as fetched (compressed) for
    :attr:`RobotsTxt.body`; otherwise only its records after its first decision."""
    if max_bytes < DEFAULT_MAX_BYTES:
        raise ValueError(f"max_bytes must be at least {DEFAULT_MAX_BYTES} (RFC 9309, 2.5), got {max_bytes}")
    return RobotsTxt(body, max_bytes, speedups=speedups, url=url, keep_body=keep_body)


def _joined(base: str, value: str) -> str:
    """A Sitemap value joined with the robots.txt URL when it is relative; as
    written when it has a scheme, or when it cannot be joined (``urljoin`` refuses
    some malformed values, such as an unclosed IPv6 literal)."""
    if _HAS_SCHEME(value):
        return value
    try:
        return urljoin(base, value)
    except ValueError:
        return value
