"""The bytes a robots.txt keeps (scrapy_rfc9309/core/robots_body.py), called directly: its size and
the parsing bound, the bytes kept as fetched up to that bound, reduced to its records and
compressed from the sizes that say so, and the text the parser reads from each form. Kills the
mutants the parsing tests leave alive (docs/development.md, "Mutation testing")."""

from __future__ import annotations

import random
import zlib

import pytest

from scrapy_rfc9309.core import robots_body
from scrapy_rfc9309.core.robots_body import COMPRESS_AT_READ, COMPRESS_FROM, REDUCE_FIRST_FROM, RobotsBody
from scrapy_rfc9309.core.robotstxt import RobotsTxt
from scrapy_rfc9309.core.syntax import (
    DEFAULT_MAX_BYTES,
    MAX_LINE_BYTES,
    has_long_line,
    normalize,
    prepare,
    records_text,
)

RULES = b"User-agent: *\nDisallow: /private\nAllow: /private/ok\n"
#: A line the records leave out: its reduced form is an empty line.
COMMENT = b"# a comment line, kept only while the file keeps its bytes as fetched\n"


def _stored(body: RobotsBody) -> bytes:
    """The bytes the file holds, decompressed when they are compressed."""
    return zlib.decompress(body._source, -15) if body._flags & robots_body._COMPRESSED else body._source


def _compressed(body: RobotsBody) -> bool:
    return bool(body._flags & robots_body._COMPRESSED)


@pytest.mark.parametrize("size", [0, 1, 64, 255, 256, 511, 512, 513, 40_000, 100_000])
def test_compressed_bytes_read_back_with_the_largest_window(size: int) -> None:
    body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    packed = robots_body._compress(body)
    assert zlib.decompress(packed, -15) == body
    if size >= 40_000:
        assert len(packed) < size // 2  # the fastest level still packs a repeated pattern


def test_the_body_is_kept_as_fetched_up_to_the_parsing_bound() -> None:
    small = RobotsBody(RULES, 1000)
    assert small.body == RULES and small.size == len(RULES) and not small.truncated and not small.reduced
    assert small._source is RULES and not _compressed(small)  # a small file costs nothing until it is asked
    cut = RobotsBody(RULES + b"#" * 100, len(RULES) + 1)
    assert cut.body == RULES + b"#" and cut.size == len(RULES) + 100 and cut.truncated
    assert len(cut._source) == len(RULES) + 1  # the bytes beyond the bound are not kept
    whole = RobotsBody(RULES, len(RULES))
    assert whole.body == RULES and not whole.truncated


def test_text_is_read_as_its_utf8_octets() -> None:
    body = RobotsBody("User-agent: *\nDisallow: /é\n")
    assert body.body == "User-agent: *\nDisallow: /é\n".encode() and body.size == 28


def test_the_url_and_the_flags_are_kept() -> None:
    assert RobotsBody(RULES, url="https://h/robots.txt").url == "https://h/robots.txt"
    assert RobotsBody(RULES, url="").url is None
    assert RobotsBody(RULES)._speedups and not RobotsBody(RULES, speedups=False)._speedups
    assert RobotsBody(b"x" * 300, 200).size == 300  # the size is kept above the flags, whole


