"""The C accelerator: built where a compiler is (required in CI), and in step
with the pure-Python tiers (the property tests run both)."""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
from array import array
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scrapy_rfc9309
from scrapy_rfc9309 import parse
from scrapy_rfc9309.core import groups, matcher
from scrapy_rfc9309.core import syntax as parser
from scrapy_rfc9309.core.urls import path_of

ROOT = Path(__file__).resolve().parent.parent

BODY = (
    "User-agent: *\nDisallow: /private\nAllow: /private/ok\nDisallow: /*.php$\nDisallow: /*?s=\n"
    "Allow: /a*b*c$\nDisallow: /a\n"
)
URLS = [
    "http://h/private/x", "http://h/private/ok", "http://h/a.php", "http://h/a.php?x", "http://h/x?s=1",
    "http://h/abc", "http://h/abcd", "http://h/ab/c", "http://h/robots.txt", "http://h/%41bc", "http://h/é",
    "http://h/x#frag", "http://h", "http://h?q", "//h/private", "/private", "http://h;p/private",
    b"http://h/private/x", "HTTPS://h:8080/private/ok",
]


def test_built_in_ci() -> None:
    """CI fails when the extension did not build (or does not load)."""
    if os.environ.get("CI") == "true":
        assert matcher.FastMatcher is not None, "the C accelerator did not build"
        assert parser.scan_lines is not None, "the C accelerator did not build"
        assert scrapy_rfc9309.ACCELERATED


def test_the_accelerated_flag_tells_which_matcher_decides() -> None:
    assert scrapy_rfc9309.ACCELERATED == (matcher.FastMatcher is not None and parser.scan_lines is not None)
    used = type(parse(BODY)._group_for("bot").matcher.allowed) is matcher.FastMatcher
    assert used == scrapy_rfc9309.ACCELERATED
    assert scrapy_rfc9309.matcher_in_use().startswith("C accelerator" if used else "pure Python")


WITHOUT_EXTENSION = """
import importlib.abc, json, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "scrapy_rfc9309.core._speedups":
            raise ImportError("refused by the test")
        return None

sys.meta_path.insert(0, Refuse())
import scrapy_rfc9309
body, urls = json.loads(sys.argv[1])
robots = scrapy_rfc9309.parse(body)
print(json.dumps([scrapy_rfc9309.ACCELERATED, scrapy_rfc9309.matcher_in_use(),
                  [robots.allowed(url, "bot") for url in urls]]))
"""


