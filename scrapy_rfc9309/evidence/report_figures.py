"""The figures of ``scrapy robotstxt report``: what a ledger says, per run and per host, gathered
as the audit reads it (an :class:`~.observer.Observer`: one pass, one reader of the files).

Every aggregate is bounded whatever the ledger's size: the hosts listed one by one
(:data:`MAX_HOSTS`, those with the most verdicts, found by a first pass over the segments that
counts at most :data:`MAX_COUNTED` hosts; the rest folded into one "other hosts" entry that says
how many), the time
buckets of a chart (:data:`BUCKETS`, their width doubled as the ledger's time span grows), the
distinct rules, reasons and statements counted per host (later ones counted together as
"other"), the document events listed, each site-controlled text cut at :data:`MAX_TEXT`
characters. :func:`report_figures` turns them and the audit's findings into the report's JSON
form, which the HTML page (:mod:`.report_html`) renders. Pure Python.
"""

from __future__ import annotations

import json
import math
import os
import re
import zlib
from collections import Counter, deque
from collections.abc import Callable, Sequence
from typing import Any

from ..core.caches import BoundedDict
from .audit import audit
from .audit_result import DECIDED, VERDICTS, Audit
from .files import lines, listing
from .format import RUNS_DIR, SEGMENT_RE
from .observer import Observer, Versions
from .segment_check import origin_base
from .verdict_check import record_time

__all__ = ["BUCKETS", "MAX_COUNTED", "MAX_HOSTS", "MAX_TEXT", "REPORT_FORMAT", "Figures", "HostFigures", "Tally",
           "Timeline", "busiest_hosts", "report_figures"]

#: The version of the report's JSON form (``"report"``).
REPORT_FORMAT = 1
#: Hosts reported one by one, those with the most verdicts; the records of the others are counted together.
MAX_HOSTS = 200
#: Hosts whose verdicts the first pass (:func:`busiest_hosts`) counts at once at most: exact counts
#: for a ledger of as many hosts or fewer, a Misra-Gries summary beyond.
MAX_COUNTED = 4096
#: Time buckets of a chart at most.
BUCKETS = 48
#: Distinct keys a host's tally counts (rules, reasons, statements); later keys are counted as other.
MAX_KEYS = 256
#: Rules, reasons and statements listed per host (the most frequent).
TOP = 10
#: Document events (state records) listed per host: the first and the last half of them.
MAX_EVENTS = 40
#: Crawl-delays listed per host (one per version and agent).
MAX_DELAYS = 16
#: Runs listed (the first ones); problems listed.
MAX_RUNS = 200
MAX_PROBLEMS_LISTED = 50
#: A site-controlled text (a rule's pattern, a URL, a statement, a reason) is cut at this many characters.
MAX_TEXT = 300
#: Records between two progress calls.
PROGRESS_EVERY = 50_000
#: Origins whose last unreachable document's error is remembered (the reason of a held verdict).
_UNREACHABLE_MEMORY = 4096
#: A verdict record, and its origin's JSON string (keys may come in any order; inside a JSON string a
#: quote is escaped, so neither matches a value's text).
_VERDICT = re.compile(rb'"k"\s*:\s*"verdict"')
_ORIGIN = re.compile(rb'"o"\s*:\s*"((?:[^"\\]|\\.)*)"')


