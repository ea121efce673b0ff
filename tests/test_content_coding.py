"""``scrapy_rfc9309.lifecycle.content_coding.decode_body``: a robots.txt sent with a
``Content-Encoding`` is undone into at most ``limit`` bytes, whatever it inflates
to. Memory is measured with ``tracemalloc`` (the peak of this test's own
allocations, reset before each decode), so a bomb that is inflated whole, or in
pieces far larger than the limit, fails here."""

from __future__ import annotations

import functools
import gzip
import random
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from optional import missing

from scrapy_rfc9309.lifecycle.content_coding import UnsupportedCoding, decode_body

RULES = b"User-agent: *\nDisallow: /private\n"
LIMIT = 500 * 1024
#: A bomb inflates to this much.
BOMB_SIZE = 1 << 30
#: Peak memory allowed while a bomb is decoded into LIMIT bytes (the result itself, its
#: copies and the decompressor's buffers take a few MB).
MEMORY_BOUND = 40 * 1024 * 1024


def _brotli() -> Any:
    try:
        import brotli
    except ImportError:
        try:
            import brotlicffi as brotli  # type: ignore[no-redef]
        except ImportError:
            missing("neither brotli nor brotlicffi is installed")
    return brotli


def _zstd() -> Any:
    """A module with ``compress`` for zstd, from whichever package is installed."""
    for name in ("compression.zstd", "backports.zstd", "zstandard"):
        try:
            module = __import__(name, fromlist=["compress"])
        except ImportError:
            continue
        return module
    missing("no zstd package (compression.zstd, backports.zstd, zstandard) is installed")


def _pieces(size: int, head: bytes = RULES, chunk: int = 1 << 20) -> Iterator[bytes]:
    """``head`` then newlines, ``size`` bytes in all, a chunk at a time (never held whole)."""
    yield head
    left = size - len(head)
    block = b"\n" * chunk
    while left > 0:
        yield block[: min(chunk, left)]
        left -= chunk


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _deflate(data: bytes) -> bytes:
    return zlib.compress(data)


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _br(data: bytes) -> bytes:
    return bytes(_brotli().compress(data))


def _zst(data: bytes) -> bytes:
    return bytes(_zstd().compress(data))


ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": _gzip, "x-gzip": _gzip, "deflate": _deflate, "br": _br, "zstd": _zst,
}


@functools.cache
def _bomb(coding: str) -> bytes:
    """RULES then newlines, BOMB_SIZE bytes in all, compressed with ``coding``
    (streamed: the inflated form is never in memory)."""
    if coding == "gzip":
        compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return b"".join(compressor.compress(p) for p in _pieces(BOMB_SIZE)) + compressor.flush()
    if coding == "deflate":
        compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS)
        return b"".join(compressor.compress(p) for p in _pieces(BOMB_SIZE)) + compressor.flush()
    if coding == "br":
        brotli = _brotli()
        stream = brotli.Compressor(quality=5)
        return b"".join(stream.process(p) for p in _pieces(BOMB_SIZE)) + stream.finish()
    if coding == "zstd":
        module = _zstd()
        stream = module.ZstdCompressor()
        if module.__name__ == "zstandard":
            stream = stream.compressobj()
        return b"".join(stream.compress(p) for p in _pieces(BOMB_SIZE)) + stream.flush()
    raise AssertionError(coding)


