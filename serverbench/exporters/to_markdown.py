"""Markdown exporter: per workload, what it is ranked by and why, then per point the verdict,
the ranked table and the warnings."""
from __future__ import annotations

from typing import Any

from ..results.aggregate import Group, RunResults
from ..catalog.kinds import FIXED_DEMAND, OVER_TIME, P99_KINDS, TWINNED
from ..rules.fingerprint import describe_database, describe_db_choices, describe_split, normalize
from . import tools_section
from ..results.formatting import fmt_cpu, fmt_num, fmt_us
from . import cores_section, opening, overtime_section, placement, speed_section, steady_section, verdict_section
from . import database_section, h2_section, hol_section, models_section, noisy_section, profile_section, tls_section
from ..cost import table as cost
from ..results import ranking
from ..seeds import section as seeds_section

COLUMNS = ["place", "server", "language", "model", "requests/s (successful, median)", "interval", "errors",
           "connections served", "p50", "p99 (all due)", "CPU µs/request", "CPU (% / user+sys s)",
           "memory (peak RSS MiB)"]
FIXED_LOAD_COLUMNS = ["place", "server", "language", "model", "p99 (all due)", "interval", "p99 (answered only)",
                      "timeouts", "CPU µs/request", "requests/s (successful, median)", "errors",
                      "memory (peak RSS MiB)"]
CAPACITY_COLUMNS = ["place", "server", "language", "model", "capacity req/s (median)", "interval", "errors", "p50",
                    "p99 (all due)", "CPU µs/request", "CPU (% / user+sys s)", "memory (peak RSS MiB)"]


EFFICIENCY_COLUMNS = ["place", "server", "language", "model", "server CPU µs/request", "interval", "p99 (all due)",
                      "requests/s (successful, median)", "errors", "projected capacity (1 ÷ CPU per request)"]


# A db workload's table: the database's CPU per request beside the server's (never added to it).
DB_COLUMN = "DB CPU µs/request; connections"


def columns(kind: str, db: bool = False) -> list[str]:
    cols = {"fixed-load": FIXED_LOAD_COLUMNS, "noisy": FIXED_LOAD_COLUMNS, "head-of-line": FIXED_LOAD_COLUMNS, "capacity": CAPACITY_COLUMNS,
            ranking.EFFICIENCY: EFFICIENCY_COLUMNS}.get(kind, COLUMNS)
    if db and "CPU µs/request" in cols:
        i = cols.index("CPU µs/request") + 1
        cols = cols[:i] + [DB_COLUMN] + cols[i:]
    return cols


def db_cell(g: Group) -> str:
    """The database's CPU per request and the row's connections to it (most open; how many ran a statement
    on average, PostgreSQL's count — old runs: the most seen running one at a look)."""
    d = g.figures.database
    if d.db_cpu_us_per_request is None:
        return "—"
    conns = ""
    if d.db_connections_peak is not None and d.db_active_mean is not None:
        conns = f"; {d.db_connections_peak:.0f} open, {d.db_active_mean:.1f} running a statement on average"
    elif d.db_connections_peak is not None and d.db_active_peak is not None:
        conns = f"; {d.db_connections_peak:.0f} open, at most {d.db_active_peak:.0f} running a query"
    return fmt_num(d.db_cpu_us_per_request, 1) + conns


def served_cell(g: Group) -> str:
    """Connections that completed a request of those held (median repetition), Jain's index, unfair."""
    f = g.figures
    if f.fairness.slots is None:
        return "—"
    jain = f", Jain {f.fairness.jain:.2f}" if f.fairness.jain is not None else ""
    return f"{f.fairness.slots_served:,} of {f.fairness.slots:,}{jain}" + (" — unfair" if f.fairness.unfair else "")


def projected_cell(g: Group) -> str:
    """1 ÷ server CPU per request: what one server CPU could answer, a projection, not a measurement."""
    p = g.figures.projected_rps
    return f"~{p:,.0f} req/s per CPU (projected)" if p else "—"


def errors_cell(g: Group) -> str:
    """Errors with their share, the degraded mark and timeouts."""
    if not g.errors:
        return "0"
    share = g.error_share
    text = f"{g.errors:,}" + (f" ({share:.1%})" if share is not None else "")
    if g.timeouts:
        text += f", {g.timeouts:,} timeouts"
    return text + (" — degraded" if g.degraded else "")


