"""The pure readers of the response-side usage sources (``scrapy_rfc9309.usage.response_sources``,
``scrapy_rfc9309.usage.html_head``), the vocabulary (``scrapy_rfc9309.usage.vocabulary``) and their
combination per response (``scrapy_rfc9309.usage.preferences``)."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_rfc9309.core.usage_vocabulary import CATEGORIES, canonical, combine
from scrapy_rfc9309.usage import applicable
from scrapy_rfc9309.usage.html_head import _HEAD_END, MAX_TAGS, _scan, read_head_meta
from scrapy_rfc9309.usage.preferences import (
    CONTENT_USAGE_HEADER,
    ROBOTS_HEADER,
    TDM_HEADER,
    TDM_META,
    TDMREP_FILE,
    Statement,
    build,
)
from scrapy_rfc9309.usage.response_sources import (
    MAX_FIELD_BYTES,
    Malformed,
    content_usage,
    robots_directives,
    robots_tags,
    robotstxt_malformed,
    robotstxt_statements,
    tdm_statement,
    tdmrep_statement,
)

# --------------------------------------------------------------------------- vocab


def test_the_vocabulary_is_the_latest_drafts():
    assert CATEGORIES == ("train-ai", "ai-use", "search")
    assert canonical("ai-train") == "train-ai"
    assert canonical("bots") == "bots"


def test_combine_any_n_wins_then_any_y_else_unknown():
    combined = combine([
        ("robots.txt line 3", {"train-ai": "y", "search": "y"}),
        ("Content-Usage header", {"train-ai": "n"}),
        ("X-Robots-Tag header", {"train-ai": "n", "bots": "maybe"}),
    ])
    assert combined == {
        "train-ai": ("n", ("Content-Usage header", "X-Robots-Tag header")),
        "search": ("y", ("robots.txt line 3",)),
    }
    # The order of the statements does not change the value.
    assert combine([("b", {"train-ai": "n"}), ("a", {"train-ai": "y"})])["train-ai"] == ("n", ("b",))
    assert combine([]) == {}


def test_combine_reads_aliases_as_their_category():
    combined = combine([("signal", {"ai-train": "y"}), ("usage", {"train-ai": "y"})])
    assert combined == {"train-ai": ("y", ("signal", "usage"))}


def test_no_category_follows_from_another():
    # The latest vocabulary has no nesting: a stated bots=n (an earlier draft's broader
    # category) is kept as stated and says nothing about train-ai.
    preferences = build([Statement(CONTENT_USAGE_HEADER, "Content-Usage header", {"bots": "n"})])
    assert preferences.get("bots") == "n"
    assert preferences.get("train-ai") is None


# --------------------------------------------------------------------------- Content-Usage header


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([b"train-ai=n"], {"train-ai": "n"}),
        ([b"train-ai=y, search=n"], {"train-ai": "y", "search": "n"}),
        # Several header lines are one field.
        ([b"train-ai=n", b"search=y"], {"train-ai": "n", "search": "y"}),
        # Parameters are ignored; the last of a repeated key wins (with its own parameters).
        ([b"train-ai;allow=n, train-ai=y"], {"train-ai": "y"}),
        ([b"train-ai=n;why=\"policy\""], {"train-ai": "n"}),
        # Only the Tokens y and n say something: a string, a boolean, another token are unknown.
        ([b'train-ai="n", search'], {}),
        ([b"train-ai=yes, search=?1"], {}),
        ([b"train-ai=y, train-ai, search=n, search=\"n\""], {}),
        # Labels outside the vocabulary are kept; Content-Signal's name ai-train names no category in
        # Content-Usage (vocab-08, sections 6.4 and 6.5: only the labels of table 1 do) and is left out.
        ([b"bots=n, ai-input=y, ai-train=n"], {"bots": "n", "ai-input": "y"}),
        ([b"   "], {}),
    ],
)
def test_content_usage_header(lines, expected):
    statement = content_usage(lines)
    assert statement is not None
    assert statement.values == expected
    assert statement.source == CONTENT_USAGE_HEADER
    assert statement.where == "Content-Usage header"


def test_no_content_usage_header_is_no_statement():
    assert content_usage([]) is None


@pytest.mark.parametrize("value", [b"Train-AI=n", b"train-ai=n;", b"train-ai=n search=y", b"train-ai=n,,",
                                   b"\xff=n", b"train-ai=n, 'x'"])
def test_a_content_usage_header_that_does_not_parse_states_nothing(value):
    with pytest.raises(Malformed, match="Structured Field Dictionary"):
        content_usage([value])


def test_a_huge_content_usage_header_is_malformed_not_parsed():
    with pytest.raises(Malformed, match="longer than"):
        content_usage([b"train-ai=n, " * (MAX_FIELD_BYTES // 12 + 1)])


# --------------------------------------------------------------------------- TDMRep headers and meta


def test_tdm_reservation_maps_onto_train_ai():
    reserved = tdm_statement(["1"], ["https://h/policy.json"], meta=False)
    assert reserved is not None
    assert reserved.values == {"train-ai": "n"}
    assert reserved.policy == "https://h/policy.json"
    assert reserved.source == TDM_HEADER and reserved.where == "tdm-reservation header"
    free = tdm_statement([" 0 "], [], meta=True)
    assert free is not None
    assert free.values == {"train-ai": "y"}
    assert free.source == TDM_META and free.where == '<meta name="tdm-reservation">'
    assert tdm_statement([], [], meta=False) is None


@pytest.mark.parametrize("values", [["2"], ["yes"], [""], ["1", "0"], ["true"]])
def test_a_tdm_reservation_other_than_0_or_1_is_a_protocol_error(values):
    with pytest.raises(Malformed, match="must be 0 or 1"):
        tdm_statement(values, [], meta=False)


def test_a_policy_alone_states_no_reservation():
    alone = tdm_statement([], ["https://h/p"], meta=False)
    assert alone is not None
    assert alone.values == {}
    assert alone.policy == "https://h/p"
    assert alone.where == "tdm-policy header"


@dataclass
class Match:
    reserved: bool
    policy: str | None
    location: str
    index: int
    url: str


def test_a_tdmrep_json_entry_is_a_statement_naming_the_entry():
    statement = tdmrep_statement(Match(True, "https://h/p", "/books/*", 2, "https://h/.well-known/tdmrep.json"))
    assert statement.values == {"train-ai": "n"}
    assert statement.where == "https://h/.well-known/tdmrep.json entry 2 (/books/*)"
    assert statement.policy == "https://h/p"
    # tdm-policy is not processed when the rights are not reserved.
    free = tdmrep_statement(Match(False, "https://h/p", "/", 0, "https://h/.well-known/tdmrep.json"))
    assert free.values == {"train-ai": "y"}
    assert free.policy is None


@pytest.mark.parametrize(
    ("sources", "deciding", "value"),
    [
        # The header supersedes tdmrep.json, the meta tag both, whatever their order of arrival.
        ([TDMREP_FILE, TDM_HEADER], TDM_HEADER, "y"),
        ([TDM_HEADER, TDMREP_FILE], TDM_HEADER, "y"),
        ([TDMREP_FILE, TDM_HEADER, TDM_META], TDM_META, "n"),
        ([TDM_META, TDMREP_FILE], TDM_META, "n"),
    ],
)
def test_tdmrep_techniques_supersede_each_other_in_priority_order(sources, deciding, value):
    said = {TDMREP_FILE: "n", TDM_HEADER: "y", TDM_META: "n"}
    statements = [Statement(source, source, {"train-ai": said[source]}) for source in sources]
    preferences = build(statements)
    assert preferences.get("train-ai") == value
    assert preferences.sources_of("train-ai") == (deciding,)
    for statement in preferences.statements:
        assert statement.counted is (statement.source == deciding)
        assert statement.superseded_by == (None if statement.source == deciding else deciding)


def test_a_technique_that_says_nothing_resets_nothing():
    statements = [
        Statement(TDMREP_FILE, "entry 0", {"train-ai": "n"}, policy="https://h/file-policy"),
        Statement(TDM_HEADER, "tdm-policy header", {}, policy="https://h/header-policy"),
    ]
    preferences = build(statements)
    assert preferences.denies("train-ai")
    assert all(s.counted for s in preferences.statements)
    # The header's policy supersedes the file's, for the file's reservation.
    assert preferences.tdm_policy == "https://h/header-policy"
    unreserved = build([Statement(TDM_HEADER, "h", {"train-ai": "y"}, policy="https://h/p")])
    assert unreserved.tdm_policy is None


def test_tdmrep_and_other_sources_combine_by_the_vocabulary():
    statements = [
        Statement(TDMREP_FILE, "entry 0", {"train-ai": "n"}),
        Statement(TDM_HEADER, "tdm-reservation header", {"train-ai": "y"}),
        Statement(CONTENT_USAGE_HEADER, "Content-Usage header", {"train-ai": "y", "search": "y"}),
    ]
    preferences = build(statements)
    assert preferences.get("train-ai") == "y"
    assert preferences.sources_of("train-ai") == ("tdm-reservation header", "Content-Usage header")
    noindex = frozenset({"noindex"})
    statements.append(Statement(ROBOTS_HEADER, "X-Robots-Tag header", {"search": "n"}, directives=noindex))
    preferences = build(statements)
    assert preferences.denies("search")
    assert preferences.sources_of("search") == ("X-Robots-Tag header",)


# --------------------------------------------------------------------------- robots directives


@pytest.mark.parametrize(
    ("values", "token", "expected"),
    [
        (["noindex, nofollow"], "mybot", {"noindex", "nofollow"}),
        (["NOINDEX,NoFollow"], "mybot", {"noindex", "nofollow"}),
        (["none"], "mybot", {"noindex", "nofollow"}),
        # Several headers add up.
        (["noarchive", "noai", "noimageai"], "mybot", {"noarchive", "noai", "noimageai"}),
        # Agent-scoped: ours applies beside the unscoped ones, another crawler's does not.
        (["mybot: noai", "otherbot: noindex, nofollow", "noarchive"], "mybot", {"noai", "noarchive"}),
        (["otherbot: noindex, nofollow"], "mybot", set()),
        (["MyBot: noindex"], "mybot", {"noindex"}),
        # The agent name is read as a User-agent line is: by its leading token characters.
        (["mybot/2.0: noai"], "mybot", {"noai"}),
        (["mybotx: noai"], "mybot", set()),
        # A crawler whose agent names no token obeys only the unscoped directives.
        (["mybot: noai", "noindex"], "", {"noindex"}),
        # Directives with a value are ignored, without breaking the rest (a date has a comma).
        (["unavailable_after: Wednesday, 03-Nov-2027 15:00:00 GMT, noai"], "mybot", {"noai"}),
        (["max-snippet: 20, noindex, max-image-preview:large"], "mybot", {"noindex"}),
        (["mybot: unavailable_after: 25 Jun 2010 15:00:00 PST, noai"], "mybot", {"noai"}),
        # Unknown directives are kept; empty items and words with spaces are not directives.
        (["nosnippet, , indexifembedded"], "mybot", {"nosnippet", "indexifembedded"}),
        (["noindex nofollow"], "mybot", set()),
    ],
)
def test_x_robots_tag_directives(values, token, expected):
    assert robots_directives(values, token, scoped=True) == expected


def test_meta_contents_have_no_agent_scope():
    assert robots_directives(["googlebot: noindex", "noai"], "googlebot", scoped=False) == {"noai"}


def test_robots_directives_map_onto_categories():
    statement = robots_tags(frozenset({"noai", "noindex", "nofollow"}), "X-Robots-Tag header", "noai", image=False)
    assert statement is not None
    assert statement.values == {"train-ai": "n", "search": "n"}
    assert statement.source == ROBOTS_HEADER
    # noimageai denies train-ai for an image only.
    page = robots_tags(frozenset({"noimageai"}), "X-Robots-Tag header", "noimageai", image=False)
    assert page is not None and page.values == {}
    image = robots_tags(frozenset({"noimageai"}), "X-Robots-Tag header", "noimageai", image=True)
    assert image is not None and image.values == {"train-ai": "n"}
    # Robots directives never allow.
    allowing = robots_tags(frozenset({"index", "follow", "all"}), '<meta name="robots">', "all", image=False)
    assert allowing is not None and allowing.values == {}
    assert robots_tags(frozenset(), "X-Robots-Tag header", "", image=False) is None


def test_nofollow_comes_from_any_robots_statement():
    plain = build([Statement(ROBOTS_HEADER, "X-Robots-Tag header", {}, directives=frozenset({"noarchive"}))])
    assert not plain.nofollow
    follow = build([Statement(ROBOTS_HEADER, "X-Robots-Tag header", {}, directives=frozenset({"nofollow"}))])
    assert follow.nofollow
    assert follow.directives == {"nofollow"}


# --------------------------------------------------------------------------- robots.txt statements


def test_robotstxt_statements_name_the_line_and_combine_with_the_rest():
    preference = applicable([("content-usage", "train-ai=y", 2), ("content-signal", "ai-train=no, search=no", 3),
                             ("content-usage", "/x/ Search=n", 4)], "/")
    usage, signal = robotstxt_statements(preference, "https://h/robots.txt")
    assert usage.where == "https://h/robots.txt line 2 (Content-Usage)"
    assert usage.values == {"train-ai": "y"}
    assert signal.where == "https://h/robots.txt line 3 (Content-Signal)"
    assert signal.values == {"ai-train": "n", "search": "n"}
    preferences = build([usage, signal])
    assert preferences.get("train-ai") == preference.get("train-ai") == "n"
    assert preferences.sources_of("train-ai") == ("https://h/robots.txt line 3 (Content-Signal)",)
    assert preferences.denies("search")
    assert robotstxt_malformed(preference, "https://h/robots.txt") == []
    scoped = applicable([("content-usage", "/x/ Search=n", 4)], "/x/y")
    assert robotstxt_statements(scoped, "https://h/robots.txt") == []
    [(where, why)] = robotstxt_malformed(scoped, "https://h/robots.txt")
    assert where == "https://h/robots.txt line 4 (Content-Usage)"
    assert "Dictionary" in why


# --------------------------------------------------------------------------- HTML head


_wanted = frozenset({"robots", "mybot", "tdm-reservation", "tdm-policy"})


def test_meta_tags_of_the_head():
    body = (b'<!DOCTYPE html><html><head><meta charset="utf-8"><title>x</title>'
            b'<META NAME="Robots" CONTENT="noindex"><meta name="description" content="d">'
            b'<meta content="noai" name="mybot"/><meta name="tdm-reservation" content="1">'
            b"</head><body><meta name=robots content=nofollow></body></html>")
    head = read_head_meta(body, "utf-8", 65536, _wanted)
    assert head.tags == (("robots", "noindex"), ("mybot", "noai"), ("tdm-reservation", "1"))
    assert head.complete
    assert head.contents("robots") == ["noindex"]


def test_the_head_ends_at_the_first_element_a_head_cannot_hold():
    body = b'<html><head><meta name="robots" content="noai"><div>x</div><meta name="robots" content="noindex">'
    head = read_head_meta(body, "utf-8", 65536, _wanted)
    assert head.contents("robots") == ["noai"]
    assert head.complete


def test_only_the_bounded_bytes_are_read():
    body = b"<html><head>" + b"<!-- pad -->" * 1000 + b'<meta name="robots" content="noai"></head>'
    head = read_head_meta(body, "utf-8", 4096, _wanted)
    assert head.tags == ()
    assert not head.complete
    assert read_head_meta(body, "utf-8", len(body), _wanted).contents("robots") == ["noai"]


@pytest.mark.parametrize(("bom", "encoding"), [(b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"),
                                               (b"\xef\xbb\xbf", "utf-8")])
@pytest.mark.parametrize("declared", [None, "iso-8859-1"])
def test_a_byte_order_mark_names_the_encoding_whatever_the_header_says(bom, encoding, declared):
    body = bom + '<head><meta name="robots" content="noai, né"></head><meta name="mybot" content="x">'.encode(encoding)
    head = read_head_meta(body, declared, 65536, _wanted)
    assert head.tags == (("robots", "noai, né"),) and head.complete
    cut = read_head_meta(body, declared, 30, _wanted)  # max_bytes counts the bytes after the mark
    assert cut.tags == () and not cut.complete


def test_a_content_usage_of_more_members_than_the_bound_is_malformed():
    from scrapy_rfc9309.usage.response_sources import MAX_MEMBERS, Malformed, content_usage

    within = ", ".join(["train-ai=n"] + [f"x{n}=y" for n in range(MAX_MEMBERS - 1)]).encode()
    statement = content_usage([within])
    assert statement is not None and statement.values["train-ai"] == "n" and len(statement.values) == MAX_MEMBERS
    past = within + b", x-last=y"
    with pytest.raises(Malformed, match=f"more than {MAX_MEMBERS} members"):
        content_usage([past])


def test_entities_and_encodings():
    body = '<head><meta name="robots" content="noindex&#44; nofollow"><meta name="mybot" content="né">'
    body = body.encode("latin-1")
    head = read_head_meta(body, "iso-8859-1", 65536, _wanted)
    assert head.contents("robots") == ["noindex, nofollow"]
    assert head.contents("mybot") == ["né"]
    # An unknown encoding name falls back to UTF-8; undecodable bytes are replaced.
    assert read_head_meta(b'<meta name="robots" content="noai\xff">', "no-such-codec", 1024, _wanted).tags == (
        ("robots", "noai\ufffd"),
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # Quoting of every kind; a ">" inside a quoted value; character references.
        (b"<meta name=robots content=noai>", ["noai"]),
        (b"<meta name='robots' content='a>b'>", ["a>b"]),
        (b'<meta content="a>b" name="robots"><meta charset="utf-8"><meta name="viewport" content="w">', ["a>b"]),
        (b'<meta name="robots"content="noai"/>', ["noai"]),
        (b'<meta content="no&amp;ai" name="ROBOTS" content="second">', ["no&ai"]),
        (b'<META\nNAME="robots"\tCONTENT="noai">', ["noai"]),
        # Not markup: comments, script, style, title, template contents; a doctype.
        (b'<!DOCTYPE html><!-- <meta name="robots" content="x"> --><meta name="robots" content="y">', ["y"]),
        (b'<script>document.write("<meta name=robots content=x>")</script><meta name="robots" content="y">', ["y"]),
        (b'<style>a{}</style><title><meta name="robots" content="x"></title><meta name="robots" content="y">',
         ["y"]),
        (b'<template><meta name="robots" content="x"></template><meta name="robots" content="y">', ["y"]),
        # A meta tag without a content, or without a name, is not one.
        (b'<meta name="robots"><meta content="noai"><meta name="" content="x">', []),
        # Text with "<" in it, and a tag cut off at the end (not a tag).
        (b'a < b <3 <meta name="robots" content="noai"><meta name="robots" content="cut', ["noai"]),
        (b'<meta name="robots" content="noai"><meta name=robots content=cut', ["noai"]),
        (b'<meta name="robots" content="noai"></head><meta name="robots" content="x">', ["noai"]),
        (b'<meta name="robots" content="noai"><p>text<meta name="robots" content="x">', ["noai"]),
        # Tags a head holds are passed over, whatever their case.
        (b'<HTML><Head><LINK rel=x href="/a"><base href="/"><noscript><link href=b></noscript>'
         b'<meta name="robots" content="noai">', ["noai"]),
    ],
)
def test_the_head_scanner_reads_tags_as_an_html_parser_does(body, expected):
    assert read_head_meta(body, "utf-8", 65536, _wanted).contents("robots") == expected


@pytest.mark.parametrize(
    "body",
    [
        b"<head><!-- never closed " + b"x" * 5000,
        b"<head><meta name=" + b'"' * 5000,
        b"<head><script>" + b"<meta name=robots content=noai>" * 200,
        b"\x00\xff\xfe" * 3000,
        b"<" * 10000,
        b"<head>" + b"<" * 8000 + b"<meta name=robots content=noai>",
        b"<head>" + "<\u00b2".encode() * 3000 + b"<meta name=robots content=noai>",
        b"<head>" + b"<meta name=robots content=noai>" * (MAX_TAGS + 50),
        b"<head>" + b'<meta name="robots" content="' * 3000,
        b"<head>" + b"<meta " + b"a=" * 5000,
        b"<head><script>" + b"</scrip" * 2000,
        b"<head>" + b"<link " * 3000 + b"<meta name=robots content=noai>",
        b"<head>" + b"<noscript><base><" * 1000,
    ],
)
def test_hostile_heads_end_with_a_bounded_answer(body):
    head = read_head_meta(body, "utf-8", 8192, _wanted)
    assert len(head.tags) <= MAX_TAGS
    assert all(name == "robots" for name, _ in head.tags)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # A name is compared ignoring ASCII case only, and as written: character references in it,
        # whatever the quotes of the tag, do not make it a wanted name.
        (b'<meta name="r&#111;bots" content="x"><meta name="r&#111;bots" content="it\'s">', []),
        (b'<meta name="r&#111;bots" content="robots"><meta name="r&#111;bots" content="robots\'s">', []),
        ("<meta name=\"robots\u0131\" content=\"x\"><meta name=\"ROBOTS\" content=\"y\">".encode(), ["y"]),
        # Text whose lower-cased form is longer (a dotted capital I) does not shift what is read.
        (("<title>" + "\u0130" * 40 + "</title><meta name=\"robots\" content=\"noai\">").encode(), ["noai"]),
        # Doctypes and bogus comments end at their first ">", whatever follows them.
        (b'<!><p><meta name="robots" content="x">', []),
        (b'<!-><p><meta name="robots" content="x">', []),
        (b'<!-x><?x><meta name="robots" content="y">', ["y"]),
        # A wanted name in text, a comment or a script before the tag, and after the last one.
        (b'<title>robots</title><!-- robots --><script>robots="<meta name=robots content=x>"</script>'
         b'<meta name="robots" content="y"><style>robots</style>', ["y"]),
    ],
)
def test_meta_names_as_html_compares_them(body, expected):
    assert read_head_meta(body, "utf-8", 65536, _wanted).contents("robots") == expected


def test_a_tag_read_before_is_read_again_from_what_follows_it():
    # The same text up to a ">" that a quoted value goes on past: the value is read in full.
    assert read_head_meta(b"<meta name=robots content='a>", "utf-8", 1024, _wanted).contents("robots") == ["'a"]
    assert read_head_meta(b"<meta name=robots content='a>b'>", "utf-8", 1024, _wanted).contents("robots") == ["a>b"]
    for _ in range(2):  # a tag remembered from before
        head = read_head_meta(b'<meta name="robots" content="noai"><meta name="robots" content="x" a=\'>\'>',
                              "utf-8", 1024, _wanted)
        assert head.contents("robots") == ["noai", "x"]


class _Reference(HTMLParser):
    """The wanted meta tags of a head as the standard library's parser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, str]] = []
        self.ended = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.ended:
            return
        if tag not in ("html", "head", "meta", "title", "link", "style", "script", "base", "noscript", "template"):
            self.ended = True
        elif tag == "meta":
            first: dict[str, str | None] = {}
            for key, value in attrs:
                first.setdefault(key, value)
            name, content = (first.get("name") or "").strip().lower(), first.get("content")
            if name in _wanted and content is not None:
                self.tags.append((name, content))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("head", "html", "body"):
            self.ended = True