def busiest_hosts(directories: Sequence[str | os.PathLike[str]], count: int = MAX_HOSTS,
                  counted: int = MAX_COUNTED) -> list[str]:
    """The ``count`` hosts with the most verdicts in the segments of ``directories`` (the most
    first, ties by name), by a quick pass over their lines that finds each verdict's ``o``
    without parsing the record (what is verified is the audit's, later).

    At most ``counted`` hosts are counted at once (Misra-Gries): when a host not counted comes
    and ``counted`` are, every count drops by one and those at zero are forgotten. The counts are
    exact for a ledger of at most ``counted`` hosts; beyond, a host with more than one verdict in
    ``counted + 1`` is sure to be kept. Files that cannot be read are left to the audit to report."""
    counts: dict[bytes, int] = {}
    for directory in (os.fspath(item) for item in directories):
        chosen: dict[tuple[str, int], tuple[str, bool]] = {}
        for name in listing(directory)[0]:
            match = SEGMENT_RE.match(name)
            if match is not None and (not chosen.get((match["run"], int(match["seg"])), ("", False))[1]):
                chosen[(match["run"], int(match["seg"]))] = (os.path.join(directory, RUNS_DIR, name), bool(match["gz"]))
        for path, closed in chosen.values():
            try:
                for line in lines(path, closed):
                    if b'"verdict"' not in line or _VERDICT.search(line) is None:
                        continue
                    found = _ORIGIN.search(line)
                    if found is None:
                        continue
                    key = found[1]
                    if key in counts:
                        counts[key] += 1
                    elif len(counts) < counted:
                        counts[key] = 1
                    else:
                        for other in list(counts):
                            if counts[other] == 1:
                                del counts[other]
                            else:
                                counts[other] -= 1
            except (OSError, EOFError, zlib.error):
                continue
    hosts: Counter[str] = Counter()
    for key, number in counts.items():
        try:
            text = json.loads(b'"' + key + b'"')
        except ValueError:
            continue
        host = origin_base(text)
        if host is not None:
            hosts[host] += number
    return [host for host, _ in sorted(hosts.items(), key=lambda item: (-item[1], item[0]))[:count]]


def cut(value: object) -> str:
    """``value`` as text, cut at :data:`MAX_TEXT` characters (``...`` added)."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."


class Tally:
    """Counts of at most ``limit`` distinct keys; a key first met when ``limit`` are counted
    is counted in :attr:`other`."""

    def __init__(self, limit: int = MAX_KEYS) -> None:
        self.limit = limit
        self.counts: Counter[Any] = Counter()
        self.other = 0

    def add(self, key: Any) -> None:
        if key in self.counts or len(self.counts) < self.limit:
            self.counts[key] += 1
        else:
            self.other += 1

    def top(self, count: int = TOP) -> list[tuple[Any, int]]:
        """The ``count`` most frequent keys (ties in the order first met) with their counts."""
        return self.counts.most_common(count)

    def as_dict(self, count: int = TOP) -> dict[str, Any]:
        listed = self.top(count)
        return {"top": [[key, number] for key, number in listed],
                "not_listed": sum(self.counts.values()) - sum(number for _, number in listed) + self.other}


class Timeline:
    """Counts by kind in at most ``buckets`` consecutive time buckets: each bucket ``width``
    seconds (a power of two), aligned on multiples of it; when the records' span needs more
    buckets, the width doubles and pairs of buckets merge."""

    def __init__(self, buckets: int = BUCKETS) -> None:
        self.buckets = buckets
        self.width = 1.0
        self.counts: dict[int, Counter[str]] = {}
        self.low: int | None = None
        self.high: int | None = None

    def add(self, when: float, kind: str) -> None:
        key = math.floor(when / self.width)
        if self.low is None or self.high is None:
            self.low = self.high = key
        else:
            self.low, self.high = min(self.low, key), max(self.high, key)
        bucket = self.counts.get(key)
        if bucket is None:
            bucket = self.counts[key] = Counter()
        bucket[kind] += 1
        while self.high - self.low + 1 > self.buckets:
            self._coarsen()

    def _coarsen(self) -> None:
        assert self.low is not None and self.high is not None
        self.width *= 2
        merged: dict[int, Counter[str]] = {}
        for key, counts in self.counts.items():
            bucket = merged.get(key // 2)
            if bucket is None:
                merged[key // 2] = counts
            else:
                bucket.update(counts)
        self.counts = merged
        self.low, self.high = self.low // 2, self.high // 2

    def as_dict(self) -> dict[str, Any]:
        """``start`` of the first bucket (Unix seconds), ``width``, and each bucket's counts by kind."""
        if self.low is None or self.high is None:
            return {"start": None, "width": self.width, "buckets": []}
        return {"start": self.low * self.width, "width": self.width,
                "buckets": [dict(sorted(self.counts.get(key, Counter()).items()))
                            for key in range(self.low, self.high + 1)]}


