"""The audit's check of each verdict record (docs/ledger-format.md, "What a checker does", 4):
its origin, the version in force, the verdict and rule recomputed from the archived robots.txt
(and tdmrep.json), and what the run's settings allow. Pure Python.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from ..core.origins import Origin
from ..core.robotstxt import RobotsTxt
from ..core.tdmrep import TdmRep
from ..core.usage_rules import UsagePreference
from .audit_result import CORRUPT, DECIDED, MISMATCH, VERDICTS, Audit, OriginReport, RunSettings, VersionInfo, strings
from .observer import Observer

__all__ = ["AWAITING", "PENDING", "Awaiting", "Evidence", "Pending", "RunContext", "VerdictCheck", "origin_of",
           "record_time"]

#: Allowed verdicts a run's audit keeps awaiting their response at most: the latest ones (about
#: 170 bytes each, so some 22 MiB at most per run). A response comes within its download's timeout
#: of its verdict, mostly far fewer allowed verdicts later; one whose verdict is older (a slow
#: download in a broad crawl) waits in :class:`Pending` and is settled after the run.
AWAITING = 1 << 17
#: Responses of a run the audit settles after the run at most (:class:`Pending`, about 200 bytes
#: each, some 12 MiB in all, measured; settling them holds about as much again, once the run's
#: :class:`Awaiting` is let go); a further one is reported as not settled.
PENDING = 1 << 16

_AUTHORITY_END = re.compile(r"[/?#]")


def origin_of(url: str) -> Origin | None:
    """:meth:`Origin.from_url` of ``url``, remembered for its text up to the end of its
    authority (what the origin depends on): a ledger names the same few origins in millions
    of records, and splitting each URL anew was most of the audit's time."""
    start = url.find("//")
    if start < 0:
        return Origin.from_url(url)
    end = _AUTHORITY_END.search(url, start + 2)
    return _origin_of_prefix(url if end is None else url[:end.start()])


@lru_cache(maxsize=4096)
def _origin_of_prefix(prefix: str) -> Origin | None:
    return Origin.from_url(prefix)


class Evidence(Protocol):
    """What the checks of a run's records ask of the audit: its findings, the version files
    (their fields, their bytes' hashes, parsed again) and where a problem goes."""

    result: Audit
    file_hashes: dict[tuple[str, str], str]
    #: Every version file's fields, by digest.
    versions: dict[str, VersionInfo]
    #: Told of each record counted (``scrapy robotstxt report``), or None.
    observer: Observer | None

    def problem(self, file: str, line: int | None, kind: str, message: str) -> None: ...

    def version(self, digest: object, file: str, line: int, document: str) -> VersionInfo | None: ...

    def robots(self, digest: str, info: VersionInfo) -> RobotsTxt: ...

    def tdmrep(self, digest: str, info: VersionInfo) -> TdmRep: ...


