"""The ``<meta name=... content=...>`` tags of an HTML document's head, read from at
most a bounded number of bytes (a hostile page costs no more than that). Pure Python.

The document is cut at the first ``</head`` or ``<body`` (or at the bound). A head without a
``<meta``, or in which none of the wanted names occurs, holds none of the wanted tags and is
neither decoded nor scanned (for an encoding in which ASCII stays ASCII, UTF-8 and the single-byte
ones, this shows in the bytes). Otherwise the head is read the way an HTML parser would read it:
comments, doctypes and the contents of ``script``, ``style``, ``title`` and ``template`` are
skipped, attribute values may be quoted either way or not at all and have their character
references decoded (undecodable bytes replaced), and the head ends at ``</head>`` or at the first
element that cannot be in a head. A meta name is compared with the wanted names as HTML compares
them, ignoring ASCII case only, and as written (a name spelled with character references is not
one of them).

In such an encoding the head is read in two parts. First one regular-expression match over its
lower-cased bytes (:data:`_PLAIN`) takes the plain run at its start, up to the end of the tag in
which a wanted name occurs last: text, ``<meta>`` tags whose attributes end at their first ``>``,
the other tags a head holds, ``script``, ``style``, ``title`` and ``template`` elements and comments
without a ``<meta`` in them. In that run every ``<meta`` opens a meta tag, so the ones naming a
wanted name are found with a second pattern and only those are decoded and read. What the run
does not take (a quoted ``>`` in a meta tag, a ``<`` in text, an element that ends the head, a tag
cut off at the bound; in other encodings, the whole head) is decoded and read by a small tolerant
scanner (:func:`_scan`) from where the run ends; the tests check that the two together find what the
scanner alone finds. The scanner passes over everything before the next occurrence of a wanted name
with one regular-expression match (text, doctypes, end tags, ``<link>``, ``<base>``, ``<noscript>``
and ``<meta>`` tags, and ``script``, ``style``, ``title`` and ``template`` elements; a ``<`` inside a
quoted attribute value of a ``<link>``, ``<base>`` or ``<noscript>`` tag, which URLs do not have,
would end the head there), then reads the tag, comment or element the name occurs in, and stops
where no wanted name follows. The name and content of a meta tag read are remembered by the tag's
text, as the pages of a site repeat their tags. Neither part backtracks over more than the element
it stops in, and each character is read a bounded number of times, so the time is linear in the
bytes read (``benchmarks/bench_usage.py``).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from html import unescape

from ..core.caches import BoundedDict

__all__ = ["HeadMeta", "read_head_meta"]

#: Elements that may stand in a head (and ``html``/``head`` themselves).
_HEAD_ELEMENTS = frozenset({"html", "head", "meta", "title", "link", "style", "script", "base", "noscript",
                            "template"})
#: Elements whose content is not markup (skipped to their end tag).
_RAW_TEXT = frozenset({"script", "style", "title", "template"})
#: Meta tags kept at most (a page with more is read as far as that).
MAX_TAGS = 256
#: The name and content attributes of the meta tags read, by the text between the tag name and its
#: ``>`` (when that text is all they were read from): at most this many, of at most this length.
_MAX_PARSED = 256
_MAX_PARSED_LENGTH = 256
_parsed: BoundedDict[str, tuple[str, str | None]] = BoundedDict(_MAX_PARSED)
#: Attributes whose every quote opens or closes a quoted value: :func:`_attributes` reads them
#: without looking past the ``>`` that follows them. No part matches in more than one way.
_CLEAN = re.compile(r"""(?:[\s/]*[^\s"'>/=]+(?![^\s"'>/=])
                       (?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]*(?![^\s>])))?)*[\s/]*""", re.VERBOSE)
#: The next "<" that may matter (not one opening a tag that neither holds a meta tag nor ends the
#: head): a comment (group 1), or an optional "/" (group 2) and the first character of a tag name,
#: or "!" or "?" (group 3). A tag name goes on to a space, "/" or ">" (:data:`_NAME`), and is only
#: read on when it starts with a letter: a "<" in text costs no more than its own character.
_NEXT = re.compile(r"<(?!(?:link|base|noscript|html|head)[\s/>])(?:(!--)|(/?)([^\s/>]?))", re.IGNORECASE)
_NAME = re.compile(r"[^\s/>]*")
#: The "<" of a tag :data:`_NEXT` skips.
_SKIPPED = r"<(?=(?i:link|base|noscript|html|head)[\s/>])"
#: A run of what the scanner passes over without reading, matched from where it stands: text, a
#: "<" that opens no tag, the "<" of the tags :data:`_NEXT` skips, a doctype or bogus comment, an
#: end tag other than ``</head>``, ``</html>``, ``</body>``, a ``<meta>`` tag whose quotes pair
#: up (no quoted ``>`` cuts it short), and a ``script``, ``style``, ``title`` or ``template``
#: element up to its end tag. It is only run up to where a wanted name occurs next, so a meta tag it passes names none.
#: Comments are left to :func:`_scan` (a ``str.find``). Tag names compare ignoring ASCII case only,
#: as :func:`_scan` lower-cases them. Each tag's extent is matched with a lookahead and a
#: backreference to it (an atomic group), and no part can match in more than one way, so a run
#: that stops costs no backtracking.
_PASSED = re.compile(rf"""(?:
    [^<]+(?:{_SKIPPED}[^<]*)*
  | <(?:
        [mM][eE][tT][aA](?=[\s/>])(?=([^>"']*(?:(?:"[^>"']*"|'[^>"']*')[^>"']*)*))\1>
      | /(?:[!?][^>]*>|(?!(?ai:head|html|body)(?![^\s/>]))[a-zA-Z][^>]*>)
      | !(?:[^->][^>]*>|-(?!-)[^>]*>|>)|\?[^>]*>
      | (?=[sStT])(?ai:(script|style|title|template))(?=[\s/>])[^>]*>
        (?=([^<]*(?:<(?!/(?ai:\2))[^<]*)*))\3(?=</(?ai:\2))
      | (?=[lLbBnNhH])(?=(?i:link|base|noscript|html|head)[\s/>])
      | (?=[^!?/\w])
    )
)*""", re.VERBOSE)
_SPACE_OR_SLASH = re.compile(r"[\s/]*")
_ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]*)))?""")
#: Where the head certainly ends: the first ``</head`` or ``<body`` (ASCII case ignored).
_HEAD_END = re.compile(rb"</(?i:head)|<(?i:body)")
#: Codecs that decode every ASCII byte to itself and nothing else to ASCII: a name is in the
#: text exactly when its bytes are in the body.
_ASCII_SAFE = frozenset({"utf-8", "ascii", "latin-1"})


