"""The profile table (issue 49): one answer across kinds of work. For each column of
profile_columns.COLUMNS, the stored run that measured its workload (pick_runs: the most rows, the
newest among equals; the report's own run answers for the workloads it measured, so the table agrees
with the sections below it), among the runs up to the report's own, on the same machine (CPU model,
cores) and measured by the same code (rules/fingerprint.differs: a commit touching only words, tests or
the report's side keeps runs comparable); a run measured elsewhere is left out with one line saying so.
Each cell: the row's place at the column's point (ranking.order's place range: rows the figure
cannot order share one range, never an order inside the noise), the figure that point is ranked by
(ranking.figure_stats) with its median's interval, or why the row has no figure there. One row per
concurrency model gives the median of its rows' places. Reads stored results only.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from ..catalog.kinds import FAILURES_MEASURED
from ..rules.fingerprint import differs, normalize
from . import ranking
from .aggregate import Group, PointData, RunResults
from .pick_runs import StoredRuns
from .profile_columns import COLUMNS, Source, Work
from .stats import Stats

# Why a row has no figure, read from its stored cells' reason (the runner's gate, tls_run, verify's
# admission store it in cell.error): the first rule whose words the reason contains names its class.
NOT_BUILT, FAILED_CHECK, DECLARED = "not built", "failed a check", "left out by declaration"
NOT_VERIFIED, FAILED, NOT_MEASURED, SKIPPED = "not verified", "failed", "not measured", "skipped"
REASONS: tuple[tuple[str, str], ...] = (
    ("not built", NOT_BUILT),  # run/measure.py's gate
    ("unavailable:", NOT_BUILT),  # a toolchain missing to run it
    ("tls_out", DECLARED),  # the manifest says why it serves no TLS here
    ("db_out", DECLARED),  # the manifest says why it serves no database here
    ("not a db row", DECLARED),  # no db_* choices
    ("compress_out", DECLARED),  # the manifest says why it serves no /compress here
    ("not a compress row", DECLARED),  # no compression choice
    ("not a tls row", DECLARED),  # no tls_library
    ("http2_out", DECLARED),  # the manifest says why it serves no HTTP/2 here (run/h2_run.py)
    ("not an h2 row", DECLARED),  # no http2_library
    ("failed verification", FAILED_CHECK),  # a measurement check
    ("not run —", FAILED_CHECK),  # a feature check the workload uses (rules/admission.not_run_reason)
    ("never verified", NOT_VERIFIED),
    ("changed since it was verified", NOT_VERIFIED),
    ("did not run at verify", NOT_VERIFIED),  # admission.feature_unchecked
)
# what a machine is, for "the same machine": the fingerprint's fields (run/fingerprint.py)


def reason_class(reason: str | None) -> str:
    """The class of a skipped cell's stored reason (REASONS), `skipped` when no rule names it."""
    text = reason or ""
    return next((cls for words, cls in REASONS if words in text), SKIPPED)


@dataclass(frozen=True)
class Cell:
    """One row at one column: a place range and the ranked figure, or why there is none."""

    place: tuple[int, int] | None = None  # (first, last): one place, or the range it shares
    figure: Stats | None = None  # what the point is ranked by, over the repetitions
    note: str = ""  # what the figure does not say on its own: a rate not held, a verdict
    why: str | None = None  # the class of the reason there is no figure (REASONS, FAILED, NOT_MEASURED)
    reason: str | None = None  # the stored reason, one line

    @property
    def place_text(self) -> str:
        if self.place is None:
            return "—"
        lo, hi = self.place
        return str(lo) if lo == hi else f"{lo}–{hi}"

    @property
    def middle(self) -> float | None:
        """The middle of the place range: every row of a tie gets the same one (colour, model median)."""
        return None if self.place is None else (self.place[0] + self.place[1]) / 2


@dataclass(frozen=True)
class Column:
    """A kind of work and the stored point that answered for it."""

    work: Work
    workload: str
    point: str
    kind: str  # the point's kind (catalog/kinds.py): what its figure is and which way is better
    run_id: int
    ranked_by: str  # ranking.rank_metric's words
    measured: int  # rows with a place: the bottom of the heat map

    @property
    def name(self) -> str:
        return self.work.name


