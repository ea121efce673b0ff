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

import errno
import gzip
import hashlib
import io
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer

from .._version import __version__
from ..config import purpose_tokens
from ..core.caches import BoundedDict
from ..core.documents import ROBOTS_TXT, TDMREP, Document
from ..core.state import Access, OriginState, Policy
from ..core.tdmrep import reserves
from ..core.usage_vocabulary import REVISION
from ..core.verdict import Judgement, Kind
from ..evidence.format import (
    FORMAT,
    GENESIS,
    LINK_DIGITS,
    MANIFEST,
    RUNS_DIR,
    VERSION_FORMAT,
    VERSIONS_DIR,
    chain,
    manifest_last,
    new_run_id,
    segment_name,
    version_digest,
    version_name,
)
from ..exceptions import RobotsTxtConfigError, RobotsTxtLedgerError
from ..meta import FINGERPRINT_META, PURPOSE_META, RECORD_META
from ..runtime import compat as _compat
from ..runtime.loop import call_from_thread, call_later, running_loop
from ..runtime.reporting import Reporting

try:
    import fcntl
except ImportError:  # not POSIX: the manifest's appends are not locked against another process's
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..config import Config
    from ..core.changes import RobotsChange
    from ..core.matcher import Rule
    from ..core.origins import Origin

__all__ = ["CLOSE_REASON", "Ledger"]

#: The verdicts whose record names the robots.txt version, rule and usage preference they rest on.
_DECIDED = frozenset({Kind.ALLOWED, Kind.FORBIDDEN, Kind.USAGE_DENIED, Kind.TDM_RESERVED})
_ALLOWED = Kind.ALLOWED

logger = logging.getLogger(__name__)

#: The spider's close reason when the ledger cannot be written.
CLOSE_REASON = "robotstxt_ledger_error"
#: Seconds between two ``fsync`` of the open segment.
SYNC_INTERVAL = 1.0
#: The gzip level of closed segments. On verdict records level 5 is as small as level 6 (within 0.1 %)
#: for about three quarters of its CPU, and about 5 % larger than level 9 for a quarter of its CPU.
GZIP_LEVEL = 5
#: Origins (per document) whose version digest is remembered; a forgotten one is computed again.
_DIGESTS_KEPT = 10_000
#: Headers of the archived response renamed, because its body is the bytes the parser read
#: (decoded, and cut at ROBOTSTXT_MAX_SIZE), not those the server sent.
_RENAMED = {b"content-encoding", b"transfer-encoding", b"content-length"}
_STOP = object()
_dumps = json.JSONEncoder(separators=(",", ":")).encode
_sha256 = hashlib.sha256
#: Bytes of the chain hash a record's link (``p``) shows, as hex digits.
_LINK_BYTES = LINK_DIGITS // 2
#: A string as JSON (quoted, escaped, ASCII): JSON's own C function where there is one.
_string: Callable[[str], str] = json.encoder.c_encode_basestring_ascii or json.encoder.py_encode_basestring_ascii  # type: ignore[attr-defined]


def write_record(fd: int, previous: bytes, head: str, url: str, fingerprint: bytes, when: float) -> tuple[bytes, int]:
    """Write a ``verdict`` or ``response`` record, whose keys end with ``u``, ``fp``,
    ``t``, ``p``: the line ``head`` + the URL as JSON + its fingerprint, time and link
    (after the record whose chain hash is ``previous``), and its line break (a short
    write completed). Returns its chain hash and the bytes written. The C accelerator's
    ``write_record`` does the same in one call."""
    data = (f'{head}{_string(url)},"fp":"{fingerprint.hex()}","t":{when:.3f},'
            f'"p":"{previous[:_LINK_BYTES].hex()}"}}\n').encode()
    _write_all(fd, data)
    return _sha256(previous + data[:-1]).digest(), len(data)


try:
    from ..core._speedups import write_record as _write_record
except ImportError:  # the C accelerator is not built: the same in Python
    _write_record = write_record