@dataclass(frozen=True)
class HeadMeta:
    """The wanted meta tags, ``(name, content)`` in document order (names lower-cased),
    and whether the head ended within the bytes read (``complete``)."""

    tags: tuple[tuple[str, str], ...]
    complete: bool

    def contents(self, name: str) -> list[str]:
        return [content for tag, content in self.tags if tag == name]


@lru_cache(maxsize=64)
def _codec(encoding: str | None) -> tuple[str, bool]:
    """The codec to decode with (UTF-8 for an unknown one), and whether ASCII stays ASCII in it."""
    try:
        name = codecs.lookup(encoding or "utf-8").name
    except LookupError:
        name = "utf-8"
    return name, name in _ASCII_SAFE or name.startswith(("iso8859-", "cp125"))


def _raw_end(name: str) -> re.Pattern[str]:
    return re.compile("</" + name, re.IGNORECASE | re.ASCII)


#: Where the content of a raw-text element ends.
_RAW_END = {name: _raw_end(name) for name in _RAW_TEXT}


def _attributes(text: str, pos: int) -> tuple[dict[str, str], int]:
    """The attributes of a tag whose name ends at ``pos`` (first occurrence of each, values as
    written), and where the tag ends (after its ``>``; -1 when it does not end in ``text``)."""
    found: dict[str, str] = {}
    end = len(text)
    while True:
        pos = _SPACE_OR_SLASH.match(text, pos).end()  # type: ignore[union-attr]  # matches the empty string
        if pos >= end:
            return found, -1
        if text[pos] == ">":
            return found, pos + 1
        match = _ATTRIBUTE.match(text, pos)
        if match is None:  # a stray quote or "=": not an attribute
            pos += 1
            continue
        key = match.group(1).lower()
        if key not in found:
            value = match.group(2)
            if value is None:
                value = match.group(3) if match.group(3) is not None else match.group(4) or ""
            found[key] = value
        pos = match.end()