def rate_cell(g: Group) -> str:
    t = g.throughput
    if t is None:
        return "—"
    if g.held is False:
        return f"did not hold {g.target_rate:,.0f} (achieved {t.median:,.0f})"
    if g.client_bound_group:  # ranking.client_block: not ordered by the load generator's noise
        return f"≥ {t.median:,.0f} (load generator's limit)"
    return fmt_num(t.median) + (" (tied with #1)" if g.tied_with_leader and g.kind not in FIXED_DEMAND else "")


def interval_cell(g: Group) -> str:
    """The ranked figure's median interval (stats.median_ci) with its coverage; '—' for 1 repetition."""
    st = ranking.figure_stats(g, g.kind)
    if st is None or st.n < 2:
        return "—"
    fmt = (fmt_us if g.kind in P99_KINDS else (lambda v: fmt_num(v, 2)) if g.kind == ranking.EFFICIENCY
           else fmt_num)
    tie = " (tied with #1)" if g.tied_with_leader and g.kind in P99_KINDS else ""
    return f"{fmt(st.ci_low)}–{fmt(st.ci_high)} ({st.ci_level:.0%}){tie}"


def db_note(groups: list[Group]) -> str:
    """Under a db table: the rate every row was offered, where it came from, where PostgreSQL ran."""
    d = next((g.figures.database for g in groups if g.figures.database.calibrated_on), None)
    rates = {round(g.target_rate) for g in groups if g.target_rate}
    rate = (f"Every row was offered {', '.join(f'{r:,}' for r in sorted(rates))} req/s"
            + (f" (a share of what {d.calibrated_on} served with 64 connections, measured once for the run)"
               if d is not None else "") + ". ") if rates else ""
    shared = any(g.figures.database.db_shares_client_cpus for g in groups)
    where = ("PostgreSQL ran on the load generator's CPUs: its CPU is not the server's, and counts in the "
             "client's headroom." if shared else "PostgreSQL's CPU is not the server's.")
    return rate + where


def _row(g: Group, kind: str) -> list[str]:
    mark = " ⚠" if g.warnings else ""
    head = [g.place_text, g.server + mark, g.language, g.model]
    cpu_req = fmt_num(g.cpu_us_per_request, 1)
    if kind in FIXED_DEMAND:
        return head + [fmt_us(g.latency["p99"]), interval_cell(g), fmt_us(g.answered_p99_us), f"{g.timeouts:,}",
                       cpu_req, rate_cell(g), errors_cell(g), fmt_num(g.rss_peak_mib, 1)]
    if kind == ranking.EFFICIENCY:
        return head + [fmt_num(g.cpu_us_per_request, 2), interval_cell(g), fmt_us(g.latency["p99"]), rate_cell(g),
                       errors_cell(g), projected_cell(g)]
    if kind == "capacity":
        return head + [rate_cell(g), interval_cell(g), errors_cell(g), fmt_us(g.latency["p50"]),
                       fmt_us(g.latency["p99"]), cpu_req, fmt_cpu(g), fmt_num(g.rss_peak_mib, 1)]
    return head + [rate_cell(g), interval_cell(g), errors_cell(g), served_cell(g), fmt_us(g.latency["p50"]),
                   fmt_us(g.latency["p99"]), cpu_req, fmt_cpu(g), fmt_num(g.rss_peak_mib, 1)]


def database_changes(results: RunResults) -> list[str]:
    """The stressgrid (sleep) order beside each db workload's, for the rows measured on both."""
    comps = database_section.comparisons(results)
    if not comps:
        return []
    lines = ["## What a real database changes", "", database_section.NOTE, ""]
    for c in comps:
        lines += [f"### {c.title}", "", database_section.summary(c), "",
                  "| " + " | ".join(database_section.HEADERS) + " |",
                  "|" + "|".join("---" for _ in database_section.HEADERS) + "|"]
        lines += ["| " + " | ".join(database_section.cells(m)) + " |" for m in c.moves] + [""]
    return lines


def cost_of_ownership(results: RunResults) -> list[str]:
    """Each server's latest profile (`serverbench profile`), grouped by concurrency model."""
    rows = cost.cost_rows(results)
    if not rows:
        return []
    lines = ["## Cost of ownership", "", cost.NOTE, "", "| " + " | ".join(cost.COLUMNS) + " |",
             "|" + "|".join("---" for _ in cost.COLUMNS) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in cost.table(rows)]
    return lines + [""] + [f"- ⚠ {p}" for p in cost.problems(rows)] + [""]


