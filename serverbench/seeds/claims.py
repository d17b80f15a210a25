"""The studies' claims (studies.Claim) answered from a stored run: pure functions over loaded results.

A claim is answered at the first of its points the run has in its workload, from stored figures only:
- `overload`: per row, the aggregation's overload verdict of its repetitions (overtime/overload.py's
  rules); the row matches when the verdict is one of `expect`. "out of memory" matches a row whose
  verdict is "crashes" and whose stored --server-memory-limit ended it (memory_killed_at_s); a row run
  without a memory limit cannot answer it.
- `ratio`: per pair (a row, a row of `than`), both rows' figure (requests/s: the median over
  repetitions; p50/p99: the merged histogram's percentile, less `minus_ms` when the claim is about
  the time on top of a sleep); the pair matches when a × factor ≤ b (lower is better) or a ≥ b ×
  factor (higher is better).
Every measured row (pair) matches: "yes"; none: "no"; some: "partly"; none measured: "not measured",
saying what is missing. An overload claim with a row whose repetitions gave different verdicts (split,
rules/agreement.py) is "not settled" by the run, saying which rows and what would settle it, never
answered from a majority. Never an answer from anything but the run's figures.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..overtime.figures import verdict_text
from ..overtime.overload import SPLIT
from ..results.formatting import fmt_us
from .compare import find_point, our_figure
from .reading import reading
from .studies import OUT_OF_MEMORY, Claim, Study

YES, NO, PARTLY, NOT_MEASURED, NOT_SETTLED = "yes", "no", "partly", "not measured", "not settled"
ANSWERS = (YES, NO, PARTLY, NOT_MEASURED, NOT_SETTLED)
# an overload claim's row: its verdict matches, does not, is missing, it cannot say "out of memory", or its
# repetitions disagree
MATCH, NO_MATCH, MISSING, NO_LIMIT, SPLIT_ROW = "match", "no match", "missing", "no limit", "split"
# What settles a claim whose rows' repetitions disagreed: more of them (seeds' own run, as many rows), or the
# workload's longer full size (a run of the claim's rows, then read with --run)
SETTLE = ("more repetitions (`serverbench seeds --measure --repeat 5`), or the full size (`serverbench run --full "
          "--workload {workload} --servers {rows} --repeat 3`, then `serverbench seeds --run` with its id)")


@dataclass(frozen=True)
class Answer:
    """One claim against one run: the answer, a one-line why, and one evidence line per row or pair."""
    claim: Claim
    answer: str  # yes | no | partly | not measured | not settled
    point: str | None  # the run's point used; None when the run did not measure the workload
    why: str
    evidence: list[str] = field(default_factory=list)


def _names(xs: list[str]) -> str:
    return ", ".join(xs)


def rule_text(c: Claim) -> str:
    """The claim's rule in words."""
    where = f"at {c.workload} (the first of points {_names(c.points)} the run has)"
    if c.rule == "overload":
        said = [f"{OUT_OF_MEMORY} (verdict crashes, ended by the run's --server-memory-limit)" if v == OUT_OF_MEMORY
                else v for v in c.expect]
        return (f"the overload verdict (overtime/overload.py) of each of {_names(c.rows)} {where} is "
                + ("one of " if len(said) > 1 else "") + " or ".join(said))
    fig = f"{c.figure} less {c.minus_ms:g} ms" if c.minus_ms is not None else str(c.figure)
    how = ("at most 1/{f:g} of" if c.better == "lower" else "at least {f:g} times").format(f=c.factor or 0)
    return f"the {fig} of each of {_names(c.rows)} is {how} that of each of {_names(c.than)} {where}"


def _tally(c: Claim, point: str, where: str, matched: list[str], unmatched: list[str], missing: list[str],
           evidence: list[str]) -> Answer:
    """The answer from which rows (or pairs) matched, did not, or could not be told (`missing`: each
    row with why, in words)."""
    gap = f"; not measured: {_names(missing)}" if missing else ""
    if not matched and not unmatched:
        return Answer(c, NOT_MEASURED, point, f"nothing in {where} answers it: {_names(missing)}", evidence)
    if not unmatched:
        return Answer(c, YES, point, f"holds for every one measured: {_names(matched)}{gap}", evidence)
    if not matched:
        return Answer(c, NO, point, f"holds for none measured: {_names(unmatched)}{gap}", evidence)
    return Answer(c, PARTLY, point, f"holds for {_names(matched)}; not for {_names(unmatched)}{gap}", evidence)


def _memory(g: Any) -> tuple[float | None, float | None]:
    """(the limit in bytes, the second it ended the server) over the group's repetitions."""
    mems = [c.metrics.memory for c in g.ok]
    limit = next((m.memory_limit_bytes for m in mems if m.memory_limit_bytes), None)
    killed = next((m.memory_killed_at_s for m in mems if m.memory_killed_at_s is not None), None)
    return limit, killed


def _overload_row(c: Claim, sid: str, g: Any | None, where: str) -> tuple[str, str]:
    """(MATCH | NO_MATCH | MISSING | NO_LIMIT | SPLIT_ROW, the row's evidence line)."""
    verdict = g.figures.over_time.verdict if g is not None else None
    if verdict is None:
        return MISSING, f"{sid}: no overload verdict in {where}"
    line = f"{sid}: {verdict_text(g.figures.over_time)} — {g.figures.over_time.verdict_reason or 'no reason stored'}"
    if verdict == SPLIT:
        return SPLIT_ROW, line
    if verdict in c.expect:
        return MATCH, line
    if OUT_OF_MEMORY not in c.expect:
        return NO_MATCH, line
    limit, killed = _memory(g)
    if limit is None:
        return NO_LIMIT, line + " (run without --server-memory-limit: whether it ran out of memory cannot be told)"
    line += f" (memory limit {limit / 2**20:,.0f} MiB, " + (f"ended it at t={killed:.1f} s)" if killed is not None
                                                             else "not reached)")
    return (MATCH if verdict == "crashes" and killed is not None else NO_MATCH), line


