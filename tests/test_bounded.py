"""The bounded caches (scrapy_rfc9309.core.caches.BoundedDict): within their number of entries and of
bytes whatever is stored, the oldest dropped first, a read the dict's own; and the caches of the
package that hold what comes from outside stay within them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_rfc9309.core import usage_rules
from scrapy_rfc9309.core.caches import BoundedDict
from scrapy_rfc9309.stores.client import RepeatedWarnings
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


def test_on_drop_is_told_of_each_entry_the_bound_drops_and_of_no_other():
    dropped: list[tuple[str, object]] = []
    cache: BoundedDict[str, int] = BoundedDict(4, on_drop=lambda key, value: dropped.append((key, value)))
    for n in range(4):
        cache[str(n)] = n
    cache["0"] = 10  # replaced: not dropped
    assert dropped == []
    cache["4"] = 4  # the bound: the oldest quarter (one entry) dropped, then handed on
    assert dropped == [("0", 10)] and list(cache) == ["1", "2", "3", "4"]
    del cache["1"]
    assert cache.pop("2") == 2
    cache.clear()
    assert dropped == [("0", 10)]

    by_bytes: list[tuple[str, bytes]] = []
    sized: BoundedDict[str, bytes] = BoundedDict(100, max_bytes=100, size=size,
                                                 on_drop=lambda key, value: by_bytes.append((key, value)))
    sized["a"] = b"x" * 39
    sized["b"] = b"x" * 39
    sized["c"] = b"x" * 29  # 110 > 100: "a" dropped, with its value, when "c" is stored
    sized["huge"] = b"x" * 200  # not stored: never held, so not dropped either
    assert by_bytes == [("a", b"x" * 39)] and list(sized) == ["b", "c"]
    assert "a" not in sized and sized.bytes == 70


def test_the_entries_bound_frees_a_quarter_of_the_entries():
    cache: BoundedDict[int, int] = BoundedDict(12)
    for n in range(13):
        cache[n] = n
    assert list(cache) == list(range(3, 13))  # 12 // 4 = 3 dropped


def test_the_bytes_bound_frees_a_quarter_of_the_bytes_beside_the_new_entry():
    cache: BoundedDict[str, bytes] = BoundedDict(100, max_bytes=100, size=size)
    for n in range(10):
        cache[str(n)] = b"x" * 9  # 10 bytes each: 100 in all
    cache["a"] = b"x" * 9  # 110 > 100: the oldest dropped until 100 - 25 - 10 = 65 bytes are left
    assert list(cache) == [str(n) for n in range(4, 10)] + ["a"] and cache.bytes == 70
    small: BoundedDict[str, bytes] = BoundedDict(100, max_bytes=100, size=size)
    for n in range(10):
        small[str(n)] = b"x" * 9
    small["a"] = b"x" * 3  # 104 > 100: dropped until 100 - 25 - 4 = 71 bytes are left
    assert list(small) == [str(n) for n in range(3, 10)] + ["a"] and small.bytes == 74


def test_the_entries_bound_reached_within_the_bytes_frees_entries_only():
    """At the entries' bound, a store within the bytes' bound (up to it exactly) frees a quarter
    of the entries, not a quarter of the bytes as well."""
    cache: BoundedDict[str, bytes] = BoundedDict(4, max_bytes=100, size=size)
    for key, length in (("a", 9), ("b", 29), ("c", 29), ("d", 24)):  # 10 + 30 + 30 + 25 = 95 bytes
        cache[key] = b"x" * length
    cache["e"] = b"x" * 4  # 5 bytes: 100, not past the bound of bytes; the entries' bound: one dropped
    assert list(cache) == ["b", "c", "d", "e"] and cache.bytes == 90
    below: BoundedDict[str, bytes] = BoundedDict(4, max_bytes=100, size=size)
    for key, length in (("a", 9), ("b", 29), ("c", 29), ("d", 24)):
        below[key] = b"x" * length
    below["e"] = b"x" * 3  # 4 bytes: 99, below the bound of bytes: one dropped
    assert list(below) == ["b", "c", "d", "e"] and below.bytes == 89
    eight: BoundedDict[int, bytes] = BoundedDict(8, max_bytes=1000, size=lambda key, value: len(value))
    for n in range(9):
        eight[n] = b"x"
    assert list(eight) == list(range(2, 9))  # 8 // 4 = 2 dropped, by the entries' bound alone


def test_the_bytes_bound_reached_below_the_entries_bound_frees_bytes_only():
    cache: BoundedDict[str, bytes] = BoundedDict(12, max_bytes=100, size=size)
    cache["a"] = b"x" * 59  # 60 bytes
    for n in range(10):
        cache[str(n)] = b"x"  # 2 bytes each: 11 entries, 80 bytes
    cache["n"] = b"x" * 29  # 110 > 100: "a" alone dropped (20 + 30 bytes), though 11 entries are more than 3/4 of 12
    assert list(cache) == [str(n) for n in range(10)] + ["n"] and cache.bytes == 50


def test_the_bytes_to_free_are_whole_bytes():
    cache: BoundedDict[str, bytes] = BoundedDict(100, max_bytes=102, size=size)
    for key, length in (("a", 34), ("b", 29), ("c", 36)):  # 35 + 30 + 37 = 102 bytes
        cache[key] = b"x" * length
    cache["d"] = b"x" * 9  # 112 > 102: dropped until 102 - 102 // 4 - 10 = 67 bytes are left
    assert list(cache) == ["b", "c", "d"] and cache.bytes == 77


def test_the_bounds_are_checked():
    with pytest.raises(ValueError, match="max_entries"):
        BoundedDict(0)
    with pytest.raises(ValueError, match="together"):
        BoundedDict(10, max_bytes=100)
    with pytest.raises(ValueError, match="together"):
        BoundedDict(10, size=size)


OPERATIONS = st.lists(st.tuples(st.sampled_from(["set", "del", "pop", "setdefault", "update"]),
                                st.text("abcdefgh", min_size=1, max_size=3), st.binary(max_size=40)), max_size=200)


@given(OPERATIONS, st.integers(1, 12), st.integers(1, 120))
def test_every_sequence_of_stores_stays_within_the_bounds(operations, max_entries, max_bytes):
    """Against a plain dict of the last value stored per key: the cache holds a subset of it, the
    key just stored when it fits, and its bytes are the sum of its entries' sizes, within both bounds."""
    reported: dict[str, bytes] = {}

    def on_drop(key: str, value: bytes) -> None:
        assert key not in cache and key not in reported
        reported[key] = value

    cache: BoundedDict[str, bytes] = BoundedDict(max_entries, max_bytes=max_bytes, size=size, on_drop=on_drop)
    model: dict[str, bytes] = {}
    for operation, key, value in operations:
        reported.pop(key, None)
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
        # What left the cache by its bound was handed on, with the value it held.
        assert all(k in cache or reported.get(k) == v or size(k, v) > max_bytes for k, v in model.items())


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


