"""Read each place a site states usage preferences in into a
:class:`~scrapy_rfc9309.usage.preferences.Statement`. Pure Python.

* ``Content-Usage`` header (draft-ietf-aipref-attach-05, section 2): a Structured Field
  Dictionary (RFC 9651, parsed by ``http_sf``) read as draft-ietf-aipref-vocab-08 says
  (section 6.5): a key's value counts when it is the Token ``y`` or ``n`` (parameters
  ignored); a field that does not parse (an uppercase key, a stray character) states
  nothing; another vocabulary's name of a category (Content-Signal's ``ai-train``) names
  none and is left out (sections 6.4, 6.5).
* TDMRep (W3C Community Group report) ``tdm-reservation`` (``1`` reserved, ``0`` not;
  anything else is a protocol error: unset) and ``tdm-policy`` (a URL), as headers or
  ``<meta name=...>`` tags; a reservation maps onto ``train-ai`` (``1`` -> ``n``,
  ``0`` -> ``y``).
* Robots directives, from ``X-Robots-Tag`` headers (``noindex, nofollow``, or scoped
  to a crawler: ``examplebot: noai``) and ``<meta name="robots">`` /
  ``<meta name="examplebot">``: lower-cased; ``none`` is ``noindex, nofollow``;
  directives with a value (``unavailable_after: <date>``, ``max-snippet: 20``) are
  ignored. ``noai`` maps to ``train-ai=n``, ``noimageai`` to ``train-ai=n`` for an
  image response, ``noindex`` to ``search=n``; robots directives never say ``y``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import http_sf

from ..core.product_tokens import token_of_line
from ..core.usage_vocabulary import ALLOW, CONTENT_USAGE, DISALLOW, TDM_CATEGORY, category_of
from .preferences import (
    CONTENT_USAGE_HEADER,
    ROBOTS_HEADER,
    ROBOTS_META,
    ROBOTSTXT,
    TDM_HEADER,
    TDM_META,
    TDMREP_FILE,
    Statement,
    TdmRepMatch,
)

if TYPE_CHECKING:
    from ..core.usage_rules import UsagePreference

__all__ = [
    "MAX_FIELD_BYTES",
    "MAX_MEMBERS",
    "content_usage",
    "robots_directives",
    "robots_tags",
    "robotstxt_malformed",
    "robotstxt_statements",
    "tdm_statement",
    "tdmrep_statement",
]

#: The longest field value (all lines of one header joined) read; a longer one is malformed.
MAX_FIELD_BYTES = 16_384
#: The most members of a Content-Usage Dictionary read (the vocabulary has a few categories; the
#: parser's time grows faster than the members): a field with more commas is malformed.
MAX_MEMBERS = 64
#: Robots directives that take a value after a colon: never an agent name.
VALUE_DIRECTIVES = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
#: Directives that stand for others.
_EXPANDS = {"none": ("noindex", "nofollow")}
#: What a robots directive says in the AIPREF vocabulary (``noimageai``: for an image only).
DIRECTIVE_CATEGORIES = {"noai": "train-ai", "noindex": "search"}


class Malformed(ValueError):
    """A source's value cannot be read: the source states nothing (the message says why)."""


def _joined(values: Sequence[bytes]) -> bytes:
    data = b", ".join(v.strip() for v in values)
    if len(data) > MAX_FIELD_BYTES:
        raise Malformed(f"longer than {MAX_FIELD_BYTES} bytes ({len(data)})")
    return data


def content_usage(values: Sequence[bytes]) -> Statement | None:
    """The statement of the ``Content-Usage`` header lines ``values`` (None without
    one); raises :class:`Malformed` when the field does not parse as a Dictionary."""
    if not values:
        return None
    data = _joined(values)
    if data.count(b",") >= MAX_MEMBERS:
        raise Malformed(f"more than {MAX_MEMBERS} members")
    try:
        parsed = http_sf.parse(data, tltype="dictionary")
    except (http_sf.StructuredFieldError, ValueError) as error:
        raise Malformed(f"not a Structured Field Dictionary: {error}") from None
    found: dict[str, str] = {}
    assert isinstance(parsed, dict)
    for key, member in parsed.items():
        value = member[0] if isinstance(member, tuple) else member
        label = category_of(key, CONTENT_USAGE)
        if isinstance(value, http_sf.Token) and str(value) in (ALLOW, DISALLOW) and label is not None:
            found[label] = str(value)
    return Statement(CONTENT_USAGE_HEADER, "Content-Usage header", found, data.decode("latin-1"))


