"""RFC 9309's own examples and rules, plus the parts of Google's interpretation
that the package follows (and the few places where the RFC deliberately wins).

All robots.txt content is written inline."""

from __future__ import annotations

import pytest

from scrapy_rfc9309 import RobotsTxt, parse

HOST = "https://www.example.com"


def decide(body: str | bytes, url: str, agent: str = "FooBot", **kwargs) -> bool:
    """``allowed`` and ``verdict().allowed`` must agree; return the decision."""
    rt = parse(body, **kwargs)
    if not url.startswith(("http://", "https://")):
        url = HOST + url
    by_allowed = rt.allowed(url, agent)
    by_verdict = rt.verdict(url, agent).allowed
    assert by_allowed == by_verdict, (body, url, agent)
    return by_allowed


def matches(rule: str, url: str) -> bool:
    """Whether a Disallow rule matches ``url`` (and is reported as the deciding rule)."""
    rt = parse(f"User-agent: FooBot\nDisallow: {rule}\n")
    if not url.startswith(("http://", "https://")):
        url = HOST + url
    verdict = rt.verdict(url, "FooBot")
    assert rt.allowed(url, "FooBot") == verdict.allowed
    if verdict.allowed:
        assert verdict.rule is None
        return False
    assert verdict.rule is not None and verdict.rule.pattern == rule
    return True


def rule_line(rt: RobotsTxt, url: str, agent: str = "FooBot") -> int:
    """The line of the rule that decides ``url``; there must be one."""
    rule = rt.verdict(url, agent).rule
    assert rule is not None, url
    return rule.line


# -- 5.1 Simple example -------------------------------------------------------------

SIMPLE_EXAMPLE = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""


@pytest.mark.parametrize(
    ("agent", "path", "expected"),
    [
        # "*": /publications/ allowed, /example/ and .gif files disallowed.
        ("otherbot", "/", True),
        ("otherbot", "/publications/", True),
        ("otherbot", "/publications/report.pdf", True),
        ("otherbot", "/publications/logo.gif", True),  # Allow /publications/ is longer than *.gif$
        ("otherbot", "/example/", False),
        ("otherbot", "/example/page.html", False),
        ("otherbot", "/images/logo.gif", False),  # "*" matches "/" too
        ("otherbot", "/logo.gif", False),
        ("otherbot", "/logo.gif?size=2", True),  # "$" anchors the end
        ("otherbot", "/logo.gifs", True),
        ("otherbot", "/logo.GIF", True),  # case-sensitive
        ("otherbot", "/exampl", True),
        # foobot: only /example/page.html and /example/allowed.gif.
        ("foobot", "/", False),
        ("foobot", "/publications/", False),  # the "*" group does not apply to foobot
        ("foobot", "/example/", False),
        ("foobot", "/example/page.html", True),
        ("foobot", "/example/page.html?x=1", True),
        ("foobot", "/example/allowed.gif", True),
        ("foobot", "/example/other.gif", False),
        ("FooBot", "/example/page.html", True),
        ("FOOBOT", "/example/other", False),
        # barbot and bazbot share one group.
        ("barbot", "/example/page.html", False),
        ("bazbot", "/example/page.html", False),
        ("barbot", "/example/page.html.bak", False),
        ("barbot", "/example/", True),
        ("bazbot", "/example/other.html", True),
        ("bazbot", "/images/logo.gif", True),  # the "*" group does not apply
        ("barbot", "/publications/", True),
        # quxbot: an empty group at the end allows everything.
        ("quxbot", "/", True),
        ("quxbot", "/example/", True),
        ("quxbot", "/images/logo.gif", True),
    ],
)
def test_simple_example(agent: str, path: str, expected: bool) -> None:
    assert decide(SIMPLE_EXAMPLE, path, agent) is expected


def test_simple_example_groups() -> None:
    rt = parse(SIMPLE_EXAMPLE)
    assert rt.agents == ["*", "foobot", "barbot", "bazbot", "quxbot"]
    assert rt.group_agents("quxbot") == "quxbot"
    assert rt.group_agents("otherbot") == "*"
    assert rt.group_agents("BazBot") == "bazbot"


# -- 5.2 Longest match ------------------------------------------------------------

LONGEST_MATCH = """\
User-Agent: foobot
Allow: /example/page/
Disallow: /example/page/disallowed.gif
"""


