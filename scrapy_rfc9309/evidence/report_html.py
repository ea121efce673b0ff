"""The HTML page of ``scrapy robotstxt report``: the report's JSON form (:mod:`.report_figures`)
rendered as one self-contained page, inline CSS and inline SVG charts, no script, nothing
loaded from anywhere (its Content-Security-Policy forbids it). Every text of the ledger is
escaped: rules, URLs, hosts and reasons are written by the sites crawled. Pure Python.
"""

from __future__ import annotations

import html
import time
from typing import Any

__all__ = ["KINDS", "render"]

#: Verdict kinds in the order the charts stack them, with their colours.
KINDS = (("allowed", "#2e7d32"), ("usage_denied", "#ef6c00"), ("tdm_reserved", "#6a1b9a"),
         ("disallowed", "#c62828"), ("held", "#f9a825"), ("dropped", "#5d4037"), ("requeued", "#1565c0"),
         ("not_judged", "#9e9e9e"))
_CHART_WIDTH, _CHART_HEIGHT, _AXIS = 720, 160, 28

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;
color:#1b1b1b;background:#fff}
h1{font-size:1.6em;margin:.2em 0}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
h3{margin:1.2em 0 .4em}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:.93em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace;font-size:.92em;word-break:break-all}
.ok{color:#2e7d32;font-weight:bold}.failed{color:#c62828;font-weight:bold}
.note{color:#555}.legend span{display:inline-block;margin-right:1em}
.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-.1em}
section.host{border-top:1px solid #eee;margin-top:1.5em}
"""


def esc(value: object) -> str:
    """``value`` as HTML text or attribute value: ``& < > " '`` escaped."""
    return html.escape("" if value is None else str(value), quote=True)


def _when(stamp: object) -> str:
    if not isinstance(stamp, (int, float)):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(stamp))


def _table(header: list[str], rows: list[list[str]], css: str = "") -> str:
    """A table; ``rows`` are cells already HTML (a number cell given as ``("n", text)`` is right-aligned)."""
    head = "".join(f"<th>{esc(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(cell for cell in row) + "</tr>" for row in rows)
    return f'<table class="{esc(css)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _td(value: object, number: bool = False, mono: bool = False) -> str:
    text = esc(value)
    if mono:
        text = f"<code>{text}</code>"
    return f'<td class="n">{text}</td>' if number else f"<td>{text}</td>"


def chart(timeline: dict[str, Any], label: str) -> str:
    """The verdicts of ``timeline`` by kind over time, as stacked bars in an inline SVG."""
    buckets = timeline.get("buckets") or []
    if not buckets:
        return '<p class="note">No verdicts.</p>'
    most = max(sum(bucket.values()) for bucket in buckets) or 1
    step = _CHART_WIDTH / len(buckets)
    width = max(step - 1, 1.0)
    marks = []
    for index, bucket in enumerate(buckets):
        y = float(_CHART_HEIGHT)
        start = timeline["start"] + index * timeline["width"]
        for kind, colour in KINDS:
            count = bucket.get(kind, 0)
            if not count:
                continue
            height = count / most * _CHART_HEIGHT
            y -= height
            marks.append(f'<rect class="bar" data-kind="{kind}" data-count="{count}" x="{index * step:.2f}" '
                         f'y="{y:.2f}" width="{width:.2f}" height="{height:.2f}" fill="{colour}">'
                         f"<title>{esc(kind)}: {count} from {esc(_when(start))}</title></rect>")
    end = timeline["start"] + len(buckets) * timeline["width"]
    axis = (f'<text x="0" y="{_CHART_HEIGHT + 18}" font-size="11">{esc(_when(timeline["start"]))}</text>'
            f'<text x="{_CHART_WIDTH}" y="{_CHART_HEIGHT + 18}" font-size="11" text-anchor="end">'
            f"{esc(_when(end))}</text>"
            f'<line x1="0" y1="{_CHART_HEIGHT}" x2="{_CHART_WIDTH}" y2="{_CHART_HEIGHT}" stroke="#888"/>')
    bucket_width = f"{timeline['width']:g}"
    legend = "".join(f'<span><i style="background:{colour}"></i>{esc(kind)}</span>'
                     for kind, colour in KINDS if any(bucket.get(kind) for bucket in buckets))
    return (f'<figure><svg class="chart" role="img" aria-label="{esc(label)}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{_CHART_WIDTH}" height="{_CHART_HEIGHT + _AXIS}" '
            f'viewBox="0 0 {_CHART_WIDTH} {_CHART_HEIGHT + _AXIS}">{"".join(marks)}{axis}</svg>'
            f'<figcaption class="legend">{legend} <span class="note">most in a bucket: {most}; each bucket '
            f"{esc(bucket_width)} s</span></figcaption></figure>")


def _applied(delay: dict[str, Any]) -> str:
    """The applied Crawl-delay's cell: the delay, or why there is none."""
    if delay["obeyed"] is False:
        return "none (ROBOTSTXT_CRAWL_DELAY off)"
    if delay["applied"] is None:
        return "not recorded (the run's head has no ROBOTSTXT_CRAWL_DELAY_MAX)"
    if delay["delay"] is not None and delay["cap"] is not None and delay["delay"] > delay["cap"]:
        return f"{delay['applied']:g} s (capped)"
    return f"{delay['applied']:g} s" if delay["applied"] else "none"


def _counts(title: str, counts: dict[str, Any], css: str) -> str:
    rows = [[_td(key), _td(value, number=True)] for key, value in counts.items() if value]
    if not rows:
        return ""
    return _table([title, "count"], rows, css)


def _tally(title: str, tally: dict[str, Any], css: str) -> str:
    rows = [[_td(key, mono=True), _td(count, number=True)] for key, count in tally["top"]]
    if tally["not_listed"]:
        rows.append([_td("(others, not listed)"), _td(tally["not_listed"], number=True)])
    return _table([title, "count"], rows, css) if rows else ""


def _run_section(data: dict[str, Any]) -> str:
    result = data["audit"]
    status = ('<span class="ok">everything verifies</span>' if result["ok"] and not result["problem_count"]
              else '<span class="ok">what was written verifies (runs that did not end cleanly accepted)</span>'
              if result["ok"] else '<span class="failed">FAILED</span>')
    out = ['<section id="run"><h2>The whole run</h2>', f"<p>Audit: {status} (exit {esc(result['exit'])}).</p>"]
    if result["problem_count"]:
        out.append(_counts("problem kind", result["problem_count"], "problem-counts"))
        rows = [[_td(f"{p['file']}:{p['line']}" if p["line"] is not None else p["file"], mono=True), _td(p["kind"]),
                 _td(p["message"])] for p in result["problems"]]
        out.append(_table(["where", "kind", "problem"], rows, "problems"))
    enforced = data["enforced"]
    out.append("<h3>What was enforced</h3>")
    if enforced["same_in_every_run"] and enforced["settings"] is not None:
        rows = [[_td(key, mono=True), _td(", ".join(map(str, value)) if isinstance(value, list) else value)]
                for key, value in enforced["settings"].items()]
        out.append(_table(["setting (the runs' heads, cfg)", "value"], rows, "enforced"))
    else:
        out.append('<p class="note">The runs differ (or a run of format 2 records none): each run\'s settings '
                   "are in the table of runs.</p>")
    rows = [[_td(run["run"], mono=True), _td(run.get("agent")), _td(run.get("package")), _td(run.get("format")),
             _td(run["segments"], number=True), _td(run["records"], number=True), _td(run["ending"]),
             _td(run.get("responses")),
             _td("; ".join(f"{k}={v}" for k, v in (run.get("settings") or {}).items()) or "(not recorded)")]
            for run in data["runs"]]
    out.append("<h3>Runs</h3>" + _table(["run", "agent", "package", "format", "segments", "records", "ending",
                                         "responses recorded", "settings"], rows, "runs"))
    if data["runs_not_listed"]:
        out.append(f'<p class="note">{esc(data["runs_not_listed"])} more runs, not listed.</p>')
    totals = data["totals"]
    out.append("<h3>Verdicts</h3>" + _counts("verdict", totals["verdicts"], "totals")
               + f'<p>{esc(totals["records"])} records, {esc(totals["versions"])} document versions, '
               f'{esc(totals["hosts"])} hosts, {esc(totals["responses"]["received"])} responses recorded.</p>')
    out.append(chart(data["timeline"], "verdicts of the whole run over time"))
    hosts = data["hosts"]
    rows = [[f'<td><a href="#host-{index}">{esc(host["host"])}</a></td>',
             *(_td(host["verdicts"][kind], number=True) for kind, _ in KINDS),
             _td(host["responses"]["received"], number=True)] for index, host in enumerate(hosts)]
    other = data["other_hosts"]
    if other is not None:
        rows.append([f'<td><a href="#other-hosts">{esc(other["count"])} other hosts</a></td>',
                     *(_td(other["verdicts"][kind], number=True) for kind, _ in KINDS),
                     _td(other["responses"]["received"], number=True)])
    left_out = "" if other is None else (
        f'<p class="note">The {esc(len(hosts))} hosts with the most verdicts are listed, the most first; '
        f'{esc(other["count"])} hosts with fewer are left out and counted together.</p>')
    out.append("<h3>Hosts</h3>" + _table(["host", *(kind for kind, _ in KINDS), "responses"], rows, "hosts")
               + left_out)
    out.append("</section>")
    return "".join(out)


def _host_section(host: dict[str, Any], anchor: str, title: str) -> str:
    out = [f'<section class="host" id="{anchor}"><h2>{esc(title)}</h2>']
    documents = host["documents"]
    rows = [[_td(v["document"]), _td(v["digest"], mono=True), _td(v["status"], number=True), _td(v["access"]),
             _td(_when(v["first"])), _td(_when(v["last"]))] for v in documents["versions"]]
    out.append("<h3>Documents fetched</h3>" + (_table(["document", "version (SHA-256)", "status", "access",
                                                       "first used", "last used"], rows, "versions")
                                               if rows else '<p class="note">No version recorded.</p>'))
    rows = [[_td(_when(e["t"])), _td(e["doc"]), _td(e["src"]), _td(e["access"]), _td(e["status"], number=True),
             _td((e["version"] or "")[:16], mono=True), _td(e["error"] or ""), _td("changed" if e["changed"] else "")]
            for e in documents["events"]]
    if rows:
        out.append(_table(["time", "document", "source", "access", "status", "version", "error", ""], rows,
                          "events"))
        if documents["events_total"] > len(rows):
            out.append(f'<p class="note">{esc(documents["events_total"])} states recorded; the first and last '
                       f"{len(rows)} listed.</p>")
    rows = []
    for protocol in host["protocols"]:
        said = ", ".join(f"{key} {value}" for key, value in protocol["said"].items())
        read = protocol.get("read", True)
        detail = ", ".join(f"{key} {value}" for key, value in protocol.get("states", {}).items())
        rows.append([_td(protocol["protocol"]), _td("yes" if read else "no (not read by the run)"),
                     _td(protocol.get("versions", "")), _td(detail), _td(said)])
    out.append("<h3>Protocols checked</h3>" + _table(["protocol", "read", "versions", "states", "said"], rows,
                                                     "protocols"))
    statements = host["protocols"][1]["statements"]
    if statements["top"]:
        out.append(_tally("usage preference applied (robots.txt)", statements, "statements"))
    out.append("<h3>Verdicts over time</h3>" + chart(host["timeline"], f"verdicts of {host['host']} over time"))
    rules = host["rules"]
    rows = [[_td(rule["agent"] or "*", mono=True), _td(f"{rule['directive']}: {rule['pattern']}", mono=True),
             _td(rule["line"], number=True), _td(rule["count"], number=True)] for rule in rules["top"]]
    if rules["not_listed"]:
        rows.append([_td(""), _td("(other rules, not listed)"), _td(""), _td(rules["not_listed"], number=True)])
    out.append("<h3>Rules that blocked most</h3>" + (_table(["agent", "rule", "line", "disallowed"], rows, "rules")
                                                     if rows else '<p class="note">No request disallowed.</p>'))
    usage = host["usage"]
    out.append("<h3>Usage categories</h3>" + (
        _counts("category denied (verdicts usage_denied)", usage["denied"], "usage") or "")
        + f'<p>TDM reserved (tdmrep.json): {esc(usage["tdm_reserved"])}; responses denied by their headers or '
        f'meta tags: {esc(usage["responses_denied"])}.</p>')
    rows = [[_td(d["version"][:16], mono=True), _td(d["agent"] or "*", mono=True),
             _td("none" if d["delay"] is None else f"{d['delay']:g} s"), _td(_applied(d))] for d in host["crawl_delay"]]
    if rows:
        out.append("<h3>Crawl-delay</h3>"
                   + _table(["robots.txt version", "agent", "stated by the site", "applied"], rows, "delays")
                   + '<p class="note">What each robots.txt version states for the run\'s agent, and the Crawl-delay '
                   "the crawl applied to the origin's download slot: the stated one capped at "
                   "ROBOTSTXT_CRAWL_DELAY_MAX when ROBOTSTXT_CRAWL_DELAY is on (the slot's delay was then at least "
                   "that, never below DOWNLOAD_DELAY).</p>")
    for key, label in (("held", "Held requests"), ("dropped", "Dropped requests")):
        part = host[key]
        if part["count"]:
            out.append(f"<h3>{label}: {esc(part['count'])}</h3>" + _tally("reason", part["reasons"], key))
    out.append("</section>")
    return "".join(out)


def render(data: dict[str, Any]) -> str:
    """The page of the report's JSON form ``data``."""
    directories = ", ".join(data["directories"])
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # Nothing is fetched and nothing runs: styles inline, no script, no image but inline SVG.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>robots.txt compliance report: {esc(directories)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>robots.txt compliance report</h1><p>Ledger: <code>{esc(directories)}</code>"
        + (f"; generated {esc(_when(data['generated']))}" if data.get("generated") is not None else "") + ".</p>",
        _run_section(data),
    ]
    for index, host in enumerate(data["hosts"]):
        parts.append(_host_section(host, f"host-{index}", host["host"]))
    other = data["other_hosts"]
    if other is not None:
        parts.append(_host_section(other, "other-hosts", f"{other['count']} other hosts (fewer verdicts than the "
                                   f"{len(data['hosts'])} listed, counted together)"))
    parts.append("</body></html>\n")
    return "\n".join(parts)
