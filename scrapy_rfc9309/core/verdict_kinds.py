"""The kinds of verdict and their words, in one table: for each kind of verdict and
reason (:attr:`~.verdict.Judgement.reason`), the stat it counts, its words in the close
summary, in its log line and in ``str(judgement)``, and its name in the ledger. Every
teller reads its words here, so that they cannot disagree.

Pure Python: no Scrapy, no I/O.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

__all__ = ["DECIDED", "DROPPED_SUMMARY", "DROP_REASONS", "LEDGER_VERDICTS", "ROWS", "Kind", "Row", "log_words",
           "reason_words", "row_of"]


class Kind(enum.Enum):
    """What becomes of a request. The values are the ledger's verdict names."""

    ALLOWED = "allowed"
    FORBIDDEN = "disallowed"  # robots.txt disallows it
    USAGE_DENIED = "usage_denied"  # robots.txt's Content-Usage / Content-Signal says n for an enforced category
    TDM_RESERVED = "tdm_reserved"  # tdmrep.json reserves TDM rights, and ROBOTSTXT_USAGE_DENY enforces it
    DROPPED = "dropped"  # nothing decides it, and waiting cannot help (``reason``)
    HELD = "held"  # a document it needs is unreachable: complete disallow until a retry succeeds
    REQUEUED = "requeued"  # still held when the spider closed; handed back to a scheduler that keeps it
    NOT_JUDGED = "not_judged"  # ``dont_obey_robotstxt``, or a URL that is not http(s)

    #: Members are singletons compared by identity: their identity hash, in C (Enum's own is a Python
    #: call), for the dicts keyed by kind that every verdict reads (the tellers', the table's).
    __hash__ = object.__hash__

    @property
    def passes(self) -> bool:
        """Whether the request goes on to the downloader (or back to the scheduler)."""
        return self in _PASSING

    @property
    def decided(self) -> bool:
        """Whether the document's rules decided it (its ledger record names the version and rule)."""
        return self in _DECIDED_KINDS

    @property
    def words(self) -> str:
        """The kind in words (``str(judgement)``, ``scrapy robotstxt URL``)."""
        return _WORDS[self]


_PASSING = frozenset({Kind.ALLOWED, Kind.HELD, Kind.REQUEUED, Kind.NOT_JUDGED})
_DECIDED_KINDS = frozenset({Kind.ALLOWED, Kind.FORBIDDEN, Kind.USAGE_DENIED, Kind.TDM_RESERVED})


class Row(NamedTuple):
    """The words of one kind of verdict for one reason.

    ``words``: the kind, in words; ``stat``: the stat it counts, after ``robotstxt/`` and
    its document's prefix (None: none; allowed verdicts are counted in the close summary
    only); ``summary``: its words in the close summary (a dropped one's: the reason's,
    listed after "N dropped for their <document>"; ``{document}`` is its document's name);
    ``log``: the words of its log line after the document and origin (``{detail}`` is the
    document's last fetch, ``{waited}`` the seconds it was unreachable; "" where the log
    line says it otherwise); ``ledger``: its ``d`` in the ledger (None: not recorded)."""

    words: str
    stat: str | None
    summary: str
    log: str
    ledger: str | None