def test_longest_match() -> None:
    rt = parse(LONGEST_MATCH)
    verdict = rt.verdict(HOST + "/example/page/disallowed.gif", "foobot")
    assert not verdict.allowed
    assert verdict.rule is not None
    assert verdict.rule.pattern == "/example/page/disallowed.gif"
    assert verdict.rule.allow is False
    assert decide(LONGEST_MATCH, "/example/page/allowed.gif", "foobot")
    assert decide(LONGEST_MATCH, "/example/page/", "foobot")
    assert not decide(LONGEST_MATCH, "/example/page/disallowed.gif?v=2", "foobot")


@pytest.mark.parametrize("order", ["allow-first", "disallow-first"])
def test_longest_match_independent_of_order(order: str) -> None:
    rules = ["Allow: /folder/page", "Disallow: /folder/"]
    if order == "disallow-first":
        rules.reverse()
    body = "User-agent: FooBot\n" + "\n".join(rules) + "\n"
    assert decide(body, "/folder/page")
    assert decide(body, "/folder/page2")
    assert not decide(body, "/folder/other")


def test_longest_match_counts_wildcards_and_anchor() -> None:
    # "/fish*" (6 octets) beats "/fish" (5 octets).
    body = "User-agent: FooBot\nAllow: /fish\nDisallow: /fish*\n"
    assert not decide(body, "/fish")
    # "/page$" (6) beats "/page" (5).
    body = "User-agent: FooBot\nDisallow: /page\nAllow: /page$\n"
    assert decide(body, "/page")
    assert not decide(body, "/page.html")


# -- 2.2.1 Merging groups and the "*" fallback ---------------------------------------


def test_groups_with_the_same_token_are_merged() -> None:
    body = (
        "user-agent: ExampleBot\n"
        "disallow: /foo\n"
        "disallow: /bar\n"
        "\n"
        "user-agent: OtherBot\n"
        "disallow: /other\n"
        "\n"
        "user-agent: ExampleBot\n"
        "disallow: /baz\n"
    )
    for path in ("/foo", "/bar", "/baz"):
        assert not decide(body, path, "ExampleBot")
    assert decide(body, "/qux", "ExampleBot")
    assert decide(body, "/other", "ExampleBot")
    assert not decide(body, "/other", "OtherBot")
    assert decide(body, "/baz", "OtherBot")


def test_merging_is_case_insensitive() -> None:
    body = "user-agent: examplebot\ndisallow: /foo\n\nUSER-AGENT: EXAMPLEBOT\ndisallow: /bar\n"
    assert not decide(body, "/foo", "ExampleBot")
    assert not decide(body, "/bar", "ExampleBot")


def test_star_group_is_the_fallback() -> None:
    body = "user-agent: *\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: BazBot\ndisallow: /baz\n"
    assert not decide(body, "/foo", "ExampleBot")
    assert not decide(body, "/bar", "ExampleBot")
    assert decide(body, "/baz", "ExampleBot")
    # BazBot's own group replaces the "*" group entirely.
    assert not decide(body, "/baz", "BazBot")
    assert decide(body, "/foo", "BazBot")


def test_star_groups_are_merged_too() -> None:
    body = "user-agent: *\ndisallow: /a\n\nuser-agent: FooBot\ndisallow: /f\n\nuser-agent: *\ndisallow: /b\n"
    assert not decide(body, "/a", "OtherBot")
    assert not decide(body, "/b", "OtherBot")
    assert decide(body, "/f", "OtherBot")


def test_no_matching_group_and_no_star_group_allows_everything() -> None:
    body = "user-agent: BarBot\ndisallow: /\n"
    assert decide(body, "/", "FooBot")
    assert decide(body, "/anything", "FooBot")
    assert parse(body).verdict(HOST + "/", "FooBot").token == ""


@pytest.mark.parametrize("body", ["", "\n\n", "# only a comment\n", "Sitemap: https://example.com/s.xml\n"])
def test_no_group_at_all_allows_everything(body: str) -> None:
    assert decide(body, "/", "FooBot")
    assert decide(body, "/x/y", "FooBot")


def test_star_needs_to_stand_alone() -> None:
    # "*bot" is no product token, and not the global group.
    body = "user-agent: *bot\ndisallow: /\n"
    assert decide(body, "/", "FooBot")
    body = "user-agent: * # everyone\ndisallow: /\n"
    assert not decide(body, "/", "FooBot")


