"""A crawl as a user runs one without a Twisted reactor, for ``test_reactorless.py``:

    python tests/reactorless_crawl.py SPEC.json

``AsyncCrawlerProcess`` with ``TWISTED_REACTOR_ENABLED = False`` and the add-on enabled through
``ADDONS`` (Scrapy 2.15 and later), updated by the spec's ``settings``, crawls the spec's ``urls``.
Prints one JSON line: the items scraped, the errors that reached the errback (URL and exception
class), the stats, and whether a Twisted reactor got installed after all.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import scrapy
from scrapy.crawler import AsyncCrawlerProcess
from scrapy.http import Response
from twisted.python.failure import Failure

OUT: dict[str, Any] = {"items": [], "errors": []}


class ReproSpider(scrapy.Spider):
    name = "repro"

    def __init__(self, urls: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls

    async def start(self) -> Any:
        for url in self.urls:
            yield scrapy.Request(url, callback=self.parse, errback=self.on_error, dont_filter=True)

    def parse(self, response: Response, **kwargs: Any) -> Any:
        yield {"url": response.url, "status": response.status}

    def on_error(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        OUT["errors"].append([request.url if request is not None else "", type(failure.value).__name__])


def main(spec_path: str) -> int:
    with open(spec_path) as handle:
        spec = json.load(handle)
    settings = {
        "TWISTED_REACTOR_ENABLED": False,
        "ADDONS": {"scrapy_rfc9309.Addon": 0},
        "LOG_LEVEL": "INFO",
        "HTTPPROXY_ENABLED": False,  # loopback traffic never goes through a proxy from the environment
        "RETRY_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 10,
        **spec.get("settings", {}),
    }
    process = AsyncCrawlerProcess(settings)
    crawler = process.create_crawler(ReproSpider)
    crawler.signals.connect(lambda item, **_: OUT["items"].append(item), signal=scrapy.signals.item_scraped,
                            weak=False)
    process.crawl(crawler, urls=spec["urls"])
    process.start()
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    OUT["stats"] = {key: value for key, value in stats.items() if isinstance(value, (int, float, str))}
    OUT["reactor_installed"] = "twisted.internet.reactor" in sys.modules
    print(json.dumps(OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