class Awaiting:
    """A run's allowed verdicts that verified and await their response, the latest ``limit``
    of them (:data:`AWAITING`): what a response record is checked against.

    Kept by the hash of the fingerprint (a 64-bit integer rather than its 40 hex digits: two
    fingerprints of one run share a hash with a chance of about one in 10^9) with the verdict's
    origin, oldest first; a fingerprint allowed more than once counts its other verdicts apart.
    When ``limit`` verdicts await, the oldest is forgotten (counted in :attr:`forgotten`): the
    run's memory is bounded whether its responses are recorded (``resp`` ``all``: the verdicts
    of requests that failed never get one) or not (``refused``: only a response a usage preference
    kept from the spider has a record, every other allowed verdict awaits for ever). A response
    that finds no verdict here while some were forgotten waits in :class:`Pending`."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = AWAITING if limit is None else limit
        self.origins: OrderedDict[int, str] = OrderedDict()
        #: Further verdicts of a fingerprint already awaiting (a duplicate request, a retry).
        self.more: dict[int, int] = {}
        #: Allowed verdicts forgotten unanswered, the oldest when ``limit`` awaited.
        self.forgotten = 0

    def __len__(self) -> int:
        return len(self.origins)

    def add(self, fp: str, origin: str) -> None:
        """An allowed verdict of ``fp`` for ``origin`` verified: one response of ``fp`` is proven."""
        key = hash(fp)
        if key in self.origins:
            self.more[key] = self.more.get(key, 0) + 1
            return
        self.origins[key] = origin
        if len(self.origins) > self.limit:
            oldest, _ = self.origins.popitem(last=False)
            self.forgotten += 1 + self.more.pop(oldest, 0)

    def take(self, fp: str) -> str | None:
        """The origin of an allowed verdict of ``fp`` a response uses up, or None when none awaits."""
        key = hash(fp)
        origin = self.origins.get(key)
        if origin is None:
            return None
        more = self.more.get(key)
        if more is None:
            del self.origins[key]
        elif more == 1:
            del self.more[key]
        else:
            self.more[key] = more - 1
        return origin


class Pending:
    """A run's responses without an allowed verdict in :class:`Awaiting` while some were forgotten:
    their verdict may be older than the window. Each is kept by its place in the run (segment and
    line) with the hash of its fingerprint, at most ``limit`` of them (:data:`PENDING`); after the
    run, the audit reads the run's segments again for these fingerprints only and settles each
    (:func:`.segment_check.settle`), so memory is bounded by ``limit``, not by the run's length."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = PENDING if limit is None else limit
        #: The hash of each pending response's fingerprint, by its place (:meth:`place`).
        self.places: dict[int, int] = {}
        #: The hashes of the pending fingerprints.
        self.fps: set[int] = set()

    def __len__(self) -> int:
        return len(self.places)

    @staticmethod
    def place(segment: int, line: int) -> int:
        """A record's place in its run, in the order of its records."""
        return segment << 32 | line

    def add(self, segment: int, line: int, fp: str) -> bool:
        """Keep the response at ``line`` of ``segment`` to settle; False when ``limit`` are kept already."""
        if len(self.places) >= self.limit:
            return False
        key = hash(fp)
        self.places[self.place(segment, line)] = key
        self.fps.add(key)
        return True


@dataclass
class RunContext:
    """What a run's records carry from one segment to the next."""

    #: Allowed verdicts that verified and await their response (the latest :data:`AWAITING`).
    awaiting: Awaiting = field(default_factory=Awaiting)
    #: Responses whose verdict may be older than :attr:`awaiting` holds, settled after the run.
    pending: Pending = field(default_factory=Pending)
    #: The version each (origin, document) was last settled on, from ``state`` records.
    in_force: dict[tuple[str, str], str | None] = field(default_factory=dict)
    #: Origins whose robots.txt was last settled unavailable without a version (no HTTP status: the
    #: request was refused by another component): everything allowed, no version to name.
    unversioned: set[str] = field(default_factory=set)
    #: The settings the run's verdicts depend on, from its first head (``cfg``, format 3); None for a run
    #: of format 2, whose verdicts are checked without them.
    settings: RunSettings | None = None
    #: Whether a head was read (the first one gives :attr:`settings`).
    headed: bool = False



def record_time(record: dict[str, Any]) -> float:
    """A record's ``t`` (0 when it has none)."""
    value = record.get("t")
    return float(value) if isinstance(value, (int, float)) else 0.0