class HostFigures:
    """One host's figures (or those of the hosts folded together)."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.verdicts: Counter[str] = Counter()
        self.responses: Counter[str] = Counter()
        self.statuses = Tally(64)
        self.timeline = Timeline()
        #: Disallowed verdicts by (agent, directive, pattern, line).
        self.rules = Tally()
        self.dropped = Tally()
        self.held = Tally()
        #: usage_denied verdicts by the categories denied; the statements of the usage preferences applied.
        self.denied: Counter[str] = Counter()
        self.statements = Tally()
        self.tdm_rules = Tally()
        #: State records: the first ones, the last ones, how many.
        self.first_events: list[dict[str, Any]] = []
        self.last_events: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS // 2)
        self.events = 0
        self.access: Counter[str] = Counter()
        #: (version, agent, the run's pacing) -> the Crawl-delay that version gives that agent.
        self.delays: dict[tuple[str, str, Pacing], float | None] = {}

    def state(self, record: dict[str, Any]) -> None:
        event = {"t": record_time(record), "doc": cut(record.get("doc")), "src": cut(record.get("src")),
                 "access": cut(record.get("access")), "status": record.get("status")
                 if isinstance(record.get("status"), int) else None,
                 "version": cut(record["ver"]) if isinstance(record.get("ver"), str) else None,
                 "error": cut(record["err"]) if record.get("err") is not None else None,
                 "changed": "was" in record}
        self.events += 1
        self.access[f"{event['doc']} {event['access']}"] += 1
        if len(self.first_events) < MAX_EVENTS // 2:
            self.first_events.append(event)
        else:
            self.last_events.append(event)

    def verdict(self, record: dict[str, Any], d: str, denied: tuple[str, ...], held_reason: str) -> None:
        self.verdicts[d] += 1
        self.timeline.add(record_time(record), d)
        if d == "disallowed":
            rule = record.get("r")
            if isinstance(rule, list) and len(rule) == 3:
                self.rules.add((cut(record.get("a", "")), cut(rule[0]), cut(rule[1]), rule[2]
                                if isinstance(rule[2], int) else None))
            else:
                self.rules.add((cut(record.get("a", "")), "", "(no rule)", None))
        elif d == "dropped":
            self.dropped.add(cut(record.get("why")))
        elif d == "held":
            self.held.add(held_reason)
        elif d == "usage_denied":
            for category in denied or ("(not recomputed: the run's head records no settings)",):
                self.denied[category] += 1
        elif d == "tdm_reserved":
            self.tdm_rules.add(cut(record.get("tr")))
        if "up" in record:
            self.statements.add(cut(record["up"]))

    def response(self, record: dict[str, Any]) -> None:
        d = cut(record.get("d"))
        self.responses[d] += 1
        status = record.get("s")
        self.statuses.add(status if isinstance(status, int) else cut(status))

    def delay(self, versions: Versions | None, digest: str, agent: str, pacing: Pacing) -> None:
        """Remember the Crawl-delay ``digest`` gives ``agent`` (a version parsed by the audit),
        under the run's ``pacing``."""
        key = (digest, agent, pacing)
        if key in self.delays or len(self.delays) >= MAX_DELAYS or versions is None:
            return
        info = versions.versions.get(digest)
        if info is None or not info.ok or info.access != "parsed" or info.document != "robots.txt":
            return
        self.delays[key] = versions.robots(digest, info).crawl_delay(agent)

    def as_dict(self, audit_result: Audit, read: set[str]) -> dict[str, Any]:
        origin = audit_result.origins.get(self.host)
        versions = [] if origin is None else [
            {"digest": use.digest, "document": use.document, "status": use.status, "access": use.access,
             "first": use.first, "last": use.last}
            for use in sorted(origin.versions.values(), key=lambda use: use.first)]
        robots = [version for version in versions if version["document"] == "robots.txt"]
        tdmrep = [version for version in versions if version["document"] == "tdmrep.json"]
        v = self.verdicts
        return {
            "host": self.host,
            "verdicts": {kind: v[kind] for kind in sorted(VERDICTS)},
            "responses": {"received": sum(self.responses.values()), **dict(sorted(self.responses.items()))},
            "statuses": self.statuses.as_dict(TOP),
            "documents": {"versions": versions, "events": [*self.first_events, *self.last_events],
                          "events_total": self.events},
            "protocols": [
                {"protocol": "robots.txt", "versions": len(robots), "states": dict(sorted(
                    (key.split(" ", 1)[1], n) for key, n in self.access.items() if key.startswith("robots.txt "))),
                 "said": {"allowed": sum(v[kind] for kind in DECIDED if kind != "disallowed"),
                          "disallowed": v["disallowed"]}},
                {"protocol": "Content-Usage / Content-Signal (robots.txt)", "read": "robots.txt" in read,
                 "said": {"usage_denied": v["usage_denied"]}, "statements": self.statements.as_dict()},
                {"protocol": "tdmrep.json", "read": "tdmrep.json" in read, "versions": len(tdmrep),
                 "states": dict(sorted((key.split(" ", 1)[1], n) for key, n in self.access.items()
                                       if key.startswith("tdmrep.json "))),
                 "said": {"tdm_reserved": v["tdm_reserved"]}, "rules": self.tdm_rules.as_dict()},
                {"protocol": "response headers and meta tags", "read": bool(read & {"headers", "meta"}),
                 "said": {"usage_denied": self.responses["usage_denied"]}},
            ],
            "timeline": self.timeline.as_dict(),
            "rules": {**self.rules.as_dict(),
                      "top": [{"agent": key[0], "directive": key[1], "pattern": key[2], "line": key[3],
                               "count": count} for key, count in self.rules.top()]},
            "usage": {"denied": dict(self.denied.most_common()), "tdm_reserved": v["tdm_reserved"],
                      "responses_denied": self.responses["usage_denied"]},
            "crawl_delay": [{"version": digest, "agent": agent, "delay": delay, "obeyed": obeyed, "cap": cap,
                             "applied": applied_delay(delay, obeyed, cap)}
                            for (digest, agent, (obeyed, cap)), delay in self.delays.items()],
            "held": {"count": v["held"], "reasons": self.held.as_dict()},
            "dropped": {"count": v["dropped"], "reasons": self.dropped.as_dict()},
        }


