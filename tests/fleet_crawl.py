"""One crawl in an OS process of its own, for the fleet tests (``test_fleet.py``):

    python tests/fleet_crawl.py SPEC.json

``SPEC`` gives ``settings``, ``kind`` (``"list"``: crawl ``urls``; ``"scrapy_redis"``:
a scrapy-redis ``RedisSpider`` that reads its start URLs from Redis and follows
links) and ``start_together`` (``{"dir": ..., "count": N}``: a barrier; each process, ready to crawl,
says so in ``dir`` and waits until ``N`` have, so that the processes start together however long each
one took to start up). ``fsize_limit`` sets ``RLIMIT_FSIZE`` before the crawl
(a full disk: writes past it fail with EFBIG). ``kill_at_end_line`` (``"before"`` or ``"mid"``) kills the
process with SIGKILL as its ledger appends the run's end line to the manifest: just before it, or
with half the line written. With ``reactorless`` it crawls without a Twisted reactor
(``AsyncCrawlerProcess``, ``TWISTED_REACTOR_ENABLED = False``). Prints one JSON line: the stats, the URLs that reached
a callback, the errors and the warnings logged, the crawl's seconds and the process's peak RSS
(``maxrss_kib``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response
from twisted.python.failure import Failure

OUT: dict[str, Any] = {"responses": [], "errors": [], "warnings": []}


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        OUT["warnings"].append(f"{record.name}: {record.getMessage()}")


class _Record:
    """Callbacks shared by both spiders."""

    follow = False

    def parse(self, response: Response, **kwargs: Any) -> Any:
        OUT["responses"].append(response.url)
        if self.follow:
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, callback=self.parse, errback=self.on_error)

    def on_error(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        OUT["errors"].append([request.url if request is not None else "", type(failure.value).__name__])


#: Seconds a process waits at the barrier for the others before it fails.
BARRIER_LIMIT = 300.0


def _start_together(barrier: dict[str, Any] | None) -> None:
    """Say this process is ready in the barrier's directory, and return once ``count`` processes have."""
    if not barrier:
        return
    folder = Path(barrier["dir"])
    (folder / f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + BARRIER_LIMIT
    while len(list(folder.glob("ready-*"))) < barrier["count"]:
        if time.monotonic() > deadline:
            raise SystemExit(f"the other processes never became ready (barrier {folder})")
        time.sleep(0.01)


def _kill_at_end_line(where: str) -> None:
    """SIGKILL this process as the ledger writes the run's end line to its manifest (the one
    write that starts with ``{"k":"end"``): before it, or once half of it is written."""
    import signal

    from scrapy_rfc9309.ledger import segments as ledger

    write_all = ledger._write_all

    def write(fd: int, data: bytes) -> None:
        if data.lstrip(b"\n").startswith(b'{"k":"end"'):
            if where == "mid":
                os.write(fd, data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        write_all(fd, data)

    ledger._write_all = write  # type: ignore[assignment]


def main(spec_path: str) -> int:
    with open(spec_path) as handle:
        spec = json.load(handle)
    logging.getLogger().addHandler(_Warnings())
    settings = {"LOG_LEVEL": "INFO", "TELNETCONSOLE_ENABLED": False, **spec["settings"]}

    if spec.get("kind") == "scrapy_redis":
        from scrapy_redis.spiders import RedisSpider

        class FleetRedisSpider(_Record, RedisSpider):  # type: ignore[misc]
            name = "fleet_redis"
            follow = True

            def make_request_from_data(self, data: bytes) -> Any:
                url = json.loads(data)["url"]
                return scrapy.Request(url, callback=self.parse, errback=self.on_error)

        spider_cls: type[scrapy.Spider] = FleetRedisSpider
    else:

        class FleetSpider(_Record, scrapy.Spider):  # type: ignore[misc]
            name = "fleet"

            async def start(self) -> Any:
                for url in spec["urls"]:
                    yield scrapy.Request(url, callback=self.parse, errback=self.on_error, dont_filter=True)

        spider_cls = FleetSpider

    _start_together(spec.get("start_together"))
    if spec.get("fsize_limit"):
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # Python ignores it already; said here for clarity
        resource.setrlimit(resource.RLIMIT_FSIZE, (spec["fsize_limit"], resource.RLIM_INFINITY))
    if spec.get("kill_at_end_line"):
        _kill_at_end_line(spec["kill_at_end_line"])
    if spec.get("reactorless"):
        from scrapy.crawler import AsyncCrawlerProcess  # Scrapy 2.14 and later

        process: Any = AsyncCrawlerProcess({**settings, "TWISTED_REACTOR_ENABLED": False}, install_root_handler=True)
    else:
        process = CrawlerProcess(settings, install_root_handler=True)
    crawler = process.create_crawler(spider_cls)
    process.crawl(crawler)
    started = time.monotonic()
    process.start()
    OUT["seconds"] = time.monotonic() - started
    import resource

    OUT["maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    stats = crawler.stats.get_stats() if crawler.stats is not None else {}
    OUT["stats"] = {key: value for key, value in stats.items() if isinstance(value, (int, float, str))}
    print(json.dumps(OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
