"""A robots.txt file's bytes as a crawl keeps them: as fetched until its first
question, then its records only, compressed when that makes them shorter (see
:attr:`RobotsBody.body`)."""

from __future__ import annotations

import zlib
from typing import Protocol

from .matcher import Matcher, _Accelerated
from .syntax import (
    DEFAULT_MAX_BYTES,
    MAX_LINE_BYTES,
    RULE_KEYS,
    decode,
    has_long_line,
    normalize,
    prepare,
    records_text,
    reduce_body,
)
from .urls import utf8_octets

__all__ = ["COMPRESS_AT_READ", "COMPRESS_FROM", "REDUCE_FIRST_FROM", "RobotsBody"]

#: Bodies at least this long are reduced to their records as they are read, the
#: rest when first used. Kept bytes from ``COMPRESS_FROM`` are compressed when that
#: makes them shorter (shorter ones would save a few dozen bytes, for a compression
#: that is a large part of a small file's first question: zlib's state is set up each time).
COMPRESS_AT_READ = 128 * 1024
COMPRESS_FROM = 256
#: A first question reads the body for its records alone (with the accelerator: see
#: :func:`~scrapy_rfc9309.core.syntax.first_question`); any other read of a body not
#: reduced (its agents or Sitemaps asked before a question, a file that keeps its
#: body) does so from this length (see :func:`~scrapy_rfc9309.core.syntax.reduce_body`):
#: neither a copy nor the text of a large body is made (freed, such temporaries leave
#: holes in the heap that the small objects allocated meanwhile keep resident), and
#: the lines that hold no record (comments, an HTML page, junk octets) are read
#: once, not decoded.
REDUCE_FIRST_FROM = 16 * 1024
#: Raw deflate, no header: the bytes are only ever read back here (with the
#: largest window, which reads what a smaller one wrote).
_WBITS = -15
#: Bits of ``RobotsBody._flags``: the kept bytes are compressed; they are the text
#: the parser reads (see :func:`decode`); they are the file's records only (see
#: :func:`~scrapy_rfc9309.core.syntax.records_text`); the file keeps its bytes as
#: fetched (``keep_body``); the C accelerator may be used; the body was longer
#: than the parsing limit; the kept records leave out the rules of the file's
#: first merged group (``RobotsBody._rules``, whose matcher gives them back); the
#: kept records are the body's, reduced as it was read, whole and not compressed
#: until the first question leaves out its group's rules. The body's length is
#: kept above these bits (one int for both: a broad crawl keeps many files).
_COMPRESSED, _NORMALIZED, _REDUCED, _KEEP_BODY, _SPEEDUPS, _TRUNCATED, _RULES_OUT, _AS_READ = (
    1, 2, 4, 8, 16, 32, 64, 128)
_SIZE_SHIFT = 8
#: The bits a file keeps when it is reduced.
_KEPT = ~(_COMPRESSED | _NORMALIZED | _REDUCED | _RULES_OUT | _AS_READ)
#: A file that keeps its bytes as fetched compresses them from this size.
_COMPACT_FROM = 256


class _RulesHolder(Protocol):
    """A merged group (see :class:`~scrapy_rfc9309.core.groups.MergedGroup`): its
    matcher gives back the rules the kept records leave out."""

    @property
    def matcher(self) -> Matcher | _Accelerated: ...


def _compress(body: bytes) -> bytes:
    """Raw deflate at its fastest level, with a window no larger than the bytes
    (most are a few hundred bytes: a smaller state to set up)."""
    bits = min(15, max(9, (len(body) - 1).bit_length()))
    compressor = zlib.compressobj(1, zlib.DEFLATED, -bits, min(8, bits - 4))
    return compressor.compress(body) + compressor.flush()


