"""Writing a run's report files: the selected exporters' output side by side in one folder."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..results import aggregate
from .. import exporters


@dataclass(frozen=True)
class ReportPaths:
    files: dict[str, Path]  # format name -> written file

    @property
    def html(self) -> Path:
        return self.files["html"]

    @property
    def markdown(self) -> Path:
        return self.files["markdown"]

    @property
    def csv(self) -> Path:
        return self.files["csv"]


def write_report(store: Any, run_id: int, out_dir: Path,
                 formats: Iterable[str] = exporters.DEFAULT_REPORT_FORMATS) -> ReportPaths:
    """Write run-<id>.<suffix> for every format into `out_dir`; ValueError on an unknown format."""
    chosen = [exporters.get(f) for f in formats]
    run, results = aggregate.load(store, run_id)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for e in chosen:
        path = out_dir / f"run-{run_id}.{e.suffix}"
        path.write_bytes(e.render(run, results))
        files[e.name] = path
    return ReportPaths(files)


__all__ = ["ReportPaths", "write_report"]