class Figures(Observer):
    """The report's figures, gathered from the records the audit reads. ``progress`` is called
    with (records read, segments started, segments in all) every :data:`PROGRESS_EVERY` records
    and at each segment."""

    def __init__(self, max_hosts: int = MAX_HOSTS,
                 progress: Callable[[int, int, int], None] | None = None, chosen: Sequence[str] | None = None) -> None:
        self.max_hosts = max_hosts
        self.progress = progress
        #: The hosts listed one by one (:func:`busiest_hosts`); None: the first ``max_hosts`` met.
        self.chosen = None if chosen is None else frozenset(chosen)
        self.hosts: dict[str, HostFigures] = {}
        self.other = HostFigures("other hosts")
        self.timeline = Timeline()
        self.verdicts: Counter[str] = Counter()
        self.responses: Counter[str] = Counter()
        #: The first head of each run listed: run -> its fields.
        self.heads: dict[str, dict[str, Any]] = {}
        self.agent = ""
        #: The Crawl-delay setting of the run whose records are read.
        self.pacing: Pacing = (None, None)
        self.read: set[str] = set()
        self.records = 0
        self.segments = 0
        self.total_segments = 0
        self.versions: Versions | None = None
        self.unreachable: BoundedDict[tuple[str, str], str] = BoundedDict(_UNREACHABLE_MEMORY)

    def started(self, versions: Versions, segments: int) -> None:
        self.versions, self.total_segments = versions, segments

    def segment(self, run: str, number: int) -> None:
        self.segments += 1
        if self.progress is not None:
            self.progress(self.records, self.segments, self.total_segments)

    def host(self, origin: str) -> HostFigures:
        figures = self.hosts.get(origin)
        if figures is None:
            if len(self.hosts) >= self.max_hosts or (self.chosen is not None and origin not in self.chosen):
                return self.other
            figures = self.hosts[origin] = HostFigures(origin)
        return figures

    def record(self, kind: str, record: dict[str, Any], origin: str | None, denied: tuple[str, ...]) -> None:
        self.records += 1
        if self.progress is not None and not self.records % PROGRESS_EVERY:
            self.progress(self.records, self.segments, self.total_segments)
        if kind == "head":
            self.head(record)
        elif origin is None:
            return
        elif kind == "verdict":
            d = str(record.get("d"))
            self.verdicts[d] += 1
            self.timeline.add(record_time(record), d)
            host = self.host(origin)
            reason = "unknown"
            if d == "held":
                reason = next((f"{doc} unreachable: {self.unreachable[(origin, doc)]}"
                               for doc in ("robots.txt", "tdmrep.json") if (origin, doc) in self.unreachable),
                              "unknown (no unreachable state recorded)")
            host.verdict(record, d, denied, reason)
            digest = record.get("ver")
            if isinstance(digest, str) and d in DECIDED:
                host.delay(self.versions, digest, self.agent, self.pacing)
        elif kind == "state":
            self.host(origin).state(record)
            key = (origin, str(record.get("doc")))
            if record.get("access") == "unreachable":
                self.unreachable[key] = cut(record.get("err"))
            else:
                self.unreachable.pop(key, None)
        elif kind == "response":
            self.responses[cut(record.get("d"))] += 1
            self.host(origin).response(record)

    def head(self, record: dict[str, Any]) -> None:
        run = cut(record.get("run"))
        self.agent = cut(record.get("agent", ""))
        settings = record.get("cfg")
        self.pacing = pacing(settings)
        if isinstance(settings, dict) and isinstance(settings.get("read"), list):
            self.read.update(cut(source) for source in settings["read"])
        elif settings is None:
            self.read.update(("robots.txt", "headers", "meta", "tdmrep.json"))  # format 2: not recorded
        if run in self.heads or record.get("seg") != 1:
            return
        if len(self.heads) < MAX_RUNS:
            self.heads[run] = {"format": record.get("v"), "package": cut(record.get("pkg")), "agent": self.agent,
                               "responses": cut(record.get("resp", "all")),
                               "settings": _settings(settings)}

    def as_dict(self, result: Audit, allow_unsealed: bool = False, generated: float | None = None) -> dict[str, Any]:
        """The report's JSON form (docs/report.md)."""
        status = result.exit_status(allow_unsealed)
        listed = sorted(self.hosts.values(), key=lambda host: (-sum(host.verdicts.values()), host.host))
        folded = len(set(result.origins) - set(self.hosts))
        runs = [{"run": run.run, "directory": run.directory, "segments": run.segments, "records": run.records,
                 "ending": run.ending, **self.heads.get(run.run, {})} for run in result.runs[:MAX_RUNS]]
        return {
            "report": REPORT_FORMAT,
            "generated": generated,
            "directories": result.directories,
            "audit": {"ok": status == 0, "exit": status, "allow_unsealed": allow_unsealed,
                      "problem_count": dict(sorted(result.kinds.items())),
                      "problems": [{"file": p.file, "line": p.line, "kind": p.kind, "message": cut(p.message)}
                                   for p in result.problems[:MAX_PROBLEMS_LISTED]],
                      "heads": result.heads,
                      "anchors": [{"hash": anchor, "found": where} for anchor, where in result.anchors.items()]},
            "enforced": _enforced([run.get("settings") for run in runs]),
            "runs": runs,
            "runs_not_listed": max(0, len(result.runs) - MAX_RUNS),
            "totals": {"records": self.records, "versions": result.versions, "hosts": len(result.origins),
                       "verdicts": {kind: self.verdicts[kind] for kind in sorted(VERDICTS)},
                       "responses": {"received": sum(self.responses.values()), **dict(sorted(self.responses.items()))}},
            "timeline": self.timeline.as_dict(),
            "hosts": [host.as_dict(result, self.read) for host in listed],
            "other_hosts": None if not folded else {"count": folded,
                                                    **self.other.as_dict(result, self.read)},
            "limits": {"hosts": self.max_hosts, "counted": MAX_COUNTED, "buckets": BUCKETS, "keys": MAX_KEYS,
                       "top": TOP, "events": MAX_EVENTS, "text": MAX_TEXT, "runs": MAX_RUNS},
        }


