"""The ledger's format (:mod:`.format`) and its audit (:mod:`.audit`; the files read by
:mod:`.files`, the checks in :mod:`.segment_check`, :mod:`.verdict_check` and :mod:`.manifest_check`,
the findings in :mod:`.audit_result`). Imports neither Scrapy nor Twisted."""
