"""A release (scrapy_rfc9309/enforcement/release_memo.py) is kept only for a ``scheme://authority``
text that names one origin: a URL without a path whose text up to its first ``/`` holds a fragment,
or whose authority holds a ``;``, makes none (OriginOf does not memoise such a text either; one
release per such URL, never used again, would push out the origins' own). Kills mutants of its key
test that the release memo's tests left alive (docs/development.md, "Mutation testing")."""

from __future__ import annotations

import pytest
from test_release_memo import ROBOTS, _judged, _middleware, _put


@pytest.mark.parametrize("url", ["https://example.com#top", "https://example.com#/a", "https://example.com#a?b"])
def test_a_url_without_a_path_but_with_a_fragment_makes_no_release(url: str) -> None:
    mw = _middleware()
    _put(mw, ROBOTS)
    assert _judged(mw, url) == "allowed"
    assert list(mw.releases) == []
    assert _judged(mw, "https://example.com/a") == "allowed"  # the origin's own text makes one
    assert list(mw.releases) == ["https://example.com"]


@pytest.mark.parametrize("url", ["https://example.com;v=1", "https://example.com;v=1/a"])
def test_an_authority_with_a_semicolon_makes_no_release(url: str) -> None:
    mw = _middleware()
    _put(mw, ROBOTS, host="example.com;v=1")
    assert _judged(mw, url) == "allowed"
    assert _judged(mw, url) == "allowed"
    assert list(mw.releases) == []
