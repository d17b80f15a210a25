"""Exporters of a run's aggregated results, behind one interface: `render(run, results) -> bytes`.

`EXPORTERS` maps a format name to its module's render function and the file suffix it writes.
Each reads only aggregate.RunResults (never the raw metrics), so all formats agree; the profile
table across kinds of work is in it too (`results.profile`, gathered by report.load). A render with
nothing to say returns no bytes and writes no file (`profile-csv` for a single kind of work). The
`*_section.py` modules hold a section shared by Markdown and HTML; `report.py` writes the files.

May import: model, store, catalog, rules (the warm-up rule's figures, the fingerprint's
normal form and split line), results, seeds (the published studies beside a run), charts, cost, overtime; never the measuring folders (run,
processes, cluster, crosscheck). Nothing imports the exporters but the CLI.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..results.aggregate import RunResults
from . import profile_section, to_csv, to_json, to_markdown


@dataclass(frozen=True)
class Exporter:
    name: str
    suffix: str
    render: Callable[[Any, RunResults], bytes]


def _html(run: Any, results: RunResults) -> bytes:
    from . import to_html  # plotly is a heavy import; only the HTML page needs it
    return to_html.render(run, results)


EXPORTERS: dict[str, Exporter] = {e.name: e for e in (
    Exporter("html", "html", _html),
    Exporter("markdown", "md", to_markdown.render),
    Exporter("csv", "csv", to_csv.render),
    Exporter("json", "json", to_json.render),
    Exporter("profile-csv", "profile.csv", profile_section.render_csv),
)}
DEFAULT_REPORT_FORMATS = ("html", "markdown", "csv", "profile-csv")


def get(name: str) -> Exporter:
    """The exporter called `name`; ValueError naming the known ones."""
    if name not in EXPORTERS:
        raise ValueError(f"unknown format {name!r}; use one of: {', '.join(EXPORTERS)}")
    return EXPORTERS[name]


__all__ = ["Exporter", "EXPORTERS", "DEFAULT_REPORT_FORMATS", "get"]