def test_without_the_extension_the_flag_is_false_and_the_answers_the_same() -> None:
    urls = [url for url in URLS if isinstance(url, str)]
    done = subprocess.run([sys.executable, "-c", WITHOUT_EXTENSION, json.dumps([BODY, urls])], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    accelerated, words, answers = json.loads(done.stdout)
    assert accelerated is False
    assert words.startswith("pure Python")
    assert answers == [parse(BODY).allowed(url, "bot") for url in urls]


@pytest.mark.skipif(matcher.FastMatcher is None, reason="the C accelerator is not built here")
def test_accelerated_agrees_with_pure_python() -> None:
    fast = parse(BODY)
    assert type(fast._group_for("bot").matcher.allowed) is matcher.FastMatcher
    slow = parse(BODY, speedups=False)
    assert type(slow._group_for("bot").matcher.allowed) is not matcher.FastMatcher
    for url in URLS:
        assert fast.allowed(url, "bot") == slow.allowed(url, "bot") == slow.verdict(url, "bot").allowed, url


def test_matchers_are_freed() -> None:
    """A dropped file frees its groups and their matchers: the accelerator holds no
    reference back to a group (it has no GC support, so such a cycle would never be
    freed)."""

    def alive() -> int:
        gc.collect()
        return sum(type(obj) in (matcher.Matcher, groups.MergedGroup) for obj in gc.get_objects())

    before = alive()
    for _ in range(20):
        rt = parse(BODY)
        assert not rt.allowed("http://h/private/x", "bot")
        assert not rt.verdict("http://h/private/x", "bot").allowed
    del rt
    assert alive() <= before


def fast_matcher(patterns: list[str], codes: list[int], hash_above: int = 0) -> matcher._Accelerated:
    return matcher.FastMatcher(patterns, array("I", codes), matcher._c_form, hash_above)  # type: ignore[arg-type]


@pytest.mark.skipif(matcher.FastMatcher is None, reason="the C accelerator is not built here")
def test_accelerator_rejects_bad_input() -> None:
    with pytest.raises(TypeError):
        fast_matcher([b"/a"], [1])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        fast_matcher(["/a"], [])
    with pytest.raises(ValueError):
        matcher.FastMatcher(["/a"], b"\x01", matcher._c_form, 0)  # not an array("I")
    with pytest.raises(ValueError):  # canon() is asked about wildcard rules written with "%" or non-ASCII
        matcher.FastMatcher(["/*%41"], array("I", [1]), lambda p: "/é", 0)
    with pytest.raises(TypeError):
        matcher.FastMatcher(["/*%41"], array("I", [1]), lambda p: 1, 0)
    with pytest.raises(TypeError):
        fast_matcher(["/a"], [1])("a", "b")  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        fast_matcher(["/a"], [1]).best_rule("/é")
    with pytest.raises(matcher._TwoForms):  # a piece with two forms: the pure-Python tiers decide
        fast_matcher(["/*%2F"], [1])
    for not_decoded in ["/\ud800", "/\udcc3\udca9"]:  # text no file decodes to (see RobotsTxt.rules)
        with pytest.raises(ValueError):
            fast_matcher([not_decoded], [2])
    with pytest.raises(ValueError):  # a rule's line must be empty in the records
        fast_matcher(["/a"], [2]).fill(b"x\nnot empty", (b"d:", b"a:"))
    with pytest.raises(TypeError):
        fast_matcher(["/a"], [2]).fill(b"\n", (b"d:",))


@pytest.mark.skipif(matcher.FastMatcher is None, reason="the C accelerator is not built here")
@pytest.mark.parametrize("hash_above", [10**6, 0])
@pytest.mark.parametrize("first_line", [1, 20000])
def test_matcher_is_one_compact_object(hash_above: int, first_line: int) -> None:
    """A matcher is its group's matcher by itself, in one allocation: a fixed
    header, 2 octets a text offset and 2 a literal rule's line, 8 a wildcard rule,
    beside the copied text (and the hash table of a large group, 2 octets a slot); twice as much
    where a line is 16384 or more (or the text 64 KiB). It names each rule by its
    line and gives it back as written."""
    literals = [f"/section-{n}/page" for n in range(300)]
    wildcards = [f"/*/item-{n}/*.html$" for n in range(40)]
    patterns = literals + wildcards
    codes = [(first_line + n) << 1 | n % 2 for n in range(len(patterns))]
    fast = fast_matcher(patterns, codes, hash_above)
    text = sum(map(len, literals)) + sum(len(w) - 3 for w in wildcards)  # without "*" and "$"
    width = 2 if first_line < 16384 else 4
    table = 0 if hash_above else width * 1024 + 4 + max(map(len, literals)) + 1  # 300 keys: 1024 slots, the longest
    header = 48
    offsets = len(literals) + 3 * len(wildcards) + 1
    read = header + width * (offsets + len(literals)) + 4 * width * len(wildcards) + text  # by a decision
    assert sys.getsizeof(fast) == (read + 3) // 4 * 4 + table
    assert fast.allowed is fast
    assert fast.best_rule("/section-7/page/x") == matcher.Rule(True, "/section-7/page", first_line + 7)
    assert fast.best_rule("/a/item-3/b.html") == matcher.Rule(True, "/*/item-3/*.html$", first_line + 303)
    assert fast.best_rule("/elsewhere") is None
    assert fast.written() == [matcher.Rule(bool(code & 1), pattern, code >> 1)
                              for pattern, code in zip(patterns, codes, strict=True)]
    assert all(type(rule) is matcher.Rule for rule in fast.written())


# Patterns the tables hold otherwise than as written: escapes and non-ASCII text
# (canonical form), bytes that are not UTF-8 (surrogates), equal texts (one key).
WRITTEN = ["/a", "/a", "/%61", "/%2F", "/%2f", "/é", "/%C3%A9", "/\udcff", "/\udce9é", "/x$", "/x*y", "/%78*y$",
           "*", "$", "/a$b", "/%", "/*%7E*"]


#: URLs whose rule the C tier finds itself and that it leaves to the Python tier.
URLS = ["http://h/a", "https://h:8080/A?q#frag", "http://h/%2F", "http://h/é", "HTTP://h/%c3%a9", "http://h/x",
        "http://h/xy#y", "http://h/a$b", "http://h/%25", "http://h/~", "http://h", "http://h?a", "h/a", "",
        "http://h/robots.txt", "http://h/robots.txt?x", "http://h;p/a", "//h/a"]


@pytest.mark.skipif(matcher.FastMatcher is None, reason="the C accelerator is not built here")
@settings(max_examples=300, deadline=None)
@given(patterns=st.lists(st.sampled_from(WRITTEN), min_size=1, max_size=12), data=st.data())
def test_a_matcher_gives_back_every_rule_as_written(patterns: list[str], data: st.DataObject) -> None:
    """Whatever its tables hold, a matcher gives back the rules it was given, in
    their order, and the deciding rule as written, and writes them back into
    records: as the pure-Python matcher does."""
    step = data.draw(st.sampled_from([1, 2, 9000]))
    allows = data.draw(st.lists(st.booleans(), min_size=len(patterns), max_size=len(patterns)))
    codes = [(1 + n * step) << 1 | allow for n, allow in enumerate(allows)]
    fast = fast_matcher(patterns, codes, data.draw(st.sampled_from([-1, 10**6])))
    pure = matcher.Matcher(patterns, array("I", codes))
    assert fast.written() == pure.written()
    records = b"\n".join(b"" if n % step == 0 else b"other" for n in range(len(patterns) * step + 1))
    assert fast.fill(records, (b"d:", b"a:")) == pure.fill(records, (b"d:", b"a:"))
    for path in ["/a", "/A", "/%2F", "/%2f", "/%C3%A9", "/%FF", "/x", "/xy", "/a$b", "/%25", "/~", "/", ""]:
        assert fast.best_rule(path) == pure.best_rule(path), path
    # The rule of a URL, decoded in C or by the Python tier (bytes, lone surrogates, no path, a long escaped one).
    for url in [*URLS, "http://h/x?" + "%78" * 1000 + "y", b"http://h/%78y", "http://h/\udcff"]:
        path = path_of(url if isinstance(url, str) else url.decode("utf-8", "surrogateescape"))
        expected = None if path == "/robots.txt" else pure.best_rule(path)
        assert fast.url_rule(url) == pure.url_rule(url) == expected, url


def test_groups_without_rules_are_shared() -> None:
    """Files without rules for an agent share one merged group (and matcher) per
    token: a broad crawl keeps many. A group with a record is a file's own."""
    files = [parse(body) for body in (b"", b"# nothing\n", b"User-agent: other\nDisallow: /\n")]
    groups = [robots._group_for("bot") for robots in files]
    assert groups[0] is groups[1] is groups[2] and groups[0].token == ""
    stars = [parse(body)._group_for("bot") for body in (b"User-agent: *\n", b"User-agent: *\nDisallow:\n")]
    assert stars[0] is stars[1] and stars[0].token == "*" and stars[0] is not groups[0]
    delayed = parse(b"User-agent: *\nCrawl-delay: 3\n")
    assert delayed._group_for("bot") is not stars[0] and delayed.crawl_delay("bot") == 3.0
    assert parse(b"User-agent: *\n").crawl_delay("bot") is None
    for robots in files:
        assert robots.allowed("http://h/x", "bot") and robots.verdict("http://h/x", "bot").rule is None


# -- Large groups: the C accelerator hashes their literal rules instead of sorting them ----

# Short texts over few characters, so that rules share prefixes and texts often;
# "%61" is "a" and "%2F" stays encoded, "é" is "%C3%A9".
PIECES = ["/", "a", "b", "%61", "%2F", "é", "$", "?"]


def group_body(rng: random.Random, count: int) -> str:
    """One group of ``count`` rules: mostly literals (many equal, some equal only
    once canonical), some wildcards and anchors."""
    lines = ["User-agent: *"]
    for _ in range(count):
        pattern = "/" + "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 7)))
        if rng.random() < 0.05:
            pattern += rng.choice(["*", "*b", "*a$", "$"])
        lines.append(f"{rng.choice(['Allow', 'Disallow'])}: {pattern}")
    return "\n".join(lines) + "\n"


def url_list(rng: random.Random, count: int) -> list[str | bytes]:
    return ["http://h/" + "".join(rng.choice([*PIECES, "x"]) for _ in range(rng.randint(0, 9))) for _ in range(count)]


@pytest.mark.skipif(matcher.FastMatcher is None, reason="the C accelerator is not built here")
@pytest.mark.parametrize("seed", range(4))
def test_large_group_agrees_with_pure_python(seed: int) -> None:
    """More literal rules than ``_C_HASH_ABOVE``: hashed in C, same verdicts (the
    deciding rule included) as the pure-Python tier."""
    rng = random.Random(seed)
    body = group_body(rng, 3 * matcher._C_HASH_ABOVE)
    fast = parse(body)
    slow = parse(body, speedups=False)
    assert type(fast._group_for("bot").matcher.allowed) is matcher.FastMatcher
    for url in url_list(rng, 2000):
        want = slow.verdict(url, "bot")
        assert fast.verdict(url, "bot") == want, url
        assert fast.allowed(url, "bot") == slow.allowed(url, "bot") == want.allowed, url


@pytest.mark.skipif(matcher.FastMatcher is None, reason="the C accelerator is not built here")
@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32), count=st.integers(1, 40), hash_above=st.sampled_from([-1, 0, 1, 5, 10**6]))
def test_hashed_and_sorted_keys_agree(seed: int, count: int, hash_above: int) -> None:
    rng = random.Random(seed)
    body = group_body(rng, count)
    slow = parse(body, speedups=False)
    fast = parse(body)
    with mock.patch.object(matcher, "_C_HASH_ABOVE", hash_above):
        fast._group_for("bot")
    for url in [*url_list(rng, 30), "http://h/robots.txt", b"http://h/a", "//h/a%62", "http://h", "http://h?a"]:
        assert fast.verdict(url, "bot") == slow.verdict(url, "bot"), url
        assert fast.allowed(url, "bot") == slow.allowed(url, "bot"), url