def tdm_statement(reservation: Sequence[str], policy: Sequence[str], meta: bool) -> Statement | None:
    """The TDMRep statement of ``tdm-reservation``/``tdm-policy`` values (all the
    header lines, or all the meta tags, of each); None when neither is given. A
    reservation other than ``0``/``1`` (or lines that disagree) raises :class:`Malformed`."""
    if not reservation and not policy:
        return None
    source, kind = (TDM_META, '<meta name="tdm-reservation">') if meta else (TDM_HEADER, "tdm-reservation header")
    values: dict[str, str] = {}
    said = {v.strip() for v in reservation}
    if said:
        if len(said) > 1 or not said <= {"0", "1"}:
            raise Malformed(f"{kind} must be 0 or 1, got {', '.join(sorted(said))!r}")
        values[TDM_CATEGORY] = DISALLOW if said == {"1"} else ALLOW
    link = next((p.strip() for p in reversed(policy) if p.strip()), None)
    text = ", ".join(f"tdm-reservation: {v.strip()}" for v in reservation)
    if link is not None:
        text = f"{text}; tdm-policy: {link}" if text else f"tdm-policy: {link}"
    where = kind if said else kind.replace("reservation", "policy")
    return Statement(source, where, values, text, policy=link)


def tdmrep_statement(match: TdmRepMatch) -> Statement:
    """The statement of the tdmrep.json entry that applies to a URL."""
    values = {TDM_CATEGORY: DISALLOW if match.reserved else ALLOW}
    where = f"{match.url} entry {match.index} ({match.location})"
    text = f'"location": "{match.location}", "tdm-reservation": {1 if match.reserved else 0}'
    policy = match.policy if match.reserved else None
    return Statement(TDMREP_FILE, where, values, text, policy=policy)


def robotstxt_statements(preference: UsagePreference, robots_url: str) -> list[Statement]:
    """One statement per robots.txt rule (Content-Usage, Content-Signal) that applies
    and states a preference; they combine with the other sources' statements as any
    statements do (the same combining rule that combines the rules among themselves)."""
    return [Statement(ROBOTSTXT, f"{robots_url} {rule.where}", rule.values, rule.text)
            for rule in preference.rules if rule.values]


def robotstxt_malformed(preference: UsagePreference, robots_url: str) -> list[tuple[str, str]]:
    """``(where, why)`` of each robots.txt rule that applies whose statement does not
    parse (it states nothing: every preference it would give is unknown)."""
    return [(f"{robots_url} {rule.where}", rule.malformed) for rule in preference.rules
            if rule.malformed is not None]


def robots_directives(values: Iterable[str], token: str, scoped: bool) -> frozenset[str]:
    """The robots directives in ``values`` that apply to product ``token``: the
    unscoped ones and, when ``scoped`` (``X-Robots-Tag``), those after ``NAME:`` where
    NAME is read as a robots.txt ``User-agent`` value is and names ``token``."""
    found: set[str] = set()
    for value in values:
        agent: str | None = None
        for item in value.split(","):
            name, colon, rest = item.partition(":")
            if colon:
                key = name.strip().lower()
                if key in VALUE_DIRECTIVES or not scoped or not key or " " in key or not token_of_line(key):
                    continue  # a directive with a value (unavailable_after, max-snippet: ...), or a piece of one
                agent = token_of_line(key)
                item = rest
            directive = item.strip().lower()
            if not directive or (agent is not None and agent != token):
                continue
            if " " in directive:  # the rest of a value with commas in it (a date), or not a directive
                continue
            found.update(_EXPANDS.get(directive, (directive,)))
    return frozenset(found)


def robots_tags(directives: frozenset[str], where: str, text: str, image: bool) -> Statement | None:
    """The statement of robots ``directives`` read from ``where`` (``X-Robots-Tag
    header``, or meta tags: ``<meta name="robots">``); None without any."""
    if not directives:
        return None
    values = {category: DISALLOW for name, category in DIRECTIVE_CATEGORIES.items() if name in directives}
    if image and "noimageai" in directives:
        values["train-ai"] = DISALLOW
    source = ROBOTS_META if where.startswith("<meta") else ROBOTS_HEADER
    return Statement(source, where, values, text, directives=directives)
