"""The "The published studies, re-measured" section: each study's table beside a stored run, its
claims answered from the run, and the rows it had that are not built here (servers/_left_out.toml,
read by catalog/left_out.py as doctor reads it), as Markdown lines (`serverbench seeds`, the Markdown
report) and as HTML parts of the report page. Reads loaded results only; a seeds file that does not
load is shown as its one-line problem."""
from __future__ import annotations

import html
from typing import Any, Callable

from ..catalog import left_out as left_out_file
from ..results.formatting import fmt_us
from ..rules.fingerprint import normalize
from .claims import Answer, answers, rule_text
from .compare import Comparison, Entry, Flip, comparisons
from .reading import Read, reading
from .studies import Figure, SeedsError, Study, load_all

TITLE = "The published studies, re-measured"
NOTE = ("Each study's table as it published it (seeds/*.toml), beside the figure of the run read for its workload "
        "(named below) for the serverbench rows "
        "that stand for its rows: the median over repetitions (requests/s, an overload point's peak) or the "
        "percentile of the merged histograms. A pair is two published rows' counterparts: it keeps its order, "
        "flips, or is not ordered (one published row for several servers, overlapping ranges, equal figures; "
        "here, two requests/s medians within their repetitions' noise); "
        "Kendall's tau-b over the same pairs. A flip's cause is named only where the study's own figures or the "
        "run read's stored ones show it, for the row the study placed behind: broken keep-alive (its socket errors at "
        "least a tenth of its requests), a client-bound study (its figure within 10 % of the client ceiling the "
        "study states), measured cold (here the row's first warm-up second gave at most half its steady rate, "
        "and the published method names no warm-up); otherwise it says unexplained. Hardware and versions "
        "differ and are stated, not used as a cause.")
HEADERS = ["published row", "place", "published", "serverbench row", "version here", "here"]
CLAIMS_NOTE = ("Each claim answered from the stored figures of the run read for its workload only, by the rule "
               "beside it: yes when every row (or pair) measured matches, no when none does, partly when some do, "
               "not measured when that run has no figure to answer it, not settled when a row's repetitions gave "
               "different verdicts (split: never answered from the most common one), with what would settle it.")
LeftOuts = dict[str, left_out_file.LeftOut]


def left_outs() -> LeftOuts:
    """servers/_left_out.toml's entries by id (none when the file is missing or broken: doctor says why)."""
    entries, _problem = left_out_file.load()
    return {e.id: e for e in entries}


def _num(x: float) -> str:
    return f"{x:,.10g}"


def published_text(f: Figure | None, approx: bool) -> str:
    if f is None:
        return "—"
    if isinstance(f, str):
        return f
    if isinstance(f, tuple):
        return f"{_num(f[0])}–{_num(f[1])}"
    return ("≈ " if approx else "") + _num(f)


def our_text(c: Comparison, v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:,.0f}" if c.compare.ours == "requests/s" else fmt_us(v)


def facts(study: Study) -> list[str]:
    """The study's source, hardware, versions, method and its own caveats, one line each."""
    out = [f"Study: {study.title}" + (f" ({study.date})" if study.date else "") + (f", {study.url}" if study.url else "")
           + f". Hardware: {study.hardware}. Method: {study.method}.",
           "Versions: " + "; ".join(f"{k} {v}" for k, v in study.versions.items()) + "."]
    if study.warmup:
        out.append(f"Warm-up: {study.warmup}.")
    out += [f"The study's own caveat: {c}." for c in study.caveats]
    out += [f"The study's text: {x}." for x in study.statements]
    out += [f"serverbench's reading: {r}." for r in study.readings]
    if not study.figures_published:
        out.append("Published as charts only: no figures to set beside a run. Rows it names: "
                   + ", ".join(f"{r.name} → {', '.join(r.maps_to) or 'none'}" for r in study.row) + ".")
    return out


def left_out_lines(study: Study, left: LeftOuts) -> list[str]:
    """The study's rows (or parts of rows) not built here, each with servers/_left_out.toml's reason,
    then that file's other entries for this study."""
    by_id: dict[str, list[str]] = {}
    for r in study.row:
        if r.left_out:
            by_id.setdefault(r.left_out, []).append(f"“{r.name}”")
    out = []
    for lid, names in by_id.items():
        e = left.get(lid)
        why = f"{e.what}: {e.reason}" if e else "no entry in servers/_left_out.toml says why"
        out.append(f"Not built here: {lid}, for the study's row{'s' if len(names) > 1 else ''} {', '.join(names)} — {why}.")
    out += [f"servers/_left_out.toml also lists for this study: {e.id} — {e.what}: {e.reason}."
            for e in left.values() if e.seed == study.id and e.id not in by_id]
    return out