def prepare_directory(directory: str) -> None:
    """Create the ledger's directories and its manifest if missing and check that they are
    writable (start-up: raises :class:`RobotsTxtConfigError` naming ``ROBOTSTXT_LEDGER``).
    The manifest exists before a run's first segment does: a process killed between the two
    leaves an empty segment beside it, not a directory whose manifest was deleted."""
    for path in (directory, os.path.join(directory, RUNS_DIR), os.path.join(directory, VERSIONS_DIR)):
        try:
            os.makedirs(path, exist_ok=True)
            if not os.access(path, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        except OSError as exc:
            raise RobotsTxtConfigError(f"ROBOTSTXT_LEDGER: cannot write to {path!r}: {_os_error(exc)}") from None
    path = os.path.join(directory, MANIFEST)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644))
    except OSError as exc:
        raise RobotsTxtConfigError(f"ROBOTSTXT_LEDGER: cannot write to {path!r}: {_os_error(exc)}") from None


class Ledger(Reporting):
    """One process's run in a ledger directory: its segments under ``runs/`` and the
    versions it used under ``versions/``."""

    def __init__(self, crawler: Crawler, config: Config, agent: str) -> None:
        assert config.ledger is not None
        self.crawler = crawler
        self.directory = config.ledger
        self.tdmrep = config.tdmrep
        self.rotate_bytes = config.ledger_rotate_bytes
        #: Whether a response passed to the spider has a record (``ROBOTSTXT_LEDGER_RESPONSES``).
        self.passed_responses = config.ledger_responses
        #: Whether a verdict's record is named in its request's meta (``ROBOTSTXT_PROVENANCE``).
        self.records_named = config.provenance is not None
        self._policy = config.policy
        prepare_directory(self.directory)
        self._runs = os.path.join(self.directory, RUNS_DIR)
        self._versions = os.path.join(self.directory, VERSIONS_DIR)
        self.run = new_run_id()
        self.agent = agent
        #: Why the ledger cannot be written (path: error), once it cannot.
        self.failure: str | None = None
        self.closed = False
        self._reactor = _compat.reactor_enabled(crawler.settings)
        self._loop = running_loop()
        self._fd = -1
        self._path = ""
        self._segment = 0
        self._size = 0
        self._count = 0
        self._hash = GENESIS
        self._recorded = GENESIS
        #: Records handed to the OS (read by the worker, which syncs when it changed).
        self.written = 0
        #: Per document: origin -> (the parsed file, or the state, whose version it is; its digest).
        self._digests: dict[str, BoundedDict[Origin, tuple[object, str | None]]] = {
            ROBOTS_TXT.name: BoundedDict(_DIGESTS_KEPT)}
        self._robots_versions = self._digests[ROBOTS_TXT.name]
        #: Digests whose file is known to be in ``versions/``, with the SHA-256 of its bytes.
        self._stored: BoundedDict[str, str] = BoundedDict(_DIGESTS_KEPT)
        #: The directory's head once the run ended: the chain hash of its end line in the manifest.
        self.head: str | None = None
        self._origins: BoundedDict[Origin, str] = BoundedDict(_DIGESTS_KEPT)
        self._rules: BoundedDict[Rule, str] = BoundedDict(_DIGESTS_KEPT)
        self._agents: BoundedDict[str, str] = BoundedDict(_DIGESTS_KEPT)
        self._fingerprint: Callable[[Request], bytes] = self._first_fingerprint
        #: The settings the run's verdicts depend on, in every head (``cfg``): the audit checks each verdict
        #: against them.
        self.settings = head_settings(config)
        self._manifest_line = ""
        self._worker = _Worker(self)
        try:
            self._open_segment("")
        except RobotsTxtLedgerError:
            raise RobotsTxtConfigError(f"ROBOTSTXT_LEDGER: {self.failure}") from None
        self._worker.start()

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
        segment, line = self._segment, self._count + 1
        self._record(f'{{"k":"verdict","m":{_string(request.method)},'
                     f'"o":{self._origins.get(origin) or self._origin_json(origin)},'
                     f'"a":{self._agents.get(agent) or self._agent_json(agent)},"ver":{version},'
                     f'"d":"{kind._value_}","r":{rule}{more},"u":', url, fingerprint)
        if self.records_named:  # read by the provenance of the response's items
            request.meta[RECORD_META] = (url, self.run, segment, line, self._recorded,
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
        """The digest of the version of ``document`` that ``state`` applies (None when
        none does), computed once per parsed file (or state)."""
        key: object = state.parsed if state.parsed is not None else state
        digests = self._digests.get(document.name)
        if digests is not None:
            known = digests.get(origin)
            if known is not None and known[0] is key:
                return known[1]
        return self._remember(origin, state, document, key,
                              _Version.of(origin, state, document, "fetch", self._policy))

    def _remember(self, origin: Origin, state: OriginState, document: Document, key: object,
                  version: _Version | None) -> str | None:
        digests = self._digests.get(document.name)
        if digests is None:
            digests = self._digests[document.name] = BoundedDict(_DIGESTS_KEPT)
        digest = version.digest if version is not None else None
        if digest is None and state.access is Access.UNREACHABLE and state.parsed is not None:
            # A stale copy whose fetch is not known (a store record of an earlier version): the version this
            # process recorded for the same copy, if it did.
            previous = digests.get(origin)
            digest = previous[1] if previous is not None and previous[0] is key else None
        digests[origin] = (key, digest)
        return digest

    async def settled(self, origin: Origin, state: OriginState, document: Document, source: str,
                      change: RobotsChange | None = None) -> None:
        """Record a state the process settled (fetched, or loaded from a store): its
        version file first, when ``versions/`` lacks it, then its ``state`` record
        (with ``change``, what changed from the version it replaces, and that version).
        A failure is logged and closes the spider; it never raises."""
        if self.closed or self.failure is not None:
            return
        key: object = state.parsed if state.parsed is not None else state
        known = self._digests.get(document.name)
        was = known.get(origin) if change is not None and known is not None else None
        version = _Version.of(origin, state, document, source, self._policy)
        digest = self._remember(origin, state, document, key, version)
        hashed = None if digest is None else self._stored.get(digest)
        if digest is not None and hashed is None:
            try:  # written (unless the directory has it), and its bytes hashed, for the state record
                hashed = await self._in_worker(self._write_version, version, digest)
            except OSError as exc:
                self._failed(os.path.join(self._versions, version_name(digest)), exc)
                return
            self._stored[digest] = hashed
        outcome = state.outcome
        unreachable = state.access is Access.UNREACHABLE
        record = {"k": "state", "t": round(time.time(), 3), "p": self._link, "o": origin.with_port,
                  "doc": document.name, "src": source, "access": state.access.value, "ver": digest,
                  "status": (304 if outcome.not_modified else outcome.status) if outcome is not None else None,
                  "err": state.detail if unreachable else None, "exp": round(state.expires_at, 3)}
        if digest is not None:
            record["vh"] = hashed
        if change is not None:
            record["was"] = None if was is None else was[1]
            record["chg"] = change.as_dict()
        try:
            self._write(_dumps(record) + "\n")
        except RobotsTxtLedgerError:
            pass  # logged, and the spider closes

    def _record(self, head: str, url: str, fingerprint: bytes) -> None:
        """Hand a ``verdict`` or ``response`` record to the OS (:func:`write_record`:
        one call, in C where the accelerator is built), and chain it (its chain hash kept
        in ``_recorded``)."""
        fd = self._fd
        if fd < 0 or self.failure is not None:
            raise RobotsTxtLedgerError(f"the robots.txt ledger cannot be written ({self.failure or 'closed'})")
        try:
            self._hash, size = _write_record(fd, self._hash, head, url, fingerprint, time.time())
        except OSError as exc:
            raise self._cannot_write(exc) from None
        self._recorded = self._hash
        self._count += 1
        self.written += 1
        self._size += size
        if self._size >= self.rotate_bytes:
            self._rotate()

    def _write(self, text: str, seal: bool = False) -> None:
        """Hand one record's line (``text``, ending with its line break) to the OS (one
        ``write``; a short one is completed), and chain it: the ``head``, ``state`` and
        ``seal`` records, which :meth:`_record` does not format."""
        fd = self._fd
        if fd < 0 or self.failure is not None:
            raise RobotsTxtLedgerError(f"the robots.txt ledger cannot be written ({self.failure or 'closed'})")
        data = text.encode()
        try:
            _write_all(fd, data)
        except OSError as exc:
            raise self._cannot_write(exc) from None
        self._hash = _sha256(self._hash + data[:-1]).digest()
        self._count += 1
        self.written += 1
        self._size += len(data)
        if self._size >= self.rotate_bytes and not seal:
            self._rotate()

    def _cannot_write(self, exc: OSError) -> RobotsTxtLedgerError:
        self._failed(self._path, exc)
        return RobotsTxtLedgerError(f"the robots.txt ledger cannot be written ({self.failure})")

    @property
    def _link(self) -> str:
        """The link (``p``) of the next record: the start of the last record's chain hash."""
        return self._hash[:_LINK_BYTES].hex()

    # -- segments ------------------------------------------------------------------------
    def _open_segment(self, previous: str) -> None:
        """Create the next segment and write its head. The first segment's file is created
        before the run's start line is appended to the manifest: a process killed between the
        two leaves the run's (empty) segment beside its start line, a run that did not end
        cleanly, not a start line whose run was removed."""
        self._segment += 1
        path = os.path.join(self._runs, segment_name(self.run, self._segment, closed=False))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                         0o644)
        except OSError as exc:
            self._failed(path, exc)
            raise RobotsTxtLedgerError(f"the robots.txt ledger cannot be written ({self.failure})") from None
        if self._segment == 1:
            try:
                self._manifest_line = append_manifest(self.directory, {"k": "start", "run": self.run})
            except OSError as exc:
                os.close(fd)
                manifest = os.path.join(self.directory, MANIFEST)
                raise RobotsTxtConfigError(f"ROBOTSTXT_LEDGER: cannot write to {manifest!r}: {_os_error(exc)}") \
                    from None
        self._fd, self._path = fd, path
        self._size = self._count = 0
        self._hash = GENESIS
        self._inc("ledger/segments")
        head: dict[str, Any] = {"k": "head", "t": round(time.time(), 3), "p": "", "v": FORMAT, "run": self.run,
                                "seg": self._segment, "prev": previous, "pkg": __version__, "agent": self.agent,
                                "resp": "all" if self.passed_responses else "refused", "cfg": self.settings}
        if self._segment == 1:
            head["man"] = self._manifest_line
        self._write(_dumps(head) + "\n")

    def _seal(self, end: bool) -> str:
        last = self._hash.hex()
        record: dict[str, Any] = {"k": "seal", "t": round(time.time(), 3), "p": self._link, "n": self._count,
                                  "h": last}
        if end:
            record["end"] = True
        self._write(_dumps(record) + "\n", seal=True)
        return last

    def _rotate(self) -> None:
        last = self._seal(end=False)
        fd, path = self._fd, self._path
        self._fd = -1
        self._submit(self._close_segment, fd, path)
        self._open_segment(last)

    def _close_segment(self, fd: int, path: str) -> None:
        """In the worker: sync and close a sealed segment, and replace it by its gzip."""
        _sync_and_close(fd)
        self._compress(path)

    def _compress(self, path: str) -> None:
        """In the worker: replace a sealed and closed segment by its gzip."""
        closed = path + ".gz"
        temporary = closed + ".tmp"
        with open(path, "rb") as plain, open(temporary, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", compresslevel=GZIP_LEVEL, fileobj=raw, mtime=0) as packed:
                while chunk := plain.read(1 << 20):
                    packed.write(chunk)
            raw.flush()
            os.fsync(raw.fileno())
        os.rename(temporary, closed)
        os.remove(path)
        _sync_directory(self._runs)

    async def close(self) -> None:
        """Seal the last segment (``end``), append the run's end line to the manifest, compress
        the segment and stop the worker, waiting for it. The end line is appended while the
        segment is still plain: a process killed before it leaves a plain segment sealed with
        ``end`` and no end line (not ended cleanly), which a manifest cut short after the end
        line of a closed (gzip) segment is not."""
        if self.closed:
            return
        self.closed = True
        fd, path = self._fd, self._path
        last = None
        if self.failure is None and fd >= 0:
            try:
                last = self._seal(end=True)
            except RobotsTxtLedgerError:
                pass
        self._fd = -1
        segment = path
        try:
            if fd >= 0:  # without the seal, left plain as a killed process leaves it: its records up to the failure
                await self._in_worker(_sync_and_close, fd)
            if last is not None and self.failure is None:
                path = os.path.join(self.directory, MANIFEST)
                self.head = await self._in_worker(append_manifest, self.directory, {
                    "k": "end", "run": self.run, "segs": self._segment, "h": last})
                if self.crawler.stats is not None:
                    self.crawler.stats.set_value("robotstxt/ledger/head", self.head)
                logger.info("robots.txt ledger: run %s ended; the head of %s is %s (kept outside the directory, it "
                            "shows later that no run up to this one was removed or rewritten: scrapy robotstxt "
                            "audit --anchor %s)", self.run, self.directory, self.head, self.head,
                            extra=self._log_extra)
                path = segment
                await self._in_worker(self._compress, segment)
        except OSError as exc:
            self._failed(path, exc)
        finally:
            self._worker.stop()

    # -- the worker ------------------------------------------------------------------------
    def _submit(self, job: Callable[..., Any], *args: Any, done: defer.Deferred[Any] | None = None) -> None:
        loop = running_loop()
        if loop is not None:
            self._loop = loop
        self._worker.jobs.put((job, args, done))

    async def _in_worker(self, job: Callable[..., Any], *args: Any) -> Any:
        done: defer.Deferred[Any] = defer.Deferred()
        self._submit(job, *args, done=done)
        return await maybe_deferred_to_future(done)

    def _from_worker(self, func: Callable[..., Any], *args: Any) -> None:
        """Call ``func(*args)`` in the crawl's thread."""
        if self._loop is None and not self._reactor:
            return  # no loop seen yet: the failure is noticed at the next record
        call_from_thread(self._loop, func, *args)

    def _sync(self) -> None:
        """In the worker: fsync the open segment if records were written since the last time."""
        fd = self._fd
        if fd >= 0:
            os.fsync(fd)

    def _write_version(self, version: _Version | None, digest: str) -> str:
        """In the worker: write a version file unless the directory has it (or ``version``
        is None: a copy this run recorded before), and return the SHA-256 of its bytes."""
        final = os.path.join(self._versions, version_name(digest))
        if version is not None and not os.path.exists(final):
            self._write_version_file(version, final)
        with open(final, "rb") as handle:
            hashed = hashlib.sha256()
            while chunk := handle.read(1 << 20):
                hashed.update(chunk)
        return hashed.hexdigest()

    def _write_version_file(self, version: _Version, final: str) -> None:
        temporary = f"{final}.{self.run}.tmp"
        try:
            with open(temporary, "wb") as handle:
                version.write_warc(handle)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temporary, final)
            except FileExistsError:
                pass  # another process, or an earlier run, wrote it: the same bytes digest the same
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                    raise
                if not os.path.exists(final):  # no hard links here: a rename, which may replace a twin
                    os.rename(temporary, final)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
        _sync_directory(self._versions)

    # -- failure ---------------------------------------------------------------------------
    def _failed(self, path: str, exc: OSError) -> None:
        """The ledger cannot be written: log once, count, close the spider. Every
        later record fails, so that no request is released without its record."""
        if self.failure is not None:
            return
        self.failure = f"{path}: {_os_error(exc)}"
        self._inc("ledger/error")
        logger.error("robots.txt ledger: cannot write %s (%s): closing the spider; no request is released without "
                     "its record", path, _os_error(exc), extra=self._log_extra)
        if not self.closed:
            call_later(0, _compat.close_spider, self.crawler, CLOSE_REASON)

    def worker_failed(self, path: str, exc: OSError) -> None:
        """From the worker (through the crawl's thread): a sync or a compression failed."""
        self._failed(path, exc)


