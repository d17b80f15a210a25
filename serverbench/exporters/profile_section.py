"""The profile table (issue 49), shared by Markdown, HTML and the profile CSV: one row per server, one
column per kind of work (results/profile.py gathers it from the store), each cell the row's place
there (a tie's place range as one), the figure that point is ranked by with its median's interval,
or why the row has no figure; then a row per concurrency model with the median of its rows' places.
The reports open with it when the stored results hold several kinds of work. HTML colours each cell
by its place (green first → red last; the rows of a tie get one colour, their range's middle)."""
from __future__ import annotations

import csv
import html
import io
from typing import Any

from ..catalog.kinds import P99_KINDS
from ..results import ranking
from ..results.formatting import fmt_num, fmt_us
from ..results.profile import Cell, Column, ModelCell, ModelRow, Profile, Row

TITLE = "Profile across kinds of work"
NOTE = ("Each column is one kind of work and the stored point that stands for it, read from the run named under "
        "the table (the run this report is for where it measured that workload; else the stored run, up to this "
        "one, on this machine and at this commit, that measured most of these rows, the newest among equals). A "
        "cell is the row's place at that point, then the figure the point is ranked by (median over the "
        "repetitions, its interval and coverage in brackets). Rows the figure cannot order — within the "
        "repetitions' noise of each other, or sharing the load generator's limit — share one place range such "
        "as 1–7: no order inside it is claimed. A row with no figure says why: not built, failed a check, left "
        "out by declaration (its manifest), not verified, failed, or not measured. The model rows give the "
        "median of their rows' places (a range counted at its middle), not of their figures, because the "
        "columns' figures are in different units.")
CSV_COLUMNS = ["server", "model", "language", "work", "workload", "point", "run", "ranked_by", "place_first",
               "place_last", "median", "ci_low", "ci_high", "ci_level", "repetitions", "note", "why", "reason"]


def _fmt(col: Column, v: float) -> str:
    if col.kind == ranking.OUTAGE:
        return f"{v:.1f} s"
    return fmt_us(v) if col.kind in P99_KINDS else fmt_num(v, 2) if col.kind == ranking.EFFICIENCY else fmt_num(v)


def figure_text(c: Cell, col: Column) -> str:
    """"95,311 req/s [93,870–96,020, 75 %]" or "p99 1.2 ms [1.1 ms–1.4 ms, 75 %]"; the interval with ≥ 2
    repetitions only."""
    st = c.figure
    if st is None:
        return "—"
    unit = ("" if col.kind in P99_KINDS or col.kind == ranking.OUTAGE else " µs CPU" if col.kind == ranking.EFFICIENCY
            else " req/s")
    lead = "p99 " if col.kind in P99_KINDS else "back in " if col.kind == ranking.OUTAGE else ""
    text = lead + _fmt(col, st.median) + unit
    if st.n > 1:
        text += f" [{_fmt(col, st.ci_low)}–{_fmt(col, st.ci_high)}, {st.ci_level:.0%}]"
    return text


def cell_text(c: Cell, col: Column) -> str:
    """A cell in words: place · figure · note, or the class of the reason there is no figure."""
    if c.place is None:
        return str(c.why)
    return " · ".join(p for p in (c.place_text, figure_text(c, col), c.note) if p)


def model_text(m: ModelCell) -> str:
    if m.median_place is None:
        return "—"
    return f"{m.median_place:g} ({m.rows} row{'s' if m.rows != 1 else ''})"


def headers(p: Profile) -> list[str]:
    return ["server", "model", *(c.name for c in p.columns)]


def ordered(p: Profile) -> list[tuple[Row | None, ModelRow | None]]:
    """The rows model by model (profile.gather sorts them so), each model's median row after its rows."""
    medians = {m.model: m for m in p.models}
    out: list[tuple[Row | None, ModelRow | None]] = []
    for i, r in enumerate(p.rows):
        out.append((r, None))
        last = i + 1 == len(p.rows) or p.rows[i + 1].model != r.model
        if last and r.model in medians:
            out.append((None, medians[r.model]))
    return out


def body(p: Profile) -> list[list[str]]:
    """The rows as text, each concurrency model's median row after its rows."""
    return [[r.server, r.model, *(cell_text(r.cells[c.name], c) for c in p.columns)] if r is not None else
            [f"median of {m.model}", m.model, *(model_text(m.cells[c.name]) for c in p.columns)]
            for r, m in ordered(p) if r is not None or m is not None]


