"""Checks an installed scrapy-rfc9309 wheel: the C accelerator is in it and decides.

Run with the interpreter the wheel is installed in, from outside the source tree
(cibuildwheel's test-command and ``.ci/package-check`` do both), so that only the
installed package can be imported. Exits non-zero on any problem.
"""

from __future__ import annotations

import sys
from pathlib import Path

import scrapy_rfc9309
from scrapy_rfc9309 import parse  # ImportError: the wheel has no accelerator
from scrapy_rfc9309.core import _speedups, matcher

ROBOTS = "User-agent: *\nDisallow: /private\nAllow: /private/ok\nDisallow: /*.pdf$\n"
CASES = {
    "https://example.com/": True,
    "https://example.com/private/x": False,
    "https://example.com/private/ok": True,
    "https://example.com/doc.pdf": False,
    "https://example.com/doc.pdf?x": True,
    "https://example.com/robots.txt": True,
}


def main() -> int:
    package = Path(scrapy_rfc9309.__file__).resolve().parent
    print(f"scrapy-rfc9309 {scrapy_rfc9309.__version__} from {package}")
    print(f"accelerator: {_speedups.__file__}")
    if not (package / "core" / "_speedups.pyi").is_file() or not (package / "py.typed").is_file():
        print("FAIL: the wheel lacks core/_speedups.pyi or py.typed")
        return 1
    if matcher.FastMatcher is not _speedups.FastMatcher:
        print("FAIL: the matcher does not use the accelerator")
        return 1
    robots, pure = parse(ROBOTS), parse(ROBOTS, speedups=False)
    wrong = [url for url, allowed in CASES.items()
             if not robots.allowed(url, "ExampleBot") is pure.allowed(url, "ExampleBot") is allowed]
    if wrong:
        print(f"FAIL: wrong decisions for {wrong}")
        return 1
    verdict = robots.verdict("https://example.com/private/x", "ExampleBot")
    if str(verdict) != "Disallow: /private, line 2":
        print(f"FAIL: verdict {verdict!s}")
        return 1
    print(f"decisions: {len(CASES)} right, with and without the accelerator; {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
