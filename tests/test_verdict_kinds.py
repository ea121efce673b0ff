"""The words of every kind of verdict, pinned: the stat it counts, its log line, its
words in the close summary and in ``str(judgement)`` (what ``scrapy robotstxt URL``
prints), and the ledger's ``d`` and ``why``. They all come from one table,
:data:`scrapy_rfc9309.core.verdict_kinds.ROWS`; these are the exact strings users see
and filter on, written from the code before the table existed."""

# ruff: noqa: E501  (the pinned log lines are kept whole, as they are logged)
from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy import Request
from scrapy.utils.test import get_crawler
from test_judgement import TDM, TDMREP_URL, parsed, run

from scrapy_rfc9309.components.wiring import VerdictParts
from scrapy_rfc9309.config import Config
from scrapy_rfc9309.core.documents import ROBOTS_TXT, TDMREP
from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.core.verdict import Judgement, Kind, invalid_meta, not_judged

URL = "https://example.com/p"
ORIGIN = Origin("https", "example.com", 443)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _told(judgement: Judgement) -> tuple[dict[str, Any], list[str], str | None, str]:
    """What acting on ``judgement`` tells: the stats, the log lines, the exception raised
    (its class name), and the close summary's line of verdicts."""
    crawler = get_crawler(settings_dict={"ROBOTSTXT_OBEY": True})
    parts = VerdictParts(crawler, Config.from_settings(crawler.settings))
    lines = _Lines()
    logger = logging.getLogger("scrapy_rfc9309")
    level = logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    try:
        if judgement.kind is Kind.HELD:  # not final: told and counted as the request waits
            parts.actions.hold(Request(judgement.url), ORIGIN, judgement)
        else:
            parts.actions.act(Request(judgement.url), ORIGIN, judgement)
        raised = None
    except Exception as exc:
        raised = type(exc).__name__
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)
    assert crawler.stats is not None
    # Scrapy's log counter (log_count/LEVEL, counted into the crawler's stats on some versions) is not ours.
    stats = {key: value for key, value in crawler.stats.get_stats().items() if not key.startswith("log_count/")}
    return stats, lines.lines, raised, parts.close_summary.verdicts()


#: (kind, reason, detail, stat, log line, close summary) of a request waiting for its robots.txt.
WAITED = [
    ('HELD', None, '', 'robotstxt/held',
     'Holding <GET https://example.com/p>: robots.txt of https://example.com is unreachable ()',
     '0 allowed, 1 held for their robots.txt'),
    ('REQUEUED', 'closing', '', 'robotstxt/requeued_on_close',
     'Put back in the scheduler: <GET https://example.com/p> (robots.txt of https://example.com was not known when the spider closed)',
     '0 allowed, 1 requeued for their robots.txt'),
    ('REQUEUED', 'idle', '', 'robotstxt/requeued_on_close',
     'Put back in the scheduler: <GET https://example.com/p> (robots.txt of https://example.com was not known when the spider closed)',
     '0 allowed, 1 requeued for their robots.txt'),
    ('DROPPED', 'max_wait', '', 'robotstxt/dropped_unreachable',
     'Dropped: robots.txt of https://example.com unreachable for 12.4 s (): <GET https://example.com/p>',
     '0 allowed, 1 dropped for their robots.txt (1 held too long)'),
    ('DROPPED', 'no_host', '', 'robotstxt/dropped_no_host',
     'Dropped: robots.txt of https://example.com cannot be fetched: its host name does not resolve (): <GET https://example.com/p>',
     '0 allowed, 1 dropped for their robots.txt (1 for a host name that does not resolve)'),
    ('DROPPED', 'cannot_request', '', 'robotstxt/dropped_cannot_request',
     'Dropped: robots.txt of https://example.com cannot be fetched: Scrapy cannot make the request (): <GET https://example.com/p>',
     '0 allowed, 1 dropped for their robots.txt (1 that Scrapy cannot make)'),
    ('DROPPED', 'closing', '', 'robotstxt/held_released_on_close',
     'Dropped: robots.txt of https://example.com was not known when the spider closed: <GET https://example.com/p>',
     '0 allowed, 1 dropped for their robots.txt (1 held when the spider closed)'),
    ('DROPPED', 'idle', '', 'robotstxt/dropped_idle',
     'Dropped: robots.txt of https://example.com was not known when the spider closed: <GET https://example.com/p>',
     '0 allowed, 1 dropped for their robots.txt (1 held when nothing else was left to crawl)'),
    ('HELD', None, 'HTTP 503', 'robotstxt/held',
     'Holding <GET https://example.com/p>: robots.txt of https://example.com is unreachable (HTTP 503)',
     '0 allowed, 1 held for their robots.txt'),
    ('REQUEUED', 'closing', 'HTTP 503', 'robotstxt/requeued_on_close',
     'Put back in the scheduler: <GET https://example.com/p> (robots.txt of https://example.com unreachable for 12 s (HTTP 503) when the spider closed)',
     '0 allowed, 1 requeued for their robots.txt'),
    ('REQUEUED', 'idle', 'HTTP 503', 'robotstxt/requeued_on_close',
     'Put back in the scheduler: <GET https://example.com/p> (robots.txt of https://example.com unreachable for 12 s (HTTP 503), its requests held when nothing else was left to crawl (ROBOTSTXT_MAX_WAIT_IDLE))',
     '0 allowed, 1 requeued for their robots.txt'),
    ('DROPPED', 'max_wait', 'HTTP 503', 'robotstxt/dropped_unreachable',
     'Dropped: robots.txt of https://example.com unreachable for 12.4 s (HTTP 503): <GET https://example.com/p>',
     '0 allowed, 1 dropped for their robots.txt (1 held too long)'),
    ('DROPPED', 'no_host', 'HTTP 503', 'robotstxt/dropped_no_host',
     'Dropped: robots.txt of https://example.com cannot be fetched: its host name does not resolve (HTTP 503): <GET https://example.com/p>',
     '0 allowed, 1 dropped for their robots.txt (1 for a host name that does not resolve)'),
    ('DROPPED', 'cannot_request', 'HTTP 503', 'robotstxt/dropped_cannot_request',
     'Dropped: robots.txt of https://example.com cannot be fetched: Scrapy cannot make the request (HTTP 503): <GET https://example.com/p>',
     '0 allowed, 1 dropped for their robots.txt (1 that Scrapy cannot make)'),
    ('DROPPED', 'closing', 'HTTP 503', 'robotstxt/held_released_on_close',
     'Dropped: robots.txt of https://example.com unreachable for 12 s (HTTP 503) when the spider closed: <GET https://example.com/p>',
     '0 allowed, 1 dropped for their robots.txt (1 held when the spider closed)'),
    ('DROPPED', 'idle', 'HTTP 503', 'robotstxt/dropped_idle',
     'Dropped: robots.txt of https://example.com unreachable for 12 s (HTTP 503), its requests held when nothing else was left to crawl (ROBOTSTXT_MAX_WAIT_IDLE): <GET https://example.com/p>',
     '0 allowed, 1 dropped for their robots.txt (1 held when nothing else was left to crawl)'),
]


