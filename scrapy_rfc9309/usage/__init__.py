"""Usage preferences (AIPREF, TDMRep, robots directives): what a site says may be done with
its content, read from every place it says it.

* :mod:`~scrapy_rfc9309.usage.vocabulary`: the AIPREF categories and how statements combine;
* :mod:`~scrapy_rfc9309.usage.robotstxt_records`: robots.txt's ``Content-Usage`` and
  ``Content-Signal`` records (re-exported here: :class:`UsagePreference`, :class:`UsageRule`);
* :mod:`~scrapy_rfc9309.usage.response_sources`: a response's headers and meta tags, each read
  into a statement;
* :mod:`~scrapy_rfc9309.usage.html_head`: the bounded reading of an HTML head's meta tags;
* :mod:`~scrapy_rfc9309.usage.preferences`: the statements of one response combined per category;
* :mod:`~scrapy_rfc9309.usage.middleware` (``scrapy_rfc9309.UsageMiddleware``) and
  :mod:`~scrapy_rfc9309.usage.nofollow` (``scrapy_rfc9309.NofollowMiddleware``): the Scrapy layer.

Every module but the last two is pure Python (no Scrapy or Twisted imports), and importing this
package imports only pure ones."""

from __future__ import annotations

from .robotstxt_records import UsagePreference, UsageRule, applicable, read_statement, split_rule

__all__ = ["UsagePreference", "UsageRule", "applicable", "read_statement", "split_rule"]