def _scan(text: str, names: Collection[str], to_end: bool, located: Collection[str],
          tags: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], bool]:
    """The meta tags named one of ``names`` of the head at the start of ``text`` (appended to
    ``tags``, those found before it), and whether the head ended (found only when ``to_end``:
    otherwise the scan stops where no wanted name follows). ``located``: the names that may occur in
    ``text`` (those of ``names`` others than these do not)."""
    size = len(text)
    pos = 0
    find = text.find
    search = _NEXT.search
    passed = _PASSED.match
    wanted = tuple(located)
    lowered = text.lower()
    # Where each wanted name occurs next (None when the lowered text is not as long as the text, so
    # that its positions are not the text's: then no run is passed over, every tag is read).
    ahead = [lowered.find(name) for name in wanted] if len(lowered) == size else None
    while len(tags) < MAX_TAGS:
        if ahead is not None:
            for i, at in enumerate(ahead):
                if 0 <= at < pos:
                    ahead[i] = lowered.find(wanted[i], pos)
            following = [at for at in ahead if at >= 0]
            if not following and not to_end:
                return tags, False  # no wanted tag can follow
            pos = passed(text, pos, min(following) if following else size).end()  # type: ignore[union-attr]  # matches ""
        found = search(text, pos)
        if found is None:
            return tags, False
        lt = found.start()
        if lt + 1 >= size:
            return tags, False
        name_end = found.end()
        if found.group(1):  # a comment
            close = find("-->", name_end)
            if close < 0:
                return tags, False
            pos = close + 3
            continue
        closing, name = found.group(2, 3)
        if name == "!" or name == "?":  # a doctype or a bogus comment
            close = find(">", lt + 1 + len(closing))
            if close < 0:
                return tags, False
            pos = close + 1
            continue
        if not name.isalpha():  # a "<" in text
            pos = lt + 1
            continue
        start = found.start(3)
        name_end = _NAME.match(text, start).end()  # type: ignore[union-attr]  # matches ""
        name = text[start:name_end].lower()
        if closing:
            if name in ("head", "html", "body"):
                return tags, True
        elif name not in _HEAD_ELEMENTS:
            return tags, True
        elif name == "meta":
            close = find(">", name_end)
            inside = text[name_end:close] if close >= 0 else None
            if inside is not None:
                lowered_inside = inside.lower()
                if not any(wanted in lowered_inside for wanted in names) and not (
                        lowered_inside.count('"') % 2 or lowered_inside.count("'") % 2):
                    pos = close + 1  # names none of the wanted names (and no quoted ">" cut it short)
                    continue
                if len(inside) > _MAX_PARSED_LENGTH:
                    inside = None
            parsed = _parsed.get(inside) if inside is not None else None
            if parsed is not None:
                pos = close + 1
            else:
                attributes, pos = _attributes(text, name_end)
                if pos < 0:  # cut off at the bound: not a tag yet
                    return tags, False
                parsed = (attributes.get("name", ""), attributes.get("content"))
                if inside is not None and _CLEAN.fullmatch(inside):  # read from the tag's own text alone
                    _parsed[inside] = parsed
            tag = _wanted(parsed, names)
            if tag is not None:
                tags.append(tag)
            continue
        close = find(">", name_end)
        if close < 0:
            return tags, False
        pos = close + 1
        if not closing and name in _RAW_TEXT:
            found = _RAW_END[name].search(text, pos)
            if found is None:
                return tags, False
            pos = found.start()
    return tags, False


#: The answer for a head without a wanted tag.
_NONE = HeadMeta((), True)


def _wanted(parsed: tuple[str, str | None], names: Collection[str]) -> tuple[str, str] | None:
    """The ``(name, content)`` of a meta tag's name and content attributes, when it is a wanted one."""
    meta_name, content = parsed
    meta_name = meta_name.strip()
    if content is not None and meta_name.isascii() and meta_name.lower() in names:
        return meta_name.lower(), unescape(content) if "&" in content else content
    return None


