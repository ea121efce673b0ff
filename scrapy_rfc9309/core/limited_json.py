"""JSON from outside the process (a site's tdmrep.json, a store's record metadata)
read within bounds: Python's ``json`` recurses once per level of nesting and raises
:class:`RecursionError` past about a thousand, which no caller should ever see.

:func:`too_deep` finds where a text's nesting first passes a limit (brackets inside
strings do not count), so a reader can refuse the text, or keep what comes before
that point; :func:`loads` is ``json.loads`` with a size and a depth limit, raising
:class:`BoundExceeded` (a :class:`ValueError`, as ``json`` raises) past them. Pure
Python.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["BoundExceeded", "loads", "too_deep"]

# A string (possibly unterminated) or a bracket: what changes or hides nesting.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?')
# The brackets of a text as bytes: an opening one "a", a closing one "b", the rest deleted.
_BRACKETS = bytes.maketrans(b"[{]}", b"aabb")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))


class BoundExceeded(ValueError):
    """A JSON text longer or nested deeper than its reader allows."""


def too_deep(text: str, limit: int) -> int | None:
    """The position in ``text`` of the first bracket that opens a level deeper than
    ``limit`` (outside strings), or None when its nesting stays within it."""
    if text.count("[") + text.count("{") <= limit:
        return None
    # A quick bound first (every file a site means to publish passes it): innermost pairs
    # taken away, a pass per level, up to ``limit`` passes; what is left is unclosed.
    brackets = _STRING.sub("", text).encode("utf-8", "surrogatepass").translate(_BRACKETS, _NOT_BRACKETS)
    for levels in range(limit + 1):
        inner = brackets.replace(b"ab", b"")
        if len(inner) == len(brackets):
            if levels + brackets.count(b"a") <= limit:
                return None
            break
        brackets = inner
    # Maybe too deep: found exactly, bracket by bracket.
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == "[" or token == "{":
            depth += 1
            if depth > limit:
                return match.start()
        elif token == "]" or token == "}":
            depth -= 1
    return None


def loads(text: str | bytes, max_bytes: int, max_depth: int) -> Any:
    """``json.loads(text)``, refusing (:class:`BoundExceeded`) a text longer than
    ``max_bytes`` (characters, for a ``str``) or nested deeper than ``max_depth``."""
    if len(text) > max_bytes:
        raise BoundExceeded(f"longer than {max_bytes} ({len(text)})")
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    deep = too_deep(text, max_depth)
    if deep is not None:
        raise BoundExceeded(f"nested deeper than {max_depth} levels (at char {deep})")
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - too_deep refused what could recurse this far
        raise BoundExceeded(f"nested deeper than the JSON reader goes (limit {max_depth})") from None