def this_run(run: Any, read: Read) -> str:
    """The machine of the run (the newest run read, when the section reads one per workload) and which
    run each workload came from."""
    fp = normalize(getattr(run, "fingerprint", None))
    return (f"{read.describe()}: {fp.get('cpu_model', '?')}, {fp.get('cores', '?')} cores, "
            f"kernel {fp.get('kernel', '?')}; each row's version beside its figure.")


def rows(c: Comparison, run: Any, results: Any = None) -> list[list[str]]:
    """Every published row, once per serverbench row standing for it, once more for the part of it
    not built here (servers/_left_out.toml), or once with why none does. Versions come from the run
    that measured the compared workload (Read.run_of), else from `run`."""
    source = reading(results, run).run_of(c.compare.workload) if results is not None else None
    servers = normalize(getattr(source or run, "fingerprint", None)).get("servers") or {}
    found = {(e.row.name, e.server): e for e in c.entries}
    out = []
    for r in c.study.row:
        pub = published_text(r.figures.get(c.compare.column), r.approx)
        place = "—" if r.place is None else str(r.place)
        for sid in r.maps_to or ([] if r.left_out else [""]):
            e: Entry | None = found.get((r.name, sid))
            ours = our_text(c, e.ours if e else None) if sid else (r.note or "no row here")
            version = str((servers.get(sid) or {}).get("version") or "—") if sid else ""
            out.append([r.name, place, pub, sid or "none", version, ours])
        if r.left_out:
            out.append([r.name, place, pub, r.left_out, "", "not built here (servers/_left_out.toml)"])
    return out


def agreement(c: Comparison, read: Read | None = None) -> str:
    n = len(c.kept) + len(c.flips) + len(c.unordered)
    if n == 0:
        return "Fewer than two published rows have a counterpart measured here: no pair to compare."
    by_study = sum(1 for *_, side in c.unordered if side == "the study")
    tau = "not defined (one side orders no pair)" if c.tau is None else f"{c.tau:+.2f}"
    return (f"Of {n} pairs, {len(c.kept)} keep their order, {len(c.flips)} flip, {by_study} are not ordered by the "
            f"study and {len(c.unordered) - by_study} not by {_label(read, c)}; Kendall's tau-b {tau}.")


def flip_text(c: Comparison, f: Flip) -> str:
    w, b = f.study_worse, f.study_better
    return (f"{w.server} ({w.row.name}) ahead of {b.server} ({b.row.name}) here ({our_text(c, w.ours)} vs "
            f"{our_text(c, b.ours)}), behind in the study ({published_text(w.published, w.row.approx)} vs "
            f"{published_text(b.published, b.row.approx)}): " + "; ".join(f.causes))


def claim_parts(a: Answer) -> tuple[str, str, str]:
    """(the claim's words and who said it, the answer, why and the rule): the answer goes in bold."""
    where = f" at {a.claim.workload} · {a.point}" if a.point else ""
    return (f"“{a.claim.text}” ({a.claim.said_by}): ", a.answer,
            f"{where} — {a.why}. Rule: {rule_text(a.claim)}.")


def _label(read: Read | None, c: Comparison) -> str:
    return read.label(c.compare.workload) if read is not None else "this run"


def heading(c: Comparison, read: Read | None = None) -> str:
    where = f"{c.compare.workload} · {c.point}" if c.point else f"{c.compare.workload} (not measured in {_label(read, c)})"
    return f"{c.compare.column} beside {where}"


def _load(studies: list[Study] | None) -> tuple[list[Study], str | None]:
    if studies is not None:
        return studies, None
    try:
        return load_all(), None
    except SeedsError as e:
        return [], str(e)


Shown = list[tuple[Study, list[Comparison], list[Answer]]]


