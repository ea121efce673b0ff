"""The public object: a parsed robots.txt and its per-agent verdicts."""

from __future__ import annotations

import re
import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from .matcher import Rule, compile_rules
from .product_tokens import product_token
from .syntax import (
    DEFAULT_MAX_BYTES,
    GROUP_RECORDS,
    HOST,
    MAX_LINE_BYTES,
    RULE_KEYS,
    SITEMAP,
    SelectedGroup,
    decode,
    has_long_line,
    normalize,
    parse_text,
    prepare,
    records_text,
    reduce_body,
    scan,
    select,
    select_records,
)
from .urls import escape_undecodable, path_of, utf8_octets
from .usage_rules import UsageIndex, UsagePreference

__all__ = ["RobotsTxt", "Verdict", "parse"]

#: Records that apply to the user-agent lines of their block only, not to the whole group.
BLOCK_RECORDS = frozenset({"crawl-delay"})
#: A URL with a scheme (RFC 3986, 3.1): a Sitemap value that is not relative.
_HAS_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:").match
#: Group records that are usage preferences (see :mod:`.usage`).
USAGE_RECORDS = frozenset({"content-usage", "content-signal"})
#: Agents and tokens remembered per file before the memo is reset.
_MAX_MEMO = 64
#: Purpose-token plans remembered per file (see :meth:`RobotsTxt.purpose_groups`).
_MAX_PLANS = 8
#: Bodies at least this long are reduced to their records as they are read, the
#: rest when first used. Kept bytes from ``COMPRESS_FROM`` are compressed when that
#: makes them shorter (shorter ones save too little for the microseconds it costs).
COMPRESS_AT_READ = 128 * 1024
COMPRESS_FROM = 64
#: Bodies at least this long are read for their records alone on their first
#: question (see :func:`~scrapy_rfc9309.core.syntax.reduce_body`): neither a copy nor the
#: text of a large body is made (freed, such temporaries leave holes in the heap
#: that the small objects allocated meanwhile keep resident), and the lines that
#: hold no record (comments, an HTML page, junk octets) are read once, not decoded.
REDUCE_FIRST_FROM = 16 * 1024
#: Raw deflate, no header: the bytes are only ever read back here (with the
#: largest window, which reads what a smaller one wrote).
_WBITS = -15
#: Bits of ``RobotsTxt._flags``: the kept bytes are compressed; they are the text
#: the parser reads (see :func:`decode`); they are the file's records only (see
#: :func:`~scrapy_rfc9309.core.syntax.records_text`); the file keeps its bytes as
#: fetched (``keep_body``); the C accelerator may be used; the body was longer
#: than the parsing limit; the kept records leave out the rules of the file's
#: first merged group (``RobotsTxt._rules``, whose matcher gives them back); the
#: kept records are the body's, reduced as it was read, whole and not compressed
#: until the first question leaves out its group's rules. The body's length is
#: kept above these bits (one int for both: a broad crawl keeps many files).
_COMPRESSED, _NORMALIZED, _REDUCED, _KEEP_BODY, _SPEEDUPS, _TRUNCATED, _RULES_OUT, _AS_READ = (
    1, 2, 4, 8, 16, 32, 64, 128)
_SIZE_SHIFT = 8
#: The bits a file keeps when it is reduced.
_KEPT = ~(_COMPRESSED | _NORMALIZED | _REDUCED | _RULES_OUT | _AS_READ)
#: A file that keeps its bytes as fetched compresses them from this size.
_COMPACT_FROM = 256


def _compress(body: bytes) -> bytes:
    """Raw deflate at its fastest level, with a window no larger than the bytes
    (most are a few hundred bytes: a smaller state to set up)."""
    bits = min(15, max(9, (len(body) - 1).bit_length()))
    compressor = zlib.compressobj(1, zlib.DEFLATED, -bits, min(8, bits - 4))
    return compressor.compress(body) + compressor.flush()


