"""Which product token a user agent string names, and which group it selects."""

from __future__ import annotations

import pytest

from scrapy_rfc9309 import parse
from scrapy_rfc9309.core.product_tokens import agent_note, product_token, token_of_line

EXAMPLEBOT_HEADER = "Mozilla/5.0 (compatible; ExampleBot/0.1; +https://www.example.com/bot.html)"
GOOGLEBOT_SMARTPHONE = (
    "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/131.0.6778.69 Mobile Safari/537.36 "
    "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)
GOOGLEBOT_DESKTOP = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
SCRAPY_DEFAULT = "Scrapy/2.19 (+https://scrapy.org)"


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        # 1. A bare product token is the token itself, lower-cased.
        ("ExampleBot", "examplebot"),
        ("examplebot", "examplebot"),
        ("EXAMPLEBOT", "examplebot"),
        ("ExampleBot-News", "examplebot-news"),
        ("Example_Bot", "example_bot"),
        ("  ExampleBot\t", "examplebot"),
        # 2. A User-Agent header.
        (EXAMPLEBOT_HEADER, "examplebot"),
        ("Mozilla/5.0 (compatible; ExampleBot/0.1)", "examplebot"),
        ("Mozilla/5.0 (Compatible; ExampleBot/0.1)", "examplebot"),
        (GOOGLEBOT_SMARTPHONE, "googlebot"),
        (GOOGLEBOT_DESKTOP, "googlebot"),
        ("Googlebot/2.1 (+http://www.google.com/bot.html)", "googlebot"),
        (SCRAPY_DEFAULT, "scrapy"),
        ("Scrapy/2.14 (+https://scrapy.org)", "scrapy"),
        ("ExampleBot/1.0", "examplebot"),
        ("curl/8.5.0", "curl"),
        ("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", "bingbot"),
        ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
         "gptbot"),
        # 3. Anything else names no token.
        ("Foo Bar", ""),
        ("", ""),
        ("   ", ""),
        ("*", ""),
        (None, ""),
        # A single name is read by its leading token characters, as a User-agent line is.
        ("Bot2000", "bot"),
        ("MJ12bot", "mj"),
        ("MJ12bot/1.4.8", "mj"),
        ("example.bot", "example"),
        ("360Spider", ""),
        ("008", ""),
        # Mozilla and compatible never name anything.
        ("Mozilla/5.0", ""),
        ("Mozilla/5.0 (compatible)", ""),
        ("Mozilla/5.0 (compatible; MSIE 9.0; Windows NT 6.1)", ""),
    ],
)
def test_product_token(user_agent: str | None, token: str) -> None:
    assert product_token(user_agent) == token


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        (b"ExampleBot", "examplebot"),
        (EXAMPLEBOT_HEADER.encode(), "examplebot"),
        (SCRAPY_DEFAULT.encode(), "scrapy"),
        (b"Foo Bar", ""),
        (b"", ""),
        (b"\xff\xfe/1.0", ""),
    ],
)
def test_product_token_of_bytes(user_agent: bytes, token: str) -> None:
    assert product_token(user_agent) == token


@pytest.mark.parametrize(
    "user_agent",
    [
        "Mozilla/5.0",
        "Mozilla/5.0 (compatible)",
        "Mozilla/5.0 compatible",
        "Mozilla/5.0 compatible; ExampleBot/0.1",
        "compatible; ExampleBot/0.1",
        "Mozilla (compatible; ExampleBot/0.1)",
    ],
)
def test_mozilla_and_compatible_never_name_a_token(user_agent: str) -> None:
    assert product_token(user_agent) not in ("mozilla", "compatible")


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ("ExampleBot", "examplebot"),
        ("FOO BAR", "foo"),
        ("Foo/1.0", "foo"),
        ("Foo;bar", "foo"),
        ("foo_bar-baz", "foo_bar-baz"),
        ("*", "*"),
        ("* everyone", "*"),
        ("*\tfoo", "*"),
        ("*bot", ""),
        ("**", ""),
        ("", ""),
        ("1bot", ""),
        ("/bot", ""),
    ],
)
def test_token_of_line(value: str, token: str) -> None:
    assert token_of_line(value) == token


# -- Group selection ----------------------------------------------------------------

URL = "https://www.example.com"


