"""Parsing robots.txt bytes into groups and records (RFC 9309, 2.1 to 2.5).

Pure Python; the only work done per line is a few string operations and one dict
lookup, so that parsing stays cheap for crawls over millions of hosts.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Iterator

from .product_tokens import token_of_line
from .urls import escape_undecodable, utf8_octets

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_LINE_BYTES",
    "RULE_KEYS",
    "Group",
    "ParseResult",
    "SelectedGroup",
    "decode",
    "first_question",
    "has_long_line",
    "normalize",
    "parse_body",
    "parse_text",
    "prepare",
    "records_text",
    "reduce_body",
    "scan",
    "select",
    "select_records",
]

#: RFC 9309, 2.5: the parsing limit must be at least 500 KiB.
DEFAULT_MAX_BYTES = 500 * 1024
#: Google's reference parser keeps the first 2083 * 8 - 1 bytes of a line.
MAX_LINE_BYTES = 2083 * 8 - 1

# Record kinds.
USER_AGENT, ALLOW, DISALLOW, SITEMAP, CRAWL_DELAY, CONTENT_USAGE, CONTENT_SIGNAL, HOST = range(8)
#: Added to ALLOW/DISALLOW for a pattern that is not a plain literal.
SPECIAL = 8

_UA = ("user-agent", "useragent", "user agent", "user_agent")
_CD = ("crawl-delay", "crawldelay", "crawl delay", "crawl_delay")
#: Field names, lower-cased, with the misspellings Google's parser accepts.
KEYS: dict[str, int] = {
    **{name: USER_AGENT for ua in _UA for name in (ua, ua + "s")},
    "allow": ALLOW,
    "disallow": DISALLOW, "dissallow": DISALLOW, "dissalow": DISALLOW,
    "disalow": DISALLOW, "diasllow": DISALLOW, "disallaw": DISALLOW,
    "sitemap": SITEMAP, "site-map": SITEMAP,
    **{name: CRAWL_DELAY for name in _CD},
    "content-usage": CONTENT_USAGE, "content-signal": CONTENT_SIGNAL,
    "host": HOST,
}
#: Records that belong to the current group without ending a run of user-agent lines
#: (each ends the current block, see :class:`Group`).
GROUP_RECORDS = {CRAWL_DELAY: "crawl-delay", CONTENT_USAGE: "content-usage",
                 CONTENT_SIGNAL: "content-signal"}


def _ci(word: str) -> str:
    """A case-insensitive regex for ``word`` that needs no IGNORECASE flag."""
    return "".join(f"[{c}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)


def _keys_regex(names: list[str]) -> str:
    return "|".join(_ci(name) for name in sorted(names, key=len, reverse=True))


_WS = "[ \\t\\v\\f]"
# One match per line, each starting where the last one ended (the text ends with a
# newline), so the engine never searches: groups are (user-agent key, allow key,
# disallow key, other known key, value), all empty for any other line. A key is
# followed by a colon, or (as Google accepts) by whitespace when the value is a
# single word. The value comes without its trailing whitespace.
_LINE = re.compile(
    rf"{_WS}*(?:(?:({_keys_regex([k for k, v in KEYS.items() if v == USER_AGENT])})"
    rf"|({_keys_regex([k for k, v in KEYS.items() if v == ALLOW])})"
    rf"|({_keys_regex([k for k, v in KEYS.items() if v == DISALLOW])})"
    rf"|({_keys_regex([k for k, v in KEYS.items() if v > DISALLOW])}))"
    rf"(?:{_WS}*:|{_WS}+(?=[^ \t\v\f#\n]+{_WS}*(?:#|\n))){_WS}*([^#\n]*[^ \t\v\f#\n])?[^\n]*|[^\n]*)\n"
)
_BOM = b"\xef\xbb\xbf"


_NO_CODES = array("I")


class Group:
    """One group as written: its user-agent tokens (lower-cased), its rules and
    its other records as ``(name, value, line, start, end)`` tuples, in file order.

    ``agents[start:end]`` are the user-agent lines of the block the record is
    written in: the run of user-agent lines just before it. A group's rules apply
    to all its user-agent lines (RFC 9309, 2.1, as Google reads it: records other
    than rules never end a group), but a Crawl-delay only to its block's, so that
    in ``User-agent: a`` / ``Crawl-delay: 10`` / ``User-agent: b`` / ``Disallow: /x``
    both get the rule and only ``a`` the delay.

    Rules are kept compactly (a pattern list and an array of ``line << 1 | allow``):
    a broad crawl keeps many parsed files in memory. ``rules`` gives them as
    ``(allow, pattern, line)`` tuples."""

    __slots__ = ("agents", "codes", "patterns", "records", "special")

    def __init__(self) -> None:
        self.agents: list[str] = []
        self.patterns: list[str] = []
        self.codes = _NO_CODES.__copy__()  # a quarter of the cost of array("I"): 20,000 groups add up
        self.records: list[tuple[str, str, int, int, int]] | None = None  # made on the first one
        #: Indices (into ``patterns``) of the patterns that are more than plain
        #: literals (``*``, ``$``, ``%``, non-ASCII), so that the matcher can index
        #: the rest in bulk; an array made on the first one.
        self.special: array[int] | None = None

    @property
    def rules(self) -> list[tuple[bool, str, int]]:
        return [(bool(code & 1), pattern, code >> 1) for pattern, code in zip(self.patterns, self.codes, strict=True)]


class ParseResult:
    """The groups, and the records outside groups: Sitemap values as written
    (bytes that are not UTF-8 percent-encoded), Host values."""

    __slots__ = ("by_token", "groups", "hosts", "sitemaps", "size", "truncated")

    def __init__(self) -> None:
        self.groups: list[Group] = []
        self.by_token: dict[str, list[Group]] = {}
        self.sitemaps: list[str] = []
        self.hosts: list[str] = []
        self.size = 0
        self.truncated = False


def prepare(body: bytes, max_bytes: int) -> tuple[str, bool]:
    """The text the parser reads (see :func:`normalize`, bytes that are not UTF-8
    as surrogate escapes) and whether ``body`` was cut at ``max_bytes``."""
    body, truncated = normalize(body, max_bytes)
    return decode(body), truncated


def normalize(body: bytes, max_bytes: int) -> tuple[bytes, bool]:
    """The octets the parser reads: the first ``max_bytes``, a whole or partial
    UTF-8 BOM skipped (as Google does), line ends as ``\\n``, each line cut at
    :data:`MAX_LINE_BYTES`; and whether ``body`` was cut at ``max_bytes``."""
    truncated = len(body) > max_bytes
    if truncated:
        body = body[:max_bytes]
    if body[:1] == b"\xef":
        skip = 3 if body[:3] == _BOM else 2 if body[:2] == _BOM[:2] else 1
        body = body[skip:]
    if b"\r" in body:
        body = body.replace(b"\r\n", b"\n")
        if b"\r" in body:
            body = body.replace(b"\r", b"\n")
    if len(body) > MAX_LINE_BYTES and has_long_line(body):
        body = b"\n".join(line[:MAX_LINE_BYTES] for line in body.split(b"\n"))
    return body, truncated


def decode(normalized: bytes) -> str:
    """The text of :func:`normalize`'s octets, ending with a newline."""
    return normalized.decode("utf-8", "surrogateescape") + "\n"


