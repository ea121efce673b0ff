"""Property tests: nothing raises, and the compiled matcher (both tiers) agrees
with a small reference matcher written here."""

from __future__ import annotations

import re
from unittest import mock

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import RobotsTxt, Verdict
from scrapy_rfc9309 import parse as parse_one
from scrapy_rfc9309.core import matcher
from scrapy_rfc9309.core.matcher import compile_pattern, piece_forms
from scrapy_rfc9309.core.urls import canonical_path, path_of


class BothTiers:
    """The same file parsed four times: with the C accelerator (when built), with
    it and its literal rules hashed whatever their number (as for a large group),
    in pure Python, and in pure Python with its literal rules in a dict and its
    wildcard rules behind one search for their pieces, whatever their number.
    ``allowed`` and ``verdict`` ask all four and insist they agree; everything
    else goes to the pure-Python one."""

    def __init__(self, body: str | bytes) -> None:
        self.fast = parse_one(body)
        self.hashed = parse_one(body)
        self.pure = parse_one(body, speedups=False)
        self.pure_hashed = parse_one(body, speedups=False)

    def _hashed(self, method: str, url: str | bytes, agent: str) -> tuple[object, object]:
        # The matchers are built on first use, so the thresholds are patched around each call.
        with mock.patch.object(matcher, "_C_HASH_ABOVE", -1), mock.patch.object(matcher, "_HASH_ABOVE", -1), \
                mock.patch.object(matcher, "_NEEDLE_SEARCH_FROM", 1):
            return getattr(self.hashed, method)(url, agent), getattr(self.pure_hashed, method)(url, agent)

    def allowed(self, url: str | bytes, agent: str) -> bool:
        fast, pure = self.fast.allowed(url, agent), self.pure.allowed(url, agent)
        hashed, pure_hashed = self._hashed("allowed", url, agent)
        assert fast == hashed == pure == pure_hashed, ("the C and pure-Python tiers disagree", url, fast, hashed,
                                                       pure, pure_hashed)
        return pure

    def verdict(self, url: str | bytes, agent: str) -> Verdict:
        fast, pure = self.fast.verdict(url, agent), self.pure.verdict(url, agent)
        hashed, pure_hashed = self._hashed("verdict", url, agent)
        assert fast == hashed == pure == pure_hashed, ("the C and pure-Python verdicts differ", url, fast, hashed,
                                                       pure, pure_hashed)
        return pure

    def __getattr__(self, name: str) -> object:
        return getattr(self.pure, name)


def parse(body: str | bytes) -> RobotsTxt:
    return BothTiers(body)  # type: ignore[return-value]


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HOST = "http://example.com"
AGENT = "bot"

# -- The reference matcher ---------------------------------------------------------------

WILD = object()  # one "*" of a pattern (a literal "*" in a piece is a plain character)


def tokens_of(pieces: list[str], anchored: bool) -> list[object]:
    """A pattern as a list of characters and WILD; an unanchored pattern ends in WILD
    (it only has to match a prefix of the path)."""
    tokens: list[object] = []
    for index, piece in enumerate(pieces):
        if index:
            tokens.append(WILD)
        tokens.extend(piece)
    if not anchored:
        tokens.append(WILD)
    return tokens


def glob_match(tokens: list[object], text: str) -> bool:
    """Textbook dynamic programming: ``m[i][j]`` is whether ``tokens[:i]``
    matches ``text[:j]`` entirely."""
    m = [[False] * (len(text) + 1) for _ in range(len(tokens) + 1)]
    m[0][0] = True
    for i, token in enumerate(tokens, 1):
        for j in range(len(text) + 1):
            if token is WILD:
                m[i][j] = m[i - 1][j] or (j > 0 and m[i][j - 1])
            else:
                m[i][j] = j > 0 and m[i - 1][j - 1] and text[j - 1] == token
    return m[-1][-1]


