"""The one teller loop: :class:`~scrapy_rfc9309.enforcement.tellers.Tellers` tells each verdict to
the tellers of its kind and each response to the tellers of its outcome; the tally counts allowed
verdicts by an int, told by the actions, and the others by the loop."""

from __future__ import annotations

from typing import Any

from scrapy import Request

from scrapy_rfc9309.core.origins import Origin
from scrapy_rfc9309.core.verdict import Judgement, Kind
from scrapy_rfc9309.enforcement.tellers import Tellers

ORIGIN = Origin("https", "example.com", 443)


class Recorder:
    def __init__(self, explains: bool = False, passed_responses: bool = False) -> None:
        self.explains = explains
        self.passed_responses = passed_responses
        self.verdicts: list[Kind] = []
        self.responses: list[str] = []
        self.closed = False

    def judged(self, request: Any, origin: Origin, judgement: Judgement) -> None:
        self.verdicts.append(judgement.kind)

    def responded(self, request: Any, status: int, outcome: str) -> None:
        self.responses.append(outcome)

    async def close(self) -> None:
        self.closed = True


def test_every_kind_reaches_every_teller_and_the_tally_counts_all_but_allowed():
    tellers = Tellers()
    first, second = Recorder(), Recorder(explains=True)
    assert not tellers.explain
    tellers.add(first)
    assert not tellers.explain
    tellers.add(second, responses=False)
    assert tellers.explain
    request = Request("https://example.com/p")
    for kind in Kind:
        tellers.judged(request, ORIGIN, Judgement(kind, request.url, "bot", reason="max_wait"))
    assert first.verdicts == second.verdicts == list(Kind)
    assert tellers.tally.allowed == 0  # counted by the actions, not by the loop
    assert sum(tellers.tally.counts.values()) == len(Kind) - 1
    assert tellers.of_allowed == (first, second)


def test_responses_go_to_the_tellers_of_their_outcome_and_the_tally_counts_those_kept():
    tellers = Tellers()
    kept_only, passed_too, verdicts_only = Recorder(), Recorder(passed_responses=True), Recorder()
    tellers.add(kept_only)
    tellers.add(passed_too)
    tellers.add(verdicts_only, responses=False)
    request = Request("https://example.com/p")
    tellers.responded(request, 200, "passed")
    tellers.responded(request, 200, "usage_denied")
    assert kept_only.responses == ["usage_denied"]
    assert passed_too.responses == ["passed", "usage_denied"]
    assert verdicts_only.responses == []
    assert tellers.tally.responses == {"usage_denied": 1}
    assert tellers.of_passed == (passed_too,)