_WORDS = st.sampled_from(["noai", "noindex", "1", "a b", "x&amp;y", "&#44;", "https://p.example/?a=1&amp;b=2"])
_NAMES = st.sampled_from(["robots", "ROBOTS", "MyBot", "tdm-reservation", "tdm-policy", "viewport", "description"])


@st.composite
def _meta(draw: st.DrawFn) -> str:
    name, content = draw(_NAMES), draw(_WORDS)
    quote = draw(st.sampled_from(['"', "'"]))
    attributes = [f"name={quote}{name}{quote}", f'content="{content}"']
    if draw(st.booleans()):
        attributes.reverse()
    if draw(st.booleans()):
        attributes.append('data-x="1"')
    return f"<{draw(st.sampled_from(['meta', 'META']))} {' '.join(attributes)}>"


_PIECES = st.one_of(
    _meta(),
    st.just('<meta charset="utf-8">'),
    st.just('<link rel="stylesheet" href="/s.css?robots=1">'),
    st.just("<title>robots &amp; Title</title>"),
    st.just('<script>var s = "<meta name=robots content=x>";</script>'),
    st.just('<style>a { content: "robots" }</style>'),
    st.just('<!-- <meta name="robots" content="x"> -->'),
    st.just('<!-- a > b <meta name="robots" content="x"> -->'),
    st.just("<!DOCTYPE html>"),
    st.just("<base href=\"/\">"),
    st.just("\n  "),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12), st.sampled_from(["", "</head><body>", "<p>"]), st.lists(_meta(), max_size=2))