def test_mozilla_and_compatible_groups_do_not_apply_to_a_header() -> None:
    body = (
        "User-agent: Mozilla\nDisallow: /m\n\n"
        "User-agent: compatible\nDisallow: /c\n\n"
        "User-agent: *\nDisallow: /s\n"
    )
    rt = parse(body)
    for agent in (EXAMPLEBOT_HEADER, GOOGLEBOT_SMARTPHONE, "Mozilla/5.0", "Mozilla/5.0 (compatible)"):
        assert rt.allowed(URL + "/m", agent), agent
        assert rt.allowed(URL + "/c", agent), agent
        assert not rt.allowed(URL + "/s", agent), agent
        assert rt.group_agents(agent) == "*"
        assert rt.verdict(URL + "/s", agent).token == "*"


def test_compatible_group_does_not_apply_to_a_malformed_header() -> None:
    body = "User-agent: compatible\nDisallow: /c\n\nUser-agent: *\nDisallow: /s\n"
    rt = parse(body)
    agent = "Mozilla/5.0 compatible; ExampleBot/0.1"
    assert rt.allowed(URL + "/c", agent)
    assert rt.group_agents(agent) != "compatible"


def test_header_selects_the_group_of_its_product_token() -> None:
    body = "User-agent: ExampleBot\nDisallow: /e\n\nUser-agent: *\nDisallow: /s\n"
    rt = parse(body)
    for agent in (EXAMPLEBOT_HEADER, "ExampleBot", "examplebot", b"ExampleBot", EXAMPLEBOT_HEADER.encode()):
        assert not rt.allowed(URL + "/e", agent)
        assert rt.allowed(URL + "/s", agent)
        assert rt.group_agents(agent) == "examplebot"


def test_googlebot_smartphone_selects_googlebot() -> None:
    body = "User-agent: Googlebot\nDisallow: /g\n\nUser-agent: *\nDisallow: /\n"
    rt = parse(body)
    assert not rt.allowed(URL + "/g", GOOGLEBOT_SMARTPHONE)
    assert rt.allowed(URL + "/other", GOOGLEBOT_SMARTPHONE)


def test_scrapy_default_user_agent_selects_scrapy() -> None:
    body = "User-agent: Scrapy\nDisallow: /private\n\nUser-agent: *\nDisallow: /\n"
    rt = parse(body)
    assert not rt.allowed(URL + "/private", SCRAPY_DEFAULT)
    assert rt.allowed(URL + "/public", SCRAPY_DEFAULT)
    assert rt.allowed(URL + "/public", SCRAPY_DEFAULT.encode())


def test_prefix_of_a_token_does_not_select_the_group() -> None:
    body = "User-agent: Example\nDisallow: /\n"
    rt = parse(body)
    assert rt.allowed(URL + "/", "ExampleBot")
    assert rt.allowed(URL + "/", EXAMPLEBOT_HEADER)
    assert rt.group_agents("ExampleBot") == ""
    assert not rt.allowed(URL + "/", "Example")


def test_longer_token_does_not_select_the_shorter_group() -> None:
    body = "User-agent: ExampleBot\nDisallow: /\n"
    rt = parse(body)
    assert rt.allowed(URL + "/", "ExampleBot-News")
    assert not rt.allowed(URL + "/", "ExampleBot")
    body = "User-agent: ExampleBot-News\nDisallow: /\n"
    rt = parse(body)
    assert rt.allowed(URL + "/", "ExampleBot")
    assert not rt.allowed(URL + "/", "ExampleBot-News")


def test_two_word_agent_names_nothing() -> None:
    body = "User-agent: Foo\nDisallow: /\n"
    rt = parse(body)
    assert rt.allowed(URL + "/", "Foo Bar")
    assert not rt.allowed(URL + "/", "Foo")
    body = "User-agent: Foo\nDisallow: /\nUser-agent: *\nDisallow: /x\n"
    rt = parse(body)
    assert rt.allowed(URL + "/", "Foo Bar")
    assert not rt.allowed(URL + "/x", "Foo Bar")


@pytest.mark.parametrize("agent", [None, "", "*", b"", "Foo Bar"])
def test_agents_without_a_token_get_the_star_group(agent: str | bytes | None) -> None:
    body = "User-agent: FooBot\nDisallow: /f\n\nUser-agent: *\nDisallow: /s\n"
    rt = parse(body)
    assert not rt.allowed(URL + "/s", agent)
    assert rt.allowed(URL + "/f", agent)
    assert rt.group_agents(agent) == "*"


