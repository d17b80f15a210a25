"""Writing a run's report files: the selected exporters' output side by side in one folder, from the
run's aggregation with the profile table across kinds of work gathered from the store (`load`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..results import aggregate, profile
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


def load(store: Any, run_id: int) -> tuple[Any, aggregate.RunResults]:
    """(run row, its aggregated results with `profile` gathered from the store): what every exporter reads."""
    run, results = aggregate.load(store, run_id)
    results.profile = profile.gather(store, run, results)
    return run, results


def write_report(store: Any, run_id: int, out_dir: Path,
                 formats: Iterable[str] = exporters.DEFAULT_REPORT_FORMATS) -> ReportPaths:
    """Write run-<id>.<suffix> for every format into `out_dir` (none for a format with nothing to say:
    profile-csv of a single kind of work); ValueError on an unknown format."""
    chosen = [exporters.get(f) for f in formats]
    run, results = load(store, run_id)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for e in chosen:
        data = e.render(run, results)
        if not data:
            continue
        path = out_dir / f"run-{run_id}.{e.suffix}"
        path.write_bytes(data)
        files[e.name] = path
    return ReportPaths(files)


__all__ = ["ReportPaths", "load", "write_report"]