def has_long_line(body: bytes) -> bool:
    """Whether a line is longer than :data:`MAX_LINE_BYTES`. Such a line holds a
    whole block of half that size starting at a multiple of it, so only the lines
    through blocks without a newline are measured: a few dozen ``memchr`` calls
    for the largest file instead of splitting it."""
    half = MAX_LINE_BYTES // 2
    find = body.find
    for start in range(0, len(body) - half + 1, half):
        if find(b"\n", start, start + half) < 0:
            end = find(b"\n", start)
            if (len(body) if end < 0 else end) - (body.rfind(b"\n", 0, start) + 1) > MAX_LINE_BYTES:
                return True
    return False


try:  # the optional C accelerator (see _speedups.c)
    from ._speedups import first_question as _c_first_question
    from ._speedups import records_text as _c_records_text
    from ._speedups import reduce_octets, scan_lines, select_groups
except ImportError:  # pragma: no cover - depends on the build
    _c_first_question = None  # type: ignore[assignment]
    _c_records_text = None  # type: ignore[assignment]
    reduce_octets = None  # type: ignore[assignment]
    scan_lines = None  # type: ignore[assignment]
    select_groups = None  # type: ignore[assignment]
#: The keys for the C scanner, longest first (as the regex tries them).
_KEY_LIST = sorted(KEYS.items(), key=lambda item: -len(item[0]))


def _scan_regex(text: str) -> Iterator[tuple[int, str, int]]:
    """``(kind, value, line)`` for each line that holds a known record."""
    for lineno, (agent_key, allow_key, disallow_key, other_key, value) in enumerate(_LINE.findall(text), 1):
        if disallow_key or allow_key:
            kind = DISALLOW if disallow_key else ALLOW
            if "*" in value or "$" in value or "%" in value or not value.isascii():
                kind += SPECIAL
            yield kind, value, lineno
        elif agent_key:
            yield USER_AGENT, value, lineno
        elif other_key:
            yield KEYS[other_key.lower()], value, lineno