def tools_compared(results: RunResults) -> list[str]:
    """The "tools compared" section: per cross-checked point, each server's tools, then the finding."""
    if not results.tools:
        return []
    lines = ["## tools compared", "", tools_section.INTRO, ""]
    for tc in results.tools:
        lines += [f"### {tools_section.title(tc)}", ""]
        for server in tc.servers:
            lines += [f"**{server}**", "", "| " + " | ".join(tools_section.HEADERS) + " |",
                      "|" + "|".join("---" for _ in tools_section.HEADERS) + "|"]
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in tools_section.cells(r)) + " |"
                      for r in tc.on(server)]
            lines.append("")
        lines += [tc.finding, ""]
        lines += [f"- {n}" for n in tools_section.notes(tc)] + [""]
    return lines


def _over_time(wl: Any, pt: Any) -> list[str]:
    """Overload and soak points: the rules, the memory limit, the table, the warnings."""
    rules = overtime_section.rules(wl.kind)
    lines = [rules[0], ""] + [f"- {r}" for r in rules[1:]] + ([""] if rules[1:] else [])
    lines += [overtime_section.memory_note(wl), ""]
    cols = overtime_section.headers(wl.kind)
    lines += ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in overtime_section.cells(g, wl.kind)) + " |"
              for g in pt.groups]
    warns = [w.text for g in pt.groups for w in g.warnings]
    return lines + ([""] + [f"- ⚠ {w}" for w in warns] if warns else []) + [""]


def _scaling(wl: Any) -> list[str]:
    """A cores workload's scaling table, before its per-count points."""
    sc = cores_section.scaling(wl)
    lines = ["### scaling", "", sc.intro, "", "| " + " | ".join(sc.headers) + " |",
             "|" + "|".join("---" for _ in sc.headers) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in sc.rows] + [""]
    pc = cores_section.per_core(wl)
    lines += ["### requests/s per core", "", pc.intro, "", "| " + " | ".join(pc.headers) + " |",
              "|" + "|".join("---" for _ in pc.headers) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in pc.rows] + [""]
    return lines + [f"- **{m}**: {n}" for m, n in cores_section.model_notes(wl)] + [""]


def _noisy(wl: Any) -> list[str]:
    """A noisy workload's verdicts per noise shape against the quiet twin, the rules, how the noise ended."""
    rules = noisy_section.rules()
    lines = ["### what the noise cost the legitimate traffic", "", rules[0], ""] + [f"- {r}" for r in rules[1:]]
    lines += ["", f"Verdicts: {noisy_section.verdict_counts(wl)}.", ""]
    if wl.kind == "head-of-line":  # the light p99 beside the declared cpu_work and the heavy requests' cost
        return (lines + [hol_section.INTRO, ""] + _table(hol_section.headers(wl), hol_section.rows(wl))
                + [hol_section.MODEL_INTRO, ""] + _table(hol_section.MODEL_HEADERS, hol_section.model_rows(wl)))
    lines += _table(noisy_section.headers(wl), noisy_section.rows(wl))
    return lines + [noisy_section.ENDED_INTRO, ""] + _table(noisy_section.ended_headers(wl), noisy_section.ended_rows(wl))


def _not_run(pt: Any) -> list[str]:
    """The rows left out of this point, and why (a feature check they failed, no verdict, …)."""
    rows = verdict_section.not_run(pt)
    return [f"- {r}" for r in rows] + [""] if rows else []


def deviations(results: RunResults) -> list[str]:
    """Footnotes: each marked row's deviations, one line each."""
    if not results.deviations:
        return []
    lines = ["## Deviations", "", verdict_section.INTRO, ""]
    for sid, devs in sorted(results.deviations.items()):
        lines.append(f"[^{verdict_section.anchor(sid)}]: {sid}: " + "; ".join(devs))
    return lines + [""]


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
            + ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows] + [""])


def _answer(results: RunResults) -> list[str]:
    """The report opens with the verdicts (opening.py)."""
    rows = [[wl.name, pt.label, gl.metric, gl.leader.server if gl.decided and gl.leader else "—", gl.verdict]
            for wl, pt, gl in opening.glances(results)]
    return ["## At a glance", "", opening.judged_line(results), "", *speed_section.markdown(results)] + _table(
        ["workload", "point", "ranked by", "leader (beyond noise)", "verdict"], rows)


def _options(run: Any) -> list[str]:
    return ["What this run was asked for:", ""] + _table(["option", "value", ""],
                                                         [list(r) for r in opening.options_rows(run.options)])


def _warmup(results: RunResults) -> list[str]:
    rs = steady_section.rows(results)
    if not rs:
        return []
    return [f"## Warm-up to steady state ({rs[0].workload} {rs[0].point})", "", steady_section.NOTE, ""] + _table(
        steady_section.HEADERS, [steady_section.cells(r) for r in rs])


