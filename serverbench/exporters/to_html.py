"""HTML exporter: one self-contained page (plotly.js and the figure JSON inlined once).

Every chart is followed by a table with the exact figures; nothing is fetched from the network.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from ..results.aggregate import PointData, RunResults, Caveat, WorkloadData
from ..charts.figures import FONT, Styles, capacity_chart, hol_cores_chart, cpu_per_request_chart, errors_chart, latency_chart, model_color, noise_chart, p99_chart, resources_chart, scaling_chart, sweep_chart, throughput_chart, timeline_chart
from . import tools_section
from . import cores_section, opening, overtime_section, placement, speed_section, steady_section, verdict_section
from . import database_section, h2_section, hol_section, models_section, noisy_section, profile_section, tls_section
from ..results import ranking
from ..charts.timecharts import outage_chart, over_time_chart
from .html_tables import (capacity_table, cpu_per_request_table, efficiency_table, errors_table, esc,
                          fixed_load_table, latency_table, resources_table, sweep_table, table, throughput_table,
                          timeline_table, warnings_html, dev_mark, srv_cell)
from ..cost import table as cost
from ..seeds import section as seeds_section
from ..charts.cost_charts import bounded_label, cost_bar, lines_chart, tradeoff_chart
from ..catalog.kinds import FIXED_DEMAND, OVER_TIME, TWINNED
from ..rules.fingerprint import describe_database, describe_db_choices, describe_split, normalize
from ..results.formatting import fmt_us

# -- page assembly ---------------------------------------------------------------------------------
class Page:
    """Collects sections, figures and the table of contents while the report is written."""

    def __init__(self) -> None:
        self.figures: dict[str, str] = {}  # div id -> figure JSON
        self.toc: list[tuple[int, str, str]] = []
        self.parts: list[str] = []

    def anchor(self, text: str) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "s"
        n, base = 1, slug
        while any(a == slug for _, a, _ in self.toc):
            n += 1
            slug = f"{base}-{n}"
        return slug

    def heading(self, level: int, text: str, toc: bool = True) -> None:
        a = self.anchor(text)
        if toc:
            self.toc.append((level, a, text))
        self.parts.append(f'<h{level} id="{a}">{esc(text)}</h{level}>')

    def chart(self, fig: go.Figure, table_html: str, caption: str = "") -> None:
        div = f"chart-{len(self.figures) + 1}"
        self.figures[div] = pio.to_json(fig, validate=False, pretty=False)
        cap = f'<p class="caption">{caption}</p>' if caption else ""
        h = int(fig.layout.height or 400)
        self.parts.append(f'<figure class="chart"><div id="{div}" class="plot" style="height:{h}px"></div>'
                          f"{cap}{table_html}</figure>")

    def add(self, raw_html: str) -> None:
        self.parts.append(raw_html)


def _point_section(page: Page, wl: WorkloadData, pt: PointData, styles: Styles, heavy_note: str = "") -> None:
    groups = pt.measured
    if pt.outside_text:
        page.add(f'<p class="muted">{esc(pt.outside_text)}.</p>')
    if not groups:
        page.add('<p class="muted">No server produced a result for this point.</p>')
        return
    what = f"{wl.name} {pt.label}"
    if wl.kind not in OVER_TIME:  # those print it above their own table
        page.add(f'<p class="glance"><b>At a glance:</b> {esc(pt.glance.verdict)}.</p>')
    if pt.kind == ranking.EFFICIENCY:
        page.chart(cpu_per_request_chart(groups, f"{what}: server CPU per successful request at one fixed rate "
                                         "(ranked; lower is better)"), efficiency_table(pt),
                   "The rows the load generator could not out-run, measured again at one common offered rate every "
                   "row holds: ranked by what a request costs the server; the projected capacity is 1 ÷ that cost "
                   "(a projection, not a measurement).")
    elif wl.kind in FIXED_DEMAND:
        page.chart(p99_chart(pt, f"{what}: p99 over every due request (ranked; lower is better)"),
                   fixed_load_table(pt), "Timed-out and unanswered requests count at their age; rows that did not "
                   "hold the rate or had more than 1 % errors rank after the others.")
    elif wl.kind not in OVER_TIME and (not wl.is_sweep or heavy_note):
        title = (f"capacity: highest rate with p99 ≤ {fmt_us(wl.p99_limit_us)}" if wl.is_capacity
                 else "successful requests/s (median; whiskers min–max over repetitions)")
        page.chart(throughput_chart(pt, f"{what}: {title}"), throughput_table(pt, wl.is_capacity),
                   "Only 2xx/3xx responses count; rows with more than 1 % errors rank after the clean ones.")
    page.chart(latency_chart(groups, styles, f"{what}: latency by percentile{heavy_note}"), latency_table(groups),
               "Percentiles from the repetitions' HdrHistograms merged exactly; both axes logarithmic.")
    page.chart(cpu_per_request_chart(groups, f"{what}: server CPU per successful request{heavy_note}"),
               cpu_per_request_table(groups), "Medians over repetitions of (user + sys CPU) ÷ successful responses: "
               "what one answer costs, comparable even when every row saturates its CPU.")
    page.chart(resources_chart(groups, f"{what}: server CPU and memory{heavy_note}"), resources_table(groups),
               "Medians over repetitions. CPU % counts 100 per core; the server is pinned to its CPU(s).")
    if any(g.errors or g.timeouts for g in groups):
        page.chart(errors_chart(groups, f"{what}: errors and timeouts{heavy_note}"), errors_table(groups))
    else:
        page.add(f'<p class="ok">✓ No errors or timeouts at {esc(pt.label)}.</p>')


def _noisy(page: Page, wl: WorkloadData, styles: Styles) -> None:
    """A noisy workload's verdicts per noise shape, the rules, the ratio chart, how the noise ended."""
    rules = noisy_section.rules()
    page.heading(3, f"{wl.name} · what the noise cost the legitimate traffic", toc=False)
    page.add(f'<div class="rules"><p>{esc(rules[0])}</p><ul>' + "".join(f"<li>{esc(r)}</li>" for r in rules[1:])
             + f'</ul><p><b>Verdicts:</b> {esc(noisy_section.verdict_counts(wl))}.</p></div>')
    rows = noisy_section.rows(wl)
    if wl.kind == "head-of-line":  # the light p99 beside the declared cpu_work and the heavy requests' cost
        below = (f'<p class="desc">{esc(hol_section.INTRO)}</p>'
                 + table(hol_section.headers(wl), [[esc(c) for c in r] for r in hol_section.rows(wl)], numeric_from=3)
                 + f'<p class="desc">{esc(hol_section.MODEL_INTRO)}</p>'
                 + table(hol_section.MODEL_HEADERS, [[esc(c) for c in r] for r in hol_section.model_rows(wl)],
                         numeric_from=1))
    else:
        below = (table(noisy_section.headers(wl), [[esc(c) for c in r] for r in rows], numeric_from=2)
                 + f'<p class="desc">{esc(noisy_section.ENDED_INTRO)}</p>'
                 + table(noisy_section.ended_headers(wl), [[esc(c) for c in r] for r in noisy_section.ended_rows(wl)],
                         numeric_from=99))
    page.chart(noise_chart(noisy_section.ratios(wl), [r[0] for r in rows],
                           f"{wl.name}: legitimate p99 under each noise shape ÷ its quiet twin's (1 = unaffected)"),
               below, "Log axis; the quiet twin is the same legitimate load in the same server start without noise.")
    if wl.kind == "head-of-line" and hol_section.swept(wl):
        page.chart(hol_cores_chart(hol_section.lines(wl), styles, f"{wl.name}: light p99 ratio against server cores"),
                   "", "Each count a fresh start pinned to that many CPUs, the heavy point beside its twin in it; "
                   "open crosses: the server shared a CPU with the load generator.")


