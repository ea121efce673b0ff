"""Acting on verdicts: the actions (:mod:`.actions`), the tellers (:mod:`.tellers`), the close
summary (:mod:`.close_summary`), the per-origin release memo of the most frequent verdict
(:mod:`.release_memo`), the agents of requests, Crawl-delay."""
