"""Usage preferences (AIPREF ``Content-Usage``, ``Content-Signal``): the pure parsing and scoping in
``scrapy_rfc9309.usage`` and ``RobotsTxt.usage()``, then the middleware against real origins
(``response.meta["robotstxt_usage"]``, the ``robotstxt_content_usage`` signal, ``ROBOTSTXT_USAGE_DENY``).
"vocab" is draft-ietf-aipref-vocab-08, "attach" draft-ietf-aipref-attach-05."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import pytest_twisted
from crawl import ListSpider, run_crawl
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.settings import Settings
from servers import Origin, Redirect

import scrapy_rfc9309
from scrapy_rfc9309 import signals as rfc_signals
from scrapy_rfc9309.components.robotstxt_middleware import USAGE_META, RobotsTxtMiddleware
from scrapy_rfc9309.config import Config, usage_line
from scrapy_rfc9309.exceptions import RobotsTxtConfigError, RobotsTxtForbidden, RobotsTxtUsageDenied
from scrapy_rfc9309.usage import UsagePreference, UsageRule, applicable, read_statement

ADDON: dict[str, Any] = {"ADDONS": {"scrapy_rfc9309.Addon": 0}}

# --------------------------------------------------------------------------- read_statement


@pytest.mark.parametrize(
    ("record", "text", "expected"),
    [
        # vocab, section 6: "train-ai=y, search=n" allows training and disallows search.
        ("content-usage", "train-ai=y, search=n", {"train-ai": "y", "search": "n"}),
        # attach, section 1.2 (and 3.4): "train-ai=n".
        ("content-usage", "train-ai=n", {"train-ai": "n"}),
        # vocab, section 6.5.1: a repeated key, its last value applies; a boolean and a String are no preference.
        ("content-usage", 'train-ai=y, train-ai, search=n, search="n"', {}),
        # vocab, section 6.5.2: only the parameters of the selected value apply; "train-ai" is allowed.
        ("content-usage", "train-ai;allow=n, train-ai=y", {"train-ai": "y"}),
        ("content-usage", "train-ai=n;reason=policy", {"train-ai": "n"}),
        # vocab, section 6.5: other Tokens, Strings, numbers are not preferences (6.1: case sensitive).
        ("content-usage", "train-ai=no", {}),
        ("content-usage", "train-ai=yes, search=Y", {}),
        ("content-usage", 'train-ai="n", search=1', {}),
        ("content-usage", "train-ai=y, train-ai", {}),
        ("content-usage", "train-ai=y, train-ai=n", {"train-ai": "n"}),
        # vocab, section 6.4: unknown labels are ignored by the vocabulary, kept here (ROBOTSTXT_USAGE_DENY names them).
        ("content-usage", "bots=n, ai-input=y", {"bots": "n", "ai-input": "y"}),
        ("content-usage", "", {}),
        # Content-Signal: the same Dictionary, with the Tokens yes and no (any case).
        ("content-signal", "search=yes, ai-train=no", {"search": "y", "ai-train": "n"}),
        ("content-signal", "search=YES,ai-input=No", {"search": "y", "ai-input": "n"}),
        ("content-signal", "search=y, ai-train=maybe", {}),
    ],
)
def test_read_statement(record, text, expected):
    values, malformed = read_statement(record, text)
    assert malformed is None
    assert dict(values) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Train-AI=n",  # vocab, section 6.5.1: an uppercase key fails the Dictionary
        "train-ai=n search=y",  # no comma between members
        "train-ai=n,",  # a trailing comma
        'train-ai;has;parameters="?";',  # vocab, section 6.5.2's example ends with a ";" and no parameter
        "train-ai=n, café=y",  # not ASCII: processed as bytes (vocab, 6.3)
        "*.pdf train-ai=n",  # no leading "/": no path (attach, 3.2), so the whole value is the statement
        "train-ai=n" + ", search=y" * 2000,  # longer than 16 KiB
    ],
)
def test_a_statement_that_does_not_parse_states_nothing(text):
    for record in ("content-usage", "content-signal"):
        values, malformed = read_statement(record, text)
        assert values == {}
        assert malformed


# --------------------------------------------------------------------------- applicable (path scopes)


def _cu(value: str, line: int) -> tuple[str, str, int]:
    return ("content-usage", value, line)


def test_an_unscoped_record_applies_to_every_path():
    records = [_cu("train-ai=n", 3)]
    for path in ("/", "/a", "/public/x?q=1"):
        preference = applicable(records, path)
        assert preference.get("train-ai") == "n"
        assert preference.lines == {"content-usage": (3,)}


def test_a_path_scope_applies_only_under_its_pattern():
    records = [_cu("/public/ train-ai=y", 4)]
    assert applicable(records, "/public/x").get("train-ai") == "y"
    assert applicable(records, "/public/").get("train-ai") == "y"
    assert not applicable(records, "/public")
    assert not applicable(records, "/other/public/x")
    assert applicable(records, "/other").get("train-ai") is None


def test_a_path_scope_overrides_the_unscoped_record_wherever_it_matches():
    records = [_cu("train-ai=n", 3), _cu("/public/ train-ai=y", 4)]
    assert applicable(records, "/article").get("train-ai") == "n"
    assert applicable(records, "/public/a").get("train-ai") == "y"
    assert applicable(records, "/public/a").lines == {"content-usage": (4,)}


@pytest.mark.parametrize("order", [1, -1], ids=["shorter-first", "longer-first"])
def test_the_longest_matching_scope_wins_whatever_the_order(order):
    records = [_cu("train-ai=n", 1), _cu("/a/ train-ai=y", 2), _cu("/a/b/ train-ai=n, search=y", 3)][::order]
    deep = applicable(records, "/a/b/c")
    assert deep.get("train-ai") == "n"
    assert deep.get("search") == "y"
    assert deep.lines == {"content-usage": (3,)}
    assert applicable(records, "/a/c").get("train-ai") == "y"
    assert applicable(records, "/x").get("train-ai") == "n"


def test_scopes_are_matched_like_allow_and_disallow_patterns():
    records = [_cu("/*.pdf$ train-ai=n", 1), _cu("/docs/*/draft train-ai=n", 2)]
    assert applicable(records, "/x/report.pdf").denies("train-ai")
    assert not applicable(records, "/x/report.pdf?download=1")  # "$" anchors the end
    assert applicable(records, "/docs/v2/draft-1").lines == {"content-usage": (2,)}
    assert not applicable(records, "/docs/draft")
    # The path given is canonical (as urlnorm.path_of makes it); the scope is normalised the same way.
    for scope in ("/caf%C3%A9/", "/caf%c3%a9/", "/café/"):
        assert applicable([_cu(f"{scope} train-ai=n", 1)], "/caf%C3%A9/menu").denies("train-ai"), scope


@pytest.mark.parametrize("order", [1, -1], ids=["allow-first", "deny-first"])
def test_rules_with_identical_paths_combine_any_n_wins(order):
    # attach, section 3.1: identical paths with conflicting preferences combine as vocab, section 5.1 says.
    records = [_cu("/a/ train-ai=y, search=y", 2), _cu("/a/ train-ai=n", 3)][::order]
    preference = applicable(records, "/a/x")
    assert preference.get("train-ai") == "n"
    assert preference.get("search") == "y"
    assert preference.lines == {"content-usage": (2, 3)[::order]}
    assert preference.combined["train-ai"] == ("n", ("line 3 (Content-Usage)",))
    unscoped = applicable([_cu("train-ai=y", 1), _cu("train-ai=n", 5)][::order], "/")
    assert unscoped.denies("train-ai")
    # Equally long patterns that both match are combined too (the draft speaks of identical paths only).
    same_length = applicable([_cu("/a* train-ai=y", 1), _cu("/ab train-ai=n", 2)][::order], "/abc")
    assert same_length.denies("train-ai")


def test_content_usage_and_content_signal_are_scoped_separately_and_combined():
    records = [
        ("content-usage", "train-ai=n", 1),
        ("content-signal", "/blog/ ai-train=yes, search=yes", 2),
        ("content-usage", "/blog/drafts/ train-ai=y", 3),
    ]
    blog = applicable(records, "/blog/post")
    assert blog.values == {"content-usage": {"train-ai": "n"}, "content-signal": {"ai-train": "y", "search": "y"}}
    assert blog.lines == {"content-usage": (1,), "content-signal": (2,)}
    assert blog.get("train-ai") == "n"
    assert blog.get("search") == "y"
    other = applicable(records, "/shop")
    assert other.values == {"content-usage": {"train-ai": "n"}}


@pytest.mark.parametrize("order", [1, -1], ids=["usage-first", "signal-first"])
def test_a_content_signal_n_wins_over_a_content_usage_y(order):
    records = [("content-usage", "train-ai=y", 2), ("content-signal", "ai-train=no, search=yes", 3)][::order]
    preference = applicable(records, "/")
    assert preference.get("train-ai") == "n"
    assert preference.source_of("train-ai") == ("n", "content-signal")
    assert preference.get("search") == "y"


def test_a_rule_that_states_nothing_still_applies_to_its_path():
    # The longest matching rule decides which statement applies; one that says nothing (or does not parse)
    # leaves the categories unknown there: the shorter unscoped rule does not apply under /public/.
    records = [_cu("train-ai=n", 1), _cu("/public/", 2), _cu("/private/ Train-AI=y", 3), _cu("/x/ nonsense", 4)]
    for path, line in (("/public/x", 2), ("/private/x", 3), ("/x/y", 4)):
        preference = applicable(records, path)
        assert preference.lines == {"content-usage": (line,)}
        assert preference.get("train-ai") is None
        assert preference  # a rule applies
    assert applicable(records, "/private/x").malformed[0].line == 3
    assert not applicable(records, "/public/x").malformed
    assert applicable(records, "/other").denies("train-ai")
    assert not applicable([], "/")


def test_a_tab_separates_the_scope_from_the_preferences():
    records = [_cu("/p/\ttrain-ai=n", 1)]
    assert applicable(records, "/p/x").denies("train-ai")
    assert not applicable(records, "/other")


def test_a_scope_with_a_query_is_still_a_scope():
    records = [_cu("/search?q= train-ai=n", 1)]
    assert applicable(records, "/search?q=shoes").denies("train-ai")
    assert not applicable(records, "/other")


# --------------------------------------------------------------------------- UsagePreference


def _pref(*rules: tuple[str, int, str]) -> UsagePreference:
    return UsagePreference(tuple(UsageRule(record, line, "", text, *read_statement(record, text))
                                 for record, line, text in rules))


def test_ai_train_and_train_ai_are_one_category():
    signal = _pref(("content-signal", 5, "ai-train=no, search=yes"))
    assert signal.get("train-ai") == "n"
    assert signal.get("ai-train") == "n"
    assert signal.denies("train-ai")
    assert signal.denies("ai-train")
    assert not signal.denies("search")
    usage = _pref(("content-usage", 2, "train-ai=n"))
    assert usage.get("ai-train") == "n"
    assert usage.denies("ai-train")


def test_denies_only_an_explicit_n():
    preference = _pref(("content-usage", 1, "train-ai=y, search=maybe"))
    assert not preference.denies("train-ai")
    assert not preference.denies("search")
    assert preference.get("search") is None
    assert not preference.denies("ai-input")
    assert preference.get("ai-input") is None


def test_an_empty_preference_is_false_and_says_so():
    empty = UsagePreference()
    assert not empty
    assert str(empty) == "no usage preference"
    assert empty.get("train-ai") is None
    assert not empty.denies("train-ai")


def test_str_and_as_dict_name_the_rules_and_lines():
    preference = applicable([_cu("train-ai=n", 3), ("content-signal", "search=yes", 4), _cu("Train-AI=y", 5)], "/")
    assert str(preference) == ("content-usage: train-ai=n (line 3); content-usage: Train-AI=y (line 5, ignored: "
                               f"{preference.malformed[0].malformed}); content-signal: search=yes (line 4)")
    data = preference.as_dict()
    assert data["combined"] == {"train-ai": {"value": "n", "rules": ["line 3 (Content-Usage)"]},
                                "search": {"value": "y", "rules": ["line 4 (Content-Signal)"]}}
    assert [rule["line"] for rule in data["rules"]] == [3, 5, 4]  # type: ignore[index]
    assert applicable([_cu("/p/ train-ai=n", 2)], "/p/").rules[0].path == "/p/"
    assert str(applicable([_cu("/p/ train-ai=n", 2)], "/p/")) == "content-usage: /p/ train-ai=n (line 2)"


# --------------------------------------------------------------------------- RobotsTxt.usage()

ROBOTS = (
    "User-agent: *\n"  # line 1
    "Disallow: /private\n"  # line 2
    "Content-Usage: train-ai=n\n"  # line 3
    "Content-Usage: /public/ train-ai=y\n"  # line 4
    "\n"  # line 5
    "User-agent: SignalBot\n"  # line 6
    "Disallow: /nothing\n"  # line 7
    "Content-Signal: search=yes, ai-train=no\n"  # line 8
    "\n"  # line 9
    "User-agent: PlainBot\n"  # line 10
    "Disallow: /plain\n"  # line 11
)


def test_robotstxt_usage_of_the_star_group():
    robots = scrapy_rfc9309.parse(ROBOTS)
    article = robots.usage("https://h/article/1", "AnyBot")
    assert article.get("train-ai") == "n"
    assert article.lines == {"content-usage": (3,)}
    public = robots.usage("https://h/public/1?x=y", "AnyBot")
    assert public.get("train-ai") == "y"
    assert public.lines == {"content-usage": (4,)}
    assert robots.has_usage("AnyBot")


def test_robotstxt_usage_follows_the_agents_group():
    robots = scrapy_rfc9309.parse(ROBOTS)
    signal = robots.usage("https://h/public/1", "Mozilla/5.0 (compatible; SignalBot/1.0)")
    # The SignalBot group replaces '*': its Content-Signal applies, '*''s Content-Usage does not.
    assert signal.values == {"content-signal": {"search": "y", "ai-train": "n"}}
    assert signal.denies("train-ai")
    assert signal.lines == {"content-signal": (8,)}
    # A group without usage records has no preference, even though '*' has one.
    assert not robots.usage("https://h/article/1", "PlainBot")
    assert not robots.has_usage("PlainBot")


def test_usage_records_do_not_end_a_group_or_change_its_rules():
    robots = scrapy_rfc9309.parse("User-agent: *\nContent-Usage: train-ai=n\nDisallow: /x\nContent-Signal: search=no\n")
    assert not robots.allowed("https://h/x", "Bot")
    assert robots.allowed("https://h/y", "Bot")
    preference = robots.usage("https://h/y", "Bot")
    assert preference.denies("train-ai")
    assert preference.denies("search")


@pytest.mark.parametrize("url", ["https://h/café/menu", "https://h/caf%c3%a9/menu", "https://h/caf%C3%A9/menu"])
def test_robotstxt_usage_normalises_percent_encoding_of_the_url(url):
    robots = scrapy_rfc9309.parse("User-agent: *\nDisallow: /x\nContent-Usage: /caf%C3%A9/ train-ai=n\n")
    assert robots.usage(url, "Bot").denies("train-ai")
    assert not robots.usage("https://h/cafe/menu", "Bot")


ATTACH_EXAMPLE = (  # draft-ietf-aipref-attach-05, section 3.4, figure "Example robots.txt file"
    "User-Agent: *\n"
    "Allow: /\n"
    "Disallow: /never/\n"
    "Content-Usage: train-ai=n\n"
    "Content-Usage: /ai-ok/ train-ai=y\n"
    "\n"
    "User-Agent: ExampleBot\n"
    "Allow: /\n"
    "Content-Usage: train-ai=y\n"
)


@pytest.mark.parametrize("speedups", [True, False], ids=["c", "python"])
def test_the_attach_drafts_example(speedups):
    robots = scrapy_rfc9309.parse(ATTACH_EXAMPLE, speedups=speedups)
    # The table "Sample of usage preferences for different paths".
    assert robots.allowed("https://h/test", "OtherBot")
    assert robots.usage("https://h/test", "OtherBot").get("train-ai") == "n"
    assert not robots.allowed("https://h/never/test", "OtherBot")
    assert robots.allowed("https://h/ai-ok/test", "OtherBot")
    assert robots.usage("https://h/ai-ok/test", "OtherBot").get("train-ai") == "y"
    # ExampleBot uses the second group: all content, train-ai=y.
    for path in ("/test", "/never/test", "/ai-ok/test"):
        assert robots.allowed(f"https://h{path}", "ExampleBot")
        assert robots.usage(f"https://h{path}", "ExampleBot").get("train-ai") == "y"
    # attach, section 1.2: the header's example, as a robots.txt group.
    assert scrapy_rfc9309.parse("User-Agent: *\nAllow: /\nContent-Usage: train-ai=n\n",
                                speedups=speedups).usage("https://h/x", "Bot").denies("train-ai")


@pytest.mark.parametrize("speedups", [True, False], ids=["c", "python"])
@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        # Two rules with identical paths: any n wins, whichever comes first.
        (["Content-Usage: /a/ train-ai=y", "Content-Usage: /a/ train-ai=n"], "n"),
        (["Content-Usage: /a/ train-ai=n", "Content-Usage: /a/ train-ai=y"], "n"),
        (["Content-Usage: train-ai=y", "Content-Usage: train-ai=n"], "n"),
        # Only the Tokens y and n are preferences.
        (["Content-Usage: train-ai=no"], None),
        # An uppercase key: the Dictionary does not parse, every preference is unknown.
        (["Content-Usage: Train-AI=n"], None),
        (["content-usage: train-ai=n # a comment"], "n"),
        # The last value of a key applies: a boolean, not a preference.
        (["Content-Usage: train-ai=y, train-ai"], None),
        # Content-Signal combines with Content-Usage: its n wins over an allowing Content-Usage line.
        (["Content-Usage: train-ai=y", "Content-Signal: ai-train=no"], "n"),
        (["Content-Signal: ai-train=no", "Content-Usage: train-ai=y"], "n"),
        (["Content-Signal: ai-train=yes", "Content-Usage: train-ai=y"], "y"),
    ],
)
def test_the_robotstxt_rules_to_the_letter(lines, expected, speedups):
    body = "User-agent: *\nAllow: /\n" + "\n".join(lines) + "\n"
    assert scrapy_rfc9309.parse(body, speedups=speedups).usage("https://h/a/x", "Bot").get("train-ai") == expected


def test_usage_with_no_usage_records():
    robots = scrapy_rfc9309.parse("User-agent: *\nDisallow: /x\n")
    assert not robots.usage("https://h/y", "Bot")
    assert not robots.has_usage("Bot")


# --------------------------------------------------------------------------- the middleware


class UsageSpider(ListSpider):
    """Records ``response.meta["robotstxt_usage"]`` per URL and the ``robotstxt_content_usage`` signals."""

    name = "usage"

    @classmethod
    def from_crawler(cls, crawler, *args: Any, **kwargs: Any):
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.usage = {}
        spider.signalled = []
        crawler.signals.connect(spider.on_content_usage, signal=rfc_signals.robotstxt_content_usage)
        return spider

    def on_content_usage(self, request, preference, **kwargs: Any) -> None:
        self.signalled.append((request.url, preference))

    def parse(self, response, **kwargs: Any):
        self.usage[response.url] = response.meta.get(USAGE_META)
        yield from super().parse(response, **kwargs)


SITE = (
    "User-agent: *\n"  # line 1
    "Disallow: /private\n"  # line 2
    "Content-Usage: train-ai=n\n"  # line 3
    "Content-Usage: /public/ train-ai=y\n"  # line 4
)
PATHS = ("/article/1", "/article/2", "/public/1", "/private/1")


def _site(origin: Origin) -> list[str]:
    origin.robots(SITE)
    return [origin.url(p) for p in PATHS]


def page_paths(origin: Origin) -> list[str]:
    return sorted(h.path for h in origin.requests if h.path_only != "/robots.txt")


def spider(result: Any) -> UsageSpider:
    return result.crawler.spider


@pytest_twisted.inlineCallbacks
def test_response_meta_carries_the_preference_and_nothing_is_dropped_by_default(origins):
    a = origins()
    urls = _site(a)

    result = yield run_crawl(UsageSpider, ADDON, urls=urls)

    assert page_paths(a) == ["/article/1", "/article/2", "/public/1"]
    usage = spider(result).usage
    for path in ("/article/1", "/article/2"):
        preference = usage[a.url(path)]
        assert isinstance(preference, UsagePreference)
        assert preference.get("train-ai") == "n"
        assert preference.denies("train-ai")
        assert preference.lines == {"content-usage": (3,)}
    public = usage[a.url("/public/1")]
    assert public.get("train-ai") == "y"
    assert public.lines == {"content-usage": (4,)}
    # /private/1 is forbidden by the rules, as ever.
    (error,) = result.errors
    assert error.url == a.url("/private/1")
    assert isinstance(error.exception, RobotsTxtForbidden)
    assert "robotstxt/usage_denied" not in result.stats


@pytest_twisted.inlineCallbacks
def test_the_content_usage_signal_fires_for_each_judged_request(origins):
    a = origins()
    urls = _site(a)

    result = yield run_crawl(UsageSpider, ADDON, urls=urls)

    signalled = dict(spider(result).signalled)
    # Forbidden requests are dropped before their usage is looked at.
    assert sorted(signalled) == sorted(a.url(p) for p in ("/article/1", "/article/2", "/public/1"))
    assert signalled[a.url("/article/1")].get("train-ai") == "n"
    assert signalled[a.url("/public/1")].get("train-ai") == "y"


@pytest_twisted.inlineCallbacks
def test_an_origin_without_usage_records_sets_no_meta_and_sends_no_signal(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    a.robots("User-agent: *\nDisallow: /private\n")
    # b: no robots.txt at all

    result = yield run_crawl(UsageSpider, {**ADDON, "ROBOTSTXT_USAGE_DENY": ["train-ai"]},
                             urls=[a.url("/x"), b.url("/y")])

    assert sorted(result.responses) == sorted([a.url("/x"), b.url("/y")])
    assert spider(result).usage == {a.url("/x"): None, b.url("/y"): None}
    assert spider(result).signalled == []


@pytest.mark.parametrize(
    "deny",
    [["train-ai"], ("train-ai",), ["ai-train"], ["TRAIN-AI"], "train-ai", "search, train-ai"],
    ids=["list", "tuple", "synonym", "upper-case", "string", "comma-separated"],
)
@pytest_twisted.inlineCallbacks
def test_usage_deny_drops_requests_before_they_are_sent(origins, deny):
    a = origins()
    urls = _site(a)

    result = yield run_crawl(UsageSpider, {**ADDON, "ROBOTSTXT_USAGE_DENY": deny}, urls=urls)

    # The server never saw the train-ai=n pages; /public/ (train-ai=y) was fetched.
    assert page_paths(a) == ["/public/1"]
    assert result.responses == [a.url("/public/1")]
    assert spider(result).usage[a.url("/public/1")].get("train-ai") == "y"
    denied = {e.url: e.exception for e in result.errors if isinstance(e.exception, RobotsTxtUsageDenied)}
    assert sorted(denied) == [a.url("/article/1"), a.url("/article/2")]
    for exception in denied.values():
        assert isinstance(exception, IgnoreRequest)
        assert exception.robots_url == a.url("/robots.txt")
        assert isinstance(exception.preference, UsagePreference)
        assert exception.preference.denies("train-ai")
        assert "train-ai" in str(exception)
    assert result.stats.get("robotstxt/usage_denied") == 2
    assert result.stats.get("robotstxt/forbidden") == 1  # /private/1, by the rules


@pytest_twisted.inlineCallbacks
def test_usage_deny_applies_content_signal_ai_train_no(origins):
    a = origins()
    a.robots("User-agent: *\nDisallow: /private\nContent-Signal: search=yes, ai-train=no\n")

    result = yield run_crawl(UsageSpider, {**ADDON, "ROBOTSTXT_USAGE_DENY": ["train-ai"]}, urls=[a.url("/page")])

    assert page_paths(a) == []
    assert [type(e.exception) for e in result.errors] == [RobotsTxtUsageDenied]
    assert result.stats.get("robotstxt/usage_denied") == 1


@pytest_twisted.inlineCallbacks
def test_usage_deny_of_another_category_drops_nothing(origins):
    a = origins()
    urls = _site(a)

    result = yield run_crawl(UsageSpider, {**ADDON, "ROBOTSTXT_USAGE_DENY": ["search"]}, urls=urls)

    assert page_paths(a) == ["/article/1", "/article/2", "/public/1"]
    assert "robotstxt/usage_denied" not in result.stats


@pytest_twisted.inlineCallbacks
def test_dont_obey_robotstxt_skips_the_usage_check(origins):
    a = origins()
    _site(a)
    urls = [Request(a.url("/article/1"), meta={"dont_obey_robotstxt": True})]

    result = yield run_crawl(UsageSpider, {**ADDON, "ROBOTSTXT_USAGE_DENY": ["train-ai"]}, urls=urls)

    assert page_paths(a) == ["/article/1"]
    assert spider(result).usage == {a.url("/article/1"): None}


@pytest_twisted.inlineCallbacks
def test_the_usage_meta_describes_the_final_url_after_a_redirect(origins):
    a = origins("127.0.0.1")
    b = origins("127.0.0.2")
    _site(a)
    a["/article/moved"] = Redirect(b.url("/landing"))
    b.robots("User-agent: *\nDisallow: /private\n")  # no usage preference at all

    result = yield run_crawl(UsageSpider, ADDON, urls=[a.url("/article/moved")])

    assert result.responses == [b.url("/landing")]
    assert spider(result).usage[b.url("/landing")] is None


# --------------------------------------------------------------------------- start-up errors


@pytest.mark.parametrize("value", [5, [5], [""], {"train-ai": True}, ["train-ai", None]])
@pytest_twisted.inlineCallbacks
def test_a_bad_usage_deny_value_stops_the_crawl_at_start_up(origins, value):
    a = origins()
    _site(a)

    with pytest.raises(RobotsTxtConfigError) as info:
        yield run_crawl(UsageSpider, {**ADDON, "ROBOTSTXT_USAGE_DENY": value}, urls=[a.url("/public/1")])

    assert "ROBOTSTXT_USAGE_DENY" in str(info.value)
    assert a.requests == []


@pytest.mark.parametrize("value", ["train_ai", ["search", "Training"], "train-ai, tdm"])
@pytest_twisted.inlineCallbacks
def test_an_unknown_usage_category_stops_the_crawl_at_start_up_naming_it_and_the_known_ones(origins, value):
    """A typo would enforce nothing: the crawl does not start."""
    a = origins()
    _site(a)

    with pytest.raises(RobotsTxtConfigError) as info:
        yield run_crawl(UsageSpider, {**ADDON, "ROBOTSTXT_USAGE_DENY": value}, urls=[a.url("/public/1")])

    message = str(info.value)
    unknown = {"train_ai": "train_ai", "Training": "training", "tdm": "tdm"}
    named = [label for text, label in unknown.items() if text in str(value)]
    assert f"ROBOTSTXT_USAGE_DENY lists {named[0]!r}" in message
    for known in ("'train-ai'", "'search'", "'ai-train'", "'ai-input'", "'bots'", "ROBOTSTXT_USAGE_EXTENSIONS"):
        assert known in message
    assert a.requests == []


def test_a_near_miss_is_named_with_the_label_meant():
    with pytest.raises(RobotsTxtConfigError, match="did you mean 'train-ai'"):
        Config.from_settings(Settings({"ROBOTSTXT_USAGE_DENY": "train_ai"}))


@pytest.mark.parametrize("value", ['["train-ai"]', ' ["train-ai", "search"]', '{"train-ai": true}', '"train-ai"'])
def test_a_json_looking_string_is_refused_with_the_comma_separated_form(value):
    with pytest.raises(RobotsTxtConfigError) as info:
        Config.from_settings(Settings({"ROBOTSTXT_USAGE_DENY": value}))

    assert "looks like JSON" in str(info.value)
    assert "ROBOTSTXT_USAGE_DENY=train-ai,search" in str(info.value)


@pytest.mark.parametrize(
    ("value", "read"),
    [("train-ai", ("train-ai",)), ("search, train-ai", ("search", "train-ai")),
     ("ai-input,,BOTS ", ("ai-input", "bots")), (["ai-train", "train-genai"], ("ai-train", "train-genai")),
     ("", ()), ([], ())],
)
def test_deny_values_are_read_as_scrapy_reads_list_settings(value, read):
    assert Config.from_settings(Settings({"ROBOTSTXT_USAGE_DENY": value})).usage_deny == read


def test_an_extension_declared_may_be_denied_and_must_look_like_a_label():
    config = Config.from_settings(Settings({"ROBOTSTXT_USAGE_DENY": "ai-summary",
                                            "ROBOTSTXT_USAGE_EXTENSIONS": "AI-Summary, x.y"}))
    assert config.usage_deny == ("ai-summary",) and config.usage_extensions == ("ai-summary", "x.y")
    with pytest.raises(RobotsTxtConfigError, match="ROBOTSTXT_USAGE_EXTENSIONS lists 'ai summary'"):
        Config.from_settings(Settings({"ROBOTSTXT_USAGE_EXTENSIONS": ["ai summary"]}))


@pytest_twisted.inlineCallbacks
def test_a_declared_extension_is_enforced(origins):
    a = origins()
    a.robots("User-agent: *\nAllow: /\nContent-Usage: /summarised/ ai-summary=n\n")
    urls = [a.url("/summarised/1"), a.url("/other/1")]

    result = yield run_crawl(UsageSpider, {**ADDON, "ROBOTSTXT_USAGE_DENY": ["ai-summary"],
                                           "ROBOTSTXT_USAGE_EXTENSIONS": ["ai-summary"]}, urls=urls)

    assert page_paths(a) == ["/other/1"]
    assert [type(e.exception) for e in result.errors] == [RobotsTxtUsageDenied]
    assert result.stats.get("robotstxt/usage_denied") == 1


@pytest_twisted.inlineCallbacks
def test_the_start_up_line_says_what_is_enforced_and_from_where(origins):
    a = origins()
    _site(a)
    settings = {**ADDON, "ROBOTSTXT_USAGE_DENY": "train-ai", "ROBOTSTXT_TDMREP": True}

    enforced = yield run_crawl(UsageSpider, settings, urls=[a.url("/public/1")])
    nothing = yield run_crawl(UsageSpider, {**ADDON, "ROBOTSTXT_USAGE_HEADERS": False}, urls=[a.url("/public/1")])

    line = usage_line(enforced.crawler.get_downloader_middleware(RobotsTxtMiddleware).config)
    assert enforced.logged(line, logging.INFO) and line.startswith("usage preferences enforced for train-ai")
    for source in ("robots.txt (Content-Usage, Content-Signal)", "response headers (Content-Usage, X-Robots-Tag, "
                   "tdm-reservation)", "tdmrep.json (TDMRep)", "not read: HTML meta tags (ROBOTSTXT_USAGE_META)"):
        assert source in line
    assert nothing.logged("usage preferences: none enforced (ROBOTSTXT_USAGE_DENY is empty)", logging.INFO)
    assert nothing.logged("not read: response headers (ROBOTSTXT_USAGE_HEADERS)", logging.INFO)


def test_the_start_up_line_names_only_the_sources_that_can_deny_the_categories():
    def line(**settings: Any) -> str:
        return usage_line(Config.from_settings(Settings(settings)))

    bots = line(ROBOTSTXT_USAGE_DENY="bots", ROBOTSTXT_USAGE_META=True, ROBOTSTXT_TDMREP=True)
    assert bots.endswith("says n: robots.txt (Content-Usage, Content-Signal), response headers (Content-Usage)")
    search = line(ROBOTSTXT_USAGE_DENY="search", ROBOTSTXT_USAGE_META=True)
    assert "HTML meta tags (robots, the product token's)" in search and "tdm" not in search
    assert "tdmrep.json (TDMRep)" in line(ROBOTSTXT_USAGE_DENY="ai-train", ROBOTSTXT_TDMREP=True)