def _shown(results: Read, studies: list[Study] | None, everything: bool) -> tuple[Shown, str | None]:
    """Each study with its comparisons and its claims' answers: all of them (`everything`), or only
    the studies, columns and claims whose workload the run measured."""
    studies, problem = _load(studies)
    out = []
    for s in studies:
        comps = [c for c in comparisons([s], results) if everything or c.point]
        ans = [a for a in answers(s, results) if everything or a.point]
        if everything or comps or ans:
            out.append((s, comps, ans))
    return out, problem


def _claims_markdown(ans: list[Answer]) -> list[str]:
    lines = ["#### Claims", "", CLAIMS_NOTE, ""]
    for a in ans:
        before, answer, after = claim_parts(a)
        lines += [f"- {before}**{answer}**{after}"] + [f"  - {e}" for e in a.evidence]
    return lines + [""]


def markdown(run: Any, results: Any, studies: list[Study] | None = None, everything: bool = False) -> list[str]:
    """The section's Markdown lines; without `everything` (the report) only the studies and columns
    whose workload the run measured, and nothing when there are none."""
    read = reading(results, run)
    shown, problem = _shown(read, studies, everything)
    if not shown and not problem:
        return []
    left = left_outs()
    lines = [f"## {TITLE}", "", NOTE, "", this_run(run, read), ""] + ([f"⚠ {problem}", ""] if problem else [])
    for study, comps, ans in shown:
        lines += [f"### {study.title}", ""] + [f"{x}  " for x in facts(study) + left_out_lines(study, left)] + [""]
        for c in comps:
            lines += [f"#### {heading(c, read)}", ""]
            if c.point is None:
                continue
            lines += ["| " + " | ".join(HEADERS) + " |", "|" + "|".join("---" for _ in HEADERS) + "|"]
            lines += ["| " + " | ".join(x.replace("|", "\\|") for x in r) + " |" for r in rows(c, run, read)]
            lines += ["", agreement(c, read), ""] + [f"- {flip_text(c, f)}" for f in c.flips] + ([""] if c.flips else [])
        lines += _claims_markdown(ans) if ans else []
    return lines


def _table(headers: list[str], body: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in r) + "</tr>" for r in body)
    return f'<div class="tablewrap"><table><thead><tr>{head}</tr></thead><tbody>{trs}</tbody></table></div>'


def to_page(page: Any, run: Any, results: Any, studies: list[Study] | None = None) -> None:
    """The section on the HTML report's page (its `heading(level, text)` and `add(html)`), when the
    run measured a study's workload."""
    read = reading(results, run)
    shown, problem = _shown(read, studies, everything=False)
    if not shown and not problem:
        return
    esc: Callable[[str], str] = html.escape
    left = left_outs()
    page.heading(2, TITLE)
    page.add(f'<p class="desc">{esc(NOTE)}</p><p>{esc(this_run(run, read))}</p>'
             + (f"<p>⚠ {esc(problem)}</p>" if problem else ""))
    for study, comps, ans in shown:
        page.heading(3, study.title)
        page.add("<ul>" + "".join(f"<li>{esc(f)}</li>" for f in facts(study) + left_out_lines(study, left)) + "</ul>")
        for c in comps:
            page.heading(4, f"{study.title}: {heading(c, read)}", toc=False)
            flips = "".join(f"<li>{esc(flip_text(c, f))}</li>" for f in c.flips)
            page.add(_table(HEADERS, rows(c, run, read)) + f"<p>{esc(agreement(c, read))}</p>"
                     + (f"<ul>{flips}</ul>" if flips else ""))
        if ans:
            page.heading(4, f"{study.title}: Claims", toc=False)
            page.add(f'<p class="desc">{esc(CLAIMS_NOTE)}</p>' + claims_html(ans))


def claims_html(ans: list[Answer]) -> str:
    """The claims as an HTML list, each answer in bold with its evidence beneath."""
    esc = html.escape
    items = []
    for a in ans:
        before, answer, after = claim_parts(a)
        ev = "".join(f"<li>{esc(e)}</li>" for e in a.evidence)
        items.append(f"<li>{esc(before)}<strong>{esc(answer)}</strong>{esc(after)}" + (f"<ul>{ev}</ul>" if ev else "")
                     + "</li>")
    return "<ul>" + "".join(items) + "</ul>"


__all__ = ["markdown", "to_page", "rows", "agreement", "flip_text", "facts", "left_out_lines", "left_outs",
           "claim_parts", "claims_html", "TITLE", "NOTE", "HEADERS", "CLAIMS_NOTE"]