def _decode_measured(body: bytes, codings: list[str], limit: int = LIMIT) -> tuple[bytes, bool, int]:
    """decode_body's answer and the peak of the memory allocated meanwhile."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        decoded, cut = decode_body(body, codings, limit)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    return decoded, cut, peak


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("coding", sorted(ENCODERS))
def test_each_coding_is_undone(coding):
    body = RULES + b"Allow: /public\n" * 20

    assert decode_body(ENCODERS[coding](body), [coding], LIMIT) == (body, False)


def test_raw_deflate_as_some_servers_send_it_is_undone():
    assert decode_body(_raw_deflate(RULES), ["deflate"], LIMIT) == (RULES, False)


@pytest.mark.parametrize("header", [["gzip", "br"], ["gzip, br"], [" GZIP ", "Br"], ["identity", "gzip", "br"]])
def test_several_codings_are_undone_last_applied_first(header):
    encoded = _br(_gzip(RULES))  # "gzip, br": gzip was applied first

    assert decode_body(encoded, [part for value in header for part in value.split(",")], LIMIT) == (RULES, False)


def test_identity_and_empty_codings_change_nothing():
    assert decode_body(RULES, ["identity", " ", ""], LIMIT) == (RULES, False)


def test_a_gzip_body_of_several_members_is_undone_whole():
    """RFC 1952: a gzip file is a series of members (``cat a.gz b.gz``); a rule in
    a later member is part of the file, and must not be lost."""
    encoded = _gzip(b"User-agent: *\n") + _gzip(b"Disallow: /private\n")

    assert decode_body(encoded, ["gzip"], LIMIT) == (RULES, False)


def test_a_zstd_body_of_several_frames_is_undone_whole():
    encoded = _zst(b"User-agent: *\n") + _zst(b"Disallow: /private\n")

    assert decode_body(encoded, ["zstd"], LIMIT) == (RULES, False)


# --------------------------------------------------------------------------- the limit


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_a_body_that_inflates_past_the_limit_is_cut_at_it(coding):
    body = RULES + b"# padding\n" * 10_000  # about 100 KB

    decoded, cut = decode_body(ENCODERS[coding](body), [coding], 5000)

    assert cut is True
    assert decoded == body[:5000]


@pytest.mark.parametrize("coding", ["gzip", "br", "zstd"])
def test_a_body_of_exactly_the_limit_is_not_cut(coding):
    body = RULES + b"#" * (5000 - len(RULES))

    assert decode_body(ENCODERS[coding](body), [coding], 5000) == (body, False)


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_a_bomb_is_decoded_into_the_limit_in_bounded_memory(coding):
    bomb = _bomb(coding)
    assert len(bomb) * 500 < BOMB_SIZE  # it is a bomb

    decoded, cut, peak = _decode_measured(bomb, [coding])

    assert cut is True
    assert len(decoded) == LIMIT
    assert decoded.startswith(RULES) and decoded[len(RULES):] == b"\n" * (LIMIT - len(RULES))
    assert peak < MEMORY_BOUND, f"{coding}: {peak / 1e6:.0f} MB allocated to decode {LIMIT} bytes"


def test_a_double_gzip_bomb_is_decoded_into_the_limit_in_bounded_memory():
    bomb = _gzip(_bomb("gzip"))
    assert len(bomb) < 100_000

    decoded, cut, peak = _decode_measured(bomb, ["gzip", "gzip"])

    assert cut is True
    assert len(decoded) == LIMIT and decoded.startswith(RULES)
    assert peak < MEMORY_BOUND, f"{peak / 1e6:.0f} MB allocated"


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_a_stream_cut_short_gives_what_it_holds(coding):
    """A download stopped at ROBOTSTXT_MAX_SIZE leaves a compressed stream without
    its end: the bytes it decodes to are obeyed."""
    # Incompressible, in several zstd blocks (a block is decoded whole or not at all).
    body = RULES + random.Random(0).randbytes(600_000)
    encoded = ENCODERS[coding](body)

    decoded, _ = decode_body(encoded[: len(encoded) // 2], [coding], LIMIT)

    assert decoded.startswith(RULES)
    assert body.startswith(decoded)


# --------------------------------------------------------------------------- what cannot be undone


@pytest.mark.parametrize("coding", ["compress", "x-bzip2", "exi"])
def test_an_unknown_coding_is_refused(coding):
    with pytest.raises(UnsupportedCoding, match=coding):
        decode_body(RULES, [coding], LIMIT)


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_a_body_that_is_not_what_its_coding_says_is_refused(coding):
    ENCODERS[coding](b"")  # skips when the coding's package is missing
    with pytest.raises(UnsupportedCoding):
        decode_body(b"User-agent: *\nDisallow: /private\n" * 3, [coding], LIMIT)