# -- 2.2.2 Percent-encoding ---------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "path", "expected"),
    [
        # Row 1: nothing to encode.
        ("/foo/bar?baz=quz", "/foo/bar?baz=quz", True),
        # Row 2: "https://foo.bar" in the query, written raw or encoded, on either side.
        ("/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar", True),
        ("/foo/bar?baz=https%3A%2F%2Ffoo.bar", "/foo/bar?baz=https://foo.bar", True),
        ("/foo/bar?baz=https%3A%2F%2Ffoo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar", True),
        ("/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https://foo.bar", True),
        # Row 3: U+30C4 (UTF-8 E3 83 84) written raw.
        ("/foo/bar/\u30c4", "/foo/bar/%E3%83%84", True),
        ("/foo/bar/\u30c4", "/foo/bar/\u30c4", True),  # Google says no; the RFC table wins
        # Row 4: already encoded.
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84", True),
        ("/foo/bar/%E3%83%84", "/foo/bar/\u30c4", True),  # Google says no; the RFC table wins
        ("/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84", True),  # hex digits are case-insensitive
        ("/foo/bar/%E3%83%84", "/foo/bar/%e3%83%84", True),
        # Row 5: encoded unreserved characters are decoded.
        ("/foo/bar/%62%61%7A", "/foo/bar/baz", True),  # Google says no; the RFC table wins
        ("/foo/bar/baz", "/foo/bar/%62%61%7A", True),
        ("/foo/bar/%62%61%7A", "/foo/bar/%62%61%7A", True),
        ("/foo/bar/%62%61%7a", "/foo/bar/baz", True),
        # Differences in octets never match.
        ("/foo/bar/\u30c4", "/foo/bar/%E3%83%85", False),
        ("/foo/bar/%62%61%7A", "/foo/bar/bay", False),
        ("/foo/bar/%62%61%7A", "/foo/bar/BAZ", False),
        # Reserved characters keep their role: an encoded "/" or "?" in the path is not a raw one.
        ("/a%2Fb", "/a/b", False),
        ("/a/b", "/a%2Fb", False),
        ("/a%2Fb", "/a%2fb", True),
        ("/a%3Fb", "/a?b", False),
        ("/a?b", "/a%3Fb", False),
        # Characters not allowed raw in a URI are compared decoded.
        ("/a b", "/a%20b", True),
        ("/a%20b", "/a b", True),
        ('/a"b', "/a%22b", True),
        # A "%" that starts no escape is a literal "%".
        ("/100%", "/100%25", True),
        ("/100%25", "/100%", True),
        ("/100%25", "/100%2", True),
    ],
)
def test_percent_encoding(rule: str, path: str, expected: bool) -> None:
    assert matches(rule, path) is expected


def test_percent_encoding_google_allow_over_disallow() -> None:
    """Google's ID_Encoding layout: ``Disallow: /`` plus one Allow rule."""
    query = "/foo/bar?qux=taz&baz=http://foo.bar?tar&par"
    body = f"User-agent: FooBot\nDisallow: /\nAllow: {query}\n"
    assert decide(body, "http://foo.bar" + query)
    assert not decide(body, "http://foo.bar/foo/bar?qux=taz")
    body = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/\u30c4\n"
    assert decide(body, "http://foo.bar/foo/bar/%E3%83%84")
    assert decide(body, "http://foo.bar/foo/bar/\u30c4")
    body = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n"
    assert decide(body, "http://foo.bar/foo/bar/%E3%83%84")
    assert decide(body, "http://foo.bar/foo/bar/\u30c4")
    body = "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n"
    assert decide(body, "http://foo.bar/foo/bar/baz")
    assert decide(body, "http://foo.bar/foo/bar/%62%61%7A")


def test_encoded_query_after_a_wildcard_matches_verbatim() -> None:
    """A rule whose text appears verbatim in the URL matches it, also when a ``*``
    separates the rule's path from an encoded ``:`` or ``/`` in the query."""
    url = "/redirect?url=http%3A%2F%2Fevil.example"
    assert matches("/redirect?url=http%3A%2F%2F", url)  # no wildcard: matches
    assert matches("/*url=http://", url)
    assert matches("/*url=http%3A%2F%2F", url)
    assert matches("/*?url=http%3A%2F%2F", url)


