"""Which product token a user agent string names (RFC 9309, 2.2.1).

Scrapy hands a robots.txt parser either a bare product token (``ROBOTSTXT_USER_AGENT``)
or a whole User-Agent header. The rule, in order:

1. A single name (no whitespace, ``/`` or ``(``) is read as a robots.txt
   ``User-agent`` value is: by its leading token characters (``a-z``, ``A-Z``,
   ``_``, ``-``). ``ExampleBot`` names ``examplebot``; ``MJ12bot`` names ``mj``,
   exactly as the line ``User-agent: MJ12bot`` does, so the group written for a
   crawler whose name has a digit applies to it; ``360Spider`` and ``*`` start
   with no token character and name no token.
2. A string with a ``/`` or a ``(`` is a User-Agent header (RFC 9110, 10.1.5):
   the token is the name of the first ``Name/version`` product after
   ``compatible`` in a comment (``(compatible; ...)``) if there is one, otherwise the first top-level
   product that is not the ``Mozilla`` compatibility prefix. So
   ``Mozilla/5.0 (compatible; ExampleBot/0.1; +https://www.example.com/bot.html)``
   names ``ExampleBot``, and ``Scrapy/2.14 (+https://scrapy.org)`` names ``Scrapy``;
   ``Mozilla`` and ``compatible`` never name anything. The product name is read
   by its leading token characters too (``MJ12bot/1.4`` names ``mj``), so a name
   selects the same group bare or inside a header, as in Google's reading.
3. Anything else (``Foo Bar``, an empty string) names no token: only the
   ``*`` group applies, as in Google's reference implementation.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["agent_note", "product_token", "token_of_line"]

_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-")
_LEADING_TOKEN = re.compile(r"[A-Za-z_-]*")
_COMMENT = re.compile(r"\(([^()]*)\)")
_PRODUCT = re.compile(r"([^\s/();,]+)/[^\s();,]*")
_NOT_BARE = re.compile(r"[\s/(]")


def token_of_line(value: str) -> str:
    """The product token named by a robots.txt ``User-agent`` value, lower-cased:
    the leading run of token characters (``FOO BAR`` names ``foo``); ``*`` for the
    global group; ``""`` when the value starts with no token character."""
    if value.isascii() and value.isalpha():  # the common case, without a regex (20,000 groups add up)
        return value.lower()
    if value[:1] == "*" and (len(value) == 1 or value[1] in " \t"):
        return "*"
    match = _LEADING_TOKEN.match(value)
    return match.group(0).lower() if match else ""


@lru_cache(maxsize=256)
def product_token(user_agent: str | bytes | None) -> str:
    """The lower-cased product token a user agent string names, or ``""``
    (remembered: a crawl asks about the same few agents for every file)."""
    if user_agent is None:
        return ""
    if isinstance(user_agent, bytes):
        user_agent = user_agent.decode("latin-1")
    user_agent = user_agent.strip()
    if user_agent and _TOKEN_CHARS.issuperset(user_agent):  # the common case, without a regex
        return user_agent.lower()
    return _token_prefix(_name_in(user_agent))


def _name_in(user_agent: str) -> str:
    """The product name a stripped user agent string gives, as written (its token
    is the leading run of token characters), or ``""``."""
    if not _NOT_BARE.search(user_agent):
        return user_agent
    if "/" not in user_agent and "(" not in user_agent:
        return ""
    for comment in _COMMENT.finditer(user_agent):
        parts = [p.strip() for p in comment.group(1).split(";")]
        lowered = [p.lower() for p in parts]
        if "compatible" in lowered:
            for part in parts[lowered.index("compatible") + 1:]:
                name = _name_of_product(part)
                if _token_prefix(name):
                    return name
    top_level = _COMMENT.sub(" ", user_agent)
    for word in top_level.split():
        name = _name_of_product(word) if "/" in word else word
        if _token_prefix(name) not in ("", "mozilla", "compatible"):
            return name
    return ""


def agent_note(user_agent: str | None, setting: str = "ROBOTSTXT_USER_AGENT") -> str | None:
    """How a configured agent is read, when that may surprise: its product name has
    characters outside the RFC's token set (``a-z A-Z _ -``), or it names no
    token at all. None when the name is a plain token (``ExampleBot``,
    ``ExampleBot/1.0 (+https://...)``), or no agent is configured."""
    value = (user_agent or "").strip()
    if not value:
        return None
    name = _name_in(value)
    token = _token_prefix(name)
    if token and token == name.lower():
        return None
    head = f"{setting} {user_agent!r}"
    if token:
        return (f"{head}: the name {name!r} has characters outside the RFC 9309 token set (a-z A-Z _ -); it is "
                f"read by its leading token characters, as product token {token!r}, as robots.txt User-agent lines "
                "are")
    if name:
        why = f"{name!r} does not start with a token character, a-z A-Z _ -"
    elif "/" in value or "(" in value:
        why = "a User-Agent header with no product name starting with a token character, a-z A-Z _ -, but Mozilla"
    else:
        why = "several words are neither a name nor a User-Agent header"
    return f"{head} names no product token ({why}): only the robots.txt groups for '*' apply to it"


def _name_of_product(text: str) -> str:
    match = _PRODUCT.match(text)
    return match.group(1) if match else ""


def _token_prefix(text: str) -> str:
    match = _LEADING_TOKEN.match(text)
    return match.group(0).lower() if match else ""