def _allow_all(url: str | bytes) -> bool:
    return True


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
    """All groups that apply to one product token, merged (RFC 9309, 2.2.1): the
    compiled rules, and the group records that apply (see :meth:`RobotsTxt.records`)."""

    __slots__ = ("crawl_delay", "matcher", "records", "token", "usage_index", "usage_records")

    def __init__(self, token: str, groups: list[SelectedGroup], speedups: bool = True) -> None:
        self.token = token
        #: The usage records indexed by path (made on the first question about one).
        self.usage_index: UsageIndex | None = None
        if len(groups) == 1:
            patterns, codes, special, raw_records = groups[0]
            self.matcher = compile_rules(patterns, array("I", codes), speedups, array("I", special))
            named = [record for record in raw_records if _applies(record, token)]
        else:
            patterns = []
            all_codes = array("I")
            indices: list[int] = []
            named = []
            for group_patterns, codes, special, raw_records in groups:
                offset = len(patterns)
                indices += [offset + index for index in array("I", special)]
                patterns += group_patterns
                all_codes.frombytes(codes)
                named += [record for record in raw_records if _applies(record, token)]
            self.matcher = compile_rules(patterns, all_codes, speedups, indices)
        #: ``(name, value, line)`` of the records that apply, in file order.
        self.records: list[tuple[str, str, int]] | None = [
            (GROUP_RECORDS[kind], value, line) for kind, value, line, _, _ in named
        ] or None
        self.usage_records = [record for record in self.records or () if record[0] in USAGE_RECORDS] or ()
        delays = []
        for name, value, _line in self.records or ():
            if name == "crawl-delay":
                try:
                    delay = float(value.split()[0]) if value else -1.0
                except ValueError:
                    continue
                if 0 <= delay < float("inf"):
                    delays.append(delay)
        self.crawl_delay: float | None = max(delays) if delays else None


#: The merged groups without rules or records, by token (see :func:`_empty_group`).
_EMPTY_GROUPS: dict[str, _MergedGroup] = {}


def _empty_group(token: str) -> _MergedGroup:
    """The merged group of ``token`` without rules or records: one shared by every
    file (it holds nothing of a file; many have no group for an agent, or an empty
    one), for the tokens of the first few dozen such groups asked for."""
    merged = _EMPTY_GROUPS.get(token)
    if merged is None:
        merged = _MergedGroup(token, [])
        if len(_EMPTY_GROUPS) < _MAX_MEMO:
            _EMPTY_GROUPS[token] = merged
    return merged


def _applies(record: tuple[int, str, int, bool, bool], token: str) -> bool:
    """Whether a group record applies to the token that selected its group: a
    Crawl-delay only when its block names the token (``*`` for the global group)."""
    kind, _value, _line, names_token, names_star = record
    if GROUP_RECORDS[kind] not in BLOCK_RECORDS:
        return True
    return names_star if token == "*" else names_token


#: Stands for "no agent asked yet" (``None`` is an agent: it names no token).
_NO_AGENT = object()


