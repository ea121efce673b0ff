"""Writing the verdict ledger during a crawl (``ROBOTSTXT_LEDGER``)."""
