"""The bounded caches (scrapy_rfc9309.core.caches.BoundedDict): within their number of entries and of
bytes whatever is stored, the oldest dropped first, a read the dict's own; and the caches of the
package that hold what comes from outside stay within them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_rfc9309.core.caches import BoundedDict
from scrapy_rfc9309.usage import html_head


def size(key: str, value: bytes) -> int:
    return len(key) + len(value)


def test_a_store_past_the_bound_drops_the_oldest_quarter():
    cache: BoundedDict[int, str] = BoundedDict(8)
    for n in range(8):
        cache[n] = str(n)
    cache[3] = "three"  # a key already there: nothing dropped, its place kept
    assert list(cache) == list(range(8)) and cache[3] == "three"

    cache[8] = "8"

    assert list(cache) == [2, 3, 4, 5, 6, 7, 8]  # 8 // 4 = 2 dropped, oldest first
    assert cache.get(0) is None and cache.get(8) == "8" and 8 in cache and cache[7] == "7"
    for n in range(9, 100):
        cache[n] = str(n)
        assert len(cache) <= 8
    assert 99 in cache and 98 in cache


def test_a_bound_of_one_entry():
    cache: BoundedDict[str, int] = BoundedDict(1)
    cache["a"] = 1
    cache["b"] = 2
    assert dict(cache) == {"b": 2}


def test_bytes_are_bounded_and_counted():
    cache: BoundedDict[str, bytes] = BoundedDict(100, max_bytes=100, size=size)
    cache["a"] = b"x" * 39  # 40 bytes
    cache["b"] = b"x" * 39
    assert cache.bytes == 80
    cache["c"] = b"x" * 29  # 30: 110 > 100, the oldest dropped until a quarter of the bytes is free beside it
    assert list(cache) == ["b", "c"] and cache.bytes == 70
    cache["b"] = b"x" * 9  # replaced: its old size no longer counted, stored again as the newest
    assert list(cache) == ["c", "b"] and cache.bytes == 40
    cache["huge"] = b"x" * 200  # larger than the bound on its own: not stored, nothing dropped
    assert "huge" not in cache and list(cache) == ["c", "b"] and cache.bytes == 40
    assert cache.pop("c") == b"x" * 29 and cache.bytes == 10
    assert cache.pop("nothing", None) is None
    with pytest.raises(KeyError):
        cache.pop("nothing")
    del cache["b"]
    assert cache.bytes == 0 and not cache
    cache.setdefault("d", b"12")
    cache.update({"e": b"1"}, f=b"")
    assert cache.bytes == 3 + 2 + 1 and cache.popitem() == ("f", b"") and cache.bytes == 5
    cache.clear()
    assert cache.bytes == 0


def test_the_bounds_are_checked():
    with pytest.raises(ValueError, match="max_entries"):
        BoundedDict(0)
    with pytest.raises(ValueError, match="together"):
        BoundedDict(10, max_bytes=100)


OPERATIONS = st.lists(st.tuples(st.sampled_from(["set", "del", "pop", "setdefault", "update"]),
                                st.text("abcdefgh", min_size=1, max_size=3), st.binary(max_size=40)), max_size=200)


@given(OPERATIONS, st.integers(1, 12), st.integers(1, 120))
def test_every_sequence_of_stores_stays_within_the_bounds(operations, max_entries, max_bytes):
    """Against a plain dict of the last value stored per key: the cache holds a subset of it, the
    key just stored when it fits, and its bytes are the sum of its entries' sizes, within both bounds."""
    cache: BoundedDict[str, bytes] = BoundedDict(max_entries, max_bytes=max_bytes, size=size)
    model: dict[str, bytes] = {}
    for operation, key, value in operations:
        if operation in ("del", "pop"):
            if key in cache:
                del cache[key]
            else:
                cache.pop(key, None)
            model.pop(key, None)
            continue
        if operation == "setdefault" and key in cache:
            assert cache.setdefault(key, value) == model[key]
            continue
        if operation == "update":
            cache.update({key: value})
        else:
            cache[key] = value
        model[key] = value
        if size(key, value) <= max_bytes:
            assert cache[key] == value
        else:
            assert key not in cache
        assert len(cache) <= max_entries
        assert cache.bytes == sum(size(k, v) for k, v in cache.items()) <= max_bytes
        assert all(model[k] == v for k, v in cache.items())


def test_reads_are_the_dicts_own():
    """No read is overridden: a hit costs what a dict's does."""
    for name in ("get", "__getitem__", "__contains__", "__len__", "__iter__"):
        assert getattr(BoundedDict, name) is getattr(dict, name), name


def test_the_meta_tags_a_plan_remembers_stay_bounded():
    """Pages of ever new meta tags: the tags and runs remembered per set of names stay within
    their bound, and each head is still read right."""
    wanted = frozenset({"robots"})
    for n in range(html_head._MAX_PARSED * 3):
        body = f'<html><head><meta name="robots" content="noai, n{n}"><title>t</title></head>'.encode()
        head = html_head.read_head_meta(body, "utf-8", 65536, wanted)
        assert head.contents("robots") == [f"noai, n{n}"]
    plan = html_head._plan(wanted, "utf-8")
    assert 0 < len(plan.tags) <= html_head._MAX_PARSED
    assert 0 < len(plan.runs) <= html_head._MAX_PARSED
    assert isinstance(html_head._PLANS, BoundedDict) and len(html_head._PLANS) <= html_head._PLANS.max_entries