def test_group_memo_distinguishes_agents() -> None:
    body = "User-agent: FooBot\nDisallow: /f\n\nUser-agent: BarBot\nDisallow: /b\n"
    rt = parse(body)
    for _ in range(3):
        for index in range(100):  # more distinct agents than the memo holds
            assert rt.allowed(URL + "/f", f"Other{chr(65 + index % 26)}Bot{'x' * index}")
        assert not rt.allowed(URL + "/f", "FooBot")
        assert rt.allowed(URL + "/f", "BarBot")
        assert not rt.allowed(URL + "/b", b"BarBot")
        assert rt.allowed(URL + "/b", "FooBot")


# -- Names with characters outside the token set (digits) ---------------------------------

MJ12_HEADER = "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)"


@pytest.mark.parametrize("agent", ["MJ12bot", "mj12bot", "MJ12bot/1.4.8", MJ12_HEADER, b"MJ12bot"])
def test_a_name_with_digits_selects_its_group_bare_or_in_a_header(agent: str | bytes) -> None:
    """RFC 9309, 2.2.1 tokens have no digits; ``User-agent: MJ12bot`` is read by its
    leading token characters, and so is the crawler's name, however it is given: a
    crawler named MJ12bot never escapes the group written for it."""
    body = "User-agent: MJ12bot\nDisallow: /mj\n\nUser-agent: *\nDisallow: /star\n"
    rt = parse(body)
    assert not rt.allowed(URL + "/mj/page", agent)
    assert rt.allowed(URL + "/star/page", agent)
    assert rt.group_agents(agent) == "mj"
    assert str(rt.verdict(URL + "/mj/page", agent).rule) == "Disallow: /mj, line 2"


@pytest.mark.parametrize("name", ["360Spider", "008", "MJ12bot", "Bot2000", "ExampleBot", "example.bot", "*"])
def test_bare_and_header_forms_name_the_same_token(name: str) -> None:
    assert product_token(name) == product_token(f"{name}/1.0") == product_token(
        f"Mozilla/5.0 (compatible; {name}/1.0; +https://example.com/bot)")
    assert product_token(name) == token_of_line(name if name != "*" else "*x")


@pytest.mark.parametrize("agent", ["360Spider", "360Spider/2.0", "008"])
def test_a_name_starting_with_a_digit_names_no_token(agent: str) -> None:
    body = "User-agent: 360Spider\nDisallow: /\n\nUser-agent: 008\nDisallow: /\n\nUser-agent: *\nDisallow: /s\n"
    rt = parse(body)
    # The lines name no token either, so only '*' can apply, as in Google's reading.
    assert rt.agents == ["*"]
    assert rt.group_agents(agent) == "*"
    assert rt.allowed(URL + "/page", agent)
    assert not rt.allowed(URL + "/s", agent)


@pytest.mark.parametrize("agent", ["ExampleBot", "  ExampleBot ", "Example_Bot-News", "ExampleBot/1.0 (+https://e.com/bot)",
                                   EXAMPLEBOT_HEADER, SCRAPY_DEFAULT, "", None])
def test_agent_note_is_none_for_plain_tokens(agent: str | None) -> None:
    assert agent_note(agent) is None


def test_agent_note_for_a_name_with_digits_says_how_it_is_read() -> None:
    for agent in ("MJ12bot", "MJ12bot/1.4.8", MJ12_HEADER):
        note = agent_note(agent, "ROBOTSTXT_USER_AGENT")
        assert note is not None
        assert note.startswith(f"ROBOTSTXT_USER_AGENT {agent!r}")
        assert "'MJ12bot'" in note
        assert "product token 'mj'" in note


@pytest.mark.parametrize("agent", ["360Spider", "Foo Bar", "*", "Mozilla/5.0", "360Spider/2.0 (+https://e.com)"])
def test_agent_note_for_an_agent_that_names_no_token(agent: str) -> None:
    note = agent_note(agent, "USER_AGENT")
    assert note is not None
    assert note.startswith(f"USER_AGENT {agent!r} names no product token")
    assert note.endswith("only the robots.txt groups for '*' apply to it")
    assert product_token(agent) == ""
