"""The ledger's format (:mod:`.format`) and its audit (:mod:`.audit`). Imports neither Scrapy
nor Twisted."""