#: A run's Crawl-delay setting: whether it was obeyed and its cap (``ROBOTSTXT_CRAWL_DELAY`` and
#: ``ROBOTSTXT_CRAWL_DELAY_MAX``), None where the run's head does not record it.
Pacing = tuple[bool | None, float | None]


def pacing(settings: object) -> Pacing:
    """The Crawl-delay setting a head's ``cfg`` records."""
    if not isinstance(settings, dict):
        return None, None
    obeyed, cap = settings.get("crawl_delay"), settings.get("crawl_delay_max")
    return (obeyed if isinstance(obeyed, bool) else None,
            float(cap) if isinstance(cap, (int, float)) and not isinstance(cap, bool) and cap >= 0 else None)


def applied_delay(delay: float | None, obeyed: bool | None, cap: float | None) -> float | None:
    """The Crawl-delay the crawl applied to the origin's download slot: the stated one capped at
    ``ROBOTSTXT_CRAWL_DELAY_MAX`` when obeyed (the slot's delay was raised to at least it); 0 when
    not obeyed or none is stated; None when the run does not record its setting."""
    if obeyed is False or (obeyed is True and not delay):
        return 0.0
    if obeyed is None or cap is None:
        return None
    return min(float(delay or 0.0), cap)


def _settings(value: object) -> dict[str, Any] | None:
    """A head's ``cfg`` as the report shows it (texts cut, lists at 32 items), or None (format 2)."""
    if not isinstance(value, dict):
        return None
    shown: dict[str, Any] = {}
    for key, item in list(value.items())[:16]:
        if isinstance(item, list):
            item = [cut(element) for element in item[:32]]
        elif not isinstance(item, (bool, int, float)) and item is not None:
            item = cut(item)
        shown[cut(key)] = item
    return shown


