"""Bounded decoding of a robots.txt body sent with a ``Content-Encoding``.

A robots.txt is fetched with ``Accept-Encoding: identity``, but a server may
compress it anyway, and a small compressed body can inflate to gigabytes. Here
each coding is undone into at most ``limit`` bytes: the first ``limit`` decoded
bytes are obeyed (RFC 9309, 2.5), the rest never exists in memory.

Pure Python (zlib; brotli, and zstandard, compression.zstd or backports.zstd, when installed).
"""

from __future__ import annotations

import io
import zlib
from typing import Any

__all__ = ["UnsupportedCoding", "decode_body"]

_CHUNK = 16 * 1024


class UnsupportedCoding(ValueError):
    """A content coding this module cannot undo (or a corrupt stream)."""


def decode_body(body: bytes, codings: list[str], limit: int) -> tuple[bytes, bool]:
    """``body`` with ``codings`` (in the order they were applied) undone, and
    whether it was cut at ``limit`` bytes. A stream cut short (a download stopped
    at the size limit) gives what it holds."""
    truncated = False
    pending = [c.strip().lower() for c in codings if c.strip() and c.strip().lower() != "identity"]
    # Inner stages may hold a little more than the result: the last one is cut at `limit`.
    for index, coding in enumerate(reversed(pending)):
        last = index == len(pending) - 1
        bound = limit if last else 2 * limit + 65536
        body, cut = _decode_one(body, coding, bound)
        truncated = truncated or cut
    return body, truncated


def _decode_one(body: bytes, coding: str, bound: int) -> tuple[bytes, bool]:
    if coding in ("gzip", "x-gzip"):
        return _inflate(body, 16 + zlib.MAX_WBITS, bound)
    if coding == "deflate":
        try:
            return _inflate(body, zlib.MAX_WBITS, bound)
        except UnsupportedCoding:  # raw deflate, as some servers send it
            return _inflate(body, -zlib.MAX_WBITS, bound)
    if coding == "br":
        return _unbrotli(body, bound)
    if coding == "zstd":
        return _unzstd(body, bound)
    raise UnsupportedCoding(f"unsupported Content-Encoding {coding!r}")


def _inflate(body: bytes, wbits: int, bound: int) -> tuple[bytes, bool]:
    decompressor = zlib.decompressobj(wbits)
    out = bytearray()
    data = body
    try:
        while data and len(out) <= bound:
            out += decompressor.decompress(data, bound + 1 - len(out))
            data = decompressor.unconsumed_tail
            if decompressor.eof:
                if wbits <= zlib.MAX_WBITS:  # zlib or raw deflate: one stream
                    break
                # gzip: a body may be several members (RFC 1952, 2.2), each decoded in turn.
                data = decompressor.unused_data
                decompressor = zlib.decompressobj(wbits)
    except zlib.error as exc:
        if not out:
            raise UnsupportedCoding(f"corrupt compressed body: {exc}") from None
    return _cut(out, bound)


def _unbrotli(body: bytes, bound: int) -> tuple[bytes, bool]:
    try:
        import brotli  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        try:
            import brotlicffi as brotli  # type: ignore[no-redef,import-not-found,unused-ignore]
        except ImportError:
            raise UnsupportedCoding("Content-Encoding 'br' needs the brotli package") from None
    decompressor = brotli.Decompressor()
    out = bytearray()
    try:
        try:
            # brotli 1.2 and later bound the output of each call, whatever the input
            # (256 bytes of a bomb inflate to 150 MB and more otherwise).
            out += decompressor.process(body, output_buffer_limit=_CHUNK)
            while len(out) <= bound and not decompressor.is_finished():
                piece = decompressor.process(b"", output_buffer_limit=_CHUNK)
                if not piece:
                    break
                out += piece
        except TypeError:  # an older brotli, or brotlicffi, without output_buffer_limit
            decompressor = brotli.Decompressor()
            # Small input pieces, so the output of one stays small even for a bomb.
            for start in range(0, len(body), 256):
                out += decompressor.process(body[start:start + 256])
                if len(out) > bound:
                    break
    except brotli.error as exc:
        if not out:
            raise UnsupportedCoding(f"corrupt brotli body: {exc}") from None
    return _cut(out, bound)


def _unzstd(body: bytes, bound: int) -> tuple[bytes, bool]:
    try:
        import zstandard  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return _unzstd_stdlib(body, bound)
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body), read_across_frames=True)
    return _read_bounded(reader, bound, zstandard.ZstdError)


def _unzstd_stdlib(body: bytes, bound: int) -> tuple[bytes, bool]:
    """zstd through ``compression.zstd`` (Python 3.14) or ``backports.zstd`` (what
    Scrapy's HttpCompressionMiddleware uses)."""
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        try:
            from backports import zstd  # type: ignore[import-not-found,no-redef]
        except ImportError:
            raise UnsupportedCoding("Content-Encoding 'zstd' needs Python 3.14, backports.zstd or zstandard") \
                from None
    return _read_bounded(zstd.ZstdFile(io.BytesIO(body)), bound, zstd.ZstdError)


def _read_bounded(reader: Any, bound: int, error: type[Exception]) -> tuple[bytes, bool]:
    """Read a zstd stream ``reader`` in chunks, stopping past ``bound`` bytes. A
    stream cut short gives what it holds; a corrupt one, nothing, is refused."""
    out = bytearray()
    try:
        while len(out) <= bound:
            piece = reader.read(min(_CHUNK, bound + 1 - len(out)))
            if not piece:
                break
            out += piece
    except EOFError:  # a stream cut short: what it holds
        pass
    except error as exc:
        if not out:
            raise UnsupportedCoding(f"corrupt zstd body: {exc}") from None
    return _cut(out, bound)


def _cut(out: bytearray, bound: int) -> tuple[bytes, bool]:
    if len(out) > bound:
        return bytes(out[:bound]), True
    return bytes(out), False