def _overload(c: Claim, point: Any, where: str) -> Answer:
    groups = {g.server: g for g in point.groups}
    states: dict[str, list[str]] = {MATCH: [], NO_MATCH: [], MISSING: [], NO_LIMIT: [], SPLIT_ROW: []}
    evidence = []
    for sid in c.rows:
        state, line = _overload_row(c, sid, groups.get(sid), where)
        states[state].append(sid)
        evidence.append(line)
    if states[SPLIT_ROW]:
        return _not_settled(c, point.label, where, states, groups, evidence)
    if states[NO_LIMIT] and not states[MATCH] and not states[NO_MATCH]:
        return Answer(c, NOT_MEASURED, point.label, "the run set no --server-memory-limit for "
                      f"{_names(states[NO_LIMIT])}: whether they run out of memory cannot be told", evidence)
    missing = [f"{sid} (no overload verdict)" for sid in states[MISSING]]
    missing += [f"{sid} (no --server-memory-limit)" for sid in states[NO_LIMIT]]
    return _tally(c, point.label, where, states[MATCH], states[NO_MATCH], missing, evidence)


def _not_settled(c: Claim, point: str, where: str, states: dict[str, list[str]], groups: dict[str, Any],
                 evidence: list[str]) -> Answer:
    """A claim with rows whose repetitions disagreed: which, what the other rows said, what would settle it."""
    split = [f"{sid} ({groups[sid].figures.over_time.verdict_counts})" for sid in states[SPLIT_ROW]]
    rest = [f"{what}: {_names(states[k])}" for k, what in ((MATCH, "holds for"), (NO_MATCH, "not for"),
                                                            (MISSING, "no verdict for"), (NO_LIMIT, "no limit for"))
            if states[k]]
    settle = SETTLE.format(workload=c.workload, rows=",".join(c.rows))
    return Answer(c, NOT_SETTLED, point, f"not settled by {where}: the repetitions disagree for {_names(split)}"
                  + (f"; of the other rows, {'; '.join(rest)}" if rest else "")
                  + f"; what would settle it: {settle}", evidence)


def _figure(c: Claim, g: Any | None) -> float | None:
    v = our_figure(g, c.figure or "") if g is not None else None
    if v is None:
        return None
    return float(v) - (c.minus_ms or 0) * 1000 if c.figure != "requests/s" else float(v)


def _show(c: Claim, v: float) -> str:
    return f"{v:,.0f} req/s" if c.figure == "requests/s" else fmt_us(v)


def _ratio(c: Claim, point: Any, where: str) -> Answer:
    groups = {g.server: g for g in point.groups}
    figs = {sid: _figure(c, groups.get(sid)) for sid in c.rows + c.than}
    label = f"{c.figure}" + (f" − {c.minus_ms:g} ms" if c.minus_ms is not None else "")
    usable = {sid: v for sid, v in figs.items() if v is not None and v > 0}
    evidence = [f"{sid}: {label} " + (f"not in {where}" if v is None else f"{_show(c, v)}, not above 0: not told "
                                      "apart from what was subtracted") for sid, v in figs.items() if sid not in usable]
    matched, unmatched = [], []
    for a in c.rows:
        for b in c.than:
            if a not in usable or b not in usable:
                continue
            va, vb = usable[a], usable[b]
            ratio = vb / va if c.better == "lower" else va / vb
            holds = va * (c.factor or 0) <= vb if c.better == "lower" else va >= vb * (c.factor or 0)
            pair = f"{a} vs {b}"
            (matched if holds else unmatched).append(pair)
            bigger, smaller = (b, a) if c.better == "lower" else (a, b)
            evidence.append(f"{pair}: {label} {_show(c, va)} vs {_show(c, vb)}: {bigger}'s is {ratio:.3g}× "
                            f"{smaller}'s, " + ("holds" if holds else "does not hold") + f" (the claim: {c.factor:g}×)")
    missing = [f"{sid} (no {label} above 0)" if figs[sid] is not None else f"{sid} (no {c.figure})"
               for sid in figs if sid not in usable]
    return _tally(c, point.label, where, matched, unmatched, missing, evidence)


def answer(c: Claim, results: Any) -> Answer:
    """The claim against `results` (a runs.Read, or one run's aggregated results.aggregate.RunResults)."""
    read = reading(results)
    point = find_point(read, c.workload, c.points)
    if point is None:
        return Answer(c, NOT_MEASURED, None, f"the run did not measure {c.workload} at any of {_names(c.points)}")
    where = read.label(c.workload)
    return _overload(c, point, where) if c.rule == "overload" else _ratio(c, point, where)


def answers(study: Study, results: Any) -> list[Answer]:
    """Every claim of the study, in file order."""
    return [answer(c, results) for c in study.claim]


__all__ = ["Answer", "answer", "answers", "rule_text", "YES", "NO", "PARTLY", "NOT_MEASURED", "NOT_SETTLED", "ANSWERS",
           "SETTLE"]