def _enforced(settings: Sequence[dict[str, Any] | None]) -> dict[str, Any]:
    """What the runs enforced: their settings when they agree, else each run's (in :func:`Figures.as_dict`'s runs)."""
    distinct = []
    for item in settings:
        if item not in distinct:
            distinct.append(item)
    if len(distinct) == 1:
        return {"same_in_every_run": True, "settings": distinct[0]}
    return {"same_in_every_run": False, "settings": None}


def report_figures(directories: Sequence[str | os.PathLike[str]], anchors: Sequence[str] = (),
                   allow_unsealed: bool = False, progress: Callable[[int, int, int], None] | None = None,
                   max_hosts: int = MAX_HOSTS, generated: float | None = None) -> tuple[Audit, dict[str, Any]]:
    """Audit the ledger directories and gather the report's figures in the same pass; the
    audit's findings and the report's JSON form. Raises :class:`~.audit_result.LedgerError` as
    :func:`~.audit.audit` does."""
    chosen = busiest_hosts(directories, max_hosts) if directories else None
    figures = Figures(max_hosts, progress, chosen)
    result = audit(directories, anchors, figures)
    if progress is not None:
        progress(figures.records, figures.segments, figures.total_segments)
    return result, figures.as_dict(result, allow_unsealed, generated)

