"""Usage preferences (AIPREF, TDMRep, robots directives): what a site says may be done with
its content, read from every place it says it. This package is the response side; it is pure
Python (no Scrapy or Twisted imports).

* :mod:`~scrapy_rfc9309.usage.response_sources`: a response's headers and meta tags, each read
  into a statement;
* :mod:`~scrapy_rfc9309.usage.html_head`: the bounded reading of an HTML head's meta tags;
* :mod:`~scrapy_rfc9309.usage.preferences`: the statements of one response combined per category.

What the core reads too lives in it: the AIPREF categories and how statements combine
(:mod:`~scrapy_rfc9309.core.usage_vocabulary`, public at ``scrapy_rfc9309.usage.vocabulary``)
and robots.txt's ``Content-Usage`` and ``Content-Signal`` records
(:mod:`~scrapy_rfc9309.core.usage_rules`, public at ``scrapy_rfc9309.usage.robotstxt_records``;
re-exported here: :class:`UsagePreference`, :class:`UsageRule`). The Scrapy layer of usage
preferences is in :mod:`~scrapy_rfc9309.components`: ``scrapy_rfc9309.UsageMiddleware``
(:mod:`~scrapy_rfc9309.components.usage_middleware`) and ``scrapy_rfc9309.NofollowMiddleware``
(:mod:`~scrapy_rfc9309.components.nofollow_middleware`)."""

from __future__ import annotations

from ..core.usage_rules import UsagePreference, UsageRule, applicable, read_statement, split_rule

__all__ = ["UsagePreference", "UsageRule", "applicable", "read_statement", "split_rule"]