@pytest.mark.parametrize(("kind", "reason", "detail", "stat", "line", "summary"), WAITED)
@pytest.mark.parametrize("document", [ROBOTS_TXT, TDMREP], ids=["robots", "tdmrep"])
def test_the_words_of_a_request_that_waited(document, kind, reason, detail, stat, line, summary):
    judgement = Judgement(Kind[kind], URL, "bot", document=document, reason=reason, detail=detail, waited=12.4)
    stats, lines, raised, told = _told(judgement)
    if document is TDMREP:  # the same words, of the other document
        stat = stat.replace("robotstxt/", "robotstxt/tdmrep/")
        line = line.replace("robots.txt of", "tdmrep.json of")
        summary = summary.replace("robots.txt", "tdmrep.json")
    assert stats == {stat: 1}
    assert lines == [line]
    assert told == summary
    assert raised == ("RobotsTxtUnreachable" if kind == "DROPPED" else None)


#: str(judgement) of a request that waited for its robots.txt, by (kind, reason, detail).
WORDS = {
    ("HELD", None, ""): "held (robots.txt unreachable (): complete disallow until a fetch succeeds)",
    ("HELD", None, "HTTP 503"): "held (robots.txt unreachable (HTTP 503): complete disallow until a fetch succeeds)",
    ("REQUEUED", "closing", ""):
        "requeued (robots.txt not known when the spider closed: handed back to the scheduler)",
    ("REQUEUED", "idle", ""): "requeued (robots.txt not known when the spider closed: handed back to the scheduler)",
    ("REQUEUED", "closing", "HTTP 503"):
        "requeued (robots.txt unreachable (HTTP 503), held when the spider closed: handed back to the scheduler)",
    ("REQUEUED", "idle", "HTTP 503"):
        "requeued (robots.txt unreachable (HTTP 503), held when nothing else was left to crawl: handed back to the "
        "scheduler)",
    ("DROPPED", "max_wait", ""): "dropped (robots.txt: held too long)",
    ("DROPPED", "no_host", ""): "dropped (robots.txt: for a host name that does not resolve)",
    ("DROPPED", "cannot_request", ""): "dropped (robots.txt: that Scrapy cannot make)",
    ("DROPPED", "closing", ""): "dropped (robots.txt: held when the spider closed)",
    ("DROPPED", "idle", ""): "dropped (robots.txt: held when nothing else was left to crawl)",
    ("DROPPED", "max_wait", "HTTP 503"): "dropped (robots.txt: held too long (HTTP 503))",
    ("DROPPED", "no_host", "HTTP 503"): "dropped (robots.txt: for a host name that does not resolve (HTTP 503))",
    ("DROPPED", "cannot_request", "HTTP 503"): "dropped (robots.txt: that Scrapy cannot make (HTTP 503))",
    ("DROPPED", "closing", "HTTP 503"): "dropped (robots.txt: held when the spider closed (HTTP 503))",
    ("DROPPED", "idle", "HTTP 503"): "dropped (robots.txt: held when nothing else was left to crawl (HTTP 503))",
}