class VerdictCheck:
    """The checks of one segment's verdict records; problems go to the segment (``problem``)."""

    def __init__(self, auditor: Evidence, context: RunContext, path: str,
                 problem: Callable[[int | None, str, str], None],
                 origin_report: Callable[[str], OriginReport]) -> None:
        self.auditor = auditor
        self.context = context
        self.path = path
        self.problem = problem
        self.origin_report = origin_report
        #: For the last ``usage_denied`` verdict, the categories of the run's ``deny`` its robots.txt denies.
        self.denied: tuple[str, ...] = ()

    def verdict(self, number: int, record: dict[str, Any], origin: str | None) -> bool:
        """Count the verdict for its origin and check it; False for a record that is no verdict
        (not counted). :attr:`denied` is then the categories of the run's ``deny`` the archived
        robots.txt denies, for a ``usage_denied`` verdict recomputed under the run's settings."""
        self.denied = ()
        d, url, agent, fp = record.get("d"), record.get("u"), record.get("a"), record.get("fp")
        if d not in VERDICTS or origin is None or not isinstance(url, str) \
                or not isinstance(fp, str) or not isinstance(agent, str):
            self.problem(number, CORRUPT, "a verdict without a known d, or without its o, u, a or fp")
            return False
        report = self.origin_report(origin)
        report.requests[d] += 1
        if d == "dropped":
            report.dropped[str(record.get("why"))] += 1
        self.check(number, record, origin, report, d, url, agent, fp)  # type: ignore[arg-type]
        return True

    def check(self, number: int, record: dict[str, Any], origin: str, report: OriginReport, d: str, url: str,
              agent: str, fp: str) -> None:
        """The checks of a verdict counted (docs/ledger-format.md, "What a checker does", 4)."""
        url_origin = origin_of(url)
        if url_origin is None or url_origin.base != origin:
            self.problem(number, MISMATCH, f"the URL {url!r} is not of the origin {origin!r}")
            return
        tdm = record.get("tv")
        tdm_info = None
        if tdm is not None:
            tdm_info = self.auditor.version(tdm, self.path, number, "tdmrep.json")
            report.used(str(tdm), record_time(record), tdm_info)
            tdm_in_force = self.context.in_force.get((origin, "tdmrep.json"), "no state")
            if tdm_in_force != tdm:
                self.problem(number, MISMATCH, f"judged with tdmrep.json version {tdm}, but the run's last state "
                             f"of the origin names {tdm_in_force}")
                return
        elif d == "tdm_reserved":
            self.problem(number, MISMATCH, "tdm_reserved without a tdmrep.json version")
            return
        settings = self.context.settings
        if settings is not None and not self.settings_allow(number, record, d, settings):
            return
        digest = record.get("ver")
        if digest is None:
            if d in ("allowed", "tdm_reserved") and origin in self.context.unversioned and record.get("r") is None:
                if d == "allowed":
                    self.context.awaiting.add(fp, origin)
            elif d in DECIDED:
                self.problem(number, MISMATCH, f"{d} without a robots.txt version (and the run's last state of "
                             "the origin is not unavailable without one)")
            return
        info = self.auditor.version(digest, self.path, number, "robots.txt")
        report.used(str(digest), record_time(record), info)
        if d not in DECIDED and d != "held":
            return  # a version named without deciding: nothing to recompute
        in_force = self.context.in_force.get((origin, "robots.txt"), "no state")
        if in_force != digest:
            self.problem(number, MISMATCH, f"judged with version {digest}, but the run's last state of the origin "
                         f"names {in_force}")
            return
        if info is None or d not in DECIDED:
            return
        if origin_of(info.requested_url) != url_origin:
            self.problem(number, MISMATCH, f"version {digest} is the robots.txt of {info.requested_url}")
            return
        if d == "tdm_reserved" and tdm_info is not None and not self.reserved(number, url, str(tdm), tdm_info):
            return
        if not self.recomputed(number, record, d, url, agent, digest, info):
            return
        if settings is not None and d != "disallowed" and not self.allowed_under(
                number, record, d, url, agent, digest, info, settings, tdm, tdm_info):
            return
        if d == "allowed":
            self.context.awaiting.add(fp, origin)

    def settings_allow(self, number: int, record: dict[str, Any], d: str, settings: RunSettings) -> bool:
        """Whether a verdict's kind and fields are possible under the run's settings."""
        if record.get("tv") is not None and "tdmrep.json" not in settings.read:
            self.problem(number, MISMATCH, f"{d} with a tdmrep.json version, but the run's head says it read no "
                         "tdmrep.json (ROBOTSTXT_TDMREP off)")
            return False
        if d == "tdm_reserved" and not settings.tdm:
            self.problem(number, MISMATCH, "tdm_reserved, but the run's head says TDM reservations were not enforced "
                         "(ROBOTSTXT_TDMREP off, or no category of ROBOTSTXT_USAGE_DENY a reservation denies)")
            return False
        if d == "usage_denied" and not settings.deny:
            self.problem(number, MISMATCH, "usage_denied, but the run's head denies no usage category "
                         "(ROBOTSTXT_USAGE_DENY empty)")
            return False
        return True

    def allowed_under(self, number: int, record: dict[str, Any], d: str, url: str, agent: str, digest: str,
                      info: VersionInfo, settings: RunSettings, tdm: object, tdm_info: VersionInfo | None) -> bool:
        """Whether a verdict the robots.txt allows (``allowed``, ``usage_denied``,
        ``tdm_reserved``) is what the run's settings give: each purpose token's group allows
        the URL too, and an ``allowed`` one is denied by no usage preference nor TDM
        reservation the run enforced."""
        if info.access == "unavailable":
            return True  # everything allowed, no usage preference
        robots = self.auditor.robots(digest, info)
        purposes = record.get("pt", list(settings.purpose))  # the request's own, when it had them
        if not strings(purposes):
            self.problem(number, CORRUPT, f"pt {purposes!r} is not a list of product tokens")
            return False
        for token in purposes:
            if token != agent and not robots.allowed(url, token):
                verdict = robots.verdict(url, token)
                self.problem(number, MISMATCH, f"{d}, but version {digest} disallows {url} for the purpose token "
                             f"{token!r} ({verdict.rule}) the run judged with")
                return False
        if d != "allowed":
            return True
        usage = robots.usage(url, agent) if settings.deny else None  # nothing to deny: not computed
        denied = [category for category in settings.deny
                  if usage is not None and usage.denies(category, settings.vocab)]
        if denied:
            self.problem(number, MISMATCH, f"allowed, but version {digest} denies {', '.join(denied)} for {url} "
                         f"({usage}), which the run's head says it denied (ROBOTSTXT_USAGE_DENY): usage_denied")
            return False
        if settings.tdm and tdm_info is not None and tdm_info.access != "unavailable":
            entry = self.auditor.tdmrep(str(tdm), tdm_info).entry_for(url)
            if entry is not None and entry.reserved:
                self.problem(number, MISMATCH, f"allowed, but tdmrep.json version {tdm} reserves TDM rights for {url} "
                             f"({entry}), which the run's head says it enforced: tdm_reserved")
                return False
        return True

    def reserved(self, number: int, url: str, digest: str, info: VersionInfo) -> bool:
        """Whether the tdmrep.json version reserves TDM rights for ``url`` (a ``tdm_reserved`` verdict)."""
        if info.access == "unavailable":
            entry = None
        else:
            entry = self.auditor.tdmrep(digest, info).entry_for(url)
        if entry is None or not entry.reserved:
            said = "no rule applies" if entry is None else str(entry)
            self.problem(number, MISMATCH, f"tdm_reserved, but tdmrep.json version {digest} does not reserve "
                         f"{url} ({said})")
            return False
        return True

    def recomputed(self, number: int, record: dict[str, Any], d: str, url: str, agent: str, digest: str,
                   info: VersionInfo) -> bool:
        """Whether the verdict and its rule are what the archived robots.txt gives."""
        if info.access == "unavailable":
            allowed, rule, usage = True, None, UsagePreference()
        else:
            robots = self.auditor.robots(digest, info)
            verdict = robots.verdict(url, agent)
            allowed = verdict.allowed
            rule = None if verdict.rule is None else [verdict.rule.directive, verdict.rule.pattern, verdict.rule.line]
            usage = robots.usage(url, agent) if "up" in record or d == "usage_denied" else UsagePreference()
        recorded = record.get("r")
        if isinstance(recorded, list) and len(recorded) == 3 and isinstance(recorded[0], str):
            recorded = [recorded[0].capitalize(), *recorded[1:]]
        said = "no rule" if rule is None else f"{rule[0]}: {rule[1]}, line {rule[2]}"
        if (d == "disallowed") == allowed:
            self.problem(number, MISMATCH, f"{d}, but version {digest} {'allows' if allowed else 'disallows'} "
                         f"{url} for {agent or '*'!r} ({said})")
            return False
        if recorded != rule:
            self.problem(number, MISMATCH, f"rule {record.get('r')!r}, but version {digest} decides by {said}")
            return False
        settings = self.context.settings
        if d == "usage_denied" and settings is not None:
            self.denied = tuple(category for category in settings.deny if usage.denies(category, settings.vocab))
        if d == "usage_denied" and (
                not any(usage.denies(category, settings.vocab) for category in settings.deny) if settings is not None
                else "n" not in {v for values in usage.values.values() for v in values.values()}):
            self.problem(number, MISMATCH, f"usage_denied, but version {digest} denies no usage "
                         f"{'the run denied ' if settings is not None else ''}for {url}")
            return False
        if "up" in record and record["up"] != str(usage):
            self.problem(number, MISMATCH, f"usage preference {record['up']!r}, but version {digest} gives "
                         f"{str(usage)!r}")
            return False
        return True