def test_the_head_scanner_reads_well_formed_heads_as_html_parser_does(pieces, end, after):
    document = "<html><head>" + "".join(pieces) + end + "".join(after)
    reference = _Reference()
    reference.feed(document)
    reference.close()
    tags = read_head_meta(document.encode(), "utf-8", 65536, _wanted).tags
    assert list(tags) == reference.tags


#: Pieces of heads that may or may not be read by the plain run (html_head._PLAIN): every kind of tag
#: it reads, and what it must leave to the scanner (quotes that do not pair up, a ">" or "<" in a value,
#: whitespace that is whitespace only once decoded, a "<meta" in a comment or a script, an unclosed
#: element, a tag cut off, an element that ends the head, a "<" in text).
_ROUGH = [
    '<meta name="robots" content="a>b">', "<meta name=robots content='a'b'>", "<meta content='x' name=robots>",
    '<meta name="robots" content="<meta name=robots content=x>">', "<meta name=robots content=a<b>",
    "<meta name=robots\x1ccontent=x>", "<meta name=\x1crobots content=x>", "<meta name=robots\xa0content=x>",
    "<meta name=robots\u2003content=y>", "<meta nam\u00e9=robots content=x>", "<meta name=robots content=x/>",
    "<meta/name=robots/content=x>", "<meta name = robots content = x >", "<meta name=robots content>",
    "<meta name=robots content=x a='>'>", '<meta a=b"c name=robots content=x>', "<META NAME=ROBOTS CONTENT=Y>",
    "<meta name=r&#111;bots content=x>", "<meta name=mybot content=x&amp;y>", "<meta\x0cname=robots content=f>",
    "<meta name=robots", '<meta name="robots" content="cut', "<meta>", "<meta name=robots content=x><",
    "<link rel=a href='/robots?a<b'>", '<link title="a>b">', "<link\x1chref=x>", "<base href=/>", "<noscript>",
    "</noscript>", "<html lang=en>", "<head>", "<HEAD profile=x>", "<header>", "<linkx>", "<div>", "<p>",
    "</p>", "</head>", "</HTML>", "</body>", "</headx>", "</head\x1c>", "</ >", "</3>", "</\u00e9>", "<\u00e9>",
    "< robots", "a<3", "<", "<!DOCTYPE html>", "<!>", "<!->", "<!-x>", "<?xml x?>", "</!x>", "</?x>",
    "<script>robots = 1 < 2;</script>", "<script src=a.js></script>", "<SCRIPT>x</Script >",
    '<script>document.write("<meta name=robots content=x>")</script>', "<script>x</scrip", "<script>",
    "<script>x</scriptx>", "<style>a>b{}</style>", "<title>robots</title>", "<title>a<b</title>",
    "<template><meta name=robots content=x></template>", "<title><meta name=robots content=x></title>",
    "<scriptx>", "<script data-x='>'>y</script>",
    "<!-- robots -->", "<!-- <meta name=robots content=x> -->", "<!--[if IE]><script></script><![endif]-->",
    "<!-- a --->", "<!-->", "<!--->", "<!-- a -- b -->", "<!-- unclosed", "<!-- a <b -->",
    "\n  ", "robots ", "tdm-policy", "\u0130\u212a", "\xff\xfe", "&amp;",
]
_ROUGH_PIECES = st.one_of(_meta(), st.sampled_from(_ROUGH))


