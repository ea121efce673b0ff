"""Purpose tokens (``ROBOTSTXT_PURPOSE_TOKENS``, the ``robotstxt_purpose_tokens`` meta key):
a request is crawled only if the groups of its own product token and of each listed token
all allow it, in a real crawl (its ledger audited) and in ``scrapy robotstxt URL``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest_twisted
from crawl import run_crawl
from middleware_support import page_hits, text
from reactorless import command_options
from scrapy import Request
from servers import ThreadedOrigin
from test_command import field

from scrapy_rfc9309.evidence.audit import audit
from scrapy_rfc9309.exceptions import RobotsTxtForbidden, RobotsTxtMetaError

ROBOTS = (
    "User-agent: *\n"  # 1
    "Allow: /\n"  # 2
    "\n"
    "User-agent: GPTBot\n"  # 4
    "Disallow: /articles/\n"  # 5
    "\n"
    "User-agent: CCBot\n"  # 7
    "Disallow: /archive/\n"  # 8
)
SETTINGS: dict[str, Any] = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "ROBOTSTXT_USER_AGENT": "MyBot",
                            "ROBOTSTXT_PURPOSE_TOKENS": ["GPTBot", "CCBot"]}


@pytest_twisted.inlineCallbacks
def test_a_crawl_obeys_the_groups_of_its_purpose_tokens(origins, tmp_path):
    site = origins()
    site["/robots.txt"] = text(ROBOTS)
    free, trained, archived = site.url("/news/1"), site.url("/articles/1"), site.url("/archive/1")
    # The request's own list replaces the setting's: [] obeys the request's own group only.
    own_only = Request(site.url("/articles/2"), meta={"robotstxt_purpose_tokens": []})
    invalid = Request(site.url("/news/2"), meta={"robotstxt_purpose_tokens": ["not a token"]})
    ledger = tmp_path / "ledger"

    result = yield run_crawl([free, trained, archived, own_only, invalid],
                             {**SETTINGS, "ROBOTSTXT_LEDGER": str(ledger)})

    assert sorted(result.responses) == sorted([free, own_only.url])
    assert sorted(hit.path for hit in page_hits(site)) == ["/articles/2", "/news/1"]
    for url, token, line in ((trained, "gptbot", 5), (archived, "ccbot", 8)):
        (error,) = result.errors_for(url)
        assert isinstance(error, RobotsTxtForbidden)
        assert error.judgement is not None and error.judgement.purpose == token
        assert error.verdict.rule is not None and error.verdict.rule.line == line and error.verdict.token == token
        assert f"in the group of purpose token {token!r}" in str(error)
    (error,) = result.errors_for(invalid.url)
    assert isinstance(error, RobotsTxtMetaError)
    # The ledger names the token whose group decided: the audit recomputes every verdict from the archived file.
    report = audit([str(ledger)])
    assert report.exit_status(False) == 0, report.problems


def _command(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scrapy", "robotstxt", *args, "-a", "MyBot", *command_options()],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)



def test_the_command_judges_with_the_purpose_tokens(tmp_path):
    with ThreadedOrigin() as server:
        server.route("/robots.txt", 200, ROBOTS)
        refused = _command(tmp_path, server.url("/articles/1"), "--purpose", "GPTBot", "--purpose", "CCBot")
        by_setting = _command(tmp_path, server.url("/archive/1"), "-s", "ROBOTSTXT_PURPOSE_TOKENS=GPTBot,CCBot")
        allowed = _command(tmp_path, server.url("/news/1"), "-p", "GPTBot,CCBot")
        without = _command(tmp_path, server.url("/articles/1"))

    assert refused.returncode == 1, refused.stderr
    assert field(refused.stdout, "Purpose") == "gptbot, ccbot (their groups must allow it too)"
    assert field(refused.stdout, "Verdict") == (
        "disallowed (Disallow: /articles/, line 5, in the group of purpose token 'gptbot')")
    assert by_setting.returncode == 1
    assert field(by_setting.stdout, "Verdict").endswith("in the group of purpose token 'ccbot')")
    assert allowed.returncode == 0 and field(allowed.stdout, "Verdict") == "allowed (Allow: /, line 2)"
    assert without.returncode == 0 and "Purpose:" not in without.stdout


def test_the_groups_purpose_tokens_select_refuse_exactly_what_each_token_s_group_refuses():
    # RobotsTxt.purpose_groups asks one token per group other than the agent's: the first token (in order)
    # whose group refuses a URL is the one each token's own group, asked in turn, names first.
    from scrapy_rfc9309 import parse

    body = (ROBOTS + "\nUser-agent: aibot\nUser-agent: otherai\nDisallow: /ai/\n\nUser-agent: mybot\nAllow: /\n"
            "Disallow: /mine/\n")
    tokens = ("unnamed", "gptbot", "aibot", "ccbot", "otherai", "mybot", "more-unnamed")
    for agent in ("MyBot/1.0", "Unlisted", "GPTBot", ""):
        for order in (tokens, tokens[::-1], tokens[2:]):
            robots = parse(body)
            groups = robots.purpose_groups(agent, order)
            assert len(groups) == len({robots.group_agents(token) for token in order} - {robots.group_agents(agent)})
            for path in ("/", "/articles/1", "/archive/1", "/ai/1", "/mine/1", "/news/1"):
                url = f"https://example.com{path}"
                naive = next((token for token in order if not parse(body).allowed(url, token)), None)
                if not robots.allowed(url, agent):
                    continue  # the agent's own group refuses it: no purpose token is asked
                grouped = next((token for token, matcher in groups if not matcher.allowed(url)), None)
                assert grouped == naive, (agent, order, path)