def reference(rules: list[tuple[bool, list[str], bool]], path: str) -> tuple[int, bool] | None:
    """The best ``(priority, allow)`` among the rules that match ``path``: the
    longest pattern (``*`` and ``$`` count one each) wins, allow wins ties."""
    best = None
    for allow, pieces, anchored in rules:
        if glob_match(tokens_of(pieces, anchored), path):
            key = (len("*".join(pieces)) + anchored, allow)
            if best is None or key > best:
                best = key
    return best


def positional_match(forms: list[tuple[str, str]], anchored: bool, text: str) -> bool:
    """Brute force over where each piece lands: a piece that starts after the
    path's first ``?`` is compared in its query form, any other in its path form;
    the first piece starts at 0; an anchored pattern must end at the end."""
    query = text.find("?")
    query = len(text) if query < 0 else query

    def match(index: int, pos: int) -> bool:
        if index == len(forms):
            return not anchored or pos == len(text)
        starts = [pos] if index == 0 else range(pos, len(text) + 1)
        for start in starts:
            form = forms[index][1] if start > query else forms[index][0]
            if text.startswith(form, start) and match(index + 1, start + len(form)):
                return True
        return False

    return match(0, 0)


def positional_reference(rules: list[tuple[bool, str]], path: str) -> tuple[int, bool] | None:
    """Like :func:`reference`, on the pieces' two canonical forms (priority is
    counted on the path forms)."""
    best = None
    for allow, pattern in rules:
        forms, anchored = piece_forms(pattern)
        if positional_match(forms, anchored, path):
            key = (sum(len(p) for p, _ in forms) + len(forms) - 1 + anchored, allow)
            if best is None or key > best:
                best = key
    return best


def reference_allowed(rules: list[tuple[bool, list[str], bool]], path: str) -> bool:
    if path == "/robots.txt":
        return True
    best = reference(rules, path)
    return best is None or best[1]


def test_reference_matcher_itself() -> None:
    def match(pattern: str, path: str) -> bool:
        anchored = pattern.endswith("$")
        return glob_match(tokens_of((pattern[:-1] if anchored else pattern).split("*"), anchored), path)

    assert match("/a", "/a")
    assert match("/a", "/ab")
    assert not match("/a", "/")
    assert match("/a$", "/a")
    assert not match("/a$", "/ab")
    assert match("/*b", "/aab")
    assert match("/*b", "/aabx")
    assert not match("/*b$", "/aabx")
    assert match("/a*b*c$", "/abbcbc")
    assert not match("/a*b*c$", "/abbcb")
    assert match("*", "/")
    assert match("$", "")
    assert not match("$", "/")
    assert reference([(False, ["/"], False), (True, ["/a"], False)], "/ab") == (2, True)
    assert reference([(False, ["/a"], False), (True, ["/a"], False)], "/ab") == (2, True)
    assert reference([(True, ["/", ""], False), (False, ["/a"], False)], "/ab") == (2, True)
    assert reference([(True, ["/a"], False), (False, ["/a", ""], False)], "/ab") == (3, False)
    assert reference([(True, ["/b"], False)], "/ab") is None


# -- Strategies ----------------------------------------------------------------------------

# Single characters and escapes chosen so that rules and paths collide often:
# encoded unreserved letters, encoded "*" and "$", encoded reserved "/" and "?",
# invalid escapes, lower-case hex and a non-ASCII character, raw and encoded.
# "/", "a" and "b" come several times so that they are drawn more often.
ATOMS = ["/", "/", "a", "a", "a", "b", "b", "*", "*", "$", "?", "%", "%61", "%62", "%2A", "%24", "%2F", "%2f",
         "%3F", "%3A", ":", "%25", "%4", "\u00e9", "%C3%A9", "%c3%a9"]
# Most rules start with "/" (or "*"): others cannot match a path.
STARTS = ["/", "/", "/", "/", "/a", "/a", "*", ""]

