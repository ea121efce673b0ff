"""The public object: a parsed robots.txt and its per-agent verdicts."""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from urllib.parse import urljoin

from .agent import product_token
from .matcher import Matcher, Rule
from .parser import DEFAULT_MAX_BYTES, Group, parse_body
from .urlnorm import path_of
from .usage import UsagePreference, applicable

__all__ = ["RobotsTxt", "Verdict", "parse"]

#: Records that apply to the user-agent lines of their block only, not to the whole group.
BLOCK_RECORDS = frozenset({"crawl-delay"})
#: A URL with a scheme (RFC 3986, 3.1): a Sitemap value that is not relative.
_HAS_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:").match
#: Distinct user agent strings remembered per file before the memo is reset.
_MAX_AGENT_MEMO = 64


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


class _MergedGroup:
    """All groups that apply to one product token, merged (RFC 9309, 2.2.1)."""

    __slots__ = ("_crawl_delay", "groups", "matcher", "token", "usage_records")

    def __init__(self, token: str, groups: list[Group], speedups: bool = True) -> None:
        self.token = token
        self.groups = groups
        if len(groups) == 1:
            group = groups[0]
            self.matcher = Matcher(group.patterns, group.codes, speedups, group.special or ())
        else:
            patterns: list[str] = []
            codes = array("I")
            special: list[int] = []
            for group in groups:
                offset = len(patterns)
                special += [offset + index for index in group.special or ()]
                patterns += group.patterns
                codes.extend(group.codes)
            self.matcher = Matcher(patterns, codes, speedups, special)
        self.usage_records = [
            (name, value, line)
            for group in groups
            for name, value, line, _start, _end in group.records or ()
            if name in ("content-usage", "content-signal")
        ]
        self._crawl_delay: float | None = -1.0  # -1: not worked out yet

    def records(self, name: str) -> list[tuple[str, int]]:
        """The values and lines of the records called ``name``; a Crawl-delay
        only when it is written in a block of this token's user-agent lines."""
        if name in BLOCK_RECORDS:
            found = []
            for group in self.groups:
                in_block: dict[tuple[int, int], bool] = {}  # per block: the records of a block share it
                for key, value, line, start, end in group.records or ():
                    if key == name:
                        named = in_block.get((start, end))
                        if named is None:
                            named = in_block[start, end] = self.token in group.agents[start:end]
                        if named:
                            found.append((value, line))
            return found
        return [(value, line) for group in self.groups for key, value, line, _, _ in group.records or () if key == name]

    def crawl_delay(self) -> float | None:
        if self._crawl_delay == -1.0:
            delays = []
            for value, _line in self.records("crawl-delay"):
                try:
                    delay = float(value.split()[0]) if value else -1.0
                except ValueError:
                    continue
                if 0 <= delay < float("inf"):
                    delays.append(delay)
            self._crawl_delay = max(delays) if delays else None
        return self._crawl_delay