def test_raw_utf8_bytes_in_the_file_match_the_encoded_url() -> None:
    body = "User-agent: FooBot\nDisallow: /caf\u00e9\n".encode()
    assert not decide(body, "/caf%C3%A9")
    assert not decide(body, "/caf%c3%a9/menu")
    assert not decide(body, "/caf\u00e9")
    assert decide(body, "/cafe")


# -- 2.2.3 Special characters --------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "path", "expected"),
    [
        ("/this/path/exactly$", "/this/path/exactly", True),
        ("/this/path/exactly$", "/this/path/exactly/", False),
        ("/this/path/exactly$", "/this/path/exactly?q=1", False),
        ("/this/path/exactly$", "/this/path/exact", False),
        ("/this/*/exactly", "/this/x/exactly", True),
        ("/this/*/exactly", "/this//exactly", True),
        ("/this/*/exactly", "/this/a/b/c/exactly", True),
        ("/this/*/exactly", "/this/x/exactly-and-more", True),
        ("/this/*/exactly", "/this/exactly", False),
        ("/this/*/exactly", "/that/x/exactly", False),
        ("/*", "/", True),
        ("*", "/anything", True),
        ("/$", "/", True),  # the home page only
        ("/$", "/?q=1", False),
        ("/$", "/a", False),
        ("/a*$", "/a", True),
        ("/a**b", "/axxb", True),
        ("/a*a$", "/a", False),  # the last piece cannot overlap the first
        ("/a*a$", "/aa", True),
        ("/ab*bc$", "/abc", False),
        ("/ab*bc$", "/abbc", True),
        ("/a*ba*ba$", "/aba", False),  # ... nor the middle ones
        ("/a*ba*ba$", "/ababa", True),
        ("/a*b*b", "/ab", False),
        ("/a*b*b", "/abb", True),
        ("/a*ab*b", "/aab", False),
        ("/*ab*ba", "/aba", False),
        ("/*ab*ba", "/abba", True),
        ("/a$b", "/a$b", True),  # "$" only anchors at the end of the rule
        ("/a$b", "/a", False),
        ("/x$$", "/x$", True),
        ("/x$$", "/x$y", False),
        # 2.2.3: %2A and %24 in a rule are a literal "*" and "$".
        ("/path/file-with-a-%2A.html", "/path/file-with-a-*.html", True),
        ("/path/file-with-a-%2A.html", "/path/file-with-a-%2A.html", True),
        ("/path/file-with-a-%2a.html", "/path/file-with-a-*.html", True),
        ("/path/file-with-a-%2A.html", "/path/file-with-a-x.html", False),
        ("/path/file-with-a-%2A.html", "/path/file-with-a-.html", False),
        ("/path/foo-%24", "/path/foo-$", True),
        ("/path/foo-%24", "/path/foo-%24", True),
        ("/path/foo-%24", "/path/foo-$bar", True),  # not an anchor: a prefix still matches
        ("/path/foo-%24", "/path/foo-", False),
        ("/path/foo-%24", "/path/foo-x", False),
        ("/a%2A*", "/a*b", True),
        ("/a%2A*", "/ab", False),
        ("/a%24$", "/a$", True),
        ("/a%24$", "/a$b", False),
    ],
)
def test_special_characters(rule: str, path: str, expected: bool) -> None:
    assert matches(rule, path) is expected


def test_comment_in_line_and_on_its_own_line() -> None:
    body = (
        "# comment on its own line\n"
        "User-agent: FooBot # comment after the agent\n"
        "allow: / # comment in line\n"
        "disallow: /private#no space before the comment\n"
        "#disallow: /commented-out\n"
        "   # indented comment\n"
        "disallow: /x # trailing # hashes\n"
    )
    rt = parse(body)
    verdict = rt.verdict(HOST + "/private/page", "FooBot")
    assert not verdict.allowed
    assert verdict.rule is not None and verdict.rule.pattern == "/private"
    assert decide(body, "/commented-out")
    assert not decide(body, "/x")
    assert decide(body, "/public")


# -- Other rules of 2.2.2 ------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "other"),
    [
        ("Disallow: /robots.txt", "/robots.txt.bak"),
        ("Disallow: /", "/other.txt"),
        ("Disallow: /*", "/other.txt"),
        ("Disallow: /*.txt$", "/other.txt"),
        ("Disallow: /*robots.txt$", "/x/robots.txt"),
    ],
)
def test_robots_txt_is_always_allowed(rule: str, other: str) -> None:
    body = f"User-agent: *\n{rule}\n"
    assert decide(body, "/robots.txt")
    assert decide(body, "/robots.txt", "OtherBot")
    verdict = parse(body).verdict(HOST + "/robots.txt", "FooBot")
    assert verdict.allowed and verdict.rule is None
    assert not decide(body, other)