# Half the rules end with the "$" anchor.
ENDS = ["", "$"]

pattern_text = st.tuples(
    st.sampled_from(STARTS), st.lists(st.sampled_from(ATOMS), max_size=6), st.sampled_from(ENDS)
).map(lambda parts: parts[0] + "".join(parts[1]) + parts[2]).filter(bool)
path_text = st.lists(st.sampled_from(ATOMS), max_size=9).map(lambda atoms: "/" + "".join(atoms))
# The fragment is never matched.
FRAGMENTS = st.sampled_from(["", "", "", "#", "#a", "#/a*b$", "#?x"])
rule_list = st.lists(st.tuples(st.booleans(), pattern_text), min_size=1, max_size=8)


def body_of(rules: list[tuple[bool, str]]) -> str:
    lines = ["User-agent: *"]
    lines += [f"{'Allow' if allow else 'Disallow'}: {pattern}" for allow, pattern in rules]
    return "\n".join(lines) + "\n"


@st.composite
def paths_for(draw: st.DrawFn, patterns: list[str], fills: tuple[str, ...] = ("", "a", "/", "b/a", "%61", "?"),
              paths: st.SearchStrategy[str] = path_text) -> list[str]:
    """Random paths, and paths made from the rules' own patterns (wildcards filled
    in, anchors dropped or kept, sometimes cut short), so that rules match or
    nearly match often."""
    found = draw(st.lists(paths, min_size=1, max_size=6))
    for pattern in draw(st.lists(st.sampled_from(patterns), max_size=6)):
        count = pattern.count("*")
        filled = draw(st.lists(st.sampled_from(fills), min_size=count, max_size=count))
        parts = pattern.split("*")
        text = parts[0] + "".join(fill + part for fill, part in zip(filled, parts[1:], strict=True))
        if text.endswith("$") and draw(st.booleans()):
            text = text[:-1]
        text += draw(st.sampled_from(["", "a", "/x", "?q"]))
        if text and draw(st.booleans()):  # a near miss: cut somewhere
            text = text[: draw(st.integers(0, len(text) - 1))]
        found.append(text if text.startswith("/") else "/" + text)
    return found


def check_against_reference(rules: list[tuple[bool, str]], paths: list[str], fragments: list[str]) -> None:
    rt = parse(body_of(rules))
    compiled = [(allow, *compile_pattern(pattern)) for allow, pattern in rules]
    urls = [HOST + path + fragment for path, fragment in zip(paths, fragments, strict=True)]
    expected = []
    for url in urls:
        path = path_of(url)
        best = positional_reference(rules, path)
        want = path == "/robots.txt" or best is None or best[1]
        if all(p == q for allow, pattern in rules for p, q in piece_forms(pattern)[0][1:]):
            # One form per piece: the plain reference must agree as well.
            assert best == reference(compiled, path)
        expected.append(want)
        verdict = rt.verdict(url, AGENT)
        assert verdict.allowed == want, (url, path, verdict)
        if path != "/robots.txt":
            if best is None:
                assert verdict.rule is None, (url, verdict)
            else:
                assert verdict.rule is not None
                pieces, anchored = compile_pattern(verdict.rule.pattern)
                assert (len("*".join(pieces)) + anchored, verdict.rule.allow) == best, (url, verdict)
                assert positional_match(piece_forms(verdict.rule.pattern)[0], anchored, path)
        assert rt.allowed(url, AGENT) == want, (url, path)


@SETTINGS
@given(rules=rule_list, data=st.data())
def test_matcher_agrees_with_reference_on_canonical_forms(rules: list[tuple[bool, str]], data: st.DataObject) -> None:
    paths = data.draw(paths_for([pattern for _, pattern in rules]))
    fragments = data.draw(st.lists(FRAGMENTS, min_size=len(paths), max_size=len(paths)))
    check_against_reference(rules, paths, fragments)


