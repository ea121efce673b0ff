"""``ROBOTSTXT_STORE = "disk"``: origin states in a SQLite file that survives
restarts and that several processes of one machine share.

The file is ``robotstxt.sqlite3`` in ``ROBOTSTXT_STORE_PATH`` (by default
``.scrapy/robotstxt`` of the project). A file that cannot be used (corrupt, not a
database, another layout) is renamed to ``robotstxt.sqlite3.corrupt-<time>-<pid>``
with a warning and a new one is made. A file this process may only read (another
user's, a read-only file system) is opened read-only, with a warning: its records
are used, nothing is written to it, and no fetch lock is taken in it.

Its calls run in the reactor thread: each takes tens of microseconds (WAL mode,
no fsync per commit), where a worker thread would wait for the GIL at every SQLite
call of a busy crawl. A write lock that another process holds for longer than
``BUSY_TIMEOUT`` makes the call fail (the store then counts as unavailable for a
while) rather than stall the crawl; writers hold it for microseconds. Processes
that open a new file at once wait for the first one to set it up (``SETUP_ATTEMPTS``).
"""

from __future__ import annotations

import logging
import math
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..core.syntax import DEFAULT_MAX_BYTES
from ..exceptions import RobotsTxtConfigError
from .base import Claim, Store, fresh, replaces
from .record import CLOCK_TOLERANCE, MAX_META_BYTES, Record, Unreadable