#: The words of every kind of verdict, by kind and reason (None: a kind that has no reason).
ROWS: dict[tuple[Kind, str | None], Row] = {
    (Kind.ALLOWED, None): Row("allowed", None, "allowed", "", "allowed"),
    (Kind.FORBIDDEN, None): Row("disallowed", "forbidden", "disallowed by robots.txt", "", "disallowed"),
    (Kind.USAGE_DENIED, None): Row("usage denied", "usage_denied", "usage denied by robots.txt", "",
                                   "usage_denied"),
    (Kind.TDM_RESERVED, None): Row("reserved", "tdm_reserved", "TDM rights reserved by tdmrep.json", "",
                                   "tdm_reserved"),
    (Kind.HELD, None): Row("held", "held", "held for their {document}", "", "held"),
    (Kind.REQUEUED, "closing"): Row("requeued", "requeued_on_close", "requeued for their {document}",
                                    "unreachable for {waited:.0f} s ({detail}) when the spider closed", "requeued"),
    (Kind.REQUEUED, "idle"): Row("requeued", "requeued_on_close", "requeued for their {document}",
                                 "unreachable for {waited:.0f} s ({detail}), its requests held when nothing else "
                                 "was left to crawl (ROBOTSTXT_MAX_WAIT_IDLE)", "requeued"),
    (Kind.DROPPED, "max_wait"): Row("dropped", "dropped_unreachable", "held too long",
                                    "unreachable for {waited:g} s ({detail})", "dropped"),
    (Kind.DROPPED, "no_host"): Row("dropped", "dropped_no_host", "for a host name that does not resolve",
                                   "cannot be fetched: its host name does not resolve ({detail})", "dropped"),
    (Kind.DROPPED, "cannot_request"): Row("dropped", "dropped_cannot_request", "that Scrapy cannot make",
                                          "cannot be fetched: Scrapy cannot make the request ({detail})", "dropped"),
    (Kind.DROPPED, "closing"): Row("dropped", "held_released_on_close", "held when the spider closed",
                                   "unreachable for {waited:.0f} s ({detail}) when the spider closed", "dropped"),
    (Kind.DROPPED, "idle"): Row("dropped", "dropped_idle", "held when nothing else was left to crawl",
                                "unreachable for {waited:.0f} s ({detail}), its requests held when nothing else "
                                "was left to crawl (ROBOTSTXT_MAX_WAIT_IDLE)", "dropped"),
    (Kind.DROPPED, "invalid_meta"): Row("dropped", "invalid_meta",
                                        "with an invalid robotstxt_user_agent meta key", "", "dropped"),
    (Kind.NOT_JUDGED, "dont_obey_robotstxt"): Row("not judged", None, "not judged (dont_obey_robotstxt)", "",
                                                  "not_judged"),
    # Released, counted and sent with robotstxt_verdict; the ledger records http(s) requests only.
    (Kind.NOT_JUDGED, "not_http"): Row("not judged", None, "not judged (not http(s))", "", None),
}

#: The log words of a request given up at close or at idle whose document was never known.
NOT_KNOWN_AT_CLOSE = "was not known when the spider closed"

#: Why a request is dropped (``Judgement.reason`` of a ``DROPPED`` one), in words.
DROP_REASONS = {reason: row.summary for (kind, reason), row in ROWS.items() if kind is Kind.DROPPED and reason}
#: The ledger's names of the verdicts the document's rules decided (their record names version and rule).
DECIDED = frozenset(kind.value for kind in Kind if kind.decided)
#: The ledger's names of every verdict it records.
LEDGER_VERDICTS = frozenset(row.ledger for row in ROWS.values() if row.ledger is not None)
#: The close summary's words of the requests dropped for a document, after their count.
DROPPED_SUMMARY = "dropped for their {document} ({reasons})"
#: Each kind's first row: the row of a reason the table does not list (a dropped one's is ``max_wait``'s).
_FIRST: dict[Kind, Row] = {}
for (_kind, _reason), _row in ROWS.items():
    _FIRST.setdefault(_kind, _row)
_WORDS = {kind: row.words for kind, row in _FIRST.items()}


def row_of(kind: Kind, reason: str | None) -> Row:
    """The row of ``kind`` for ``reason`` (the kind's first row for a reason the table does not list)."""
    return ROWS.get((kind, reason)) or _FIRST[kind]


def reason_words(reason: str | None) -> str:
    """The words of a drop reason (a key of :data:`DROP_REASONS`; another is its own words)."""
    return DROP_REASONS.get(reason or "", reason or "")


def log_words(kind: Kind, reason: str | None, detail: str, waited: float) -> str:
    """The words of the log line of a dropped or requeued request, after its document and origin."""
    if reason in ("closing", "idle") and not detail:
        return NOT_KNOWN_AT_CLOSE
    return row_of(kind, reason).log.format(detail=detail, waited=waited)