def _over_time(page: Page, wl: WorkloadData, pt: PointData) -> None:
    """Overload and soak points: the verdict rules, the memory limit, the table, the small multiples."""
    kind = wl.kind
    page.add(f'<p class="glance"><b>At a glance:</b> {esc(pt.glance.verdict)}.</p>')
    rules = overtime_section.rules(kind)
    items = "".join(f"<li>{esc(r)}</li>" for r in rules[1:])
    page.add(f'<div class="rules"><p>{esc(rules[0])}</p>' + (f"<ul>{items}</ul>" if items else "") + "</div>")
    page.add(f'<p class="desc">{esc(overtime_section.memory_note(wl))}</p>')
    rows = [[esc(c) for c in overtime_section.cells(g, kind)] for g in pt.groups]
    if kind == "db-outage":
        page.chart(outage_chart(pt, f"{wl.name} {pt.label}: successful responses/s of every row"), "",
                   "From each row's repetition closest to the median; grey: the database away.")
    figure = {"overload": "peak successful responses/s and verdict", "soak": "worst one-second p99"}.get(kind, "verdict")
    page.chart(over_time_chart(pt, f"{wl.name} {pt.label}: over time, one row per server ({figure})"),
               table(overtime_section.headers(kind), rows, numeric_from=99 if kind == "overload" else 3),
               "One row per server in ranked order, on one time axis (seconds of the measured run); each "
               "column's scale is shared by every row. Demand, responses/s, p90/p99 and timeouts come from the "
               "loadgen's per-second timeline; CPU and RSS from the server's own per-second series (the dotted "
               "grey CPU line: other processes on the server's CPUs, a shared machine's noise); a red dashed line "
               "marks the second the server's process died. From the repetition closest to the median.")


