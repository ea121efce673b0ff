"""The verdict ledger (``ROBOTSTXT_LEDGER``): every robots.txt (and tdmrep.json)
version a crawl used, as a WARC file, and every verdict it gave, as hash-chained
JSON Lines, in the format of ``docs/ledger-format.md`` (:mod:`.format`).

A record is handed to the operating system (one ``os.write`` of its line) before
the middleware lets its request go on: a record that cannot be written stops the
crawl. What can wait is done by one worker thread, so that the crawl's thread never
waits for the disk: ``fsync`` of the open segment (at least once a second), the
gzip of a closed segment, and the version files, which are written (temporary
name, ``fsync``, link to the final name) before a state naming them is recorded
and used.

A run is chained into its directory through the directory's manifest
(``manifest.jsonl``): a hash-chained line at the run's start, which the run's first
head names, and one at its end naming its last seal. The end line's chain hash is the
directory's head, logged and put in the stats (``robotstxt/ledger/head``) at close, to
be kept outside the directory (``scrapy robotstxt audit --anchor``).
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

from ..config import purpose_tokens
from ..core.caches import BoundedDict
from ..core.documents import ROBOTS_TXT, TDMREP, Document
from ..core.state import Access, OriginState
from ..core.verdict import Judgement, Kind
from ..evidence.format import MANIFEST, VERSIONS_DIR, new_run_id, version_name
from ..exceptions import RobotsTxtConfigError, RobotsTxtLedgerError
from ..meta import FINGERPRINT_META, PURPOSE_META, RECORD_META
from ..runtime import compat as _compat
from ..runtime.loop import call_later
from ..runtime.reporting import Reporting
from .segments import (
    Segments,
    append_manifest,
    dumps,
    head_settings,
    os_error,
    prepare_directory,
    string,
    sync_and_close,
)
from .versions import Version, VersionMemo, write_version
from .worker import Worker

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..config import Config
    from ..core.changes import RobotsChange
    from ..core.matcher import Rule
    from ..core.origins import Origin

__all__ = ["CLOSE_REASON", "Ledger"]

#: The verdicts whose record names the robots.txt version, rule and usage preference they rest on.
_DECIDED = frozenset(kind for kind in Kind if kind.decided)
_ALLOWED = Kind.ALLOWED
_dumps = dumps
_string = string

logger = logging.getLogger(__name__)

#: The spider's close reason when the ledger cannot be written.
CLOSE_REASON = "robotstxt_ledger_error"
#: Origins (per document) whose version digest is remembered; a forgotten one is computed again.
_DIGESTS_KEPT = 10_000


class Ledger(Reporting):
    """One process's run in a ledger directory, as a teller of verdicts: the records of verdicts,
    responses and states, and the memo of the versions they name; its segments under ``runs/``
    (:class:`~.segments.Segments`) and the versions it used under ``versions/``
    (:mod:`.versions`), the slow work in its worker thread (:class:`~.worker.Worker`)."""

    def __init__(self, crawler: Crawler, config: Config, agent: str) -> None:
        assert config.ledger is not None
        self.crawler = crawler
        self.directory = config.ledger
        self.tdmrep = config.tdmrep
        #: Whether a response passed to the spider has a record (``ROBOTSTXT_LEDGER_RESPONSES``).
        self.passed_responses = config.ledger_responses
        #: Whether a verdict's record is named in its request's meta (``ROBOTSTXT_PROVENANCE``).
        self.records_named = config.provenance is not None
        self._policy = config.policy
        prepare_directory(self.directory)
        self._versions = os.path.join(self.directory, VERSIONS_DIR)
        self.run = new_run_id()
        self.agent = agent
        self.closed = False
        self.versions = VersionMemo(config.policy, _DIGESTS_KEPT)
        self._robots_versions = self.versions.robots
        #: The directory's head once the run ended: the chain hash of its end line in the manifest.
        self.head: str | None = None
        self._origins: BoundedDict[Origin, str] = BoundedDict(_DIGESTS_KEPT)
        self._rules: BoundedDict[Rule, str] = BoundedDict(_DIGESTS_KEPT)
        self._agents: BoundedDict[str, str] = BoundedDict(_DIGESTS_KEPT)
        self._fingerprint: Callable[[Request], bytes] = self._first_fingerprint
        #: The settings the run's verdicts depend on, in every head (``cfg``): the audit checks each verdict
        #: against them.
        self.settings = head_settings(config)
        self._worker = Worker(self._failed, _compat.reactor_enabled(crawler.settings))
        self._segments = segments = Segments(crawler, self.directory, self.run, agent, self.passed_responses,
                                             self.settings, config.ledger_rotate_bytes, self._worker.submit,
                                             self._on_failure)
        self._worker.segments = segments
        self._record = segments.record
        try:
            segments.open("")
        except RobotsTxtLedgerError:
            raise RobotsTxtConfigError(f"ROBOTSTXT_LEDGER: {self.failure}") from None
        self._worker.start()

    @property
    def failure(self) -> str | None:
        """Why the ledger cannot be written (path: error), once it cannot."""
        return self._segments.failure

    @property
    def written(self) -> int:
        """Records handed to the OS."""
        return self._segments.written

    # -- the teller of verdicts ---------------------------------------------------------------
    #: The record of an allowed request names the rule that allowed it.
    explains = True

    def judged(self, request: Request, origin: Origin, judgement: Judgement) -> None:
        """Record ``judgement`` (before the request is released: raises
        :class:`RobotsTxtLedgerError` when the record cannot be written). It runs for every
        request: the line is formatted in one expression, strings through JSON's own
        escaping, the texts of origins, agents and rules kept, and the version of the
        robots.txt read from its memo here."""
        kind = judgement.kind
        version = rule = "null"
        more = ""
        if kind is _ALLOWED or kind in _DECIDED:
            robots = judgement.robots
            if robots is not None:
                parsed = robots.parsed
                known = self._robots_versions.get(origin)
                digest = (known[1] if known is not None and known[0] is (robots if parsed is None else parsed)
                          else self.version_of(origin, robots))
                if digest is not None:
                    version = f'"{digest}"'  # hex: nothing to escape
            deciding = judgement.rule
            if deciding is not None:
                rule = self._rules.get(deciding) or self._rule_json(deciding)
            if judgement.usage:
                more = f',"up":{_string(str(judgement.usage))}'
            purposes = request.meta.get(PURPOSE_META)
            if purposes is not None:  # the request's own, in place of the head's (validated by the middleware)
                more += f',"pt":{_dumps(list(purpose_tokens(purposes, PURPOSE_META)))}'
        elif (kind is Kind.DROPPED or kind is Kind.NOT_JUDGED) and judgement.reason is not None:
            more = f',"why":{_string(judgement.reason)}'
        if self.tdmrep:
            more += self._tdm_fields(origin, judgement, kind)
        url = request.url
        fingerprint = self._fingerprint(request)
        if self.passed_responses:  # read back by the response's record
            request.meta[FINGERPRINT_META] = (url, fingerprint)
        # The token whose group decided: a purpose token's, for a request its group refused.
        agent = judgement.purpose or judgement.token
        # The fields that repeat first, then the URL, the fingerprint, the time and the link: what changes from one
        # record to the next is one run, and a response record's URL and fingerprint one back-reference to its
        # verdict's, in the gzip of the segment (about 2.5 B per verdict less than with the time and link first).
        segments = self._segments
        segment, line = segments.segment, segments.count + 1  # before the write: it may rotate
        self._record(f'{{"k":"verdict","m":{_string(request.method)},'
                     f'"o":{self._origins.get(origin) or self._origin_json(origin)},'
                     f'"a":{self._agents.get(agent) or self._agent_json(agent)},"ver":{version},'
                     f'"d":"{kind._value_}","r":{rule}{more},"u":', url, fingerprint)
        if self.records_named:  # read by the provenance of the response's items
            request.meta[RECORD_META] = (url, self.run, segment, line, segments.recorded,
                                         None if version == "null" else version[1:-1])

    def _tdm_fields(self, origin: Origin, judgement: Judgement, kind: Kind) -> str:
        """The verdict record's ``tv`` and ``tr`` (with ``ROBOTSTXT_TDMREP``)."""
        entry = judgement.tdm_entry
        state = judgement.tdm if kind is _ALLOWED or kind is Kind.TDM_RESERVED else None
        version = None if state is None else self.version_of(origin, state, TDMREP)
        rule = None if entry is None else [int(entry.reserved), entry.location, entry.index]
        return f',"tv":{_dumps(version)},"tr":{_dumps(rule)}'

    def responded(self, request: Request, status: int, outcome: str) -> None:
        """Record the response of a judged request: ``"passed"`` to the spider (told only
        with ``ROBOTSTXT_LEDGER_RESPONSES``), or why not (a name of this module's,
        nothing to escape)."""
        url = request.url
        known = request.meta.get(FINGERPRINT_META)
        if known is not None and known[0] == url:  # not a copy of another request's meta
            fingerprint = known[1]
        else:
            fingerprint = self._fingerprint(request)
        self._record(f'{{"k":"response","s":{int(status)},"d":"{outcome}","u":', url, fingerprint)

    def _first_fingerprint(self, request: Request) -> bytes:
        """Scrapy's fingerprinter's method (it caches a request's fingerprint: the
        scheduler's duplicate filter has asked already), kept at the first record."""
        self._fingerprint = fingerprint = self.crawler.request_fingerprinter.fingerprint  # type: ignore[union-attr]
        return fingerprint(request)

    def _origin_json(self, origin: Origin) -> str:
        text = self._origins[origin] = _string(origin.with_port)
        return text

    def _agent_json(self, agent: str) -> str:
        text = self._agents[agent] = _string(agent)
        return text

    def _rule_json(self, rule: Rule) -> str:
        text = self._rules[rule] = _dumps([rule.directive, rule.pattern, rule.line])
        return text

    def version_of(self, origin: Origin, state: OriginState, document: Document = ROBOTS_TXT) -> str | None:
        """The digest of the version of ``document`` that ``state`` applies (see :class:`.VersionMemo`)."""
        return self.versions.version_of(origin, state, document)

    async def settled(self, origin: Origin, state: OriginState, document: Document, source: str,
                      change: RobotsChange | None = None) -> None:
        """Record a state the process settled (fetched, or loaded from a store): its
        version file first, when ``versions/`` lacks it, then its ``state`` record
        (with ``change``, what changed from the version it replaces, and that version).
        A failure is logged and closes the spider; it never raises."""
        if self.closed or self.failure is not None:
            return
        versions = self.versions
        was = versions.known(origin, document) if change is not None else None
        version = Version.of(origin, state, document, source, self._policy)
        digest = versions.remember(origin, state, document, version)
        hashed = None if digest is None else versions.stored.get(digest)
        if digest is not None and hashed is None:
            try:  # written (unless the directory has it), and its bytes hashed, for the state record
                hashed = await self._worker.call(write_version, self._versions, self.run, version, digest)
            except OSError as exc:
                self._failed(os.path.join(self._versions, version_name(digest)), exc)
                return
            versions.stored[digest] = hashed
        outcome = state.outcome
        unreachable = state.access is Access.UNREACHABLE
        record = {"k": "state", "t": round(time.time(), 3), "p": self._segments.link, "o": origin.with_port,
                  "doc": document.name, "src": source, "access": state.access.value, "ver": digest,
                  "status": (304 if outcome.not_modified else outcome.status) if outcome is not None else None,
                  "err": state.detail if unreachable else None, "exp": round(state.expires_at, 3)}
        if digest is not None:
            record["vh"] = hashed
        if change is not None:
            record["was"] = None if was is None else was[1]
            record["chg"] = change.as_dict()
        try:
            self._segments.write(_dumps(record) + "\n")
        except RobotsTxtLedgerError:
            pass  # logged, and the spider closes

    async def close(self) -> None:
        """Seal the last segment (``end``), append the run's end line to the manifest, compress
        the segment and stop the worker, waiting for it. The end line is appended while the
        segment is still plain: a process killed before it leaves a plain segment sealed with
        ``end`` and no end line (not ended cleanly), which a manifest cut short after the end
        line of a closed (gzip) segment is not."""
        if self.closed:
            return
        self.closed = True
        segments = self._segments
        fd, path = segments.fd, segments.path
        last = None
        if self.failure is None and fd >= 0:
            try:
                last = segments.seal(end=True)
            except RobotsTxtLedgerError:
                pass
        segments.fd = -1
        segment = path
        call = self._worker.call
        try:
            if fd >= 0:  # without the seal, left plain as a killed process leaves it: its records up to the failure
                await call(sync_and_close, fd)
            if last is not None and self.failure is None:
                path = os.path.join(self.directory, MANIFEST)
                self.head = await call(append_manifest, self.directory, {
                    "k": "end", "run": self.run, "segs": segments.segment, "h": last})
                if self.crawler.stats is not None:
                    self.crawler.stats.set_value("robotstxt/ledger/head", self.head)
                logger.info("robots.txt ledger: run %s ended; the head of %s is %s (kept outside the directory, it "
                            "shows later that no run up to this one was removed or rewritten: scrapy robotstxt "
                            "audit --anchor %s)", self.run, self.directory, self.head, self.head,
                            extra=self._log_extra)
                path = segment
                await call(segments.compress, segment)
        except OSError as exc:
            self._failed(path, exc)
        finally:
            self._worker.stop()

    # -- failure ---------------------------------------------------------------------------
    def _failed(self, path: str, exc: OSError) -> None:
        """The ledger cannot be written (:meth:`Segments.failed`: once). Every later record
        fails, so that no request is released without its record."""
        self._segments.failed(path, exc)

    def _on_failure(self, path: str, exc: OSError) -> None:
        """Log once, count, close the spider."""
        self._inc("ledger/error")
        logger.error("robots.txt ledger: cannot write %s (%s): closing the spider; no request is released without "
                     "its record", path, os_error(exc), extra=self._log_extra)
        if not self.closed:
            call_later(0, _compat.close_spider, self.crawler, CLOSE_REASON)

    def worker_failed(self, path: str, exc: OSError) -> None:
        """From the worker (through the crawl's thread): a sync or a compression failed."""
        self._failed(path, exc)
