"""The bounded caches (``scrapy_rfc9309.core.caches.BoundedDict``) beside the plain dict patterns they
replace, with ``timeit``: a hit (``get`` of a key held), and a store past the bound in a stream of
ever new keys (the plain pattern: ``if len(d) >= N: d.clear()`` then ``d[k] = v``; or the oldest
dropped one at a time, ``del d[next(iter(d))]``, up to 10,000 entries), for bounds of 256 to 65,536
entries. The kinds
alternate within each of several runs; the median and the range over the runs are printed.

    python benchmarks/bench_bounded.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from scrapy_rfc9309.core.caches import BoundedDict

BOUNDS = (256, 1024, 10_000, 65_536)
#: The one-at-a-time pattern is quadratic past a few thousand entries (each ``next(iter(d))`` skips the
#: dropped entries' holes at the front of the dict): measured up to this bound.
OLDEST_UP_TO = 10_000


def _plain_clear(bound: int, keys: list[bytes]) -> Callable[[], None]:
    cache: dict[bytes, int] = {}

    def store() -> None:
        for key in keys:
            if len(cache) >= bound:
                cache.clear()
            cache[key] = 1

    return store


def _plain_oldest(bound: int, keys: list[bytes]) -> Callable[[], None]:
    cache: dict[bytes, int] = {}

    def store() -> None:
        for key in keys:
            if len(cache) >= bound and key not in cache:
                del cache[next(iter(cache))]
            cache[key] = 1

    return store


def _bounded(bound: int, keys: list[bytes], max_bytes: bool = False) -> Callable[[], None]:
    cache: BoundedDict[bytes, int] = (BoundedDict(bound, max_bytes=bound * 64, size=lambda k, v: len(k) + 48)
                                      if max_bytes else BoundedDict(bound))

    def store() -> None:
        for key in keys:
            cache[key] = 1

    return store


def _hits(cache: dict[bytes, int], keys: list[bytes]) -> Callable[[], None]:
    def read() -> None:
        get = cache.get
        for key in keys:
            get(key)

    return read


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}; ns per operation, median of {args.runs} runs [min, max]")
    for bound in BOUNDS:
        keys = [f"https://h{n}.example/".encode() for n in range(bound * 4)]  # every store a new key
        kinds: dict[str, Callable[[], None]] = {
            "store, plain dict, clear when full": _plain_clear(bound, keys),
            "store, BoundedDict": _bounded(bound, keys),
            "store, BoundedDict with max_bytes": _bounded(bound, keys, max_bytes=True),
        }
        if bound <= OLDEST_UP_TO:
            kinds["store, plain dict, del oldest"] = _plain_oldest(bound, keys)
        held = keys[:bound - 1]
        plain: dict[bytes, int] = dict.fromkeys(held, 1)
        bounded: BoundedDict[bytes, int] = BoundedDict(bound)
        bounded.update(plain)
        kinds["hit, plain dict"] = _hits(plain, held)
        kinds["hit, BoundedDict"] = _hits(bounded, held)
        times: dict[str, list[float]] = {name: [] for name in kinds}
        for _ in range(args.runs):
            for name, run in kinds.items():
                count = len(held) if name.startswith("hit") else len(keys)
                number = max(1, 200_000 // count)
                times[name].append(min(timeit.repeat(run, number=number, repeat=3)) / (number * count) * 1e9)
        print(f"\nmax_entries {bound:,}")
        for name, found in times.items():
            print(f"  {name:38s} {statistics.median(found):7.1f}  [{min(found):.1f}, {max(found):.1f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