class RobotsTxt:
    """A parsed robots.txt. Create it with :func:`parse`.

    ``url`` is the file's own URL when it is known (the last one, after
    redirects). ``sitemaps`` lists the Sitemap URLs in file order, without
    duplicates; a relative one (``Sitemap: /sitemap.xml``) is joined with ``url``
    when it is known, as Scrapy's ``SitemapSpider`` does, and kept as written
    otherwise. Bytes that are not UTF-8 are percent-encoded. ``truncated`` tells
    whether the body was longer than the parsing limit (only the first bytes were
    used).
    """

    __slots__ = (
        "_by_agent",
        "_by_token",
        "_groups",
        "_matchers",
        "_merged",
        "_speedups",
        "hosts",
        "sitemaps",
        "size",
        "truncated",
        "url",
    )

    def __init__(self, body: bytes | str = b"", max_bytes: int = DEFAULT_MAX_BYTES, *, speedups: bool = True,
                 url: str | None = None) -> None:
        result = parse_body(body, max_bytes, speedups)
        self._speedups = speedups
        self.url: str | None = url or None
        sitemaps = result.sitemaps
        if self.url is not None:
            sitemaps = [_joined(self.url, value) for value in sitemaps]
        self.sitemaps: list[str] = list(dict.fromkeys(sitemaps))
        self.hosts: list[str] = result.hosts
        self.size: int = result.size
        self.truncated: bool = result.truncated
        self._groups = result.groups
        self._by_token = result.by_token
        self._merged: dict[str, _MergedGroup] = {}
        self._by_agent: dict[str | bytes | None, _MergedGroup] = {}
        self._matchers: dict[str | bytes | None, Matcher] = {}

    # -- group selection --------------------------------------------------------
    def _group_for(self, user_agent: str | bytes | None) -> _MergedGroup:
        merged = self._by_agent.get(user_agent)
        if merged is None:
            token = product_token(user_agent)
            key = token if token in self._by_token else "*" if "*" in self._by_token else ""
            merged = self._merged.get(key)
            if merged is None:
                merged = self._merged[key] = _MergedGroup(key, self._by_token.get(key, []), self._speedups)
            if len(self._by_agent) >= _MAX_AGENT_MEMO:
                self._by_agent.clear()
                self._matchers.clear()
            self._by_agent[user_agent] = merged
            self._matchers[user_agent] = merged.matcher
        return merged

    def group_agents(self, user_agent: str | bytes | None) -> str:
        """The product token whose groups apply: the agent's own token, ``"*"``,
        or ``""`` when no group applies."""
        return self._group_for(user_agent).token

    # -- decisions ----------------------------------------------------------------
    def allowed(self, url: str | bytes, user_agent: str | bytes | None) -> bool:
        """Whether ``user_agent`` may fetch ``url``."""
        matcher = self._matchers.get(user_agent)
        if matcher is None:
            matcher = self._group_for(user_agent).matcher
        return matcher.allowed(url)

    def verdict(self, url: str | bytes, user_agent: str | bytes | None) -> Verdict:
        """The decision for ``url`` with the rule that made it."""
        if not isinstance(url, str):
            url = url.decode("utf-8", "surrogateescape")
        merged = self._group_for(user_agent)
        path = path_of(url)
        if path == "/robots.txt":
            return Verdict(True, None, merged.token, path)
        rule = merged.matcher.best_rule(path)
        return Verdict(rule is None or rule.allow, rule, merged.token, path)

    # -- other records --------------------------------------------------------------
    def crawl_delay(self, user_agent: str | bytes | None) -> float | None:
        """The Crawl-delay for the agent in seconds, or None: the value written in a
        block of the agent's own user-agent lines (its token's, or ``*``'s when it
        has no group), the largest valid one when there are several. Another
        token's Crawl-delay does not apply even where the two share a group's
        rules (see :class:`~scrapy_rfc9309.parser.Group`)."""
        return self._group_for(user_agent).crawl_delay()

    def records(self, user_agent: str | bytes | None, name: str) -> list[tuple[str, int]]:
        """Values and line numbers of a group record (``crawl-delay``,
        ``content-usage``, ``content-signal``) in the agent's merged group
        (Crawl-delay records: those written for the agent, as for :meth:`crawl_delay`)."""
        return self._group_for(user_agent).records(name)

    def usage(self, url: str | bytes, user_agent: str | bytes | None) -> UsagePreference:
        """The ``Content-Usage`` / ``Content-Signal`` preferences of the agent's
        group that apply to ``url`` (empty when the group has none)."""
        records = self._group_for(user_agent).usage_records
        if not records:
            return UsagePreference()
        if not isinstance(url, str):
            url = url.decode("utf-8", "surrogateescape")
        return applicable(records, path_of(url))

    def has_usage(self, user_agent: str | bytes | None) -> bool:
        """Whether the agent's group has any usage-preference record."""
        return bool(self._group_for(user_agent).usage_records)

    @property
    def agents(self) -> list[str]:
        """The product tokens the file names, lower-cased, in file order."""
        return list(self._by_token)


def parse(body: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES, *, speedups: bool = True,
          url: str | None = None) -> RobotsTxt:
    """Parse robots.txt content. Never raises on any content; only the first
    ``max_bytes`` bytes are used (RFC 9309, 2.5: at least 500 KiB). With
    ``speedups=False`` the C accelerator is not used even when it is built.
    ``url``, the file's own URL, is the base of relative Sitemap values."""
    if max_bytes < DEFAULT_MAX_BYTES:
        raise ValueError(f"max_bytes must be at least {DEFAULT_MAX_BYTES} (RFC 9309, 2.5), got {max_bytes}")
    return RobotsTxt(body, max_bytes, speedups=speedups, url=url)


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