def _workload_section(page: Page, wl: WorkloadData) -> None:
    page.heading(2, wl.name)
    if wl.description:
        page.add(f'<p class="desc">{esc(wl.description)}</p>')
    if wl.points:
        g0 = wl.points[0].glance
        page.add(f'<p class="rankedby"><b>Ranked by {esc(g0.metric)}</b> — {esc(g0.why)}.</p>')
    styles = Styles(wl.groups)
    if wl.is_sweep:
        page.add(warnings_html([(f"{pt.label} · ", w) for pt in wl.points for g in pt.groups for w in g.warnings]))
        page.chart(sweep_chart(wl, styles), sweep_table(wl),
                   "Each point: median requests/s (whiskers min–max) and p99 from merged histograms.")
    if wl.kind == cores_section.KIND:
        sc = cores_section.scaling(wl)
        page.heading(3, f"{wl.name} · scaling", toc=False)
        page.add(f'<p class="desc">{esc(sc.intro)}</p>'
                 + table(sc.headers, [[esc(c) for c in r] for r in sc.rows], numeric_from=3))
        pc = cores_section.per_core(wl)
        page.chart(scaling_chart(cores_section.lines(wl), styles, f"{wl.name}: requests/s against server cores"),
                   f'<p class="desc">{esc(pc.intro)}</p>'
                   + table(pc.headers, [[esc(c) for c in r] for r in pc.rows], numeric_from=2)
                   + "<ul class=\"desc\">" + "".join(f"<li><b>{esc(m)}</b>: {esc(n)}</li>"
                                                     for m, n in cores_section.model_notes(wl)) + "</ul>",
                   "Both axes logarithmic: a row that scales linearly runs parallel to the dotted line; "
                   f"{cores_section.MARK} and open crosses mark counts where the server shared a CPU with the load "
                   "generator.")
    if wl.kind in TWINNED:
        _noisy(page, wl, styles)
    if wl.is_capacity:
        page.chart(capacity_chart(wl, styles), capacity_table(wl),
                   "The capacity is the achieved rate of the last step whose p99 stayed under the limit "
                   "without errors.")
    own = wl.load_points
    detail = own if len(own) <= 3 or wl.kind in TWINNED else own[-1:]
    detail = detail + [p for p in wl.points if p.kind == ranking.EFFICIENCY]  # the fixed-rate step's
    for pt in detail:
        if wl.is_sweep or pt.kind == ranking.EFFICIENCY:
            page.heading(3, f"{wl.name} · {pt.label}", toc=False)
        else:
            page.add(warnings_html([("", w) for g in pt.groups for w in g.warnings]))
        note = f" (heaviest point {pt.label})" if len(wl.points) > 3 else ""
        if wl.kind in OVER_TIME:
            _over_time(page, wl, pt)
        elif wl.is_ramp:
            page.chart(timeline_chart(wl, pt, styles), timeline_table(pt),
                       "From the loadgen's per-second timeline of the median repetition.")
        _point_section(page, wl, pt, styles, note)
        left_out = verdict_section.not_run(pt)
        if left_out:
            page.add('<p class="muted">Not run here:</p><ul>' + "".join(f"<li>{esc(x)}</li>" for x in left_out)
                     + "</ul>")


