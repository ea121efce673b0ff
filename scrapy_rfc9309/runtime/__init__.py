"""The Scrapy and Twisted runtime: Scrapy's internals (:mod:`.compat`, the one module that
touches them), the event loop (:mod:`.loop`), stats and log lines (:mod:`.reporting`)."""