class _Worker(threading.Thread):
    """The ledger's worker thread: its jobs in order, and an ``fsync`` of the open
    segment every :data:`SYNC_INTERVAL` when records were written. A daemon: a crawl
    that ends without closing its ledger still exits (its last records unsynced)."""

    def __init__(self, ledger: Ledger) -> None:
        super().__init__(name="robotstxt-ledger", daemon=True)
        self.ledger = ledger
        self.jobs: queue.Queue[Any] = queue.Queue()
        self._synced = 0

    def stop(self) -> None:
        self.jobs.put(_STOP)

    def run(self) -> None:
        ledger = self.ledger
        next_sync = time.monotonic() + SYNC_INTERVAL
        while True:
            try:
                item = self.jobs.get(timeout=max(0.0, next_sync - time.monotonic()))
            except queue.Empty:
                item = None
            if item is _STOP:
                return
            if item is not None:
                job, args, done = item
                try:
                    result = job(*args)
                except Exception as exc:
                    if not isinstance(exc, OSError):  # unexpected: a failure to write all the same
                        exc = OSError(errno.EIO, f"{type(exc).__name__}: {exc}")
                    if done is not None:
                        ledger._from_worker(_fire, done, exc, False)
                    else:
                        ledger._from_worker(ledger.worker_failed, str(args[-1]), exc)
                else:
                    if done is not None:
                        ledger._from_worker(_fire, done, result, True)
            if time.monotonic() >= next_sync:
                next_sync = time.monotonic() + SYNC_INTERVAL
                written = ledger.written
                if written != self._synced:
                    try:
                        ledger._sync()
                        self._synced = written
                    except OSError as exc:
                        ledger._from_worker(ledger.worker_failed, ledger._path, exc)