def scan(text: str, speedups: bool = True) -> Iterable[tuple[int, str, int]]:
    """``(kind, value, line)`` for each line of a :func:`prepare` text that holds a
    known record (in C when the accelerator is built)."""
    return scan_lines(text, _KEY_LIST) if speedups and scan_lines is not None else _scan_regex(text)


#: The shortest key of each record kind (see :data:`KEYS`), ``SPECIAL`` kinds included.
_SHORT_KEYS = {kind: min((name for name, k in KEYS.items() if k == kind), key=len) + ":" for kind in set(KEYS.values())}
_SHORT_KEYS.update({kind + SPECIAL: _SHORT_KEYS[kind] for kind in (ALLOW, DISALLOW)})
_SHORT_KEY_LIST = tuple(_SHORT_KEYS.get(kind, "") for kind in range(max(_SHORT_KEYS) + 1))
#: The keys of a Disallow and of an Allow record in :func:`records_text`, as octets.
RULE_KEYS = (_SHORT_KEYS[DISALLOW].encode(), _SHORT_KEYS[ALLOW].encode())


def records_text(text: str, speedups: bool = True, rows: list[tuple[int, str, int]] | None = None,
                 omit: array[int] | bytes | None = None) -> str:
    """A :func:`prepare` text reduced to its known records: each on its own line
    number, as ``key:value`` with the kind's shortest key, every other line empty
    (comments, unknown fields, blank lines). It parses as ``text`` does (the same
    groups, records, values and line numbers) in a fraction of the bytes; no line
    is longer than it was, so it is read as it is (the result of :func:`decode`
    without its final newline, :func:`prepare` is not needed again). In C when
    the accelerator is built; in Python from ``rows``, the text's :func:`scan`,
    when the caller has it.

    ``omit`` (codes ``line << 1 | allow``, by line: an ``array("I")`` or its
    octets, as :func:`select` gives a group's) names Allow and Disallow rules to
    leave out: their lines are empty, and the text has as many lines (a matcher's
    ``fill`` writes them back, with :data:`RULE_KEYS`). The lines it names must
    hold such rules (C does not read them again)."""
    if speedups and _c_records_text is not None:
        return _c_records_text(text, _KEY_LIST, _SHORT_KEY_LIST, omit)
    if rows is None:
        rows = list(scan(text, speedups))
    if not rows:
        return ""
    keys = _SHORT_KEYS
    lines = [""] * rows[-1][2]
    left_out = {code >> 1 for code in (array("I", omit) if isinstance(omit, bytes) else omit)} if omit else ()
    for kind, value, line in rows:
        if line not in left_out or kind % SPECIAL not in (ALLOW, DISALLOW):
            lines[line - 1] = keys[kind] + value
    return "\n".join(lines)


def reduce_body(body: bytes, max_bytes: int, speedups: bool = True) -> bytes:
    """The first ``max_bytes`` octets of a body reduced to their known records, as
    octets: :func:`records_text` of :func:`prepare`'s text, encoded back (bytes
    that are not UTF-8 as they were). In C when the accelerator is built, from
    the body itself: neither the text nor a normalized copy of the body is made,
    so that a large body leaves no temporary behind in the heap."""
    if speedups and reduce_octets is not None:
        return reduce_octets(body, max_bytes, MAX_LINE_BYTES, _KEY_LIST, _SHORT_KEY_LIST)
    return utf8_octets(records_text(prepare(body, max_bytes)[0], speedups))


def first_question(body: bytes, token: str, speedups: bool = True) -> tuple[str, list[SelectedGroup], bytes]:
    """What a file's first question needs from its bytes as fetched (all of them: the
    caller cut them at the parsing limit): :func:`select` (with ``"*"``'s groups) and
    the :func:`records_text` without the rules of the groups it gives, as octets, as
    :func:`select_records` gives them from :func:`prepare`'s text. In C, in one call
    from :func:`reduce_body`'s records (they parse as the body does)."""
    if speedups and _c_first_question is not None:
        return _c_first_question(body, MAX_LINE_BYTES, _KEY_LIST, _SHORT_KEY_LIST, token)
    key, selected, records = select_records(prepare(body, len(body))[0], token)
    return key, selected, utf8_octets(records)


def parse_body(body: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES, speedups: bool = True) -> ParseResult:
    """Parse robots.txt content; never raises on any content."""
    if isinstance(body, str):
        body = utf8_octets(body)
    text, truncated = prepare(body, max_bytes)
    result = parse_text(text, speedups)
    result.size = len(body)
    result.truncated = truncated
    return result