def render(run: Any, results: RunResults) -> bytes:
    fp = normalize(run.fingerprint)
    lines = [f"# serverbench run {run.id}", ""] + profile_section.markdown(results) + _answer(results) + [
             "## Environment and options", "",
             f"{fp.get('cpu_model', '?')}, {fp.get('cores', '?')} cores, kernel {fp.get('kernel', '?')}; "
             f"{placement.describe(run, results)}; "
             f"commit {str(fp.get('git_commit') or '?')[:12]}{' (dirty)' if fp.get('git_dirty') else ''}.", "",
             *([f"CPU split: {cut}.", ""] if (cut := describe_split(fp.get("cpu_split"))) else []),
             *([f"Database: {dbl}.", ""] if (dbl := describe_database(fp.get("database"))) else []),
             "Requests/s count successful (2xx/3xx) responses only, median of the repetitions; percentiles come "
             "from the merged histograms and cover every due request (timed-out and unanswered ones at their "
             "age); errors are summed over repetitions. Each workload says what it is ranked by.", ""]
    servers = fp.get("servers") or {}
    if servers:
        lines += ["| server | framework | model | pipelined writes | /file read | TCP_NODELAY |", "|---|---|---|---|---|---|"]
        for sid, i in sorted(servers.items()):
            c = i.get("choices") or {}
            lines.append(f"| {sid} | {i.get('framework', '')} | {i.get('model', '')} | "
                         f"{c.get('pipelined_writes', 'not declared')} | {c.get('file_read', 'not declared')} | "
                         f"{models_section.nodelay(c)} |")
        lines.append("")
        drivers = [(sid, d) for sid, i in sorted(servers.items()) if (d := describe_db_choices(i.get("choices")))]
        lines += _table(["server", "database driver (SPEC: Choices)"], [[s, d] for s, d in drivers]) if drivers else []
        lines += _table(models_section.MODEL_HEADERS, models_section.models(servers))
        notes = models_section.row_notes(servers)
        lines += _table(models_section.NOTE_HEADERS, notes) if notes else []
    lines += _options(run) + _warmup(results)
    for wl in results.workloads:
        lines += [f"## {wl.name}", ""]
        if wl.description:
            lines += [wl.description, ""]
        if wl.points:
            g0 = wl.points[0].glance
            lines += [f"Ranked by **{g0.metric}**: {g0.why}.", ""]
        if wl.kind == cores_section.KIND:
            lines += _scaling(wl)
        if wl.kind in TWINNED:
            lines += _noisy(wl)
        for pt in wl.points:
            if wl.is_sweep or pt.kind == ranking.EFFICIENCY:
                lines += [f"### {wl.name} · {pt.label}", ""]
            if pt.kind == ranking.EFFICIENCY:
                gl = pt.glance
                lines += [f"Ranked by **{gl.metric}**: {gl.why}.", ""]
                lines += [f"{pt.outside_text}.", ""] if pt.outside_text else []
            lines += [f"At a glance: {pt.glance.verdict}.", ""]
            if wl.kind in OVER_TIME:
                lines += _over_time(wl, pt) + _not_run(pt)
                continue
            db = any(g.figures.database.db_cpu_us_per_request is not None for g in pt.groups)
            cols = columns(pt.kind, db)
            lines += ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
            for g in pt.groups:
                if g.throughput is None:
                    status = g.bad[0].status if g.bad else "no data"
                    row = ["—", g.server, g.language, g.model, status] + ["—"] * (len(cols) - 5)
                else:
                    row = _row(g, pt.kind)
                    if db:
                        row.insert(cols.index(DB_COLUMN), db_cell(g))
                if verdict_section.has_deviations(results, g.server):
                    row[1] += f" [^{verdict_section.anchor(g.server)}]"
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
            if db:
                lines += ["", db_note(pt.groups)]
            warns = [w.text for g in pt.groups for w in g.warnings]
            if warns:
                lines += [""] + [f"- ⚠ {w}" for w in warns]
            lines.append("")
            lines += _not_run(pt)
    lines += database_changes(results)
    lines += tls_section.markdown(results)
    lines += h2_section.markdown(results)
    lines += seeds_section.markdown(run, results)
    lines += cost_of_ownership(results)
    lines += tools_compared(results)
    lines += deviations(results)
    return "\n".join(lines).encode("utf-8")


__all__ = ["render", "COLUMNS", "FIXED_LOAD_COLUMNS", "CAPACITY_COLUMNS", "EFFICIENCY_COLUMNS", "columns",
           "served_cell", "projected_cell"]