# Plain ASCII without "%": the canonical form is the text itself, so the
# reference needs nothing from the package.
RAW_ALPHABET = "//aaabb**$?;"
raw_pattern = st.tuples(
    st.sampled_from(STARTS), st.text(RAW_ALPHABET, max_size=7), st.sampled_from(ENDS)
).map("".join).filter(bool)
raw_path = st.text(RAW_ALPHABET, max_size=10).map(lambda t: "/" + t)


def raw_rule(pattern: str) -> tuple[list[str], bool]:
    anchored = pattern.endswith("$")
    return (pattern[:-1] if anchored else pattern).split("*"), anchored


@SETTINGS
@given(rules=st.lists(st.tuples(st.booleans(), raw_pattern), min_size=1, max_size=8), data=st.data())
def test_matcher_agrees_with_reference_on_raw_ascii(rules: list[tuple[bool, str]], data: st.DataObject) -> None:
    patterns = [pattern for _, pattern in rules]
    paths = data.draw(paths_for(patterns, fills=("", "a", "/", "b/a", "?", ";", "$"), paths=raw_path))
    reference_rules = [(allow, *raw_rule(pattern)) for allow, pattern in rules]
    rt = parse(body_of(rules))
    fragments = data.draw(st.lists(FRAGMENTS, min_size=len(paths), max_size=len(paths)))
    urls = [HOST + path + fragment for path, fragment in zip(paths, fragments, strict=True)]
    for path, url in zip(paths, urls, strict=True):
        assert canonical_path(path) == path  # nothing to canonicalise
        want = reference_allowed(reference_rules, path)
        assert rt.verdict(url, AGENT).allowed == want, (url, rules)
        assert rt.allowed(url, AGENT) == want, (url, rules)


multi_wildcard = st.tuples(
    st.lists(st.text("ab/", max_size=3), min_size=3, max_size=5).map("*".join), st.sampled_from(ENDS)
).map(lambda parts: "/" + parts[0] + parts[1])


@SETTINGS
@given(rules=st.lists(st.tuples(st.booleans(), multi_wildcard), min_size=1, max_size=4),
       paths=st.lists(st.text("ab/", max_size=12).map(lambda t: "/" + t), min_size=5, max_size=20))
def test_patterns_with_several_wildcards(rules: list[tuple[bool, str]], paths: list[str]) -> None:
    """Each piece between two ``*`` must be allowed to match at any later place,
    in every tier (only wildcard rules here, over a three-letter alphabet)."""
    reference_rules = [(allow, *raw_rule(pattern)) for allow, pattern in rules]
    rt = parse(body_of(rules))
    expected = [reference_allowed(reference_rules, path) for path in paths]
    for path, want in zip(paths, expected, strict=True):
        assert rt.verdict(HOST + path, AGENT).allowed == want, (path, rules)
        assert rt.allowed(HOST + path, AGENT) == want, (path, rules)


# -- Nothing raises ----------------------------------------------------------------------

LINES = [
    b"User-agent: *", b"User-agent: FooBot", b"user-agent foobot", b"Disallow: /", b"Disallow: /a*b$",
    b"Allow: /a", b"Allow:", b"Sitemap: http://e.com/s.xml", b"Sitemap: /s\xe9.xml", b"Sitemap: //[::1",
    b"Crawl-delay: 5", b"Crawl-delay: x",
    b"Content-Usage: train-ai=n", b"# comment", b"", b"\xef\xbb\xbf", b"Disallow: /%", b"Disallow: /%E3%8",
    b"Disallow: /\xff\xfe", b"Disallow: *$", b"Disallow: $", b"Allow: /\x00", b"Disallow: /" + b"*a" * 10,
]
robots_bytes = st.one_of(
    st.binary(max_size=3000),
    st.lists(st.one_of(st.sampled_from(LINES), st.binary(max_size=20)), max_size=30).flatmap(
        lambda lines: st.sampled_from([b"\n", b"\r", b"\r\n"]).map(lambda eol: eol.join(lines))
    ),
)
urls = st.one_of(
    st.text(max_size=100),
    st.text(max_size=100).map(lambda t: HOST + "/" + t),
    st.text("/%?#*$;:@aAé0", max_size=40).map(lambda t: HOST + t),
)
agents = st.one_of(st.none(), st.text(max_size=40), st.binary(max_size=40), st.sampled_from(["FooBot", "*", ""]))