def parse_text(text: str, speedups: bool = True, rows: Iterable[tuple[int, str, int]] | None = None) -> ParseResult:
    """Parse a text made by :func:`prepare` (its ``size`` and ``truncated`` are left
    for the caller); ``rows`` is its :func:`scan` when the caller has it."""
    result = ParseResult()
    groups = result.groups
    by_token = result.by_token
    group: Group | None = None
    patterns: list[str] = []  # the current group's
    add_pattern = add_code = None  # the current group's appenders
    in_agents = False  # the last user-agent/rule line was a user-agent line
    block = 0  # index in group.agents of the first user-agent line of the current block
    after_record = False  # a group record came after the current block's user-agent lines
    if rows is None:
        rows = scan(text, speedups)
    for kind, value, lineno in rows:
        if kind == DISALLOW:
            if group is not None:
                in_agents = False
                if value:
                    add_pattern(value)  # type: ignore[misc]
                    add_code(lineno << 1)  # type: ignore[misc]
        elif kind == ALLOW:
            if group is not None:
                in_agents = False
                if value:
                    add_pattern(value)  # type: ignore[misc]
                    add_code(lineno << 1 | 1)  # type: ignore[misc]
        elif kind > SPECIAL:
            if group is not None:
                in_agents = False
                if value:
                    if group.special is None:
                        group.special = array("I")
                    group.special.append(len(patterns))
                    add_pattern(value)  # type: ignore[misc]
                    add_code(lineno << 1 | (kind == ALLOW + SPECIAL))  # type: ignore[misc]
        elif kind == USER_AGENT:
            if group is None or not in_agents:
                group = Group()
                patterns = group.patterns
                add_pattern = patterns.append
                add_code = group.codes.append
                groups.append(group)
                in_agents = True
                block = 0
                after_record = False
            elif after_record:
                block = len(group.agents)
                after_record = False
            token = token_of_line(value)
            if token:
                group.agents.append(token)
                same = by_token.get(token)
                if same is None:
                    by_token[token] = [group]
                elif same[-1] is not group:
                    same.append(group)
        elif kind == SITEMAP:
            if value:
                result.sitemaps.append(value if value.isascii() else escape_undecodable(value))
        elif kind == HOST:
            if value:
                result.hosts.append(value)
        elif group is not None:
            if group.records is None:
                group.records = []
            group.records.append((GROUP_RECORDS[kind], value, lineno, block, len(group.agents)))
            after_record = True
    return result


#: A selected group as :func:`select` gives it: ``(patterns, codes, special,
#: records)``, ``codes`` and ``special`` as native ``unsigned int`` octets (see
#: :class:`Group`), a record as ``(kind, value, line, names_token, names_star)``:
#: whether the user-agent lines of its block name the token, and ``*``.
SelectedGroup = tuple[list[str], bytes, bytes, list[tuple[int, str, int, bool, bool]]]
_RECORD_KINDS = {name: kind for kind, name in GROUP_RECORDS.items()}


def select(text: str, token: str, speedups: bool = True, star: bool = True,
           rows: Iterable[tuple[int, str, int]] | None = None) -> tuple[str, list[SelectedGroup]]:
    """The groups of a text made by :func:`prepare` that apply to a product token
    (RFC 9309, 2.2.1): those whose user-agent lines name ``token``, else those
    naming ``*``. Returns ``(key, groups)``, ``key`` being ``token``, ``"*"``, or
    ``""`` when no group applies; with ``star=False`` the groups are not given
    when the key is ``"*"`` (the caller has them). The C accelerator builds only
    the groups it gives; the pure-Python path (the reference) parses the whole
    text (from ``rows``, its :func:`scan`, when given) and picks them."""
    if speedups and select_groups is not None:
        return select_groups(text, _KEY_LIST, token, star)
    by_token = parse_text(text, False, rows).by_token
    key = token if token and token in by_token else "*" if "*" in by_token else ""
    if key == "*" and not star:
        return key, []
    selected = []
    for group in by_token.get(key, ()):
        records = [
            (_RECORD_KINDS[name], value, line, token in group.agents[start:end], "*" in group.agents[start:end])
            for name, value, line, start, end in group.records or ()
        ]
        special = array("I", group.special or ()).tobytes()
        selected.append((group.patterns, group.codes.tobytes(), special, records))
    return key, selected


def select_records(text: str, token: str,
                   rows: list[tuple[int, str, int]] | None = None) -> tuple[str, list[SelectedGroup], str]:
    """:func:`select` (with ``star``) and the text's :func:`records_text` without the
    rules of the groups it gives (their matcher gives them back): what a file's first
    question needs, in pure Python (the reference), from one scan of the text
    (``rows``, its :func:`scan`, when given). With the accelerator a first question
    selects the groups, then writes the records, in C."""
    if rows is None:
        rows = list(scan(text, False))
    key, selected = select(text, token, False, rows=rows)
    omit = array("I", b"".join(group[1] for group in selected))
    return key, selected, records_text(text, False, rows, omit)