@dataclass(frozen=True)
class Row:
    server: str
    model: str
    language: str
    cells: dict[str, Cell]  # column name -> cell


@dataclass(frozen=True)
class ModelCell:
    median_place: float | None  # the median of the model's rows' place middles
    rows: int  # its rows with a place in this column


@dataclass(frozen=True)
class ModelRow:
    model: str
    cells: dict[str, ModelCell]


@dataclass
class Profile:
    columns: list[Column] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    models: list[ModelRow] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # runs measured elsewhere, one line each
    unmeasured: list[str] = field(default_factory=list)  # kinds of work no kept run measured

    @property
    def shown(self) -> bool:
        """Several kinds of work measured: with one, the workload's own table says it all."""
        return len(self.columns) >= 2

    def reasons(self) -> list[str]:
        """One line per row and reason: the columns where that row has no figure, and why."""
        by: dict[tuple[str, str], list[str]] = {}
        for r in self.rows:
            for c in self.columns:
                cell = r.cells[c.name]
                if cell.place is None:
                    said = (cell.reason if cell.reason and cell.reason.startswith(str(cell.why))
                            else f"{cell.why}: {cell.reason}" if cell.reason else str(cell.why))
                    by.setdefault((r.server, said), []).append(c.name)
        return [f"{server} — {', '.join(cols)}: {why}" for (server, why), cols in by.items()]


def machine_differs(run: Any, here: dict[str, Any]) -> str | None:
    """Why a stored run is not comparable with the report's (`here`: its normal fingerprint): another
    machine or other measuring code (rules/fingerprint.differs), in words; None when it is comparable."""
    return differs(normalize(run.fingerprint), here)


def gather(store: Any, run: Any, results: RunResults) -> Profile:
    """The profile of the report for `run` (its aggregated `results`) from the store."""
    here = normalize(run.fingerprint)
    stored = StoredRuns(store, keep=lambda r: r.id <= run.id and machine_differs(r, here) is None)
    stored.loaded[run.id] = results
    rows = sorted(here.get("servers") or {g.server for g in results.groups})
    out = Profile()
    points: list[tuple[Column, PointData]] = []
    for work in COLUMNS:
        found = _answer(work, run, results, stored, rows)
        if found is None:
            out.unmeasured.append(work.name)
        else:
            points.append(found)
    out.columns = [c for c, _ in points]
    out.left_out = _left_out(store, run, here, stored)
    out.rows = _rows(points, rows)
    out.models = model_rows(out.columns, out.rows)
    return out


def _answer(work: Work, run: Any, results: RunResults, stored: StoredRuns,
            rows: list[str]) -> tuple[Column, PointData] | None:
    """The report's own run if it measured one of the column's sources, else the first source a kept
    run measured (StoredRuns.latest)."""
    # lazily: another run is aggregated only when the report's own run has none of the sources
    own = ((src, run.id, w) for src in work.sources for w in results.workloads if w.name == src.workload)
    kept = ((src, c.run.id, c.workload) for src in work.sources if (c := stored.latest(src.workload, rows)))
    found: Iterator[tuple[Source, int, Any]] = chain(own, kept)
    for src, run_id, wl in found:
        pt = _point(wl, src.point)
        if pt is not None:
            measured = sum(1 for g in pt.groups if g.place is not None)
            return Column(work, src.workload, src.point, pt.kind, run_id, ranking.rank_metric(pt.kind)[0],
                          measured), pt
    return None


def _point(wl: Any, label: str) -> PointData | None:
    return next((p for p in wl.points if p.label == label and p.groups), None)


def _left_out(store: Any, run: Any, here: dict[str, Any], stored: StoredRuns) -> list[str]:
    """One line per stored run up to the report's that measured a column's workload elsewhere."""
    wanted = {s.workload for w in COLUMNS for s in w.sources}
    lines = []
    for r in store.runs():
        names = sorted(wanted & stored.measured.get(r.id, set()))
        why = machine_differs(r, here) if r.id <= run.id and names else None
        if why is not None:
            lines.append(f"run {r.id} ({', '.join(names)}) left out: {why}; re-run its workloads here at "
                         "this commit to set them beside this run")
    return lines