def test_a_large_body_is_reduced_to_its_records_as_it_is_read() -> None:
    body = COMMENT * (COMPRESS_AT_READ // len(COMMENT) + 1) + RULES
    assert len(body) >= COMPRESS_AT_READ
    for speedups in (True, False):
        read = RobotsBody(body, speedups=speedups)
        assert read.reduced and read.size == len(body) and not read.truncated
        records = records_text(prepare(body, len(body))[0], speedups).encode()
        assert read.body == records == read.records_body
        assert _compressed(read)  # mostly empty lines: compressed now
        assert len(read._source) < len(records) // 4


def test_a_large_body_whose_records_are_most_of_it_is_not_compressed_as_it_is_read() -> None:
    rule = b"Disallow: /a/long/path/of/a/rule/that/fills/the/file\n"
    body = b"User-agent: *\n" + rule * (COMPRESS_AT_READ // len(rule) + 1)
    read = RobotsBody(body)
    assert read.reduced and not _compressed(read)  # compressed once its first question leaves its rules out
    assert read.body == records_text(prepare(body, len(body))[0]).encode()


def test_a_large_body_at_the_bound_is_reduced_a_byte_less_is_not() -> None:
    filler = COMMENT * ((COMPRESS_AT_READ - len(RULES)) // len(COMMENT))
    at = RULES + filler + b"#" * (COMPRESS_AT_READ - len(RULES) - len(filler))
    assert len(at) == COMPRESS_AT_READ
    assert RobotsBody(at).reduced
    below = RobotsBody(at[:-1])
    assert not below.reduced and below.body == at[:-1]
    assert not _compressed(below)  # compressed on its first question, not as it is read


def test_a_large_body_cut_at_the_bound_is_reduced_to_the_records_within_it() -> None:
    tail = b"User-agent: late\nDisallow: /late\n"
    body = RULES + COMMENT * (COMPRESS_AT_READ // len(COMMENT) + 1) + tail
    read = RobotsBody(body, len(body) - len(tail))
    assert read.truncated and read.reduced and b"late" not in read.body
    assert read.body == records_text(prepare(body, len(body) - len(tail))[0]).encode()
    assert _compressed(read)  # the records are a quarter of the bytes parsed


def test_a_large_body_kept_as_fetched_is_compressed_as_it_is_read() -> None:
    body = RULES + COMMENT * (COMPRESS_AT_READ // len(COMMENT) + 1)
    kept = RobotsBody(body, keep_body=True)
    assert not kept.reduced and _compressed(kept) and kept.body == body
    assert len(kept._source) < len(body) // 4
    cut = RobotsBody(body, len(body) - 10, keep_body=True)
    assert cut.body == body[:-10] and cut.truncated


def test_a_kept_body_with_a_line_longer_than_the_parser_reads_keeps_that_line_cut() -> None:
    long_line = b"Disallow: /" + b"a" * (COMPRESS_AT_READ + 10) + b"\n"
    body = RULES + long_line
    kept = RobotsBody(body, len(body), keep_body=True)
    assert _compressed(kept) and len(kept._source) < MAX_LINE_BYTES
    assert kept.body == RULES + long_line[:MAX_LINE_BYTES] + b"\n"
    assert kept._text() == prepare(body, len(body))[0]


def test_a_kept_body_of_short_lines_is_kept_whole() -> None:
    body = RULES + COMMENT * (COMPRESS_AT_READ // len(COMMENT) + 1)
    kept = RobotsBody(body, keep_body=True)
    assert _stored(kept) == body and not kept._flags & robots_body._NORMALIZED
    assert kept.records_body == records_text(prepare(body, len(body))[0]).encode()  # compressed, not reduced


@pytest.mark.parametrize("speedups", [True, False])
def test_the_first_question_keeps_the_records_only(speedups: bool) -> None:
    body = RULES + COMMENT * 20
    robots = RobotsTxt(body, speedups=speedups)
    assert not robots.reduced and robots.records_body == records_text(prepare(body, len(body))[0]).encode()
    assert not robots.allowed("https://h/private/x", "bot")
    assert robots.reduced and robots.size == len(body)
    assert robots.body == records_text(prepare(body, len(body))[0]).encode() == robots.records_body
    assert robots.allowed("https://h/private/ok", "bot") and robots.allowed("https://h/x", "bot")


def test_kept_records_are_compressed_from_their_bound_when_that_makes_them_shorter() -> None:
    short = RobotsBody(RULES)
    short._keep(b"user-agent:*\n" + b"\n" * (COMPRESS_FROM - 14), None)
    assert len(short._source) == COMPRESS_FROM - 1 and not _compressed(short)
    at = RobotsBody(RULES)
    at._keep(b"user-agent:*\n" + b"\n" * (COMPRESS_FROM - 13), None)
    assert _compressed(at) and at.body == ("user-agent:*\n" + "\n" * (COMPRESS_FROM - 13)).encode()
    text = RobotsBody(RULES)  # a records text is kept as its octets
    text._keep("user-agent:*\n" + "\n" * (COMPRESS_FROM - 13), None)
    assert text._source == at._source and text._flags == at._flags
    above = RobotsBody(RULES)
    above._keep(b"user-agent:*\n" + b"\n" * (COMPRESS_FROM + 200), None)
    assert _compressed(above) and len(above._source) < 50
    varied = random.Random(0).randbytes(COMPRESS_FROM + 44)  # no repeat: compression makes it longer
    kept = RobotsBody(RULES)
    kept._keep(varied, None)
    assert not _compressed(kept) and kept.body == varied


def test_kept_records_keep_the_size_url_and_flags_of_the_file() -> None:
    body = RobotsBody(RULES + b"#" * 10, len(RULES), speedups=False, url="https://h/robots.txt")
    body._keep(b"user-agent:*\ndisallow:/private", None)
    assert body.reduced and body.truncated and not body._speedups and body.size == len(RULES) + 10
    assert body.url == "https://h/robots.txt" and body.body == b"user-agent:*\ndisallow:/private"
    assert body.records_body == body.body
    assert body._text() == "user-agent:*\ndisallow:/private\n"


def test_a_copy_shares_the_bytes_and_the_rules_left_out() -> None:
    robots = RobotsTxt(RULES + COMMENT * 20, url="https://h/robots.txt")
    assert not robots.allowed("https://h/private/x", "bot")
    copy = robots.copy()
    assert copy._source is robots._source and copy._flags == robots._flags and copy._rules is robots._rules
    assert copy.url == robots.url and copy.body == robots.body and copy.reduced
    assert not copy.allowed("https://h/private/x", "other") and copy.allowed("https://h/private/ok", "other")


@pytest.mark.parametrize("speedups", [True, False])
def test_a_body_of_the_reduce_first_size_is_read_as_its_records(speedups: bool) -> None:
    body = b"\xef\xbb\xbf" + RULES.replace(b"\n", b"\r\n") + COMMENT * (REDUCE_FIRST_FROM // len(COMMENT) + 1)
    file = RobotsBody(body, speedups=speedups)
    assert not file.reduced and file.body == body
    prepared = prepare(body, len(body))[0]
    # With the accelerator, read for its records alone: no text of the whole body is made.
    assert file._text() == (records_text(prepared) + "\n" if speedups else prepared)
    small = RobotsBody(body[:REDUCE_FIRST_FROM - 1], speedups=speedups)
    assert small._text() == prepare(body[:REDUCE_FIRST_FROM - 1], REDUCE_FIRST_FROM)[0]
    if speedups:
        at = body[:REDUCE_FIRST_FROM]
        assert RobotsBody(at)._text() == records_text(prepare(at, len(at))[0]) + "\n"
    assert RobotsTxt(body, speedups=speedups).rules("bot") == RobotsTxt(RULES).rules("bot")


def test_a_small_body_is_read_as_prepared() -> None:
    body = b"\xef\xbb\xbf" + RULES.replace(b"\n", b"\r") + b"# comment"
    assert RobotsBody(body)._text() == prepare(body, len(body))[0]
    assert RobotsBody(body)._text().startswith("User-agent: *\nDisallow")


# --------------------------------------------------------------------------- the size bounds of the syntax


def test_the_bounds_are_the_rfcs_and_googles() -> None:
    assert DEFAULT_MAX_BYTES == 500 * 1024  # RFC 9309, 2.5: at least 500 KiB parsed
    assert MAX_LINE_BYTES == 16663  # Google's reference parser keeps the first 2083 * 8 - 1 bytes of a line


@pytest.mark.parametrize(("body", "read"), [
    (b"\xef\xbb\xbfUser-agent: *", b"User-agent: *"),
    (b"\xef\xbbUser-agent: *", b"User-agent: *"),  # a partial byte order mark is skipped too, as Google does
    (b"\xefUser-agent: *", b"User-agent: *"),
    (b"\xef\xbf\xbdUser-agent: *", b"\xbf\xbdUser-agent: *"),  # not a byte order mark: one byte skipped
    (b"a\xef\xbb\xbfb", b"a\xef\xbb\xbfb"),  # only at the start
    (b"\xf0\x9f\xa4\x96: x", b"\xf0\x9f\xa4\x96: x"),  # other leading bytes are kept
    (b"\xff", b"\xff"),
    (b"a\r\nb\rc\n\rd", b"a\nb\nc\n\nd"),
    (b"a\r\n", b"a\n"),
])
def test_normalize_skips_a_byte_order_mark_and_ends_lines_with_newlines(body: bytes, read: bytes) -> None:
    assert normalize(body, 100) == (read, False)


def test_normalize_keeps_the_first_max_bytes() -> None:
    assert normalize(b"abcdef", 3) == (b"abc", True)
    assert normalize(b"abc", 3) == (b"abc", False)
    assert normalize(b"\xef\xbb\xbfabc", 4) == (b"a", True)  # the bound counts the octets as fetched
    assert prepare(b"ab\xffc", 10) == ("ab\udcffc\n", False)  # a byte that is not UTF-8 kept as an escape
    assert prepare(b"abc", 2) == ("ab\n", True)


@pytest.mark.parametrize("before", [b"", b"x\n", b"y" * 9000 + b"\n"])
@pytest.mark.parametrize("after", [b"", b"\nz", b"\n" + b"w" * 20000])
def test_a_line_longer_than_the_parser_reads_is_cut(before: bytes, after: bytes) -> None:
    longest = b"a" * MAX_LINE_BYTES
    assert not has_long_line(before + longest + after.replace(b"w" * 20000, b"w" * MAX_LINE_BYTES))
    assert normalize(before + longest + b"\n" + longest, 10**6) == (before + longest + b"\n" + longest, False)
    long = before + longest + b"bc" + after
    assert has_long_line(long)
    expected = b"\n".join(line[:MAX_LINE_BYTES] for line in long.split(b"\n"))
    assert normalize(long, 10**6) == (expected, False)
    assert expected == before + longest + after.replace(b"w" * 20000, b"w" * MAX_LINE_BYTES)


@pytest.mark.parametrize("offset", [0, 1, MAX_LINE_BYTES // 2 - 1, MAX_LINE_BYTES // 2, MAX_LINE_BYTES // 2 + 1,
                                    MAX_LINE_BYTES - 1, MAX_LINE_BYTES, MAX_LINE_BYTES + 1, 3 * MAX_LINE_BYTES])
def test_a_long_line_is_found_wherever_it_starts(offset: int) -> None:
    prefix = (b"x" * 99 + b"\n") * (offset // 100) + b"x" * (offset % 100)
    if prefix and offset % 100:
        prefix = prefix[:-1] + b"\n"
    for length, long in ((MAX_LINE_BYTES, False), (MAX_LINE_BYTES + 1, True)):
        line = b"b" * length
        assert has_long_line(prefix + line) is long
        assert has_long_line(prefix + line + b"\n" + b"c" * 10) is long
        assert has_long_line(prefix + line + b"\n" + b"c" * MAX_LINE_BYTES) is long


def test_a_kept_body_that_repeats_itself_far_apart_reads_back() -> None:
    """The compressed bytes are read with the largest window: a body whose copies are 20 KB
    apart (further than a smaller window reaches) reads back as fetched."""
    block = random.Random(9309).randbytes(20_000)
    body = (RULES + block) * 7
    kept = RobotsBody(body, len(body), keep_body=True)
    assert _compressed(kept) and len(kept._source) < len(body) // 4
    assert kept.body == body


def test_a_large_body_without_records_keeps_nothing_compressed() -> None:
    """Records are kept compressed only when that makes them shorter (no records: no bytes)."""
    read = RobotsBody(COMMENT * (COMPRESS_AT_READ // len(COMMENT) + 1))
    assert read.reduced and read.body == b"" and read._source == b"" and not _compressed(read)