def test_rules_before_the_first_user_agent_are_ignored() -> None:
    body = "Disallow: /\nAllow: /x\nUser-agent: FooBot\nDisallow: /private\n"
    assert decide(body, "/")
    assert decide(body, "/", "OtherBot")
    assert not decide(body, "/private")
    assert parse(body).verdict(HOST + "/", "FooBot").rule is None
    assert decide("Disallow: /\n", "/")


def test_empty_disallow_is_no_rule() -> None:
    body = "User-agent: *\nDisallow:\n"
    rt = parse(body)
    verdict = rt.verdict(HOST + "/", "FooBot")
    assert verdict.allowed and verdict.rule is None and verdict.token == "*"
    body = "User-agent: *\nDisallow: \nDisallow: /x\nAllow:   \n"
    assert decide(body, "/")
    assert not decide(body, "/x")


def test_empty_disallow_still_ends_the_user_agent_lines() -> None:
    body = "User-agent: FooBot\nDisallow:\nUser-agent: BarBot\nDisallow: /\n"
    assert decide(body, "/", "FooBot")
    assert not decide(body, "/", "BarBot")


@pytest.mark.parametrize(
    "rules",
    [
        ("Allow: /page", "Disallow: /page"),
        ("Disallow: /page", "Allow: /page"),
        ("Allow: /pag*", "Disallow: /page"),
        ("Disallow: /pag*", "Allow: /page"),
        ("Disallow: /page", "Allow: /pag*"),
        ("Allow: /page$", "Disallow: /page*"),
        ("Disallow: /pa*e", "Allow: /p*ge"),
        ("Disallow: /p%61ge", "Allow: /page"),  # the same rule once canonical
    ],
)
def test_allow_wins_a_tie(rules: tuple[str, str]) -> None:
    body = "User-agent: FooBot\n" + "\n".join(rules) + "\n"
    rt = parse(body)
    verdict = rt.verdict(HOST + "/page", "FooBot")
    assert verdict.allowed
    assert verdict.rule is not None and verdict.rule.allow
    assert rt.allowed(HOST + "/page", "FooBot")


def test_paths_are_case_sensitive() -> None:
    body = "User-agent: FooBot\nDisallow: /Folder/\n"
    assert not decide(body, "/Folder/page")
    assert decide(body, "/folder/page")
    assert decide(body, "/FOLDER/page")


@pytest.mark.parametrize(
    "body",
    [
        "USER-AGENT: FooBot\nDISALLOW: /x\nALLOW: /x/y\n",
        "user-agent: FooBot\ndisallow: /x\nallow: /x/y\n",
        "UsEr-AgEnT: FooBot\nDiSaLlOw: /x\nAlLoW: /x/y\n",
    ],
)
def test_field_names_are_case_insensitive(body: str) -> None:
    assert not decide(body, "/x")
    assert decide(body, "/x/y")
    assert decide(body, "/z")


@pytest.mark.parametrize("line", ["User-agent: FooBot", "User-agent: foobot", "User-agent: FOOBOT"])
@pytest.mark.parametrize("agent", ["FooBot", "foobot", "FOOBOT", "fOoBoT"])
def test_agent_values_are_case_insensitive(line: str, agent: str) -> None:
    body = f"{line}\nDisallow: /\n"
    assert not decide(body, "/x", agent)


def test_user_agent_value_up_to_the_first_space() -> None:
    body = "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n"
    assert decide(body, "/x/y", "Foo")
    assert not decide(body, "/z", "Foo")
    # "Foo Bar" names no product token: the "*" group applies.
    assert not decide(body, "/x/y", "Foo Bar")
    assert parse(body).agents == ["*", "foo"]


def test_user_agent_value_is_cut_at_the_first_non_token_character() -> None:
    body = "User-agent: FooBot/1.0\nDisallow: /\n"
    assert not decide(body, "/", "FooBot")
    body = "User-agent: Foo_Bot-2\nDisallow: /\n"
    assert parse(body).agents == ["foo_bot-"]