def test_statements_read_stay_bounded_and_the_newest_are_kept():
    """Ever new Content-Usage statements: the process-wide memo of statements read stays within its
    bound, and past it drops its oldest entries only (the newest half still there)."""
    texts = [f"train-ai=n, k{n}=y" for n in range(usage_rules._MAX_READ + 100)]
    for n, text in enumerate(texts):
        assert usage_rules.read_statement("content-usage", text) == ({"train-ai": "n", f"k{n}": "y"}, None)
    memo = usage_rules._read
    assert isinstance(memo, BoundedDict) and len(memo) <= usage_rules._MAX_READ
    assert all(("content-usage", text) in memo for text in texts[-(usage_rules._MAX_READ // 2):])


def test_warning_kinds_stay_bounded_and_the_newest_stay_throttled(caplog: pytest.LogCaptureFixture) -> None:
    """More kinds of warning than are remembered: the memo stays within its bound, and a kind
    warned of recently is still held back to DEBUG (only the oldest kinds were forgotten)."""
    warnings = RepeatedWarnings(60.0, clock=lambda: 1000.0)
    kinds = [f"kind {n}" for n in range(300)]
    for kind in kinds:
        warnings.log(kind, kind)
    assert len(warnings._last) <= 256
    caplog.clear()
    caplog.set_level("DEBUG", logger="scrapy_rfc9309.stores.client")
    for kind in kinds[-128:]:
        warnings.log(kind, kind)
    assert [record.levelname for record in caplog.records] == ["DEBUG"] * 128
