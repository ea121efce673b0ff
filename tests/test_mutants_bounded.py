"""Bounded JSON (scrapy_rfc9309/core/limited_json.py): where a text first nests deeper than a limit,
against a plain bracket-by-bracket reading of it (brackets inside strings do not count), for any
text and limit; and ``loads``' size and depth bounds at their edges. Kills the mutants of the quick
bound and of the edges that the tdmrep and record tests leave alive (docs/development.md,
"Mutation testing")."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309.core.limited_json import BoundExceeded, loads, too_deep


def _reference(text: str, limit: int) -> int | None:
    """The first bracket opening a level deeper than ``limit``, outside strings: a string runs from
    a ``"`` to the next unescaped ``"`` (or the end, or a backslash before a line break)."""
    depth, index, inside = 0, 0, False
    while index < len(text):
        char = text[index]
        if inside:
            if char == '"':
                inside = False
            elif char == "\\":
                if index + 1 < len(text) and text[index + 1] != "\n":
                    index += 1
                else:
                    inside = False
        elif char == '"':
            inside = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return index
        elif char in "]}":
            depth -= 1
        index += 1
    return None


TEXTS = st.text(alphabet='[]{}"\\a,\n', max_size=80)
NESTED = st.builds(lambda opening, closing, middle, tail: opening + middle + closing + tail,
                   st.text(alphabet="[{", min_size=1, max_size=12), st.text(alphabet="]}", max_size=12),
                   st.sampled_from(["", '"[[["', "1", '"\\"[{"', "[]", "{}[]"]), st.text(alphabet="[]{}", max_size=8))


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(TEXTS, NESTED), st.integers(min_value=0, max_value=8))
@example("[[]]", 1)
@example("[][]", 1)
@example("[[]][[[]]]", 2)
@example("[[]][[[]]]", 3)
@example('["[[[", [[]]]', 2)
@example("[[[", 2)
@example("]]][[[", 2)
@example("[[[]]][", 3)
def test_too_deep_is_the_first_bracket_past_the_limit(text: str, limit: int) -> None:
    assert too_deep(text, limit) == _reference(text, limit)


@pytest.mark.parametrize("depth", [1, 2, 5, 64])
def test_loads_takes_a_text_as_deep_as_its_limit_and_refuses_one_level_more(depth: int) -> None:
    text = "[" * depth + "]" * depth
    assert loads(text, 1000, depth) == json.loads(text)
    with pytest.raises(BoundExceeded, match=f"nested deeper than {depth - 1} levels \\(at char {depth - 1}\\)"):
        loads(text, 1000, depth - 1)
    nested = '{"a": ' * depth + "1" + "}" * depth
    assert loads(nested, 1000, depth) == json.loads(nested)
    with pytest.raises(BoundExceeded):
        loads(nested, 1000, depth - 1)


@pytest.mark.parametrize("text", ['{"a": [1, 2, "x]]]"]}', '"é"', "[]"])
def test_loads_takes_a_text_as_long_as_its_limit_and_refuses_one_more(text: str) -> None:
    for given_text in (text, text.encode("utf-8")):
        size = len(given_text)
        assert loads(given_text, size, 8) == json.loads(text)
        with pytest.raises(BoundExceeded, match=f"longer than {size - 1} \\({size}\\)"):
            loads(given_text, size - 1, 8)
    assert issubclass(BoundExceeded, ValueError)  # callers catch json's errors and these as one