#: Bytes of the lower-cased head (an ASCII-safe encoding's, see :func:`read_head_meta`) that need
#: no reading: the sets of bytes other than "<" and ">" (and a quote) are spelled as ranges, which
#: the regular-expression engine tests faster than a negated set.
_NO_TAG = rb"[\x00-;=?-\xff]"  # not "<" or ">"
#: A meta tag's attribute name, and an unquoted value: printable ASCII only (then "whitespace" means
#: the same in the bytes as in the decoded text), without quotes, "<", ">", "/", "=" (a value may hold
#: "/" and "=").
_ATTR_NAME = rb"[!#-&(-.0-;?-~]"
_ATTR_VALUE = rb"[!#-&(-;=?-~]"
#: A run of the lower-cased head that holds no wanted tag other than the ``<meta`` tags in it, and
#: in which every ``<meta`` opens one, read as :func:`_scan` reads it: text, ``<meta>`` tags whose
#: attributes :data:`_CLEAN` reads up to their first ">" (an unquoted part in printable ASCII, no "<" in
#: a value), ``<link>``, ``<base>``, ``<noscript>``, ``<html>``, ``<head>`` tags and end tags other than
#: ``</head>``, ``</html>``, ``</body>`` without a "<" in them, ``script``, ``style``, ``title`` and
#: ``template`` elements and comments without a ``<meta`` in them, doctypes and bogus comments. Anything
#: else (a head-ending element, a "<" in text, a tag cut off at the bound) ends the run, which :func:`_scan`
#: then reads on from. Each part begins with a different byte or tag name and no repeat can match the same
#: bytes in two ways, so a run that stops backtracks over no more than its last part.
_PLAIN_SOURCE = rb"""(?:
    [^<]+
  | <(?:
        meta(?=[\s/>])(?:[\s/]*%(name)s+(?!%(name)s)
            (?:\s*=\s*(?:"[\x00-!#-;=?-\xff]*"|'[\x00-&(-;=?-\xff]*'|%(value)s*(?!%(value)s)))?)*[\s/]*>
      | (?:link|base|noscript|html|head)(?=[\s/>])%(no_tag)s*>
      | script(?=[\s/>])%(no_tag)s*>[^<]*(?:<(?!/script|meta)[^<]*)*(?:</script%(no_tag)s*>|\Z)
      | style(?=[\s/>])%(no_tag)s*>[^<]*(?:<(?!/style|meta)[^<]*)*(?:</style%(no_tag)s*>|\Z)
      | title(?=[\s/>])%(no_tag)s*>[^<]*(?:<(?!/title|meta)[^<]*)*(?:</title%(no_tag)s*>|\Z)
      | template(?=[\s/>])%(no_tag)s*>[^<]*(?:<(?!/template|meta)[^<]*)*(?:</template%(no_tag)s*>|\Z)
      | /(?!(?:head|html|body)[\s/>])[a-z][a-z0-9:_-]*(?=[\s/>])%(no_tag)s*>
      | !--[\x00-,.-;=-\xff]*(?:(?:-(?!->)|<(?!meta))[\x00-,.-;=-\xff]*)*(?:-->|\Z)
      | !(?!--)%(no_tag)s*>
      | \?%(no_tag)s*>
    )
)*""" % {b"name": _ATTR_NAME, b"value": _ATTR_VALUE, b"no_tag": _NO_TAG}
_PLAIN = re.compile(_PLAIN_SOURCE, re.VERBOSE)
#: The same without the elements and comments cut off at the end of what is matched.
_PLAIN_CLOSED = re.compile(_PLAIN_SOURCE.replace(rb"|\Z)", b")"), re.VERBOSE)
#: A ``<meta>`` tag of the plain run (any case): the text between its name and its ``>`` (group 1).
_META_TAG = re.compile(rb"<[mM][eE][tT][aA](?=[\s/])([^>]*)>")


class _Plan:
    """How the plain runs of heads are read for one set of wanted names and one codec: the names'
    bytes, a pattern finding any of them, and what each meta tag's text read as (a wanted tag, or
    None), remembered by the text (at most :data:`_MAX_PARSED`, of at most :data:`_MAX_PARSED_LENGTH`)."""

    __slots__ = ("codec", "encoded", "named", "names", "raw", "runs", "tags")

    def __init__(self, names: frozenset[str], codec: str) -> None:
        self.names = names
        self.codec = codec
        self.encoded = tuple((name, name.encode("ascii", "replace")) for name in sorted(names))
        self.raw = tuple(raw for _name, raw in self.encoded)
        self.named = re.compile(b"|".join(map(re.escape, self.raw))).search
        self.tags: BoundedDict[bytes, tuple[str, str] | None] = BoundedDict(_MAX_PARSED)
        #: The wanted tags of a plain run from its first ``<meta`` (see :func:`_read_plain`), by its bytes.
        self.runs: BoundedDict[bytes, tuple[tuple[str, str], ...]] = BoundedDict(_MAX_PARSED)

    def located(self, lowered: bytes) -> list[str]:
        """The names that occur in the lower-cased bytes of a head."""
        return [name for name, raw in self.encoded if raw in lowered]

    def tag(self, inside: bytes) -> tuple[str, str] | bool | None:
        """The wanted tag a meta tag of the plain run whose text between its name and its ``>`` is
        ``inside`` states, None when it states none, False when its attributes could go on past that
        ``>`` (not read here)."""
        tag = None
        if self.named(inside.lower()) is not None:
            text = inside.decode(self.codec, errors="replace")
            if not _CLEAN.fullmatch(text):
                return False
            attributes, _end = _attributes(text + ">", 0)
            tag = _wanted((attributes.get("name", ""), attributes.get("content")), self.names)
        if len(inside) <= _MAX_PARSED_LENGTH:
            self.tags[inside] = tag
        return tag