class RobotsBody:
    """The bytes of a parsed robots.txt, its size and flags (one int), and the text the
    parser reads from them; the base of :class:`~scrapy_rfc9309.RobotsTxt` (one object
    per file: a broad crawl keeps many)."""

    __slots__ = ("_flags", "_rules", "_source", "url")

    def __init__(self, body: bytes | str = b"", max_bytes: int = DEFAULT_MAX_BYTES, speedups: bool = True,
                 url: str | None = None, keep_body: bool = False) -> None:
        if isinstance(body, str):
            body = utf8_octets(body)
        size = len(body)
        self._flags = (size << _SIZE_SHIFT | (_SPEEDUPS if speedups else 0) | (_KEEP_BODY if keep_body else 0)
                       | (_TRUNCATED if size > max_bytes else 0))
        self.url: str | None = url or None
        self._rules: _RulesHolder | None = None  # the group whose rules the kept records leave out
        # A large body is reduced (or compressed) now, its parse would be long
        # anyway; a small one when it is first used, so that reading it costs next
        # to nothing. A large one's records are compressed now when they are a
        # small part of it (mostly empty lines, compressed in microseconds), else
        # when its first question has left out the rules of the group it builds
        # (compressing them twice would double that question's time).
        if size >= COMPRESS_AT_READ and not keep_body:
            reduced = reduce_body(body, max_bytes, speedups)
            flags = self._flags | _NORMALIZED | _REDUCED | _AS_READ
            if len(reduced) <= min(size, max_bytes) // 4:
                packed = _compress(reduced)
                if len(packed) < len(reduced):
                    reduced = packed
                    flags |= _COMPRESSED
            self._source, self._flags = reduced, flags
            return
        self._source = body[:max_bytes] if size > max_bytes else body
        if size >= COMPRESS_AT_READ:
            self._compact()

    # -- the file ---------------------------------------------------------------------
    @property
    def size(self) -> int:
        """The body's length."""
        return self._flags >> _SIZE_SHIFT

    @property
    def truncated(self) -> bool:
        """Whether the body was longer than the parsing limit."""
        return bool(self._flags & _TRUNCATED)

    @property
    def _speedups(self) -> bool:
        return bool(self._flags & _SPEEDUPS)

    def _compact(self) -> None:
        """Compress the kept bytes; a file with a line longer than the parser reads
        (or many lines ended by CR only) is kept as the parser reads it first, so
        that a 500 KiB line costs 16 KiB."""
        body = self._source
        if len(body) > MAX_LINE_BYTES and has_long_line(body):
            body = normalize(body, len(body))[0]
            self._flags |= _NORMALIZED
        self._source = _compress(body)
        self._flags |= _COMPRESSED

    def _keep(self, records: str | bytes, rules: _RulesHolder | None) -> None:
        """After the first decision: keep the file's records only (see
        :func:`~scrapy_rfc9309.core.syntax.records_text`: its text, or its octets),
        without the rules of ``rules``, whose matcher gives them back, compressed
        when that makes them shorter. A text is encoded here, once that matcher is
        built: encoded before, a large one would leave its text's place free below
        the matcher, a hole in the heap that the file keeps."""
        reduced = records if isinstance(records, bytes) else utf8_octets(records)
        if rules is not None:
            self._rules = rules
        flags = self._flags & _KEPT | _NORMALIZED | _REDUCED | (_RULES_OUT if rules is not None else 0)
        if len(reduced) >= COMPRESS_FROM:
            packed = _compress(reduced)
            if len(packed) < len(reduced):
                reduced = packed
                flags |= _COMPRESSED
        self._source, self._flags = reduced, flags

    @property
    def body(self) -> bytes:
        """The file's bytes up to the parsing limit, as fetched; after the first
        decision (from the start for a body of 128 KiB or more), unless the file
        was made with ``keep_body``, its records only: each
        known record as ``key:value`` on its own line, every other line empty (see
        :func:`~scrapy_rfc9309.core.syntax.records_text`); and a file with a line
        longer than the parser reads, as the parser reads it (see
        :func:`~scrapy_rfc9309.core.syntax.normalize`). Each parses as the file does."""
        flags = self._flags
        body = zlib.decompress(self._source, _WBITS) if flags & _COMPRESSED else self._source
        if flags & _RULES_OUT:
            return self._rules.matcher.fill(body, RULE_KEYS)  # type: ignore[union-attr]
        return body

    @property
    def records_body(self) -> bytes:
        """The file's records only, as :attr:`body` holds them once reduced (made
        again, without reducing the file, when it is not): two files with the same
        records give the same answers."""
        if self._flags & _REDUCED:
            return self.body
        return utf8_octets(records_text(self._text(), self._speedups))

    def _copy_body(self, other: RobotsBody) -> None:
        """Give ``other`` this file's bytes (a reduced file's shares the matcher that
        holds the rules its records leave out)."""
        other.url, other._source, other._flags, other._rules = self.url, self._source, self._flags, self._rules

    @property
    def reduced(self) -> bool:
        """Whether the file keeps its records only (see :attr:`body`)."""
        return bool(self._flags & _REDUCED)

    def _text(self) -> str:
        body = self.body
        flags = self._flags
        if flags & _NORMALIZED:
            return decode(body)
        if len(body) >= REDUCE_FIRST_FROM and flags & _SPEEDUPS:
            return decode(reduce_body(body, len(body)))  # parses as the body does
        return prepare(body, len(body))[0]
