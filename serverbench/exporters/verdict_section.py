"""What a run's verify verdicts mean for the reader, shared by the HTML and Markdown exporters: the rows
left out of a point and why (skipped cells), and each row's deviations (rules/admission.py)."""
from __future__ import annotations

import re

from ..results.aggregate import Group, PointData, RunResults

INTRO = ("Deviations: verify checks a row failed on input no workload sends (garbled requests, request "
         "smuggling). They are shown, not held against the row: its measurements stand.")


def not_run(pt: PointData) -> list[str]:
    """One line per row of this point with no measured repetition and a skipped cell: why it did not run."""
    out = []
    for g in pt.groups:
        if g.ok:
            continue
        skipped = next((c for c in g.bad if c.status == "skipped"), None)
        if skipped is not None:
            out.append(not_run_line(g, skipped.error))
    return out


def not_run_line(g: Group, error: str | None) -> str:
    why = error or "skipped"
    return f"{g.server}: {why}" if why.startswith("not run") else f"{g.server}: not run — {why}"


def anchor(server: str) -> str:
    """The HTML id of a row's deviations."""
    return "deviations-" + re.sub(r"[^A-Za-z0-9_-]+", "-", server)


def has_deviations(results: RunResults, server: str) -> bool:
    return bool(results.deviations.get(server))


__all__ = ["INTRO", "anchor", "has_deviations", "not_run", "not_run_line"]