@SETTINGS
@given(body=robots_bytes, url_list=st.lists(urls, min_size=1, max_size=5), agent=agents)
def test_nothing_raises(body: bytes, url_list: list[str], agent: str | bytes | None) -> None:
    rt = parse(body)
    assert rt.size == len(body)
    assert rt.truncated is False
    for url in url_list:
        verdict = rt.verdict(url, agent)
        assert rt.allowed(url, agent) == verdict.allowed
        assert verdict.allowed == (verdict.rule is None or verdict.rule.allow)
        assert verdict.path.startswith("/")
    delay = rt.crawl_delay(agent)
    assert delay is None or 0 <= delay < float("inf")
    assert len(set(rt.sitemaps)) == len(rt.sitemaps)
    for sitemap in rt.sitemaps:
        sitemap.encode("utf-8")  # never a lone surrogate, whatever the bytes
    joined = parse_one(body, url="https://example.com/robots.txt")
    assert len(joined.sitemaps) <= len(rt.sitemaps)
    assert isinstance(rt.records(agent, "content-usage"), list)


@SETTINGS
@given(body=st.text(max_size=500), url=urls)
def test_str_body_is_its_utf8_bytes(body: str, url: str) -> None:
    by_str = parse(body)
    by_bytes = parse(body.encode("utf-8"))
    for agent in ("FooBot", "*"):
        assert by_str.verdict(url, agent) == by_bytes.verdict(url, agent)


@SETTINGS
@given(lines=st.lists(st.sampled_from([line for line in LINES if b"\xef" not in line]), max_size=20),
       url=urls, agent=st.sampled_from(["FooBot", "OtherBot"]))
def test_line_ends_and_bom_do_not_change_verdicts(lines: list[bytes], url: str, agent: str) -> None:
    verdicts = set()
    for eol in (b"\n", b"\r", b"\r\n"):
        for bom in (b"", b"\xef\xbb\xbf"):
            verdicts.add(parse(bom + eol.join(lines)).verdict(url, agent))
    assert len(verdicts) == 1


# -- Product tokens ----------------------------------------------------------------------

names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/();,*#"), min_size=1,
                max_size=16).filter(lambda t: t.strip() == t and not any(c.isspace() for c in t))


@SETTINGS
@given(name=names)
def test_a_name_selects_the_same_group_bare_or_in_a_header(name: str) -> None:
    """A crawler name is read like the ``User-agent`` line written for it, whether it is
    given bare or inside a User-Agent header: the line's group applies to it exactly
    when the name starts with a token character."""
    from scrapy_rfc9309.core.product_tokens import product_token, token_of_line

    assume(token_of_line(name) not in ("mozilla", "compatible"))  # never a product's name in a header
    forms = [name, f"{name}/1.0", f"{name}/2.1 (+https://example.com/bot)",
             f"Mozilla/5.0 (compatible; {name}/1.0; +https://example.com/bot)"]
    assert {product_token(form) for form in forms} == {token_of_line(name)}
    named = token_of_line(name) != ""
    rt = parse(f"User-agent: {name}\nDisallow: /named\n\nUser-agent: *\nDisallow: /star\n")
    for form in forms:
        assert rt.allowed(HOST + "/named", form) != named, form
        assert rt.allowed(HOST + "/star", form) == named, form


# -- Crawl-delay blocks ------------------------------------------------------------------

