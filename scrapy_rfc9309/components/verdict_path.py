"""The path of a request to its verdict, past the release memo (see
:mod:`~scrapy_rfc9309.enforcement.release_memo`): request -> origin -> document states ->
verdict (the origin's :class:`~scrapy_rfc9309.core.verdict.Ruling`) -> action
(:class:`~scrapy_rfc9309.enforcement.actions.Actions`). Every verdict it makes is a
ruling's, or one of the pure constructors ``not_judged``, ``invalid_meta``, ``at_close``."""

from __future__ import annotations

import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from ..config import purpose_tokens
from ..core.caches import BoundedDict
from ..core.origins import Origin, OriginOf
from ..core.verdict import Judgement, Kind, Ruling, at_close, holding, invalid_meta, not_judged
from ..enforcement.request_agents import InvalidAgentMeta
from ..exceptions import RobotsTxtConfigError
from ..lifecycle.states import Closing
from ..meta import (
    FETCH_META,
    GIVEN_UP_META,
    KEEPER_META,
    PREFERENCES_META,
    PURPOSE_META,
    TDMREP_META,
    USAGE_META,
)
from ..runtime import compat as _compat
from ..runtime.reporting import Reporting

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from ..core.documents import Document
    from ..core.state import OriginState
    from ..core.verdict import Enforced
    from ..enforcement.actions import Actions
    from ..enforcement.release_memo import Releases
    from ..enforcement.request_agents import UserAgents
    from ..enforcement.tellers import Tellers
    from ..lifecycle.waiting import WaitingRequests

__all__ = ["Rulings", "VerdictPath"]

#: Origins whose ruling is remembered at most (the oldest quarter goes first).
MAX_RULINGS = 1024
_now = time.time


class Verdicts(Protocol):
    """What the path reads of the crawl's verdicts' side: a :class:`.wiring.VerdictParts`
    (named by its shape: wiring makes the path, so the path does not import it)."""

    agents: UserAgents
    enforced: Enforced
    tellers: Tellers
    actions: Actions


class Rulings(BoundedDict[Origin, Ruling]):
    """The ruling of each origin, remembered while its states, the agent, the purpose
    tokens and whether the tellers need the allowing rule are the same."""

    __slots__ = ("parts",)

    def __init__(self, parts: Verdicts, max_entries: int = MAX_RULINGS) -> None:
        super().__init__(max_entries)
        self.parts = parts

    def of(self, origin: Origin, robots: OriginState, tdm: OriginState | None, agent: str | bytes,
           purposes: tuple[str, ...] | None) -> Ruling:
        parts = self.parts
        explain = parts.tellers.explain
        ruling = self.get(origin)
        if (ruling is None or ruling.robots is not robots or ruling.tdm is not tdm or ruling.agent != agent
                or ruling.explain is not explain
                or ruling.purposes != (parts.enforced.purpose_tokens if purposes is None else purposes)):
            ruling = self[origin] = Ruling(robots, tdm, agent, parts.agents.token(agent), parts.enforced, purposes,
                                           explain)
        return ruling


