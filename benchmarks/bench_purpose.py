"""Benchmark: decisions per second with purpose tokens (``ROBOTSTXT_PURPOSE_TOKENS``).

Every robots.txt of the corpus (``benchmarks/corpus`` by default) is parsed once and its
origin's state kept; then the verdict of each of a set of URLs of every file is made with
:func:`scrapy_rfc9309.judgement.judge`, as the middleware makes it, with no purpose token,
with one (``GPTBot``) and with three (``GPTBot``, ``CCBot``, ``Google-Extended``): the
decisions per second of each, side by side in one run, several runs with their spread.
The first question about a token builds its groups (as a crawl's first request does); the
figures are of warm files, as a crawl asks each file many times.

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
sys.path.insert(0, str(ROOT))

from scrapy_rfc9309.access import Access, FetchOutcome, OriginState, Policy  # noqa: E402
from scrapy_rfc9309.judgement import Enforced, judge  # noqa: E402

PATHS = ["/", "/index.html", "/search?q=x", "/admin/", "/wp-admin/admin-ajax.php", "/products/123", "/cart",
         "/blog/2024/01/post.html", "/api/v1/items", "/images/logo.png", "/articles/a-long-title-1234",
         "/private/data", "/tag/news/feed/", "/?sessionid=1", "/sitemap.xml", "/user/profile"]
CONFIGS = {"none": (), "one": ("gptbot",), "three": ("gptbot", "ccbot", "google-extended")}


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
    for _ in range(args.runs):
        for name in CONFIGS:  # side by side in each run
            settings = enforced[name]
            started = time.perf_counter()
            for state in states:
                for url in urls:
                    judge(url, agent, token, state, now, settings)
            rates[name].append(len(states) * len(urls) / (time.perf_counter() - started))
    print(f"{len(states)} files, {len(urls)} URLs each, {args.runs} runs (decisions per second: median [min, max], "
          "ratio of medians to no purpose token)")
    base = statistics.median(rates["none"])
    for name, tokens in CONFIGS.items():
        values = rates[name]
        median = statistics.median(values)
        print(f"| {name} ({', '.join(tokens) or '-'}) | {median:,.0f} [{min(values):,.0f}, {max(values):,.0f}] | "
              f"{median / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
