"""Acting on verdicts: the action and its tellers (:mod:`.actions`), the per-origin shortcut of
the most frequent verdict (:mod:`.release_memo`), the agents of requests, Crawl-delay."""
