"""One answer per response: what each place a site states usage preferences in says
about it, and the preference per category they combine to.

The places (sources) are robots.txt (``Content-Usage``/``Content-Signal`` records,
:mod:`scrapy_rfc9309.usage.robotstxt_records`), the origin's TDMRep ``tdmrep.json`` (a match set in
request meta by the part that fetches it), and the response itself: the
``Content-Usage`` header, the TDMRep ``tdm-reservation``/``tdm-policy`` headers and
``<meta>`` tags, and ``X-Robots-Tag`` headers and ``<meta name="robots">`` /
``<meta name="AGENT">`` tags (:mod:`scrapy_rfc9309.usage.response_sources` reads each one).

Each source gives a :class:`Statement`. TDMRep's three techniques first resolve among
themselves as the TDMRep report says (the header supersedes tdmrep.json, the meta tag
supersedes both, a technique that says nothing resets nothing); the statements then
combine per category as the AIPREF vocabulary says (:func:`scrapy_rfc9309.usage.vocabulary.combine`:
any ``n`` wins, then any ``y``). Pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ..core.usage_vocabulary import DISALLOW, canonical, combine

__all__ = ["Preferences", "Statement", "TdmRepMatch", "build"]

#: The source names a :class:`Statement` carries.
ROBOTSTXT = "robots.txt"
TDMREP_FILE = "tdmrep.json"
CONTENT_USAGE_HEADER = "content-usage-header"
TDM_HEADER = "tdm-header"
TDM_META = "tdm-meta"
ROBOTS_HEADER = "x-robots-tag"
ROBOTS_META = "meta-robots"
#: TDMRep's processing priority, lowest first: a later technique supersedes an earlier one.
TDM_PRIORITY = (TDMREP_FILE, TDM_HEADER, TDM_META)


class TdmRepMatch(Protocol):
    """The tdmrep.json entry that applies to a URL (request meta ``robotstxt_tdmrep``)."""

    reserved: bool
    policy: str | None
    location: str
    index: int
    url: str


@dataclass(frozen=True)
class Statement:
    """What one source says about one response. ``values`` maps categories to
    ``"y"``/``"n"``; ``where`` names the source precisely (a robots.txt line, a
    header, a meta tag, a tdmrep.json entry); ``text`` is what was read, as sent.
    ``counted`` is False for a TDMRep technique superseded by a later one
    (``superseded_by`` names it): it is reported but takes no part in the answer.
    ``directives`` are the robots directives of an ``X-Robots-Tag``/meta robots
    source (``noindex``, ``nofollow``, ...), ``policy`` a TDMRep ``tdm-policy`` URL."""

    source: str
    where: str
    values: Mapping[str, str]
    text: str = ""
    directives: frozenset[str] = frozenset()
    policy: str | None = None
    counted: bool = True
    superseded_by: str | None = None

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"source": self.source, "where": self.where, "values": dict(self.values),
                                   "text": self.text}
        if self.directives:
            data["directives"] = sorted(self.directives)
        if self.policy is not None:
            data["policy"] = self.policy
        if not self.counted:
            data["superseded_by"] = self.superseded_by
        return data


@dataclass(frozen=True)
class Preferences:
    """The usage preferences of one response: every source's :class:`Statement`,
    the combined value per category with the sources that gave it, the robots
    directives that apply to the crawler (header and meta together), and the sources
    that were ignored because they were malformed (one message each)."""

    statements: tuple[Statement, ...] = ()
    combined: Mapping[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    directives: frozenset[str] = frozenset()
    malformed: tuple[str, ...] = ()

    def get(self, category: str) -> str | None:
        """``"y"``, ``"n"`` or None (unknown) for ``category`` (``ai-train`` is ``train-ai``)."""
        found = self.combined.get(canonical(category))
        return None if found is None else found[0]

    def denies(self, category: str) -> bool:
        return self.get(category) == DISALLOW

    def sources_of(self, category: str) -> tuple[str, ...]:
        """Where the combined value of ``category`` comes from (each source that stated it)."""
        found = self.combined.get(canonical(category))
        return () if found is None else found[1]

    @property
    def nofollow(self) -> bool:
        """Whether a robots directive (``nofollow`` or ``none``) asks not to follow the links."""
        return "nofollow" in self.directives

    @property
    def tdm_policy(self) -> str | None:
        """The TDMRep ``tdm-policy`` URL of a TDM reservation that applies, or None:
        the policy of the highest-priority technique that states one (a technique that
        names no policy does not reset it); none when the rights are not reserved."""
        tdm = sorted((s for s in self.statements if s.source in TDM_PRIORITY),
                     key=lambda s: TDM_PRIORITY.index(s.source))
        reservations = [s for s in tdm if s.values]
        if not reservations or not any(v == DISALLOW for v in reservations[-1].values.values()):
            return None
        policies = [s.policy for s in tdm if s.policy is not None]
        return policies[-1] if policies else None

    def by_source(self, source: str) -> tuple[Statement, ...]:
        return tuple(s for s in self.statements if s.source == source)

    def as_dict(self) -> dict[str, object]:
        return {
            "statements": [s.as_dict() for s in self.statements],
            "combined": {k: {"value": v, "sources": list(w)} for k, (v, w) in self.combined.items()},
            "directives": sorted(self.directives),
            "malformed": list(self.malformed),
        }

    def __bool__(self) -> bool:
        return bool(self.statements)

    def __str__(self) -> str:
        if not self.combined and not self.directives:
            return "no usage preference"
        parts = [f"{k}={v} ({', '.join(w)})" for k, (v, w) in self.combined.items()]
        if self.directives:
            parts.append("robots directives: " + ", ".join(sorted(self.directives)))
        return "; ".join(parts)


def _resolve_tdm(statements: list[Statement]) -> list[Statement]:
    """Mark the TDMRep statements a later technique supersedes: the last one in
    :data:`TDM_PRIORITY` order that states a reservation decides, and the policy
    goes with it."""
    tdm = [s for s in statements if s.source in TDM_PRIORITY and s.values]
    if len(tdm) < 2:
        return statements
    deciding = max(tdm, key=lambda s: TDM_PRIORITY.index(s.source))
    superseded = {id(s) for s in tdm if s is not deciding}
    resolved = []
    for statement in statements:
        if id(statement) in superseded:
            statement = Statement(statement.source, statement.where, statement.values, statement.text,
                                  statement.directives, statement.policy, False, deciding.where)
        resolved.append(statement)
    return resolved


def build(statements: Iterable[Statement], malformed: Iterable[str] = ()) -> Preferences:
    """The :class:`Preferences` the statements combine to (see the module's docstring)."""
    resolved = _resolve_tdm(list(statements))
    combined = combine((s.where, s.values) for s in resolved if s.counted)
    directives = frozenset().union(*(s.directives for s in resolved))
    return Preferences(tuple(resolved), combined, directives, tuple(malformed))