def _rows(points: list[tuple[Column, PointData]], servers: list[str]) -> list[Row]:
    """A row per server seen in any column's point or in the report's run, its cell per column."""
    names = list(dict.fromkeys([*servers, *(g.server for _, pt in points for g in pt.groups)]))
    out = []
    for sid in names:
        groups = {c.name: next((g for g in pt.groups if g.server == sid), None) for c, pt in points}
        info = next((g.info for g in groups.values() if g is not None and g.info), {})
        cells = {c.name: cell(groups[c.name], c) for c, _ in points}
        out.append(Row(sid, info.get("model") or "unknown", info.get("language") or "", cells))
    return sorted(out, key=lambda r: (r.model, _first_place(r), r.server))


def _first_place(r: Row) -> float:
    """Within a model, rows in the order of the first column they have a place in: no score across
    columns is made up to order them (a composite would hide what the table shows)."""
    return next((m for c in r.cells.values() if (m := c.middle) is not None), float("inf"))


def cell(g: Group | None, col: Column) -> Cell:
    """The row's cell at the column's point."""
    if g is None:
        return Cell(why=NOT_MEASURED, reason=f"run {col.run_id} did not measure it")
    if g.place is None:
        skipped = next((c for c in g.bad if c.status == "skipped"), None)
        if skipped is not None:
            return Cell(why=reason_class(skipped.error), reason=_line(skipped.error))
        failed = next((c for c in g.bad if c.status == "failed"), None)
        return Cell(why=FAILED, reason=_line(failed.error if failed else None) or "no repetition measured")
    hi = g.place_to if g.place_to is not None else g.place
    return Cell(place=(g.place, hi), figure=ranking.figure_stats(g, g.kind), note=_note(g))


def _note(g: Group) -> str:
    """What the figure does not say on its own, above all why a row stands after one with a better
    figure: ranking's classes (unfair, not steady, degraded, not held) come before the figure."""
    notes = []
    if g.unfair:
        notes.append(f"unfair: {g.served_text()}")
    if g.not_steady:
        notes.append("not steady (ranked after the steady rows)")
    if g.held is False and g.kind not in FAILURES_MEASURED:
        notes.append("did not hold the rate")
    if g.degraded and g.kind not in FAILURES_MEASURED:  # the outage's errors are what it measures
        notes.append("degraded")
    if g.client_bound_group:
        notes.append("load generator's limit")
    if g.noise_effect is not None and g.noise_effect.verdict:
        notes.append(g.noise_effect.verdict)
    if g.kind in ("overload", ranking.OUTAGE) and (v := g.figures.over_time.verdict):
        notes.append(v)
    return ", ".join(notes)


def _line(text: str | None) -> str | None:
    return text.strip().splitlines()[0] if text and text.strip() else None


def model_rows(columns: list[Column], rows: list[Row]) -> list[ModelRow]:
    """Per concurrency model, per column, the median of its rows' place middles (a tie range counts
    at its middle, so no order inside the noise is read into it), with how many rows it has there."""
    out = []
    for model in sorted({r.model for r in rows}):
        cells = {}
        for c in columns:
            mids = [m for r in rows if r.model == model and (m := r.cells[c.name].middle) is not None]
            cells[c.name] = ModelCell(statistics.median(mids) if mids else None, len(mids))
        if any(m.rows for m in cells.values()):  # a model none of whose rows has a place has no median
            out.append(ModelRow(model, cells))
    return out


__all__ = ["Profile", "Column", "Row", "Cell", "ModelRow", "ModelCell", "gather", "cell", "model_rows",
           "machine_differs", "reason_class", "REASONS", "NOT_BUILT", "FAILED_CHECK", "DECLARED", "NOT_VERIFIED",
           "FAILED", "NOT_MEASURED", "SKIPPED"]