DELAY_LINES = ["User-agent: FooBot", "User-agent: BarBot", "User-agent: *", "user-agent foobot",
               "User-agent: 360Spider", "Crawl-delay: 1",
               "Crawl-delay: 2", "crawl-delay 3", "Crawl-delay: x", "Disallow: /x", "Allow: /y", "Disallow:",
               "Sitemap: http://e.com/s.xml", "Content-Usage: train-ai=n", "", "# comment", "Other: z"]


def reference_crawl_delay(lines: list[str], agent: str) -> float | None:
    """Crawl-delay by blocks, written independently of the parser: a block is a run
    of user-agent lines (nothing but blank, comment, Sitemap and unknown lines between
    them); a Crawl-delay applies to the block before it; the agent's token is its own
    when some line names it, else ``*`` when some line names that."""
    blocks: list[tuple[set[str], str]] = []
    block: set[str] | None = None
    last_was_agent = False
    tokens: set[str] = set()
    for line in lines:
        key, _, value = line.replace(" ", ":", 1).partition(":") if ":" not in line else line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "user-agent":
            token = re.match(r"\*|[a-z_-]*", value.lower()).group()  # type: ignore[union-attr]
            if not last_was_agent or block is None:
                block = set()
            if token:  # a line that names no token still starts a block
                tokens.add(token)
                block.add(token)
            last_was_agent = True
        elif key in ("allow", "disallow", "content-usage"):
            last_was_agent = False
        elif key == "crawl-delay":
            if block is not None:
                blocks.append((block, value))
            last_was_agent = False
    token = agent.lower() if agent.lower() in tokens else "*"
    delays = []
    for agents, value in blocks:
        if token in agents:
            try:
                delays.append(float(value))
            except ValueError:
                pass
    return max(delays) if delays else None


@SETTINGS
@given(lines=st.lists(st.sampled_from(DELAY_LINES), max_size=16), agent=st.sampled_from(["FooBot", "BarBot", "Baz"]))
def test_crawl_delay_by_blocks_agrees_with_a_reference(lines: list[str], agent: str) -> None:
    rt = parse("\n".join(lines) + "\n")
    assert rt.crawl_delay(agent) == reference_crawl_delay(lines, agent), lines
    assert rt.crawl_delay(agent) == parse_one("\n".join(lines), speedups=False).crawl_delay(agent)


@SETTINGS
@given(body=robots_bytes, calls=st.lists(st.tuples(urls, agents), min_size=1, max_size=40))
def test_agents_asked_in_any_order_get_the_answers_of_a_fresh_file(
    body: bytes, calls: list[tuple[str, str | bytes | None]]
) -> None:
    """A file remembers the groups of the agents asked so far; asking them in any
    order, with other agents in between, gives the answers a file asked about one
    agent only gives."""
    rt = parse_one(body)
    for url, agent in calls:
        fresh = parse_one(body)
        assert rt.allowed(url, agent) == fresh.allowed(url, agent), (url, agent)
        assert rt.verdict(url, agent) == parse_one(body).verdict(url, agent), (url, agent)
        assert rt.crawl_delay(agent) == fresh.crawl_delay(agent)


def test_more_agents_than_the_memo_holds() -> None:
    body = "".join(f"User-agent: bot{chr(97 + n // 26)}{chr(97 + n % 26)}\nDisallow: /{n}/\n" for n in range(100))
    rt = parse_one(body + "User-agent: *\nDisallow: /star/\n")
    for _ in range(2):
        for n in range(100):
            agent = f"bot{chr(97 + n // 26)}{chr(97 + n % 26)}"
            assert not rt.allowed(f"{HOST}/{n}/x", agent)
            assert rt.allowed(f"{HOST}/{n + 1}/x", agent)
            assert rt.allowed(f"{HOST}/star/", agent)
            assert not rt.allowed(f"{HOST}/star/", f"Other{n}")