def _as_the_scanner_reads(body: bytes, encoding: str, max_bytes: int) -> tuple[tuple[tuple[str, str], ...], bool]:
    for bom, named in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if body.startswith(bom):  # a byte order mark names the encoding, whatever the header says
            complete = len(body) - len(bom) <= max_bytes
            text = body[len(bom):len(bom) + max_bytes].decode(named, errors="replace")
            tags, ended = _scan(text, _wanted, not complete, _wanted, [])
            return tuple(tags), ended or complete
    end = _HEAD_END.search(body, 0, max_bytes)
    data = body[:end.start()] if end is not None else body[:max_bytes]
    complete = end is not None or len(body) <= max_bytes
    tags, ended = _scan(data.decode(encoding, errors="replace"), _wanted, not complete, _wanted, [])
    return tuple(tags), ended or complete


@pytest.mark.parametrize("piece", _ROUGH)
@pytest.mark.parametrize("encoding", ["utf-8", "cp1252"])
def test_the_plain_run_leaves_to_the_scanner_what_it_does_not_read(piece, encoding):
    """Each piece between wanted tags: read_head_meta (a plain run of the head read at once, the rest by
    the scanner) finds what the scanner finds reading every tag."""
    for body in (f'<head><meta name="robots" content="before">{piece}<meta name="robots" content="after">',
                 f"<html><head>{piece}<meta name=tdm-reservation content=1></head>",
                 f"<head>{piece}"):
        data = body.encode(encoding, errors="replace")
        for max_bytes in (len(data), len(data) - 3, 65536):
            head = read_head_meta(data, encoding, max_bytes, _wanted)
            assert (head.tags, head.complete) == _as_the_scanner_reads(data, encoding, max_bytes), body