@pytest.mark.parametrize(
    "body",
    [
        "useragent: FooBot\ndisallow: /x\n",
        "user agent: FooBot\ndisallow: /x\n",
        "user-agents: FooBot\ndisallow: /x\n",
        "User_Agent: FooBot\ndisallow: /x\n",
        "user-agent: FooBot\ndisalow: /x\n",
        "user-agent: FooBot\ndissallow: /x\n",
        "user-agent: FooBot\ndissalow: /x\n",
        "user-agent: FooBot\ndisallaw: /x\n",
        "user-agent: FooBot\ndiasllow: /x\n",
    ],
)
def test_common_misspellings_are_accepted(body: str) -> None:
    assert not decide(body, "/x")
    assert decide(body, "/y")


@pytest.mark.parametrize("line", ["disallowed: /x", "dis-allow: /x", "xdisallow: /x", "disallow /x extra"])
def test_other_field_names_are_not_rules(line: str) -> None:
    body = f"user-agent: FooBot\n{line}\n"
    assert decide(body, "/x")


def test_whitespace_instead_of_a_colon() -> None:
    body = "user-agent FooBot\ndisallow /\n"
    assert not decide(body, "/")
    assert decide(body, "/", "BarBot")
    body = "user-agent FooBot\nallow /x # comment\ndisallow /\n"
    assert decide(body, "/x/y")
    assert not decide(body, "/z")


def test_whitespace_around_the_colon_and_value() -> None:
    body = "  User-agent  :  FooBot  \n\tDisallow\t:\t/x\t\n Allow : /x/y \n"
    assert not decide(body, "/x")
    assert decide(body, "/x/y")
    verdict = parse(body).verdict(HOST + "/x", "FooBot")
    assert verdict.rule is not None and verdict.rule.pattern == "/x"


# -- Line ends --------------------------------------------------------------------------

LINES = [
    "User-agent: FooBot",
    "Disallow: /a",
    "Allow: /a/b",
    "",
    "User-agent: BarBot",
    "Disallow: /",
]


@pytest.mark.parametrize("eol", ["\n", "\r", "\r\n"], ids=["LF", "CR", "CRLF"])
@pytest.mark.parametrize("final_eol", [True, False])
def test_line_ends(eol: str, final_eol: bool) -> None:
    body = eol.join(LINES) + (eol if final_eol else "")
    assert not decide(body, "/a")
    assert decide(body, "/a/b")
    assert decide(body, "/c")
    assert not decide(body, "/c", "BarBot")
    rt = parse(body)
    assert rule_line(rt, HOST + "/a/b", "FooBot") == 3
    assert rule_line(rt, HOST + "/x", "BarBot") == 6


def test_mixed_line_ends() -> None:
    body = "User-agent: FooBot\r\nDisallow: /a\rAllow: /a/b\nDisallow: /c\r\n\rDisallow: /d"
    rt = parse(body)
    lines = {path: rule_line(rt, HOST + path) for path in ("/a", "/a/b", "/c", "/d")}
    assert lines == {"/a": 2, "/a/b": 3, "/c": 4, "/d": 6}


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
def test_only_cr_and_lf_end_lines(char: str) -> None:
    # Python's str.splitlines() would split on all of these; RFC 9309's NL is CR, LF or CRLF.
    body = f"User-agent: FooBot\nDisallow: /a{char}b\nDisallow: /c{char}Disallow: /d\n".encode()
    assert decide(body, "/a")
    assert decide(body, "/d")
    assert decide(body, "/c")
    rt = parse(body)
    assert rt.verdict(HOST + "/e", "FooBot").rule is None


def test_line_separator_inside_a_path_is_part_of_the_path() -> None:
    body = "User-agent: FooBot\nDisallow: /a\u2028b\nDisallow: /z\n".encode()
    assert not decide(body, "/a%E2%80%A8b")
    assert not decide(body, "/a\u2028b/c")
    assert decide(body, "/ab")
    rt = parse(body)
    verdict = rt.verdict(HOST + "/a%E2%80%A8b", "FooBot")
    assert verdict.rule is not None
    assert verdict.rule.pattern == "/a\u2028b"
    assert verdict.rule.line == 2
    assert rule_line(rt, HOST + "/z", "FooBot") == 3


# -- Byte order mark and encoding ------------------------------------------------------


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"], ids=["whole", "two-bytes", "one-byte"])
def test_utf8_bom_is_skipped(bom: bytes) -> None:
    body = bom + b"User-agent: FooBot\nDisallow: /x\n"
    assert not decide(body, "/x")
    assert decide(body, "/y")
    rt = parse(body)
    assert rt.agents == ["foobot"]
    assert rule_line(rt, HOST + "/x", "FooBot") == 2