def _fire(done: defer.Deferred[Any], value: Any, ok: bool) -> None:
    if done.called:
        return
    if ok:
        done.callback(value)
    else:
        done.errback(value)


class _Version:
    """What a version file holds: the fields of the digest, and the rest of the
    fetch (headers, times) for the WARC record."""

    __slots__ = ("access", "body", "digest", "document", "fetched_at", "final_url", "headers", "lifetime",
                 "redirects", "requested_url", "source", "status", "truncated")

    def __init__(self, document: str, requested_url: str, redirects: list[str], final_url: str, status: int,
                 access: str, body: bytes, source: str, headers: tuple[tuple[bytes, bytes], ...],
                 fetched_at: float, lifetime: float, truncated: bool) -> None:
        self.document, self.requested_url, self.redirects = document, requested_url, redirects
        self.final_url = final_url
        self.status, self.access, self.body, self.source, self.headers = status, access, body, source, headers
        self.fetched_at, self.lifetime, self.truncated = fetched_at, lifetime, truncated
        self.digest = version_digest(document, requested_url, redirects, final_url, status, access, body)

    @classmethod
    def of(cls, origin: Origin, state: OriginState, document: Document, source: str,
           policy: Policy) -> _Version | None:
        """The version ``state`` holds as fetched (parsed, or unavailable with a
        status), or None: no HTTP response (a request another component ignored), or
        unreachable without a good copy whose fetch is known. An unreachable state's
        good copy is the version of its own fetch (``good_fetch``); when the directory
        lacks its file, the process did not fetch it (it would have written it then):
        it came from a store."""
        outcome, lifetime = state.outcome, state.expires_at - state.fetched_at
        if state.access is Access.UNREACHABLE:
            outcome = state.good_fetch if state.parsed is not None and state.good_at is not None else None
            if outcome is None:
                return None
            source, lifetime = "store", policy.lifetime(outcome.max_age)
        if outcome is None or outcome.status is None:
            return None
        if outcome.not_modified:
            source = "store"  # renewed by a 304: the copy held (its headers not known when its file is written now)
        requested = document.url(origin)
        hops = [requested, *outcome.redirects]
        access = outcome.access.value
        body = state.good_body if outcome.access is Access.PARSED else b""
        fetched_at = state.good_at if state.good_at is not None else state.fetched_at
        return cls(document.name, requested, hops[:-1], outcome.url or hops[-1], outcome.status, access, body,
                   source, () if source == "store" else outcome.headers, fetched_at, lifetime, outcome.truncated)

    def write_warc(self, handle: Any) -> None:
        # warcio ships no type information.
        from warcio.statusandheaders import StatusAndHeaders  # type: ignore[import-untyped]
        from warcio.warcwriter import WARCWriter  # type: ignore[import-untyped]

        try:
            phrase = HTTPStatus(self.status).phrase
        except ValueError:
            phrase = ""
        lines = []
        for name, value in self.headers:
            text = name.decode("latin-1")
            if name.lower() in _RENAMED:
                text = "X-RFC9309-Original-" + text
            lines.append((text, value.decode("latin-1")))
        http = StatusAndHeaders(f"{self.status} {phrase}".rstrip(), lines, protocol="HTTP/1.1")
        fields = {
            "WARC-Date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.fetched_at)),
            "WARC-RFC9309-Format": str(VERSION_FORMAT),
            "WARC-RFC9309-Version": self.digest,
            "WARC-RFC9309-Document": self.document,
            "WARC-RFC9309-Requested-URI": self.requested_url,
            "WARC-RFC9309-Status": str(self.status),
            "WARC-RFC9309-Access": self.access,
            "WARC-RFC9309-Lifetime": f"{self.lifetime:.0f}",
            "WARC-RFC9309-Source": self.source,
        }
        if self.redirects:
            fields["WARC-RFC9309-Redirects"] = " ".join(self.redirects)
        if self.truncated:
            fields["WARC-RFC9309-Truncated"] = "true"
        writer = WARCWriter(handle, gzip=True, warc_version="1.1")
        record = writer.create_warc_record(self.final_url, "response", payload=io.BytesIO(self.body),
                                           length=len(self.body), http_headers=http, warc_headers_dict=fields)
        writer.write_record(record)