@pytest.mark.skipif(matcher.FastMatcher is None, reason="the C accelerator is not built here")
@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32), count=st.integers(64, 700),
       stem=st.sampled_from(["", "/abc", "/abcdefgh", "/ab%61"]))
def test_many_sorted_keys_agree_with_pure_python(seed: int, count: int, stem: str) -> None:
    """From 64 literal keys a sorted matcher orders them by their first 8 octets, then each run
    sharing those by text (the better rule first among equal texts): keys shorter than 8 octets,
    equal ones, and a stem that makes every key share its first octets, with the same verdicts
    (the deciding rule included) as the pure-Python tier."""
    rng = random.Random(seed)
    lines = group_body(rng, count).splitlines()
    body = "\n".join([lines[0]] + [line.replace(": /", ": " + stem + "/", 1) if rng.random() < 0.7 else line
                                    for line in lines[1:]]) + "\n"
    slow = parse(body, speedups=False)
    fast = parse(body)
    with mock.patch.object(matcher, "_C_HASH_ABOVE", 10**6):
        fast._group_for("bot")
    urls = url_list(rng, 200) + ["http://h" + stem + url[len("http://h"):] for url in url_list(rng, 200)]  # type: ignore[operator]
    for url in urls:
        assert fast.verdict(url, "bot") == slow.verdict(url, "bot"), url
    assert fast.rules("bot") == slow.rules("bot")