class RobotsTxt:
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
    """

    __slots__ = (
        "_agent",
        "_allowed",
        "_flags",
        "_group",
        "_memo",
        "_purposes",
        "_rules",
        "_source",
        "url",
    )

    def __init__(self, body: bytes | str = b"", max_bytes: int = DEFAULT_MAX_BYTES, *, speedups: bool = True,
                 url: str | None = None, keep_body: bool = False) -> None:
        if isinstance(body, str):
            body = utf8_octets(body)
        size = len(body)
        self._flags = (size << _SIZE_SHIFT | (_SPEEDUPS if speedups else 0) | (_KEEP_BODY if keep_body else 0)
                       | (_TRUNCATED if size > max_bytes else 0))
        self.url: str | None = url or None
        self._agent: object = _NO_AGENT  # the last agent asked about, and its merged group
        self._group: _MergedGroup | None = None
        self._rules: _MergedGroup | None = None  # the group whose rules the kept records leave out
        self._memo: dict[str | bytes | None, _MergedGroup] | None = None
        self._allowed: Callable[[str | bytes], bool] = _allow_all
        self._purposes: list[tuple[tuple[str, ...], object, tuple[tuple[str, Any], ...]]] | None = None
        # A large body is reduced (or compressed) now, its parse would be long
        # anyway; a small one when it is first used, so that reading it costs next
        # to nothing. A large one's records are compressed now when they are a
        # small part of it (mostly empty lines, compressed in microseconds), else
        # when its first question has left out the rules of the group it builds
        # (compressing them twice would double that question's time).
        if size >= COMPRESS_AT_READ and not keep_body:
            reduced = reduce_body(body, max_bytes, speedups)
            flags = self._flags | _NORMALIZED | _REDUCED | _AS_READ
            if len(reduced) <= min(size, max_bytes) // 4:
                packed = _compress(reduced)
                if len(packed) < len(reduced):
                    reduced = packed
                    flags |= _COMPRESSED
            self._source, self._flags = reduced, flags
            return
        self._source = body[:max_bytes] if size > max_bytes else body
        if size >= COMPRESS_AT_READ:
            self._compact()

    # -- the file ---------------------------------------------------------------------
    @property
    def size(self) -> int:
        """The body's length."""
        return self._flags >> _SIZE_SHIFT

    @property
    def truncated(self) -> bool:
        """Whether the body was longer than the parsing limit."""
        return bool(self._flags & _TRUNCATED)

    @property
    def _speedups(self) -> bool:
        return bool(self._flags & _SPEEDUPS)

    def _compact(self) -> None:
        """Compress the kept bytes; a file with a line longer than the parser reads
        (or many lines ended by CR only) is kept as the parser reads it first, so
        that a 500 KiB line costs 16 KiB."""
        body = self._source
        if len(body) > MAX_LINE_BYTES and has_long_line(body):
            body = normalize(body, len(body))[0]
            self._flags |= _NORMALIZED
        self._source = _compress(body)
        self._flags |= _COMPRESSED

    def _keep(self, records: str, rules: _MergedGroup | None) -> None:
        """After the first decision: keep the file's records only (see
        :func:`~scrapy_rfc9309.core.syntax.records_text`), without the rules of
        ``rules``, whose matcher gives them back, compressed when that makes them
        shorter."""
        reduced = utf8_octets(records)
        if rules is not None:
            self._rules = rules
        flags = self._flags & _KEPT | _NORMALIZED | _REDUCED | (_RULES_OUT if rules is not None else 0)
        if len(reduced) >= COMPRESS_FROM:
            packed = _compress(reduced)
            if len(packed) < len(reduced):
                reduced = packed
                flags |= _COMPRESSED
        self._source, self._flags = reduced, flags

    @property
    def body(self) -> bytes:
        """The file's bytes up to the parsing limit, as fetched; after the first
        decision (from the start for a body of 128 KiB or more), unless the file
        was made with ``keep_body``, its records only: each
        known record as ``key:value`` on its own line, every other line empty (see
        :func:`~scrapy_rfc9309.core.syntax.records_text`); and a file with a line
        longer than the parser reads, as the parser reads it (see
        :func:`~scrapy_rfc9309.core.syntax.normalize`). Each parses as the file does."""
        flags = self._flags
        body = zlib.decompress(self._source, _WBITS) if flags & _COMPRESSED else self._source
        if flags & _RULES_OUT:
            return self._rules.matcher.fill(body, RULE_KEYS)  # type: ignore[union-attr]
        return body

    @property
    def records_body(self) -> bytes:
        """The file's records only, as :attr:`body` holds them once reduced (made
        again, without reducing the file, when it is not): two files with the same
        records give the same answers."""
        if self._flags & _REDUCED:
            return self.body
        return utf8_octets(records_text(self._text(), self._speedups))

    def copy(self) -> RobotsTxt:
        """The file with no group built: what is asked of the copy leaves this one
        as it is (a file not asked yet keeps its bytes as fetched; a reduced one
        shares the matcher that holds the rules its records leave out)."""
        other = RobotsTxt.__new__(RobotsTxt)
        other.url, other._source, other._flags, other._rules = self.url, self._source, self._flags, self._rules
        other._agent, other._group, other._memo, other._allowed = _NO_AGENT, None, None, _allow_all
        other._purposes = None
        return other

    @property
    def reduced(self) -> bool:
        """Whether the file keeps its records only (see :attr:`body`)."""
        return bool(self._flags & _REDUCED)

    def _text(self) -> str:
        body = self.body
        flags = self._flags
        if flags & _NORMALIZED:
            return decode(body)
        if len(body) >= REDUCE_FIRST_FROM and flags & _SPEEDUPS:
            return decode(reduce_body(body, len(body)))  # parses as the body does
        return prepare(body, len(body))[0]

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
    def _group_for(self, user_agent: str | bytes | None) -> _MergedGroup:
        if user_agent is self._agent or user_agent == self._agent:
            return self._group  # type: ignore[return-value]
        memo = self._memo
        merged = None if memo is None else memo.get(user_agent)
        if merged is None:
            merged = self._merged_for(user_agent)
        self._agent, self._group, self._allowed = user_agent, merged, merged.matcher.allowed
        return merged

    def _merged_for(self, user_agent: str | bytes | None) -> _MergedGroup:
        """The merged group for an agent not asked about last: found by its
        product token, or built. The memo starts with a second agent; it maps
        agents, their tokens and the tokens of merged groups (``"*"``) to them,
        which never disagree: an agent string made of token characters names the
        token it spells."""
        token = product_token(user_agent)
        memo = self._memo
        last = self._group
        merged = None if memo is None else memo.get(token)
        if merged is None:
            star = None if memo is None else memo.get("*")
            if star is None and last is not None and last.token == "*":
                star = last
            # The groups of "*" are not read again when they are built already.
            text = self._text()
            flags = self._flags
            # The first question reduces the file to its records, without the
            # rules of the group it builds (a file reduced as it was read, 128 KiB
            # or more, has its records only already: they lose those rules, and
            # are compressed); a file that keeps its body compresses it.
            reduce = not flags & (_COMPRESSED if flags & _KEEP_BODY else _REDUCED) or flags & _AS_READ
            records = None
            if reduce and not flags & _KEEP_BODY:
                # One pass selects the groups and writes the records without their rules.
                key, selected, records = select_records(text, token, self._speedups)
            else:
                key, selected = select(text, token, self._speedups, star=star is None)
            if key == "*" and star is not None:
                merged = star
            elif last is not None and last.token == key:
                merged = last  # a token without groups of its own: "*"'s apply
            elif memo is not None and key in memo:
                merged = memo[key]
            elif any(group[0] or group[3] for group in selected):
                merged = _MergedGroup(key, selected, self._speedups)
            else:
                merged = _empty_group(key)
            if records is not None:
                self._keep(records, merged if any(group[0] for group in selected) else None)
            elif reduce and len(self._source) >= _COMPACT_FROM:
                self._compact()  # a file that keeps its body: compressed
        if last is not None:
            if memo is None or len(memo) >= _MAX_MEMO:
                memo = self._memo = {}
            memo[self._agent] = memo[last.token] = last  # type: ignore[index]
            memo[user_agent] = memo[token] = memo[merged.token] = merged
        return merged

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

    def _rule_for(self, merged: _MergedGroup, path: str) -> Rule | None:
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
        group that apply to ``url`` (empty when the group has none)."""
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
            for known, agent, plan in plans:
                if known is purposes and (agent is user_agent or agent == user_agent):
                    return plan
            for known, agent, plan in plans:
                if known == purposes and agent == user_agent:
                    return plan
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
        if plans is None or len(plans) >= _MAX_PLANS:
            plans = self._purposes = []
        plans.append((purposes, user_agent, plan))
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
