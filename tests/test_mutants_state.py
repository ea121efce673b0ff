"""Conditional refetch in the state model (scrapy_rfc9309/core/state.py): a weak entity tag in a
``304 Not Modified`` selects the copy only if it is the copy's tag by weak comparison (RFC 9110,
8.8.3.2), another weak tag never. Kills a mutant the revalidation tests leave alive
(docs/development.md, "Mutation testing")."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.core.state import Validators


@pytest.mark.parametrize(("copy", "etag", "selected"), [
    ('"v1"', 'W/"v2"', False),
    ('W/"v1"', 'W/"v2"', False),
    ('W/"v1"', 'W/"v1"', True),
    ('"v1"', 'W/"v1"', True),
])
def test_a_weak_entity_tag_selects_only_its_own_copy(copy: str, etag: str, selected: bool) -> None:
    validators = Validators("https://h/robots.txt", copy, None)
    assert validators.selected_by(etag, None) is selected
    assert validators.selected_by(etag.encode(), None) is selected
