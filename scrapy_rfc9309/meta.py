"""The request meta keys the plugin reads and sets, in one place (see docs/meta.md)."""

from __future__ import annotations

__all__ = [
    "AGENT_META",
    "FETCH_META",
    "FINGERPRINT_META",
    "GIVEN_UP_META",
    "KEEPER_META",
    "PREFERENCES_META",
    "PURPOSE_META",
    "RECORD_META",
    "SIZE_META",
    "TDMREP_META",
    "USAGE_META",
]

# -- keys a user sets or reads -----------------------------------------------------------
#: The product token (or User-Agent string) to obey for this request.
AGENT_META = "robotstxt_user_agent"
#: Further product tokens whose groups must also allow this request (replacing
#: ``ROBOTSTXT_PURPOSE_TOKENS`` for it): a list of tokens, or a comma-separated string.
PURPOSE_META = "robotstxt_purpose_tokens"
#: Set to the robots.txt usage preference (``Content-Usage`` / ``Content-Signal``) that
#: applies to the request (a :class:`~scrapy_rfc9309.usage.UsagePreference`).
USAGE_META = "robotstxt_usage"
#: Set on a response's request to its :class:`~scrapy_rfc9309.usage.preferences.Preferences`
#: (every source combined), when some source states one.
PREFERENCES_META = "robotstxt_preferences"
#: With ``ROBOTSTXT_TDMREP`` on, set to the rule of the origin's tdmrep.json that applies
#: (a :class:`~scrapy_rfc9309.tdmrep.TdmEntry`), or None (no rule applies, or the origin
#: has no tdmrep.json); not set while the file is unreachable and no copy of it is at
#: hand (nothing is known).
TDMREP_META = "robotstxt_tdmrep"

# -- the plugin's own --------------------------------------------------------------------
#: Marks the plugin's own robots.txt (and tdmrep.json) requests.
FETCH_META = "_robotstxt_rfc9309_fetch"
#: The bytes of a document fetch received so far.
SIZE_META = "_robotstxt_rfc9309_bytes"
#: The keeper request of the parking (see :mod:`.parking`).
KEEPER_META = "_robotstxt_rfc9309_keeper"
#: A held request scheduled again because its origin's requests were given up: it is
#: dropped when it comes back, unless a fetch has succeeded meanwhile (True: at
#: ``ROBOTSTXT_MAX_WAIT``; ``"idle"``: at ``ROBOTSTXT_MAX_WAIT_IDLE``, dropped whatever came since).
GIVEN_UP_META = "_robotstxt_rfc9309_given_up"
#: The URL and fingerprint of a request the ledger recorded (its response record names them).
FINGERPRINT_META = "_robotstxt_ledger_fp"
#: With ``ROBOTSTXT_PROVENANCE``: the URL of a request the ledger recorded, and its verdict record's run,
#: segment, line, chain hash (bytes) and robots.txt version digest (or None), which the provenance of its
#: response's items names.
RECORD_META = "_robotstxt_ledger_record"