class VerdictPath(Reporting):
    """Judges the requests the release memo does not answer (see the module)."""

    def __init__(self, crawler: Crawler, parts: Verdicts, states: WaitingRequests, tdm: WaitingRequests | None,
                 origin_of: OriginOf, releases: Releases) -> None:
        self.crawler = crawler
        self.agents = parts.agents
        self.actions = parts.actions
        self.policy = parts.enforced.policy
        self.states = states
        self.tdm = tdm
        self.origin_of = origin_of
        self.releases = releases
        self.rulings = Rulings(parts)
        self.parts = parts
        #: The crawl's own agent (a request without its own): the only one the release memo answers for.
        self.own_agent = self.agents.configured or self.agents.default
        #: Whether that agent is the crawl's whatever a request's headers (``ROBOTSTXT_USER_AGENT`` is set).
        self.any_headers = bool(self.agents.configured)

    def plain(self, request: Request) -> Request | Coroutine[Any, Any, Request | None] | None:
        """``process_request`` of a request with none of the plugin's meta keys."""
        origin = self.origin_of(request.url)
        if origin is None:
            return self._not_http(request)
        return self._judge(request, origin, self.agents.unnamed(request), None, True)

    def special(self, request: Request) -> Request | Coroutine[Any, Any, Request | None] | None:
        """``process_request`` of a request with one of the plugin's meta keys at least."""
        meta = request.meta
        if KEEPER_META in meta:
            return self.states.parking.keeper.wait()
        if FETCH_META in meta:
            return None  # the plugin's own fetch of a document
        url = request.url
        origin = self.origin_of(url)
        if origin is None:
            return self._not_http(request)
        actions = self.actions
        if meta.get("dont_obey_robotstxt"):
            return actions.act(request, origin, not_judged(url, self.agents.token_of(request)))
        # A redirect copies meta: what was found for the URL before it is stale.
        meta.pop(USAGE_META, None)
        meta.pop(PREFERENCES_META, None)
        if self.tdm is not None:
            meta.pop(TDMREP_META, None)
        try:
            agent = self.agents.of(request)
            purposes = self._purposes(meta)
        except (InvalidAgentMeta, RobotsTxtConfigError) as exc:
            return actions.act(request, origin, invalid_meta(url, self.agents.token_of(request), str(exc)))
        given_up_as = meta.pop(GIVEN_UP_META, False)
        if given_up_as == "idle":  # held, back from parking: given up as nothing else was left (raises)
            actions.act(request, origin, self.at_close(request, origin, self._holder(origin), False, "idle"))
        if given_up_as:  # held, back from parking: its origin was given up
            for states in (self.states, self.tdm):
                if states is not None and (given_up := states.given_up(origin)) is not None:
                    states.give_up(origin)
                    dropped = holding(url, self.agents.token(agent), given_up, states.document, _now(), self.policy,
                                      self.states.cache.get(origin))
                    if dropped is not None and dropped.kind is Kind.DROPPED:  # raises
                        actions.act(request, origin, dropped)
        return self._judge(request, origin, agent, purposes, False)

    def _not_http(self, request: Request) -> Request | None:
        """A request whose URL is not http(s): no robots.txt applies, it is released with a
        ``not_judged`` verdict (``not_http``), told to the tellers of every URL."""
        return self.actions.act(request, None, not_judged(request.url, self.agents.token_of(request), "not_http"))

    def _judge(self, request: Request, origin: Origin, agent: str | bytes, purposes: tuple[str, ...] | None,
               plain: bool) -> Request | Coroutine[Any, Any, Request | None] | None:
        """Judge ``request`` by its origin's cached states, or wait for them (a coroutine)."""
        now = _now()
        robots = self.states.cached(origin, now)
        tdm = self.tdm
        if robots is None:
            if tdm is not None:
                tdm.prefetch(origin, request)  # fetched beside the robots.txt, not after it
            # Scrapy schedules a returned request: it is parked on the way (see parking).
            return self.states.park(origin, request) or self._wait_then_judge(request, origin, agent, None, purposes)
        tdm_state = None
        if tdm is not None:
            tdm_state = tdm.cached(origin, now)
            if tdm_state is None:
                self._judge_robots(request, origin, agent, robots, purposes)
                return tdm.park(origin, request) or self._wait_then_judge(request, origin, agent, robots, purposes)
        ruling = self.rulings.of(origin, robots, tdm_state, agent, purposes)
        url = request.url
        verdict = ruling.judge(url, now)
        if plain and ruling.plain and verdict.kind is Kind.ALLOWED and agent == self.own_agent:
            self.releases.remember(url, origin, ruling, self.any_headers)
        return self.actions.act(request, origin, verdict)

    def _purposes(self, meta: dict[str, Any]) -> tuple[str, ...] | None:
        """The request's ``robotstxt_purpose_tokens`` (None: ``ROBOTSTXT_PURPOSE_TOKENS``)."""
        value = meta.get(PURPOSE_META)
        return None if value is None else purpose_tokens(value, f"request meta {PURPOSE_META!r}")

    def _judge_robots(self, request: Request, origin: Origin, agent: str | bytes, robots: OriginState,
                      purposes: tuple[str, ...] | None) -> None:
        """Act on a request the robots.txt refuses before it waits for the tdmrep.json."""
        ruling = Ruling(robots, None, agent, self.agents.token(agent), self.parts.enforced, purposes,
                        self.parts.tellers.explain)
        judgement = ruling.judge(request.url, _now())
        if not judgement.kind.passes:
            self.actions.act(request, origin, judgement)

    async def _wait_then_judge(self, request: Request, origin: Origin, agent: str | bytes,
                               robots: OriginState | None, purposes: tuple[str, ...] | None) -> Request | None:
        """Judge ``request`` once its origin's documents are known: wait for their
        fetch, and while a document holds the request (unreachable), until a retry
        succeeds or waiting no longer helps."""
        tdm = self.tdm
        waiting: WaitingRequests = self.states
        try:
            if robots is None:
                robots = await self._known(self.states, request, origin, agent, None)
                if tdm is not None:
                    self._judge_robots(request, origin, agent, robots, purposes)
            tdm_state = None
            if tdm is not None:
                waiting = tdm
                tdm_state = await self._known(tdm, request, origin, agent, robots)
        except Closing as closing:
            persists = _compat.scheduler_persists(self.crawler.engine)
            return self.actions.act(request, origin, self.at_close(request, origin, waiting, persists,
                                                                   closing.reason))
        verdict = self.rulings.of(origin, robots, tdm_state, agent, purposes).judge(request.url, _now())
        return self.actions.act(request, origin, verdict)

    async def _known(self, states: WaitingRequests, request: Request, origin: Origin, agent: str | bytes,
                     robots: OriginState | None) -> OriginState:
        """The state of ``states``' document once it no longer holds ``request``. A
        request it holds is told once (``held``); one that waiting no longer helps is
        dropped (acting on it raises). ``robots``: the robots.txt state, when
        ``states`` is another document's. Raises :class:`Closing`."""
        held = False
        state = await states.current(origin, request)
        token = self.agents.token(agent)
        while True:
            now = _now()
            if not states.holding(state, now):
                break
            judgement = holding(request.url, token, state, states.document, now, self.policy, robots or state)
            assert judgement is not None
            if judgement.kind is Kind.DROPPED:
                states.give_up(origin)
                self.actions.act(request, origin, judgement)  # raises
            if not held:
                held = True
                self.actions.hold(request, origin, judgement)
            fetched = await states.wait(origin, request, state.give_up_at(self.policy) - now)
            # Woken by a fetch's state, or at the deadline (a retry still running then serves nobody).
            state = fetched or states.cache.get(origin) or await states.current(origin, request)
        if held:
            self._inc(f"{states.document.stat}released")
        return state

    def parked_held(self, request: Request, origin: Origin, document: Document) -> None:
        """A request parked while its origin's ``document`` holds it: told as held (its verdict
        follows when it comes back from parking; the parking counts it). A ``dont_obey_robotstxt``
        request, parked with the others of its origin, is not held by the document: it is judged
        when it comes back."""
        if request.meta.get("dont_obey_robotstxt"):
            return
        token = self.agents.token_of(request)
        state = self.waiting_for(document).cache.get(origin)
        robots = self.states.cache.get(origin)
        judgement = None if state is None else holding(request.url, token, state, document, _now(),
                                                       self.policy, robots or state)
        if judgement is None or judgement.kind is not Kind.HELD:
            judgement = Judgement(Kind.HELD, request.url, token, robots, document=document)
        self.actions.hold(request, origin, judgement, counted=True)

    def parked_requeued(self, request: Request, origin: Origin, reason: str, document: Document) -> None:
        """A parked request handed back to the scheduler at close (``reason``) while it waited
        for the origin's ``document``: its ``requeued`` verdict, counted and told as that of a
        request that waited in the downloader (the parking schedules it)."""
        self.actions.act(request, origin, self.at_close(request, origin, self.waiting_for(document), True, reason))

    def waiting_for(self, document: Document) -> WaitingRequests:
        """The requests waiting for ``document`` (robots.txt's, or tdmrep.json's)."""
        tdm = self.tdm
        return tdm if tdm is not None and document is tdm.document else self.states

    def at_close(self, request: Request, origin: Origin, waiting: WaitingRequests, persists: bool,
                 reason: str) -> Judgement:
        """The verdict on a request given up at close or at idle (``reason``) while
        ``waiting``'s document held it: handed back (``persists``) or dropped, with the
        document's state then (what it answered, how long it was unreachable)."""
        return at_close(request.url, self.agents.token_of(request), waiting.document, persists, reason,
                        waiting.cache.get(origin), _now())

    def _holder(self, origin: Origin) -> WaitingRequests:
        """The document that holds the origin's requests: its robots.txt, else its tdmrep.json."""
        tdm = self.tdm
        if tdm is not None and not self.states.document_states.holds_now(origin):
            return tdm
        return self.states