def _deviations(page: Page, results: RunResults) -> None:
    """Each row's verify deviations, where the rows' † marks link."""
    if not results.deviations:
        return
    page.heading(2, "Deviations")
    items = "".join(f'<li id="{verdict_section.anchor(sid)}"><b>{esc(sid)}</b><ul>'
                    + "".join(f"<li>{esc(d)}</li>" for d in devs) + "</ul></li>"
                    for sid, devs in sorted(results.deviations.items()))
    page.add(f'<p class="desc">{esc(verdict_section.INTRO)}</p><ul>{items}</ul>')


def _environment(run: Any, results: RunResults) -> str:
    fp = normalize(run.fingerprint)
    opts = run.options or {}
    commit = str(fp.get("git_commit") or "?")
    items = [
        ("CPU", f"{fp.get('cpu_model', '?')} · {fp.get('cores', '?')} cores"),
        ("pinning", placement.describe(run, results)),
        ("CPU split", describe_split(fp.get("cpu_split")) or "—"),
        *([("database", dbl)] if (dbl := describe_database(fp.get("database"))) else []),
        ("system", f"{fp.get('os', '?')} · kernel {fp.get('kernel', '?')} · host {fp.get('hostname', '?')}"),
        ("versions", f"Python {fp.get('python', '?')} · {fp.get('loadgen_version') or 'loadgen ?'}"),
        ("commit", commit[:12] + (" (uncommitted changes)" if fp.get("git_dirty") else "")),
        ("run", f"#{run.id} · {run.status} · started {run.started_at or '?'} · finished {run.finished_at or '—'}"),
    ]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items)
    dl += "<dt>options</dt><dd>" + table(["option", "value", ""], [[esc(c) for c in r] for r in
                                                                  opening.options_rows(opts)], numeric_from=99) + "</dd>"
    servers = fp.get("servers") or {}
    rows = [[f'<span class="dot" style="background:{model_color(i.get("model") or "")}"></span>{esc(s)}'
             + dev_mark(s, results.deviations.get(s, [])),
             esc(i.get("language")), esc(i.get("model")), esc(i.get("framework")), esc(_choices(i.get("choices"))),
             esc(i.get("runtime")), esc(i.get("version") or "—")] for s, i in sorted(servers.items())]
    stable = table(["server", "language", "model", "framework", "choices (SPEC: Choices)", "runtime", "version"],
                   rows, numeric_from=99)
    legend = (table(models_section.MODEL_HEADERS, [[esc(c) for c in r] for r in models_section.models(servers)],
                    numeric_from=99) if rows else "")
    notes = models_section.row_notes(servers)
    notes_html = table(models_section.NOTE_HEADERS, [[esc(c) for c in r] for r in notes], numeric_from=99) if notes else ""
    return f'<dl class="env">{dl}</dl>{stable if rows else ""}{legend}{notes_html}'


