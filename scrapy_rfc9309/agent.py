"""Which product token a user agent string names (RFC 9309, 2.2.1).

Scrapy hands a robots.txt parser either a bare product token (``ROBOTSTXT_USER_AGENT``)
or a whole User-Agent header. The rule, in order:

1. A string made only of token characters (``a-z``, ``A-Z``, ``_``, ``-``) is the
   token itself: ``ExampleBot``.
2. A string with a ``/`` or a ``(`` is a User-Agent header (RFC 9110, 10.1.5):
   the token is the name of the first ``Name/version`` product after
   ``compatible`` in a comment (``(compatible; ...)``) if there is one, otherwise the first top-level
   product that is not the ``Mozilla`` compatibility prefix. So
   ``Mozilla/5.0 (compatible; ExampleBot/0.1; +https://www.example.com/bot.html)``
   names ``ExampleBot``, and ``Scrapy/2.14 (+https://scrapy.org)`` names ``Scrapy``;
   ``Mozilla`` and ``compatible`` never name anything.
3. Anything else (``Foo Bar``, an empty string, ``*``) names no token: only the
   ``*`` group applies, as in Google's reference implementation.

The product name is cut at the first character that cannot be part of a token,
as robots.txt ``User-agent`` values are.
"""

from __future__ import annotations

import re

__all__ = ["product_token", "token_of_line"]

_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-")
_LEADING_TOKEN = re.compile(r"[A-Za-z_-]*")
_COMMENT = re.compile(r"\(([^()]*)\)")
_PRODUCT = re.compile(r"([^\s/();,]+)/[^\s();,]*")


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


def product_token(user_agent: str | bytes | None) -> str:
    """The lower-cased product token a user agent string names, or ``""``."""
    if user_agent is None:
        return ""
    if isinstance(user_agent, bytes):
        user_agent = user_agent.decode("latin-1")
    user_agent = user_agent.strip()
    if user_agent and _TOKEN_CHARS.issuperset(user_agent):
        return user_agent.lower()
    if "/" not in user_agent and "(" not in user_agent:
        return ""
    for comment in _COMMENT.finditer(user_agent):
        parts = [p.strip() for p in comment.group(1).split(";")]
        lowered = [p.lower() for p in parts]
        if "compatible" in lowered:
            for part in parts[lowered.index("compatible") + 1:]:
                name = _name_of_product(part)
                if name:
                    return name
    top_level = _COMMENT.sub(" ", user_agent)
    for word in top_level.split():
        name = _name_of_product(word) if "/" in word else _token_prefix(word)
        if name and name not in ("mozilla", "compatible"):
            return name
    return ""


def _name_of_product(text: str) -> str:
    match = _PRODUCT.match(text)
    return _token_prefix(match.group(1)) if match else ""


def _token_prefix(text: str) -> str:
    match = _LEADING_TOKEN.match(text)
    return match.group(0).lower() if match else ""