@pytest.mark.parametrize(("key", "words"), list(WORDS.items()), ids=[str(k) for k in WORDS])
def test_the_words_of_a_waited_verdict(key, words):
    kind, reason, detail = key
    assert str(Judgement(Kind[kind], URL, "bot", document=ROBOTS_TXT, reason=reason, detail=detail)) == words
    tdm = Judgement(Kind[kind], URL, "bot", document=TDMREP, reason=reason, detail=detail)
    assert str(tdm) == words.replace("robots.txt", "tdmrep.json")


def test_the_words_of_the_decided_verdicts_and_the_others():
    tdm = parsed(TDM, TDMREP, TDMREP_URL)
    cases = [
        (run("/page"), "allowed (Allow: /, line 3)", {}, [], None, "1 allowed"),
        (run("/private/x"), "disallowed (Disallow: /private, line 2)", {"robotstxt/forbidden": 1},
         ["Forbidden by robots.txt: <GET https://example.com/private/x> (Disallow: /private, line 2 of "
          "https://example.com/robots.txt)"], "RobotsTxtForbidden", "0 allowed, 1 disallowed by robots.txt"),
        (run("/ai/x"), "usage denied (content-usage: /ai/ train-ai=n (line 5) denies train-ai)",
         {"robotstxt/usage_denied": 1},
         ["Usage preference denies train-ai: <GET https://example.com/ai/x> (content-usage: /ai/ train-ai=n (line 5) "
          "of https://example.com/robots.txt)"], "RobotsTxtUsageDenied", "0 allowed, 1 usage denied by robots.txt"),
        (run("/r/x", tdm=tdm),
         "reserved (TDM rights reserved (rule 0, location '/r/*', tdm-policy https://example.com/p, of "
         "https://example.com/.well-known/tdmrep.json); ROBOTSTXT_USAGE_DENY denies train-ai)",
         {"robotstxt/tdm_reserved": 1},
         ["TDM rights reserved (train-ai denied): <GET https://example.com/r/x> (TDM rights reserved (rule 0, "
          "location '/r/*', tdm-policy https://example.com/p, of https://example.com/.well-known/tdmrep.json))"],
         "RobotsTxtTdmReserved", "0 allowed, 1 TDM rights reserved by tdmrep.json"),
        (not_judged(URL, "bot"), "not judged (dont_obey_robotstxt)", {}, [], None,
         "0 allowed, 1 not judged (dont_obey_robotstxt)"),
        (invalid_meta(URL, "bot", "bad meta"),
         "dropped (robots.txt: with an invalid robotstxt_user_agent meta key (bad meta))",
         {"robotstxt/invalid_meta": 1}, ["Dropped <GET https://example.com/p>: bad meta"], "RobotsTxtMetaError",
         "0 allowed, 1 dropped for their robots.txt (1 with an invalid robotstxt_user_agent meta key)"),
    ]
    for judgement, words, stats, lines, raised, summary in cases:
        assert str(judgement) == words
        assert _told(judgement) == (stats, lines, raised, summary), judgement.kind


def test_the_ledger_names_each_kind_by_its_value():
    assert {kind.name: kind.value for kind in Kind} == {
        "ALLOWED": "allowed", "FORBIDDEN": "disallowed", "USAGE_DENIED": "usage_denied",
        "TDM_RESERVED": "tdm_reserved", "DROPPED": "dropped", "HELD": "held", "REQUEUED": "requeued",
        "NOT_JUDGED": "not_judged"}


def test_the_table_names_every_kind_and_the_audit_reads_the_same_names():
    from scrapy_rfc9309.core.verdict_kinds import DECIDED, LEDGER_VERDICTS, ROWS
    from scrapy_rfc9309.evidence import audit_result

    assert {kind for kind, _reason in ROWS} == set(Kind)
    assert LEDGER_VERDICTS == {kind.value for kind in Kind}
    assert DECIDED == {"allowed", "disallowed", "usage_denied", "tdm_reserved"}
    # The audit reads the table's names.
    assert audit_result.DECIDED is DECIDED and audit_result.VERDICTS is LEDGER_VERDICTS


def test_the_drop_reasons_and_the_kinds_that_pass_come_from_the_table():
    from scrapy_rfc9309.core.verdict_kinds import DROP_REASONS, reason_words

    assert DROP_REASONS == {
        "max_wait": "held too long", "no_host": "for a host name that does not resolve",
        "cannot_request": "that Scrapy cannot make", "closing": "held when the spider closed",
        "idle": "held when nothing else was left to crawl",
        "invalid_meta": "with an invalid robotstxt_user_agent meta key"}
    assert reason_words("a reason of its own") == "a reason of its own"  # not in the table: its own words
    assert reason_words(None) == ""
    assert [kind for kind in Kind if kind.passes] == [Kind.ALLOWED, Kind.HELD, Kind.REQUEUED, Kind.NOT_JUDGED]
    assert [kind for kind in Kind if kind.decided] == [Kind.ALLOWED, Kind.FORBIDDEN, Kind.USAGE_DENIED,
                                                       Kind.TDM_RESERVED]