@settings(max_examples=500, deadline=None)
@given(st.lists(_ROUGH_PIECES, max_size=14), st.sampled_from(["utf-8", "iso-8859-1", "cp1252", "utf-16-le"]),
       st.integers(min_value=8, max_value=700))
def test_the_plain_run_reads_heads_as_the_scanner_does(pieces, encoding, max_bytes):
    """What read_head_meta finds (a plain run of the head read at once, the rest by the scanner) is what
    the scanner finds reading every tag of the same head."""
    body = "".join(pieces).encode(encoding, errors="replace")
    head = read_head_meta(body, encoding, max_bytes, _wanted)
    assert (head.tags, head.complete) == _as_the_scanner_reads(body, encoding, max_bytes)


def test_preferences_as_plain_data_and_text():
    preferences = build([
        Statement(CONTENT_USAGE_HEADER, "Content-Usage header", {"train-ai": "n"}, "train-ai=n"),
        Statement(TDMREP_FILE, "entry 0", {"train-ai": "y"}, policy=None),
        Statement(TDM_HEADER, "tdm-reservation header", {"train-ai": "n"}, "tdm-reservation: 1", policy="https://p"),
        Statement(ROBOTS_HEADER, "X-Robots-Tag header", {}, "nofollow", directives=frozenset({"nofollow"})),
    ], ["tdm-policy header of u ignored: x"])
    assert preferences.as_dict() == {
        "statements": [
            {"source": CONTENT_USAGE_HEADER, "where": "Content-Usage header", "values": {"train-ai": "n"},
             "text": "train-ai=n"},
            {"source": TDMREP_FILE, "where": "entry 0", "values": {"train-ai": "y"}, "text": "",
             "superseded_by": "tdm-reservation header"},
            {"source": TDM_HEADER, "where": "tdm-reservation header", "values": {"train-ai": "n"},
             "text": "tdm-reservation: 1", "policy": "https://p"},
            {"source": ROBOTS_HEADER, "where": "X-Robots-Tag header", "values": {}, "text": "nofollow",
             "directives": ["nofollow"]},
        ],
        "combined": {"train-ai": {"value": "n", "sources": ["Content-Usage header", "tdm-reservation header"]}},
        "directives": ["nofollow"],
        "malformed": ["tdm-policy header of u ignored: x"],
    }
    assert str(preferences) == ("train-ai=n (Content-Usage header, tdm-reservation header); "
                                "robots directives: nofollow")
    assert preferences.by_source(TDM_HEADER)[0].policy == "https://p"
    assert str(build([])) == "no usage preference"
    assert not build([])