# -- The C line scanner against the regex one -----------------------------------------------

FIELDS = ["User-agent", "user-agents", "USER AGENT", "useragent", "Allow", "Disallow", "disalow", "DISSALLOW",
          "Sitemap", "site-map", "Crawl-delay", "crawl delay", "Content-Usage", "Content-Signal", "Host", "Other",
          "allowance", "user-agentx"]
SEPARATORS = [":", " :", "\t:", " ", "\t", "  ", ":\t", ""]
VALUES = ["", " ", "/a", "/a b", "*", "Foo Bar", "/x # c", "#c", "/é", "\x00", "/a\t", "\x0b/v\x0c", "train-ai=n",
          "FooBot", "foo", "* x", "*x", "MJ12bot", "foo-bar_baz", "Bar/1.0", "5"]
line_text = st.tuples(
    st.sampled_from(["", " ", "\t", "\x0b"]), st.sampled_from(FIELDS), st.sampled_from(SEPARATORS),
    st.sampled_from(VALUES),
).map("".join)
body_text = st.lists(st.one_of(line_text, st.text(max_size=12)), max_size=25).map("\n".join)


def shape(result: parser.ParseResult) -> object:
    groups = [(g.agents, g.rules, g.records, list(g.special or ())) for g in result.groups]
    return groups, result.sitemaps, result.hosts, sorted(result.by_token), result.truncated