__all__ = ["DiskStore"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

FILENAME = "robotstxt.sqlite3"
#: ``PRAGMA user_version`` of the layout below; a file with another is set aside.
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS states (
    origin TEXT PRIMARY KEY,
    fetched_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    keep_until REAL NOT NULL,
    meta TEXT NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS states_keep_until ON states (keep_until);
CREATE TABLE IF NOT EXISTS locks (
    origin TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    until REAL NOT NULL
);
"""
#: Seconds a statement waits for another process's write to finish.
BUSY_TIMEOUT = 0.2
#: Setting a new file up (WAL mode, tables) while another process does the same can
#: fail at once with "database is locked" (SQLite does not wait for the change of
#: journal mode): tried this many times, ``SETUP_PAUSE`` seconds apart, once per
#: process, before the store counts as unavailable.
SETUP_ATTEMPTS = 10
SETUP_PAUSE = 0.02
#: Records forgotten at most per purge (at open, then every ``PURGE_EVERY`` saves),
#: so that a purge never holds the reactor for long.
PURGE_CHUNK = 1000
PURGE_EVERY = 1000

# SQLite result codes that mean the file itself is unusable.
_CORRUPT, _NOTADB, _CANTOPEN, _PERM, _ERROR = 11, 26, 14, 3, 1
_UNUSABLE_CODES = {_CORRUPT, _NOTADB, _CANTOPEN, _PERM, _ERROR}
_UNUSABLE_TEXT = ("malformed", "not a database", "unable to open", "no such table", "no such column",
                  "has no column")
# SQLITE_READONLY (and its extended codes): the file cannot be written.
_READONLY = 8


class _Unusable(Exception):
    """The file has the wrong layout (a newer version, or not ours)."""


class DiskStore(Store):
    """Origin states in a SQLite file in ``directory``."""

    in_reactor = True

    def __init__(self, directory: str, max_body: int = DEFAULT_MAX_BYTES) -> None:
        self.directory = directory
        #: The most of a record this process reads: its body (cut; ``ROBOTSTXT_MAX_SIZE``, as a file
        #: fetched here is) and its metadata (a longer one is unreadable, never read).
        self.max_body = max(max_body, DEFAULT_MAX_BYTES)
        self.path = os.path.join(directory, FILENAME)
        self._db: sqlite3.Connection | None = None
        self._inode: int | None = None
        self._saves = 0
        #: Files set aside by this process, for the logs and the tests.
        self.set_aside: list[str] = []
        #: The file is open read-only: this process may not write it.
        self.read_only = False
        #: Why it was found read-only, once a write failed that way (None: writable so far).
        self._read_only_because: str | None = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> DiskStore:
        directory = crawler.settings.get("ROBOTSTXT_STORE_PATH")
        if directory is not None and (not isinstance(directory, (str, os.PathLike)) or not str(directory).strip()):
            raise RobotsTxtConfigError(f"ROBOTSTXT_STORE_PATH must be a directory path, got {directory!r}")
        if not directory:
            from scrapy.utils.project import data_path

            directory = data_path("robotstxt")
        directory = os.path.abspath(os.fspath(directory))
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise RobotsTxtConfigError(
                f"ROBOTSTXT_STORE_PATH {directory!r} cannot be created: {exc.strerror or exc}"
            ) from None
        if not os.access(directory, os.W_OK | os.X_OK) and not os.access(os.path.join(directory, FILENAME), os.R_OK):
            # A file there that can be read is used read-only; without one there is nothing to use.
            raise RobotsTxtConfigError(f"ROBOTSTXT_STORE_PATH {directory!r} is not a writable directory")
        return cls(directory, crawler.settings.getint("ROBOTSTXT_MAX_SIZE", DEFAULT_MAX_BYTES))

    # -- the connection -------------------------------------------------------------
    def open(self) -> None:
        """Connect (setting an unusable file aside) and forget what has outlived
        its use."""

        self._run(self._purge)

    def _purge(self, db: sqlite3.Connection) -> None:
        if self.read_only:
            return
        now = time.time()
        with self._transaction():
            db.execute("DELETE FROM states WHERE rowid IN"
                       " (SELECT rowid FROM states WHERE keep_until < ? LIMIT ?)", (now, PURGE_CHUNK))
            db.execute("DELETE FROM locks WHERE until < ?", (now,))

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _connect(self) -> sqlite3.Connection:
        because = self._read_only_because
        if because is None and os.path.exists(self.path) and not os.access(self.path, os.W_OK):
            because = "this process may not write it"
        if because is not None:
            uri = f"file:{urllib.parse.quote(self.path)}?mode=ro"
            db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        else:
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        try:
            self._inode = os.stat(self.path).st_ino
            for attempt in range(1, SETUP_ATTEMPTS + 1):
                try:
                    _set_up(db, read_only=because is not None)
                    break
                except sqlite3.OperationalError as exc:
                    if attempt == SETUP_ATTEMPTS or "locked" not in str(exc).lower():
                        raise
                    time.sleep(SETUP_PAUSE)
        except BaseException:
            db.close()
            raise
        if because is not None and not self.read_only:
            logger.warning("robots.txt store %s is read-only (%s): its records are used, but what this process "
                           "fetches is not saved in it, and its fetch locks are not shared", self.path, because)
        self.read_only = because is not None
        return db

    def _run(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``operation``; a file found unusable is set aside (unless this process
        may only read it), one found read-only opened read-only, and the operation
        run once more."""
        for attempt in (1, 2):
            try:
                if self._db is None:
                    self._db = self._connect()
                return operation(self._db)
            except (sqlite3.DatabaseError, _Unusable) as exc:
                if attempt == 2:
                    raise
                if _read_only(exc):
                    self.close()
                    if not self._moved():  # moved: set aside by another process, which made a new file
                        self._read_only_because = f"SQLite: {exc}"
                elif _unusable(exc) and not self.read_only:
                    self._set_aside(exc)
                else:
                    raise
        raise AssertionError("unreachable")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock at once, so a read-then-write is atomic
        # between processes.
        db = self._db
        assert db is not None
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _moved(self) -> bool:
        """The file at the path is not the one this process opened (another process set
        it aside)."""
        try:
            return os.stat(self.path).st_ino != self._inode
        except FileNotFoundError:
            return True

    def _set_aside(self, exc: BaseException) -> None:
        self.close()
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            return  # another process set it aside already
        if self._inode is not None and inode != self._inode:
            return  # another process set it aside and made a new one: use that
        target = f"{self.path}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        os.replace(self.path, target)
        for suffix in ("-wal", "-shm"):
            try:
                os.replace(self.path + suffix, target + suffix)
            except FileNotFoundError:
                pass
        self._inode = None
        self.set_aside.append(target)
        logger.warning("robots.txt store %s cannot be used (%s): set aside as %s; starting a new one",
                       self.path, exc, target)

    # -- the Store interface ----------------------------------------------------------
    def load(self, key: str) -> Record | None:
        return self._run(lambda db: _load(db, key, self.max_body))

    def save(self, key: str, record: Record, owner: str | None = None) -> bool:
        def save(db: sqlite3.Connection) -> bool:
            if self.read_only:
                return False
            with self._transaction():
                written = replaces(record, _load(db, key, self.max_body), time.time())
                if written:
                    db.execute(
                        "INSERT OR REPLACE INTO states (origin, fetched_at, expires_at, keep_until, meta, body)"
                        " VALUES (?, ?, ?, ?, ?, ?)",
                        (key, record.fetched_at, record.expires_at, record.keep_until, record.meta,
                         sqlite3.Binary(record.body)),
                    )
                if owner is not None:
                    db.execute("DELETE FROM locks WHERE origin = ? AND owner = ?", (key, owner))
            self._saves += 1
            if self._saves % PURGE_EVERY == 0:
                self._purge(db)
            return written

        return self._run(save)

    def claim(self, key: str, owner: str, now: float, lock_ttl: float,
              fetched_after: float | None = None) -> tuple[Claim, Record | None]:
        def claim(db: sqlite3.Connection) -> tuple[Claim, Record | None]:
            if self.read_only:  # no lock can be taken: fetch
                record = _load(db, key, self.max_body)
                return (Claim.FRESH if record is not None and fresh(record, now, fetched_after) else Claim.ACQUIRED,
                        record)
            with self._transaction():
                record = _load(db, key, self.max_body)
                if record is not None and fresh(record, now, fetched_after):
                    return Claim.FRESH, record
                lock = db.execute("SELECT owner, until FROM locks WHERE origin = ?", (key,)).fetchone()
                # A lock row of the wrong types is no lock: it is replaced.
                if lock is not None and lock[0] != owner and _finite(lock[1]) and lock[1] > now:
                    if lock[1] > now + lock_ttl + CLOCK_TOLERANCE:  # taken by a process whose clock is ahead
                        db.execute("UPDATE locks SET until = ? WHERE origin = ?", (now + lock_ttl, key))
                    return Claim.BUSY, None
                db.execute("INSERT OR REPLACE INTO locks (origin, owner, until) VALUES (?, ?, ?)",
                           (key, owner, now + lock_ttl))
                return Claim.ACQUIRED, record

        return self._run(claim)

    def renew(self, key: str, owner: str, lock_ttl: float) -> bool:
        def renew(db: sqlite3.Connection) -> bool:
            if self.read_only:
                return True  # there is no lock to lose
            cursor = db.execute("UPDATE locks SET until = ? WHERE origin = ? AND owner = ?",
                                (time.time() + lock_ttl, key, owner))
            return cursor.rowcount > 0

        return self._run(renew)

    def release(self, key: str, owner: str) -> None:
        if not self.read_only:
            self._run(lambda db: db.execute("DELETE FROM locks WHERE origin = ? AND owner = ?", (key, owner)))

    def __len__(self) -> int:
        return int(self._run(lambda db: db.execute("SELECT COUNT(*) FROM states").fetchone()[0]))


def _load(db: sqlite3.Connection, key: str, max_body: int) -> Record | None:
    """The origin's record, read no further than ``max_body`` bytes of its body and
    :data:`~scrapy_rfc9309.record.MAX_META_BYTES` of its metadata (a longer one is not read)."""
    found = db.execute(
        "SELECT fetched_at, expires_at, keep_until, CASE WHEN length(CAST(meta AS BLOB)) <= ? THEN meta END,"
        " CASE WHEN typeof(body) = 'blob' AND length(body) > ? THEN substr(body, 1, ?) ELSE body END,"
        " length(CAST(meta AS BLOB)) FROM states WHERE origin = ?", (MAX_META_BYTES, max_body, max_body, key)
    ).fetchone()
    if found is None:
        return None
    *row, meta_bytes = found
    fetched_at, expires_at, keep_until, meta, body = row
    if meta is None and isinstance(meta_bytes, int) and meta_bytes > MAX_META_BYTES:
        return Unreadable.because(f"a row with {meta_bytes} bytes of metadata (at most {MAX_META_BYTES} are read)")
    if not (_finite(fetched_at) and _finite(expires_at) and _finite(keep_until) and isinstance(meta, str)
            and isinstance(body, bytes)):
        return Unreadable.because("a row of the wrong types: " + ", ".join(
            f"{name} {type(value).__name__} {value!r:.40}" for name, value in zip(_COLUMNS, row, strict=True)))
    return Record(float(fetched_at), float(expires_at), float(keep_until), meta, body)


_COLUMNS = ("fetched_at", "expires_at", "keep_until", "meta", "body")


def _finite(value: object) -> bool:
    """A number SQLite returned (a column's value may be of any type)."""
    return isinstance(value, (int, float)) and math.isfinite(value)


def _set_up(db: sqlite3.Connection, read_only: bool = False) -> None:
    """Check the file's layout, making it on a new file. A file set up already
    (by this or another process) is only read: no write lock is taken."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version not in (0, SCHEMA_VERSION) or (read_only and version != SCHEMA_VERSION):
        raise _Unusable(f"layout version {version}, this version uses {SCHEMA_VERSION}")
    if not read_only and str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    if version == 0:
        db.executescript(_SCHEMA)
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    # Every column this version uses is there (a file of another program fails here).
    db.execute("SELECT origin, fetched_at, expires_at, keep_until, meta, body FROM states LIMIT 0")
    db.execute("SELECT origin, owner, until FROM locks LIMIT 0")


def _code(exc: BaseException) -> int | None:
    """SQLite's (extended) result code of an error (Python 3.11+), or None."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code if isinstance(code, int) else None


def _read_only(exc: BaseException) -> bool:
    """Whether an error means the file cannot be written (or was moved away)."""
    code = _code(exc)
    return (code & 0xFF) == _READONLY if code is not None else "readonly" in str(exc).lower()


def _unusable(exc: BaseException) -> bool:
    """Whether an error means the file is unusable (rather than busy, full or read-only)."""
    if isinstance(exc, _Unusable):
        return True
    message = str(exc).lower()
    code = _code(exc)
    if code is not None and (code & 0xFF) in _UNUSABLE_CODES:
        # SQLITE_ERROR is generic: only a missing table or column means another layout.
        return (code & 0xFF) != _ERROR or any(text in message for text in _UNUSABLE_TEXT)
    return any(text in message for text in _UNUSABLE_TEXT)