def append_manifest(directory: str, record: dict[str, Any],
                    read: Callable[[int, int, int], bytes] | None = None) -> str:
    """Append ``record`` to the directory's manifest, chained to its last line (under an
    exclusive ``flock``: the processes of a fleet share it), ``fsync`` it, and return the
    line's chain hash (hex). It reads the manifest's tail only, through ``read``
    (:func:`.manifest_last`): an append costs the same however many runs the directory holds."""
    fd = os.open(os.path.join(directory, MANIFEST), os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        previous, cut = manifest_last(fd, size, read)
        # A line cut short by a process killed as it wrote: ended here, and chained as it is.
        prefix = b"\n" if cut else b""
        line = _dumps({"k": record["k"], "t": round(time.time(), 3), "p": previous.hex() if size else "",
                       **{key: value for key, value in record.items() if key != "k"}}).encode()
        _write_all(fd, prefix + line + b"\n")
        os.fsync(fd)
        return chain(previous, line).hex()
    finally:
        os.close(fd)


def head_settings(config: Config) -> dict[str, Any]:
    """What a run's heads record of the settings its verdicts depend on (``cfg``):
    the purpose tokens, the usage categories denied, the sources of usage preferences
    read, whether TDM reservations and Crawl-delay are enforced, and the vocabulary's revision."""
    read = ["robots.txt"]
    if config.usage_headers:
        read.append("headers")
    if config.usage_meta:
        read.append("meta")
    if config.tdmrep:
        read.append("tdmrep.json")
    return {"purpose": list(config.purpose_tokens), "deny": list(config.usage_deny), "read": read,
            "tdm": config.tdmrep and any(reserves(category) for category in config.usage_deny),
            "crawl_delay": config.crawl_delay, "vocab": REVISION}


def _write_all(fd: int, data: bytes) -> None:
    done = 0
    while done < len(data):
        more = os.write(fd, data[done:])
        if not more:
            raise OSError(errno.EIO, "the file took no more bytes")
        done += more


def _sync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_directory(path: str) -> None:
    """Make a new name in ``path`` durable (where directories can be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _os_error(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "")
    return f"{name + ': ' if name else ''}{exc.strerror or exc}"