def _choices(c: dict[str, Any] | None) -> str:
    """The throughput-relevant choices a row declares (SPEC.md), in words."""
    if not c:
        return "not declared"
    writes = {"coalesced": "pipelined responses coalesced", "per-response": "one write per response"}
    files = {"blocking": "/file read blocking", "async": "/file read async"}
    db = describe_db_choices(c)
    return f"{writes.get(c.get('pipelined_writes'), c.get('pipelined_writes'))}; " \
           f"{files.get(c.get('file_read'), c.get('file_read'))}; TCP_NODELAY {models_section.nodelay(c)}" \
           + (f"; database: {db}" if db else "")


def _failures(workloads: list[WorkloadData]) -> str:
    rows = []
    for wl in workloads:
        for g in wl.groups:
            for c in sorted(g.bad, key=lambda c: c.repetition):
                tail = (f"<details><summary>log tail</summary><pre>{esc(c.log_tail)}</pre></details>"
                        if c.log_tail else "")
                rows.append([esc(c.server), esc(wl.name), esc(c.point), str(c.repetition),
                             f'<span class="bad">{esc(c.status)}</span>', esc(c.error or "—") + tail])
    if not rows:
        return '<p class="ok">✓ Every cell completed.</p>'
    return table(["server", "workload", "point", "rep", "status", "error"], rows, numeric_from=99, cls="failures")


def _overview(workloads: list[WorkloadData]) -> str:
    """One line per workload point: what it ranks by, the verdict (a leader only beyond noise)."""
    rows = []
    for wl in workloads:
        pts = wl.points if len(wl.load_points) <= 3 else [wl.load_points[-1]]
        for pt in pts:
            gl = pt.glance
            if gl.leader is None:
                continue
            rows.append([esc(wl.name), esc(pt.label), esc(gl.metric), srv_cell(gl.leader) if gl.decided else "—",
                         esc(gl.verdict), str(len(pt.measured)), str(sum(1 for g in pt.groups if g.warnings))])
    return table(["workload", "point", "ranked by", "leader (beyond noise)", "verdict", "servers",
                  "with warnings"], rows, numeric_from=5)


CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--line:#e3e6ec;--bg:#fff;--soft:#f6f7f9;--warn:#fff7e0;--warnline:#f0c24b}
*{box-sizing:border-box}
body{margin:0;font-family:%(font)s;color:var(--fg);background:var(--bg);line-height:1.5;font-size:15px}
.layout{display:grid;grid-template-columns:250px minmax(0,1fr);max-width:1500px;margin:0 auto}
nav{position:sticky;top:0;height:100vh;overflow:auto;padding:24px 16px;border-right:1px solid var(--line);background:var(--soft);font-size:14px}
nav ul{list-style:none;padding-left:0;margin:0} nav li{margin:3px 0} nav li.l3{padding-left:14px}
nav a{color:var(--fg);text-decoration:none} nav a:hover{text-decoration:underline}
main{padding:24px 36px 80px}
h1{font-size:26px;margin:0 0 4px} h2{font-size:21px;margin:44px 0 8px;padding-top:12px;border-top:2px solid var(--line)}
h3{font-size:17px;margin:28px 0 8px}
.sub,.desc,.caption,.muted{color:var(--muted)} .glance,.rankedby{margin:8px 0} .caption{font-size:13px;margin:4px 0 8px}
dl.env{display:grid;grid-template-columns:110px 1fr;gap:4px 16px;margin:12px 0 16px;padding:14px 18px;background:var(--soft);border-radius:8px}
dl.env dt{font-weight:600;color:var(--muted)} dl.env dd{margin:0}
figure.chart{margin:18px 0 30px;padding:12px 14px;border:1px solid var(--line);border-radius:10px;background:#fff}
.plot{width:100%%}
.tablewrap{overflow-x:auto}
table{border-collapse:collapse;width:100%%;font-size:13.5px;margin:6px 0;font-variant-numeric:tabular-nums}
th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;white-space:nowrap} td.num,th.num{text-align:right;white-space:nowrap}
tbody tr:hover{background:#fafbfd}
.dot{display:inline-block;width:10px;height:10px;border-radius:50%%;margin-right:7px;vertical-align:baseline}
.flag{color:#b7791f;font-weight:600} .bad{color:#c53030;font-weight:600} .ok{color:#2f855a}
.warnings{background:var(--warn);border-left:4px solid var(--warnline);border-radius:6px;padding:8px 14px;margin:12px 0}
.warnings ul{margin:0;padding-left:18px} .warnings li{margin:3px 0} .warnings b{text-transform:uppercase;font-size:11px;letter-spacing:.04em;margin-right:6px;color:#8a5a00}
.warnings li.w-errors b,.warnings li.w-failed b,.warnings li.w-stalls b,.warnings li.w-crashed b{color:#c53030}
.rules{font-size:13.5px;color:var(--muted)} .rules ul{margin:4px 0;padding-left:20px}
details summary{cursor:pointer;color:var(--muted)} pre{background:var(--soft);padding:8px;border-radius:6px;overflow-x:auto;font-size:12px}
@media (max-width:900px){.layout{display:block} nav{position:static;height:auto}}
""" % {"font": FONT}

BOOT = """
(function () {
  var figs = JSON.parse(document.getElementById('sb-figures').textContent);
  var config = {responsive: true, displaylogo: false, modeBarButtonsToRemove: ['lasso2d', 'select2d']};
  // Resolves with the number of charts once plotly has drawn every one (the browser test waits on it).
  window.serverbenchReady = Promise.all(Object.keys(figs).map(function (id) {
    return Plotly.newPlot(id, figs[id].data, figs[id].layout, config);
  })).then(function () { return Object.keys(figs).length; });
})();
"""


def _answer(page: Page, results: RunResults) -> None:
    """The report opens with the verdicts and one summary chart (opening.py)."""
    page.heading(2, "At a glance")
    page.add(f'<p class="desc">{esc(opening.judged_line(results))}</p>' + speed_section.html(results))
    page.add(_overview(results.workloads))
    top = opening.summary_point(results)
    if top is not None:
        wl, pt = top
        page.chart(throughput_chart(pt, f"{wl.name} {pt.label}: successful requests/s (median; whiskers: the "
                                        "median's interval over repetitions)"), "",
                   "The first throughput point of this run; its full table, latency and cost follow in its section.")


def _warmup(page: Page, results: RunResults) -> None:
    rs = steady_section.rows(results)
    if not rs:
        return
    page.heading(2, "Warm-up to steady state")
    page.add(f'<p class="desc">{esc(steady_section.NOTE)}</p>')
    page.chart(steady_section.chart(rs), table(steady_section.HEADERS, [[esc(c) for c in steady_section.cells(r)]
                                                                        for r in rs], numeric_from=2),
               "From each row's repetition closest to its median; one point per second of warm-up load.")


def _cost_of_ownership(page: Page, results: RunResults) -> None:
    """Each server's latest profile (`serverbench profile`): the table by model, then the charts."""
    rows = cost.cost_rows(results)
    if not rows:
        return
    page.heading(2, "Cost of ownership")
    page.add(f'<p class="desc">{esc(cost.NOTE.replace("`", ""))}</p>')
    page.add(table(cost.COLUMNS, [[esc(c) for c in r] for r in cost.table(rows)], numeric_from=3))
    page.add(warnings_html([("", Caveat("profile", "warning", "", p)) for p in cost.problems(rows)]))
    page.chart(lines_chart(rows), "")
    page.chart(cost_bar(rows, lambda r: r.profile.startup_ms, "start-up: process start → first 200 on GET / "
                        "(median; log scale)", "ms", ",.1f", log=True), "")
    page.chart(cost_bar(rows, lambda r: None if r.profile.idle_rss_bytes is None else r.profile.idle_rss_bytes / 2**20,
                        "idle memory: RSS of the process tree 2 s after ready", "MiB", ",.1f"), "")
    page.chart(cost_bar(rows, lambda r: r.rss_per_1000_mib, "memory per 1,000 idle keep-alive connections "
                        "(slope between the two levels)", "MiB", ",.2f", label=bounded_label), "",
               "Bounded models (≤ N) hold at most N connections: their slope is measured between N/2 and N "
               "and scaled to 1,000 for comparison.")
    if any(r.rps is not None for r in rows):
        page.chart(tradeoff_chart(rows), "", "Throughput from this run; code size and memory from each server's "
                   "latest profile.")


def _database_changes(page: Page, results: RunResults) -> None:
    """The stressgrid (sleep) order beside each db workload's, for the rows measured on both."""
    comps = database_section.comparisons(results)
    if not comps:
        return
    page.heading(2, "What a real database changes")
    page.add(f'<p class="desc">{esc(database_section.NOTE)}</p>')
    for c in comps:
        page.heading(3, c.title)
        page.add(f"<p>{esc(database_section.summary(c))}</p>" + table(
            database_section.HEADERS, [[esc(x) for x in database_section.cells(m)] for m in c.moves], numeric_from=2))


def _tools_compared(page: Page, results: RunResults) -> None:
    """Cross-check runs: per point, each server's tools side by side, the finding, the commands."""
    if not results.tools:
        return
    page.heading(2, "Tools compared")
    page.add(f"<p>{esc(tools_section.INTRO.replace('`', '').replace('*', ''))}</p>")
    for tc in results.tools:
        page.heading(3, tools_section.title(tc))
        for server in tc.servers:
            page.add(f"<h4>{esc(server)}</h4>" + table(tools_section.HEADERS,
                     [[esc(c) for c in tools_section.cells(r)] for r in tc.on(server)], numeric_from=2))
        items = "".join(f"<li>{esc(n.replace('`', ''))}</li>" for n in tools_section.notes(tc))
        page.add(f"<p>{esc(tc.finding)}</p><details><summary>commands and translation notes</summary>"
                 f"<ul>{items}</ul></details>")


def render(run: Any, results: RunResults) -> bytes:
    """The whole report page as one self-contained HTML document."""
    workloads = results.workloads
    page = Page()
    profile_section.to_page(page, results)  # several kinds of work: the reader's answer across them first
    _answer(page, results)
    page.heading(2, "Environment and options")
    page.add(_environment(run, results))
    _warmup(page, results)
    for wl in workloads:
        _workload_section(page, wl)
    _database_changes(page, results)
    tls_section.to_page(page, results)
    h2_section.to_page(page, results)
    seeds_section.to_page(page, run, results)
    _cost_of_ownership(page, results)
    _tools_compared(page, results)
    _deviations(page, results)
    page.heading(2, "Failed and skipped cells")
    page.add(_failures(workloads))

    toc = "".join(f'<li class="l{lvl}"><a href="#{a}">{esc(t)}</a></li>' for lvl, a, t in page.toc)
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    figures = "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in page.figures.items()) + "}"
    figures = figures.replace("</", "<\\/")  # a "</script>" inside a string must not end the block
    title = f"serverbench run {run.id}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}</style>
<script>window.PlotlyConfig = {{MathJaxConfig: 'local'}};</script>
<script>{get_plotlyjs()}</script>
</head><body><div class="layout">
<nav><p><b>{esc(title)}</b></p><ul>{toc}</ul></nav>
<main><h1>{esc(title)}</h1>
<p class="sub">{len(workloads)} workload{'' if len(workloads) == 1 else 's'} · generated {generated} · requests/s are medians over repetitions;
whiskers show the median's interval (min–max up to 5 repetitions); latency percentiles come from merged HdrHistograms.</p>
{''.join(page.parts)}
</main></div>
<script type="application/json" id="sb-figures">{figures}</script>
<script>{BOOT}</script>
</body></html>
""".encode("utf-8")


__all__ = ["render"]