@pytest.mark.skipif(parser.scan_lines is None, reason="the C accelerator is not built here")
@settings(max_examples=500, deadline=None)
@given(body=st.one_of(body_text, body_text.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=500)))
def test_c_scanner_parses_like_the_regex(body: str | bytes) -> None:
    assert shape(parser.parse_body(body)) == shape(parser.parse_body(body, speedups=False))


@pytest.mark.skipif(parser.select_groups is None, reason="the C accelerator is not built here")
@settings(max_examples=500, deadline=None)
@given(body=st.one_of(body_text, body_text.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=500)),
       token=st.sampled_from(["foo", "foobot", "bar", "mj", "foo-bar_baz", "", "x", "other"]), star=st.booleans())
def test_c_selects_the_groups_the_reference_selects(body: str | bytes, token: str, star: bool) -> None:
    """The groups a product token selects, built in C from the text, are the ones the
    whole pure-Python parse selects: same rules, codes, special patterns and
    records (with whether their block names the token and ``*``); without the
    groups of ``*`` when they are not wanted."""
    octets = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    text, _ = parser.prepare(octets, parser.DEFAULT_MAX_BYTES)
    assert parser.select(text, token, star=star) == parser.select(text, token, speedups=False, star=star)


@pytest.mark.skipif(matcher.FastMatcher is None, reason="the C accelerator is not built here")
@settings(max_examples=400, deadline=None)
@given(previous=st.sampled_from([b""]) | st.binary(min_size=32, max_size=32),
       head=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80),
       url=st.text(st.characters(blacklist_categories=())) | st.sampled_from(["http://h/a?b=c#d", 'http://h/"\\']),
       fingerprint=st.binary(max_size=32),
       when=st.floats(min_value=0, max_value=1e12) | st.sampled_from([1789992099.0005, 0.0005, 2.5e-4, 1e16]))
def test_a_ledger_record_is_written_alike_in_c_and_in_python(tmp_path_factory: pytest.TempPathFactory,
                                                             previous: bytes, head: str, url: str, fingerprint: bytes,
                                                             when: float) -> None:
    from scrapy_rfc9309.core import _speedups
    from scrapy_rfc9309.ledger import segments as ledger

    directory = tmp_path_factory.mktemp("records")
    written = []
    for name, write in (("c", _speedups.write_record), ("python", ledger.write_record)):
        fd = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            written.append((write(fd, previous, head, url, fingerprint, when), (directory / name).read_bytes()))
        finally:
            os.close(fd)
    assert written[0] == written[1]
    (digest, size), data = written[0]
    assert size == len(data) and data.endswith(b"\n")
    assert digest == ledger._sha256(previous + data[:-1]).digest()
    line = data[:-1].decode("ascii")
    assert line.startswith(head)
    fields = json.loads('{"u":' + line[len(head):])
    assert fields == {"u": url, "fp": fingerprint.hex(), "t": float(f"{when:.3f}"), "p": previous[:8].hex()}
