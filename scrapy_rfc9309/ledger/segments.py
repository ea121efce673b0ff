"""The segments of one process's run in a ledger directory (``runs/``): each a file of
hash-chained JSON Lines opened with its ``head`` record, closed with its ``seal`` and then
replaced by its gzip; a record handed to the operating system in one ``os.write`` of its line
(:func:`write_record`, in C where the accelerator is built). And the directory itself: created
and checked at start-up (:func:`prepare_directory`), its manifest's lines appended
(:func:`append_manifest`), the settings a head records (:func:`head_settings`).
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..core.tdmrep import reserves
from ..core.usage_vocabulary import REVISION
from ..evidence.format import (
    FORMAT,
    GENESIS,
    LINK_DIGITS,
    MANIFEST,
    RUNS_DIR,
    VERSIONS_DIR,
    chain,
    manifest_last,
    segment_name,
)
from ..exceptions import RobotsTxtConfigError, RobotsTxtLedgerError
from ..runtime.reporting import Reporting

try:
    import fcntl
except ImportError:  # not POSIX: the manifest's appends are not locked against another process's
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..config import Config

__all__ = ["GZIP_LEVEL", "Segments", "append_manifest", "head_settings", "prepare_directory", "write_record"]

#: The gzip level of closed segments. On verdict records level 5 is as small as level 6 (within 0.1 %)
#: for about three quarters of its CPU, and about 5 % larger than level 9 for a quarter of its CPU.
GZIP_LEVEL = 5
dumps = json.JSONEncoder(separators=(",", ":")).encode
_sha256 = hashlib.sha256
#: Bytes of the chain hash a record's link (``p``) shows, as hex digits.
_LINK_BYTES = LINK_DIGITS // 2
#: A string as JSON (quoted, escaped, ASCII): JSON's own C function where there is one.
string: Callable[[str], str] = json.encoder.c_encode_basestring_ascii or json.encoder.py_encode_basestring_ascii  # type: ignore[attr-defined]


def write_record(fd: int, previous: bytes, head: str, url: str, fingerprint: bytes, when: float) -> tuple[bytes, int]:
    """Write a ``verdict`` or ``response`` record, whose keys end with ``u``, ``fp``,
    ``t``, ``p``: the line ``head`` + the URL as JSON + its fingerprint, time and link
    (after the record whose chain hash is ``previous``), and its line break (a short
    write completed). Returns its chain hash and the bytes written. The C accelerator's
    ``write_record`` does the same in one call."""
    data = (f'{head}{string(url)},"fp":"{fingerprint.hex()}","t":{when:.3f},'
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
            raise RobotsTxtConfigError(f"ROBOTSTXT_LEDGER: cannot write to {path!r}: {os_error(exc)}") from None
    path = os.path.join(directory, MANIFEST)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644))
    except OSError as exc:
        raise RobotsTxtConfigError(f"ROBOTSTXT_LEDGER: cannot write to {path!r}: {os_error(exc)}") from None


class Segments(Reporting):
    """The segments of run ``run`` under ``directory``'s ``runs/``: the open one (``fd``,
    ``path``, its records ``count`` and bytes ``size``, the chain hash ``hash`` of its last
    record), rotated past ``rotate_bytes``; the closed one synced and compressed in the worker
    (``submit(job, *args)``).
    A failure to write is told to ``on_failure(path, exc)`` once (``failure`` says what failed);
    every later record fails."""

    def __init__(self, crawler: Crawler, directory: str, run: str, agent: str, passed_responses: bool,
                 settings: dict[str, Any], rotate_bytes: int, submit: Callable[..., None],
                 on_failure: Callable[[str, OSError], None]) -> None:
        self.crawler = crawler
        self.directory = directory
        self.runs = os.path.join(directory, RUNS_DIR)
        self.run = run
        self.agent = agent
        self.passed_responses = passed_responses
        self.settings = settings
        self.rotate_bytes = rotate_bytes
        self.submit = submit
        self.on_failure = on_failure
        #: Why the ledger cannot be written (path: error), once it cannot.
        self.failure: str | None = None
        self.fd = -1
        self.path = ""
        self.segment = 0
        self.size = 0
        self.count = 0
        self.hash = GENESIS
        #: The chain hash of the last verdict or response record written.
        self.recorded = GENESIS
        #: Records handed to the OS (read by the worker, which syncs when it changed).
        self.written = 0
        self.manifest_line = ""

    def failed(self, path: str, exc: OSError) -> None:
        if self.failure is not None:
            return
        self.failure = f"{path}: {os_error(exc)}"
        self.on_failure(path, exc)

    def record(self, head: str, url: str, fingerprint: bytes) -> None:
        """Hand a ``verdict`` or ``response`` record to the OS (:func:`write_record`:
        one call, in C where the accelerator is built), and chain it (its chain hash kept
        in ``recorded``: a rotation after it starts the next segment's chain)."""
        fd = self.fd
        if fd < 0 or self.failure is not None:
            raise RobotsTxtLedgerError(f"the robots.txt ledger cannot be written ({self.failure or 'closed'})")
        try:
            self.hash, size = _write_record(fd, self.hash, head, url, fingerprint, time.time())
        except OSError as exc:
            raise self._cannot_write(exc) from None
        self.recorded = self.hash
        self.count += 1
        self.written += 1
        self.size += size
        if self.size >= self.rotate_bytes:
            self._rotate()

    def write(self, text: str, seal: bool = False) -> None:
        """Hand one record's line (``text``, ending with its line break) to the OS (one
        ``write``; a short one is completed), and chain it: the ``head``, ``state`` and
        ``seal`` records, which :meth:`record` does not format."""
        fd = self.fd
        if fd < 0 or self.failure is not None:
            raise RobotsTxtLedgerError(f"the robots.txt ledger cannot be written ({self.failure or 'closed'})")
        data = text.encode()
        try:
            _write_all(fd, data)
        except OSError as exc:
            raise self._cannot_write(exc) from None
        self.hash = _sha256(self.hash + data[:-1]).digest()
        self.count += 1
        self.written += 1
        self.size += len(data)
        if self.size >= self.rotate_bytes and not seal:
            self._rotate()

    def _cannot_write(self, exc: OSError) -> RobotsTxtLedgerError:
        self.failed(self.path, exc)
        return RobotsTxtLedgerError(f"the robots.txt ledger cannot be written ({self.failure})")

    @property
    def link(self) -> str:
        """The link (``p``) of the next record: the start of the last record's chain hash."""
        return self.hash[:_LINK_BYTES].hex()

    def open(self, previous: str) -> None:
        """Create the next segment and write its head. The first segment's file is created
        before the run's start line is appended to the manifest: a process killed between the
        two leaves the run's (empty) segment beside its start line, a run that did not end
        cleanly, not a start line whose run was removed."""
        self.segment += 1
        path = os.path.join(self.runs, segment_name(self.run, self.segment, closed=False))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                         0o644)
        except OSError as exc:
            self.failed(path, exc)
            raise RobotsTxtLedgerError(f"the robots.txt ledger cannot be written ({self.failure})") from None
        if self.segment == 1:
            try:
                self.manifest_line = append_manifest(self.directory, {"k": "start", "run": self.run})
            except OSError as exc:
                os.close(fd)
                manifest = os.path.join(self.directory, MANIFEST)
                raise RobotsTxtConfigError(f"ROBOTSTXT_LEDGER: cannot write to {manifest!r}: {os_error(exc)}") \
                    from None
        self.fd, self.path = fd, path
        self.size = self.count = 0
        self.hash = GENESIS
        self._inc("ledger/segments")
        head: dict[str, Any] = {"k": "head", "t": round(time.time(), 3), "p": "", "v": FORMAT, "run": self.run,
                                "seg": self.segment, "prev": previous, "pkg": __version__, "agent": self.agent,
                                "resp": "all" if self.passed_responses else "refused", "cfg": self.settings}
        if self.segment == 1:
            head["man"] = self.manifest_line
        self.write(dumps(head) + "\n")

    def seal(self, end: bool) -> str:
        last = self.hash.hex()
        record: dict[str, Any] = {"k": "seal", "t": round(time.time(), 3), "p": self.link, "n": self.count,
                                  "h": last}
        if end:
            record["end"] = True
        self.write(dumps(record) + "\n", seal=True)
        return last

    def _rotate(self) -> None:
        last = self.seal(end=False)
        fd, path = self.fd, self.path
        self.fd = -1
        self.submit(self._close_segment, fd, path)
        self.open(last)

    def _close_segment(self, fd: int, path: str) -> None:
        """In the worker: sync and close a sealed segment, and replace it by its gzip."""
        sync_and_close(fd)
        self.compress(path)

    def compress(self, path: str) -> None:
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
        sync_directory(self.runs)

    def sync(self) -> None:
        """In the worker: fsync the open segment."""
        fd = self.fd
        if fd >= 0:
            os.fsync(fd)


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
        line = dumps({"k": record["k"], "t": round(time.time(), 3), "p": previous.hex() if size else "",
                       **{key: value for key, value in record.items() if key != "k"}}).encode()
        _write_all(fd, prefix + line + b"\n")
        os.fsync(fd)
        return chain(previous, line).hex()
    finally:
        os.close(fd)


def head_settings(config: Config) -> dict[str, Any]:
    """What a run's heads record of the settings its verdicts depend on (``cfg``):
    the purpose tokens, the usage categories denied, the sources of usage preferences
    read, whether TDM reservations and Crawl-delay are enforced (and Crawl-delay's cap), and the vocabulary's
    revision."""
    read = ["robots.txt"]
    if config.usage_headers:
        read.append("headers")
    if config.usage_meta:
        read.append("meta")
    if config.tdmrep:
        read.append("tdmrep.json")
    return {"purpose": list(config.purpose_tokens), "deny": list(config.usage_deny), "read": read,
            "tdm": config.tdmrep and any(reserves(category) for category in config.usage_deny),
            "crawl_delay": config.crawl_delay, "crawl_delay_max": config.crawl_delay_max, "vocab": REVISION}


def _write_all(fd: int, data: bytes) -> None:
    done = 0
    while done < len(data):
        more = os.write(fd, data[done:])
        if not more:
            raise OSError(errno.EIO, "the file took no more bytes")
        done += more


def sync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_directory(path: str) -> None:
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


def os_error(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "")
    return f"{name + ': ' if name else ''}{exc.strerror or exc}"