def test_utf8_bom_in_str_input_is_skipped() -> None:
    body = "\ufeffUser-agent: FooBot\nDisallow: /x\n"
    assert not decide(body, "/x")


def test_bom_after_the_start_is_not_skipped() -> None:
    body = b"User-agent: FooBot\n\xef\xbb\xbfDisallow: /x\nDisallow: /y\n"
    assert decide(body, "/x")
    assert not decide(body, "/y")


def test_bom_only_body() -> None:
    for body in (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"):
        rt = parse(body)
        assert rt.agents == []
        assert rt.allowed(HOST + "/", "FooBot")


def test_invalid_utf8_never_raises_and_the_rest_is_used() -> None:
    body = (
        b"User-agent: FooBot\n"
        b"Disallow: /\xff\xfe\n"
        b"\xc3\x28 garbage \x80\x80\n"
        b"Disallow: /x\n"
        b"Allow: /x/\xe3\x83\x84\n"
        b"Disallow: /trunc\xe3\x83\n"
        b"User-agent: \xffBarBot\n"
        b"Disallow: /b\n"
    )
    rt = parse(body)
    assert not decide(body, "/%FF%FE")
    assert not decide(body, "/%ff%fe/more")
    assert decide(body, "/%FF")
    assert not decide(body, "/x")
    assert decide(body, "/x/%E3%83%84")
    assert decide(body, "/x/\u30c4")
    assert not decide(body, "/trunc%E3%83")
    assert decide(body, "/trunc")
    verdict = rt.verdict(HOST + "/x", "FooBot")
    assert verdict.rule is not None and verdict.rule.line == 4
    assert decide(body, "/b", "BarBot")  # "\xffBarBot" names no product token


# -- Other records ----------------------------------------------------------------------

OTHER_RECORDS = [
    "Sitemap: https://www.example.com/sitemap.xml",
    "Site-map: https://www.example.com/sitemap.xml",
    "Crawl-delay: 5",
    "Host: www.example.com",
    "Content-Usage: train-ai=n",
    "Content-Signal: search=yes, ai-train=no",
    "Clean-param: ref /articles/",
    "Request-rate: 1/5",
    "Unknown-record: value",
    "Noindex: /x",
    "# a comment",
    "",
    "this is not a record",
]


@pytest.mark.parametrize("record", OTHER_RECORDS)
def test_other_records_do_not_end_a_run_of_user_agent_lines(record: str) -> None:
    body = f"User-agent: FooBot\n{record}\nUser-agent: BarBot\nDisallow: /a\n"
    assert not decide(body, "/a", "FooBot")
    assert not decide(body, "/a", "BarBot")
    assert decide(body, "/a", "BazBot")


@pytest.mark.parametrize("record", OTHER_RECORDS)
def test_other_records_do_not_end_a_group(record: str) -> None:
    body = f"User-agent: FooBot\nDisallow: /a\n{record}\nDisallow: /b\nUser-agent: BarBot\nDisallow: /c\n"
    assert not decide(body, "/a")
    assert not decide(body, "/b")
    assert decide(body, "/c")
    assert not decide(body, "/c", "BarBot")
    assert decide(body, "/b", "BarBot")


def test_other_records_before_the_first_group_start_nothing() -> None:
    body = "Sitemap: https://www.example.com/s.xml\nCrawl-delay: 9\nDisallow: /a\nUser-agent: FooBot\nDisallow: /b\n"
    assert decide(body, "/a")
    assert not decide(body, "/b")


# -- 2.5 Limits ----------------------------------------------------------------------------

LIMIT = 500 * 1024


def pad_to(prefix: bytes, size: int) -> bytes:
    """``prefix`` followed by comment lines, ``size`` bytes in all."""
    chunks = [prefix]
    remaining = size - len(prefix)
    assert remaining >= 0
    while remaining >= 2:
        chunk = min(1000, remaining)
        chunks.append(b"#" + b"p" * (chunk - 2) + b"\n")
        remaining -= chunk
    if remaining:
        chunks.append(b"\n")
    body = b"".join(chunks)
    assert len(body) == size
    return body


HEAD = b"User-agent: FooBot\nDisallow: /a\n"
TAIL = b"Disallow: /b\n"


def test_rule_after_the_limit_is_not_obeyed() -> None:
    body = pad_to(HEAD, LIMIT) + TAIL
    rt = parse(body)
    assert rt.truncated is True
    assert rt.size == len(body)
    assert not rt.allowed(HOST + "/a", "FooBot")
    assert rt.allowed(HOST + "/b", "FooBot")
    assert rt.verdict(HOST + "/b", "FooBot").rule is None


def test_rule_ending_at_the_limit_is_obeyed() -> None:
    body = pad_to(HEAD, LIMIT - len(TAIL)) + TAIL
    assert len(body) == LIMIT
    rt = parse(body)
    assert rt.truncated is False
    assert not rt.allowed(HOST + "/b", "FooBot")


def test_larger_limit_obeys_more() -> None:
    body = pad_to(HEAD, LIMIT) + TAIL
    rt = parse(body, max_bytes=2 * LIMIT)
    assert rt.truncated is False
    assert not rt.allowed(HOST + "/b", "FooBot")


@pytest.mark.parametrize("max_bytes", [0, 1, 1024, LIMIT - 1])
def test_limit_below_500_kib_is_refused(max_bytes: int) -> None:
    with pytest.raises(ValueError):
        parse(HEAD, max_bytes=max_bytes)


def test_limit_of_exactly_500_kib_is_accepted() -> None:
    rt = parse(HEAD, max_bytes=LIMIT)
    assert not rt.allowed(HOST + "/a", "FooBot")
    assert rt.truncated is False


# -- Google's long-line rule ------------------------------------------------------------

MAX_LINE = 2083 * 8  # Google's buffer; a line keeps its first MAX_LINE - 1 bytes


def long_line(start: str, fill: str, directive: str) -> str:
    """Google's GoogleOnly_LineTooLong construction: ``directive + line + "/qux"``
    is cut so that ``line + "/"`` is left."""
    length = MAX_LINE - len(start) - len(directive) + 1
    line = start + fill * (length - len(start))
    assert len(directive) + len(line) + 1 == MAX_LINE - 1
    return line


def test_long_disallow_line_is_cut() -> None:
    directive = "disallow: "
    line = long_line("/x/", "a", directive)
    body = f"user-agent: FooBot\n{directive}{line}/qux\n"
    rt = parse(body)
    assert rt.allowed("http://foo.bar/fux", "FooBot")
    assert not rt.allowed(f"http://foo.bar{line}/fux", "FooBot")
    # The rule kept is exactly the line up to and including the "/" after it.
    verdict = rt.verdict(f"http://foo.bar{line}/fux", "FooBot")
    assert verdict.rule is not None and verdict.rule.pattern == line + "/"
    assert rt.allowed(f"http://foo.bar{line}", "FooBot")


def test_long_allow_lines_are_cut() -> None:
    directive = "allow: "
    line_a = long_line("/x/", "a", directive)
    line_b = long_line("/x/", "b", directive)
    body = f"user-agent: FooBot\ndisallow: /\n{directive}{line_a}/qux\n{directive}{line_b}/qux\n"
    rt = parse(body)
    assert not rt.allowed("http://foo.bar/", "FooBot")
    assert rt.allowed(f"http://foo.bar{line_a}/qux", "FooBot")
    assert rt.allowed(f"http://foo.bar{line_b}/fux", "FooBot")
    assert not rt.allowed(f"http://foo.bar{line_b}", "FooBot")
    assert rule_line(rt, f"http://foo.bar{line_b}/fux", "FooBot") == 4


def test_line_after_a_long_line_is_read() -> None:
    body = "user-agent: FooBot\n# " + "c" * 40_000 + "\ndisallow: /after\n"
    assert not decide(body, "/after")


# -- Deliberate differences from Google ------------------------------------------------


def test_index_html_is_not_a_directory() -> None:
    """Google treats ``Allow: /dir/index.html`` as allowing ``/dir/``; RFC 9309 has
    no such rule, so ``/dir/`` only matches ``Disallow: /``."""
    body = "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n"
    assert not decide(body, "http://foo.com/allowed-slash/", "foobot")
    assert decide(body, "http://foo.com/allowed-slash/index.html", "foobot")
    assert not decide(body, "http://foo.com/allowed-slash/index.htm", "foobot")
    assert not decide(body, "http://foo.com/anyother-url", "foobot")
