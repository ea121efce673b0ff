"""Benchmark: decisions per second with purpose tokens (``ROBOTSTXT_PURPOSE_TOKENS``).

Every robots.txt of the corpus (``benchmarks/corpus`` by default) is parsed once and its
origin's state kept; then the verdict of each of a set of URLs of every file is made with
:func:`scrapy_rfc9309.judgement.judge`, as the middleware makes it, with no purpose token,
with one (``GPTBot``) and with three (``GPTBot``, ``CCBot``, ``Google-Extended``): the
decisions per second of each, side by side in one run, several runs with their spread.
The first question about a token builds its groups (as a crawl's first request does); the
figures are of warm files, as a crawl asks each file many times. Then the same with 70,
1,000 and 3,000 tokens that no file names beside those three (issue 38: the group memo of a
file holds 64 agents), and the per-origin shortcut (the ``passes`` of a plain
:class:`~scrapy_rfc9309.core.verdict.Ruling`, what the middleware asks for a request of an origin
it has judged): its test's decisions per
second where it is given, and how many of the files' tests it gives.

Run it on an earlier commit with ``PYTHONPATH`` naming a checkout of that commit (``previous.Checkout``) and
``RFC9309_BENCH_PREVIOUS=1`` (see ``previous.py``), e.g. for the figures before a change.

Usage::

    python benchmarks/bench_purpose.py [CORPUS_DIR] [--runs 3] [--urls 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from previous import package_root_first  # noqa: E402

package_root_first()

# The public paths: the previous release (RFC9309_BENCH_PREVIOUS) has them too.
from scrapy_rfc9309.access import Access, FetchOutcome, OriginState, Policy  # noqa: E402
from scrapy_rfc9309.core.verdict import Ruling  # noqa: E402
from scrapy_rfc9309.judgement import Enforced, judge  # noqa: E402

PATHS = ["/", "/index.html", "/search?q=x", "/admin/", "/wp-admin/admin-ajax.php", "/products/123", "/cart",
         "/blog/2024/01/post.html", "/api/v1/items", "/images/logo.png", "/articles/a-long-title-1234",
         "/private/data", "/tag/news/feed/", "/?sessionid=1", "/sitemap.xml", "/user/profile"]
THREE = ("gptbot", "ccbot", "google-extended")


def _unnamed(count: int) -> tuple[str, ...]:
    """``count`` product tokens no robots.txt names."""
    return tuple(f"purpose-{chr(97 + n % 26)}{chr(97 + n // 26 % 26)}{chr(97 + n // 676)}" for n in range(count))


CONFIGS = {"none": (), "one": ("gptbot",), "three": THREE, "70": THREE + _unnamed(67),
           "1,000": THREE + _unnamed(997), "3,000": THREE + _unnamed(2997)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT / "benchmarks" / "corpus"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--urls", type=int, default=len(PATHS) * 8, help="questions per file per configuration")
    args = parser.parse_args(argv)
    policy = Policy()
    now = time.time()
    states = []
    for path in sorted(Path(args.corpus).iterdir()):
        if path.is_file():
            url = "https://example.com/robots.txt"
            states.append(OriginState.initial(FetchOutcome(Access.PARSED, url, 200, path.read_bytes()), now, policy))
    urls = [f"https://example.com{PATHS[i % len(PATHS)]}" for i in range(args.urls)]
    agent, token = "ExampleBot/1.0", "examplebot"
    enforced = {name: Enforced(policy, purpose_tokens=tokens) for name, tokens in CONFIGS.items()}
    for name in CONFIGS:  # warm: every token's groups built
        for state in states:
            judge(urls[0], agent, token, state, now, enforced[name])
    rates: dict[str, list[float]] = {name: [] for name in CONFIGS}
    shortcut_rates: dict[str, list[float]] = {name: [] for name in CONFIGS}
    rulings = {name: [Ruling(state, None, agent, token, enforced[name]) for state in states] for name in CONFIGS}
    tests = {name: [(ruling.robots, ruling.passes if ruling.plain else None) for ruling in rulings[name]]
             for name in CONFIGS}
    for _ in range(args.runs):
        for name in CONFIGS:  # side by side in each run
            settings = enforced[name]
            started = time.perf_counter()
            for state in states:
                for url in urls:
                    judge(url, agent, token, state, now, settings)
            rates[name].append(len(states) * len(urls) / (time.perf_counter() - started))
            given = [test for _state, test in tests[name] if test is not None]
            started = time.perf_counter()
            for test in given:
                for url in urls:
                    test(url)
            if given:
                shortcut_rates[name].append(len(given) * len(urls) / (time.perf_counter() - started))
    print(f"{len(states)} files, {len(urls)} URLs each, {args.runs} runs (decisions per second: median [min, max], "
          "ratio of medians to no purpose token; the release memo's test where the ruling is plain)")
    print("| purpose tokens | judge() | ratio to none | shortcut tests given | shortcut test | ratio to none |")
    print("|---|---|---|---|---|---|")
    base = statistics.median(rates["none"])
    shortcut_base = statistics.median(shortcut_rates["none"]) if shortcut_rates["none"] else None
    for name, tokens in CONFIGS.items():
        values = rates[name]
        median = statistics.median(values)
        shown = ", ".join(tokens[:3]) + (f", and {len(tokens) - 3} more" if len(tokens) > 3 else "")
        given = sum(test is not None for _state, test in tests[name])
        fast = shortcut_rates[name]
        if fast and shortcut_base:
            fast_median = statistics.median(fast)
            shortcut = f"{fast_median:,.0f} [{min(fast):,.0f}, {max(fast):,.0f}] | {fast_median / shortcut_base:.2f}"
        else:
            shortcut = "- | -"
        print(f"| {name} ({shown or '-'}) | {median:,.0f} [{min(values):,.0f}, {max(values):,.0f}] | "
              f"{median / base:.2f} | {given}/{len(states)} | {shortcut} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