def sources(p: Profile) -> list[str]:
    """One line per column: which stored point answered it, and what it is ranked by."""
    return [f"{c.name}: {c.workload} {c.point}, run {c.run_id}, ranked by {c.ranked_by} — {c.work.why}"
            for c in p.columns]


def footnotes(p: Profile) -> list[str]:
    """The reasons behind the cells without a figure, the runs left out, the kinds not measured."""
    out = [f"no figure: {line}" for line in p.reasons()] + p.left_out
    if p.unmeasured:
        out.append(f"not measured in any stored run on this machine at this commit: {', '.join(p.unmeasured)}")
    return out


def shown(results: Any) -> Profile | None:
    """The results' profile when it holds several kinds of work (results/profile.Profile.shown)."""
    p = getattr(results, "profile", None)
    return p if p is not None and p.shown else None


def markdown(results: Any) -> list[str]:
    p = shown(results)
    if p is None:
        return []
    hs = headers(p)
    lines = [f"## {TITLE}", "", NOTE, "", "| " + " | ".join(hs) + " |", "|" + "|".join("---" for _ in hs) + "|"]
    lines += ["| " + " | ".join(x.replace("|", "\\|") for x in r) + " |" for r in body(p)]
    return lines + [""] + [f"- {s}" for s in sources(p) + footnotes(p)] + [""]


def colour(c: Cell, col: Column) -> str:
    """The heat map: green for the first place, through yellow, to red for the last measured one."""
    mid = c.middle
    if mid is None:
        return "#eeeeee"
    share = (mid - 1) / (col.measured - 1) if col.measured > 1 else 0.0
    return f"hsl({120 * (1 - min(1.0, max(0.0, share))):.0f}, 65%, 82%)"


def to_page(page: Any, results: Any) -> None:
    """The section on the HTML report's page (its `heading(level, text)` and `add(html)`)."""
    p = shown(results)
    if p is None:
        return
    esc = html.escape
    page.heading(2, TITLE)
    page.add(f'<p class="desc">{esc(NOTE)}</p>')
    head = "".join(f"<th>{esc(h)}</th>" for h in headers(p))
    trs = []
    for r, m in ordered(p):
        if r is not None:
            tds = "".join(f'<td class="num" style="background:{colour(r.cells[c.name], c)}">'
                          f"{esc(cell_text(r.cells[c.name], c))}</td>" for c in p.columns)
            trs.append(f"<tr><td>{esc(r.server)}</td><td>{esc(r.model)}</td>{tds}</tr>")
        elif m is not None:
            tds = "".join(f'<td class="num">{esc(model_text(m.cells[c.name]))}</td>' for c in p.columns)
            trs.append(f"<tr><td><i>median of {esc(m.model)}</i></td><td>{esc(m.model)}</td>{tds}</tr>")
    items = "".join(f"<li>{esc(s)}</li>" for s in sources(p) + footnotes(p))
    page.add(f'<div class="tablewrap"><table class="profile"><thead><tr>{head}</tr></thead>'
             f"<tbody>{''.join(trs)}</tbody></table></div><ul>{items}</ul>")


def records(results: Any) -> list[dict[str, Any]]:
    """The profile as records, one per row and kind of work, keyed by CSV_COLUMNS (empty without a profile)."""
    p = shown(results)
    if p is None:
        return []
    out = []
    for r in p.rows:
        for c in p.columns:
            x = r.cells[c.name]
            st = x.figure
            values = [r.server, r.model, r.language, c.name, c.workload, c.point, c.run_id, c.ranked_by,
                      *(x.place if x.place else (None, None)),
                      *((round(st.median, 4), round(st.ci_low, 4), round(st.ci_high, 4), round(st.ci_level, 4), st.n)
                        if st is not None else (None,) * 5), x.note, x.why, x.reason]
            out.append(dict(zip(CSV_COLUMNS, values)))
    return out


def render_csv(run: Any, results: Any) -> bytes:
    """The profile as CSV, one line per row and kind of work (empty when there is no profile to show)."""
    rows = records(results)
    if not rows:
        return b""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for rec in rows:
        w.writerow(["" if rec[k] is None else rec[k] for k in CSV_COLUMNS])
    return buf.getvalue().encode("utf-8")


__all__ = ["TITLE", "NOTE", "CSV_COLUMNS", "records", "figure_text", "cell_text", "model_text", "headers", "ordered", "body", "sources",
           "footnotes", "shown", "markdown", "colour", "to_page", "render_csv"]