#: The longest plain run from a head's first ``<meta`` remembered (pages of a site repeat their meta tags).
_MAX_RUN = 4096
#: The plans by wanted names and codec (a crawl has a few).
_PLANS: BoundedDict[tuple[frozenset[str], str], _Plan] = BoundedDict(64)


def _plan(names: Collection[str], codec: str) -> _Plan:
    key = (names if isinstance(names, frozenset) else frozenset(names), codec)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _Plan(key[0], codec)
    return plan


def _read_plain(data: bytes, lowered: bytes, plan: _Plan, last: int,
                complete: bool) -> tuple[list[tuple[str, str]], bool] | None:
    """What :func:`_scan` finds in the head ``data`` (an ASCII-safe encoding's, ``lowered``: it
    lower-cased), read by its plain run (:data:`_PLAIN`) and then by :func:`_scan` from where that
    ends; ``last``: where the last wanted name occurs (-1: none). None when a tag is not read as
    :func:`_scan` would read it (then the head is left to :func:`_scan`)."""
    size = len(data)
    if complete and last >= 0:  # what follows the last wanted name holds no wanted tag: read up to it
        close = lowered.find(b">", last)
        bound = close + 1 if close >= 0 else size
    else:
        bound = size
    start = 0
    run = None
    if complete:  # the run from the first <meta is remembered by its bytes, when what precedes it is plain
        first = lowered.find(b"<meta", 0, bound)
        if (0 <= first and bound - first <= _MAX_RUN
                and _PLAIN_CLOSED.match(lowered, 0, first).end() == first):  # type: ignore[union-attr]  # matches ""
            run = data[first:bound]
            found = plan.runs.get(run)
            if found is not None:
                return list(found), False
            start = first
    plain = _PLAIN.match(lowered, start, bound).end()  # type: ignore[union-attr]  # matches ""
    tags: list[tuple[str, str]] = []
    known = plan.tags
    for inside in _META_TAG.findall(data, start, plain):
        tag = known.get(inside, False)
        if tag is False:
            tag = plan.tag(inside)
            if tag is False:
                return None
        if tag is not None:
            tags.append(tag)  # type: ignore[arg-type]  # not False
            if len(tags) >= MAX_TAGS:
                return tags, False
    if plain > last and (plain == size or complete):  # nothing left that _scan would read
        if run is not None:
            plan.runs[run] = tuple(tags)
        return tags, False
    return _scan(data[plain:].decode(plan.codec, errors="replace"), plan.names, not complete, plan.located(lowered),
                 tags)


#: Byte order marks and the encoding each one names: it decides, whatever the Content-Type says
#: (the HTML standard's encoding sniffing starts with it).
_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def read_head_meta(body: bytes, encoding: str | None, max_bytes: int, names: Collection[str]) -> HeadMeta:
    """The meta tags whose ``name`` is one of ``names`` (lower-case ASCII), ignoring ASCII case,
    from the head in the first ``max_bytes`` bytes of ``body`` (after a byte order mark, which
    names the encoding)."""
    for bom, named in _BOMS:
        if body.startswith(bom):
            complete = len(body) - len(bom) <= max_bytes
            text = body[len(bom):len(bom) + max_bytes].decode(named, errors="replace")
            tags, ended = _scan(text, names, not complete, names, [])
            return HeadMeta(tuple(tags), ended or complete)
    end = _HEAD_END.search(body, 0, max_bytes)
    data = body[:end.start()] if end is not None else body[:max_bytes]
    complete = end is not None or len(body) <= max_bytes
    codec, ascii_safe = _codec(encoding)
    if not ascii_safe:
        tags, ended = _scan(data.decode(codec, errors="replace"), names, not complete, names, [])
        return HeadMeta(tuple(tags), ended or complete)
    # The bytes tell whether a wanted tag can be there, which names occur, and where the last one does.
    lowered = data.lower()
    if complete and b"<meta" not in lowered:
        return _NONE
    plan = _plan(names, codec)
    last = max(map(lowered.rfind, plan.raw))
    if complete and last < 0:
        return _NONE
    found = _read_plain(data, lowered, plan, last, complete)
    if found is None:
        found = _scan(data.decode(codec, errors="replace"), names, not complete, plan.located(lowered), [])
    tags, ended = found
    return HeadMeta(tuple(tags), ended or complete)
