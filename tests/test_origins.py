"""One origin text, one memo of origins, one "is it held": :func:`~scrapy_rfc9309.core.urls.origin_text`
(the key of the per-origin memos), :class:`~scrapy_rfc9309.core.origins.OriginOf` (the origin of a URL,
memoised on a BoundedDict) and :meth:`~scrapy_rfc9309.core.state.OriginState.hold`."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.core.origins import Origin, OriginOf
from scrapy_rfc9309.core.state import Access, Cause, FetchOutcome, Hold, OriginState, Policy
from scrapy_rfc9309.core.urls import one_origin, origin_text


def test_the_origin_text_of_a_url_is_its_scheme_and_authority():
    assert origin_text("https://example.com/a/b?c") == "https://example.com"
    assert origin_text("http://a/") == "http://a"
    assert origin_text("https://example.com") == "https://example.com"  # no path at all
    assert origin_text("http://u:p@h:8080/x") == "http://u:p@h:8080"


@pytest.mark.parametrize(("text", "one"), [
    ("https://example.com", True), ("http://a", True), ("http://h:8080", True),
    ("https://example.com?q=/x", False),  # the query starts inside the text: not the whole authority alone
    ("http://h#f", False), ("http://h;p", False),
    ("ftp://h", False), ("data:text", False), ("  http:/", False),  # not an http(s) text's beginning
])
def test_a_text_names_one_origin_only_with_its_whole_authority(text, one):
    assert one_origin(text) is one


def test_the_origins_of_urls_are_remembered_by_their_text_and_each_is_right():
    origin_of = OriginOf(8)
    urls = ["https://A.example/x", "https://a.example/y", "http://a.example:80/z", "https://b.example:8443/",
            "http://c.example?q=/d", "ftp://a.example/f", "data:,x", "  http://d.example/x", "  http://e.example/x",
            "http:///x/y", "https://xn--bcher-kva.example/"]
    for url in urls * 2:  # the second time from the memo
        origin = Origin.from_url(url)
        want = origin if origin is not None and origin.scheme in ("http", "https") else None
        assert origin_of(url) == want, url
    assert set(origin_of) == {"https://A.example", "https://a.example", "http://a.example:80",
                              "https://b.example:8443", "http:///x", "https://xn--bcher-kva.example"}


def test_the_memo_of_origins_forgets_its_oldest_quarter_at_its_bound():
    origin_of = OriginOf(8)
    for n in range(9):
        origin_of(f"https://h{n}.example/")
    assert list(origin_of) == [f"https://h{n}.example" for n in (2, 3, 4, 5, 6, 7, 8)]
    assert origin_of("https://h0.example/p") == Origin("https", "h0.example", 443)  # worked out again


POLICY = Policy(max_wait=60.0, max_wait_refused=10.0)


def _state(access: Access, at: float = 0.0, cause: Cause = Cause.TRANSIENT) -> OriginState:
    body = b"User-agent: *\nDisallow: /x\n" if access is Access.PARSED else b""
    status = {Access.PARSED: 200, Access.UNAVAILABLE: 404, Access.UNREACHABLE: 503}[access]
    return OriginState.initial(FetchOutcome(access, "https://h/robots.txt", status, body, cause=cause), at, POLICY)


def test_a_state_holds_while_unreachable_and_gives_up_once_waiting_cannot_help():
    assert _state(Access.PARSED).hold(1e9, POLICY) is Hold.NO
    assert _state(Access.UNAVAILABLE).hold(1e9, POLICY) is Hold.NO
    unreachable = _state(Access.UNREACHABLE)
    assert unreachable.hold(0.0, POLICY) is Hold.HOLD
    assert unreachable.hold(59.9, POLICY) is Hold.HOLD
    assert unreachable.hold(60.0, POLICY) is Hold.GIVE_UP
    assert unreachable.waited_too_long(60.0, POLICY) and not unreachable.waited_too_long(59.9, POLICY)
    # A host name that does not resolve: waiting cannot help it at all.
    assert _state(Access.UNREACHABLE, cause=Cause.NO_HOST).hold(0.0, POLICY) is Hold.GIVE_UP
