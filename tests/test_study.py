"""`serverbench study` (issue 49): every row on every kind of work of the profile table, one resumable run
per workload through the one runner (replaced here by a stand-in that stores runs), then the report."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from serverbench.cli import app, steps, study
from serverbench.exporters import report
from serverbench.results.profile_columns import COLUMNS
from serverbench.run.fingerprint import here
from serverbench.run.lifecycle import MatrixResult
from serverbench.store import Store


class _Runner:
    """Stands in for steps.measure: stores a run with the options it is given, finishing it, or ending it
    'interrupted' on the calls listed in `interrupt`."""

    def __init__(self, interrupt: set[int]) -> None:
        self.calls: list[tuple[str, int, list[str] | None]] = []
        self.interrupt = interrupt

    def __call__(self, store: Store, opts: Any, manifests: Any = None, workloads: Any = None, resume: Any = None,
                 **kw: Any) -> MatrixResult:
        rid = resume if resume is not None else store.new_run(here(), opts.to_dict())
        status = "interrupted" if len(self.calls) in self.interrupt else "finished"
        self.calls.append(("resume" if resume is not None else "new", rid,
                           None if resume is not None else [w.name for w in workloads]))
        store.finish_run(rid, status)
        return MatrixResult(rid, status)


def test_the_study_measures_each_profile_workload_once_resumes_and_writes_the_report(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    db = tmp_path / "r.db"
    runner = _Runner(interrupt={2})
    written: list[int] = []
    verified_for: list[list[str]] = []  # the workloads whose features verify is asked to check
    monkeypatch.setattr(steps, "ready_rows", lambda ms, st, ws: verified_for.append([w.name for w in ws]) or
                        [m for m in ms if m.id in ("c-epoll", "go-nethttp")])
    monkeypatch.setattr(steps, "measure", runner)
    monkeypatch.setattr(report, "write_report", lambda store, rid, out: written.append(rid) or
                        type("P", (), {"html": "h", "markdown": "m", "csv": "c"})())
    workloads = study.study_workloads()
    assert workloads[0] == COLUMNS[0].sources[0].workload and len(workloads) == len(set(workloads)) >= 8

    out = CliRunner().invoke(app, ["study", "--servers", "c-epoll,go-nethttp,nim", "--db", str(db)])
    assert out.exit_code == 130, out.output  # the third run was interrupted: the study stops there
    assert [c[2] for c in runner.calls] == [[w] for w in workloads[:3]]
    assert verified_for == [workloads]  # verify checks what every study workload uses (TLS, HTTP/2, db, ...)
    assert "continues it" in out.output and written == []
    stored = Store(db).run(1).options
    # nim did not pass verify: the runs name the rows that did, at 3 repetitions
    assert stored["servers"] == ["c-epoll", "go-nethttp"] and stored["repeat"] == 3

    again = CliRunner().invoke(app, ["study", "--servers", "c-epoll,go-nethttp,nim", "--db", str(db)])
    assert again.exit_code == 0, again.output
    assert runner.calls[3] == ("resume", 3, None)  # the interrupted run resumed, the two finished ones kept
    assert [c[2] for c in runner.calls[4:]] == [[w] for w in workloads[3:]]
    assert f"{workloads[0]}: already measured in run 1" in again.output
    assert written == [len(workloads)]  # the report of the newest run, which gathers the others
    assert "about" in again.output and "min left" in again.output  # the ETA across runs


def test_study_plan_prints_the_planned_load_and_measures_nothing(tmp_path: Path, monkeypatch) -> None:
    runner = _Runner(interrupt=set())
    monkeypatch.setattr(steps, "measure", runner)
    out = CliRunner().invoke(app, ["study", "--plan", "--servers", "c-epoll", "--db", str(tmp_path / "r.db")],
                             env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "planned load" in out.output and runner.calls == []
    for w in study.study_workloads():
        assert w in out.output


def test_a_run_measured_by_other_code_or_elsewhere_does_not_meet_the_study(tmp_path: Path, monkeypatch) -> None:
    """The report's profile leaves out a run measured on another machine or by other measuring code
    (rules/fingerprint.differs), so the study measures that workload again rather than call it met; a
    run by the same measuring code at another commit (words, tests, the report's side) is kept."""
    db = tmp_path / "r.db"
    now = here()
    first, second, third = study.study_workloads()[:3]
    opts = {"servers": ["c-epoll"], "repeat": 3, "split": "auto"}
    with Store(db) as store:
        for wl, fp in ((first, {**now, "git_commit": "0" * 40}),             # same code, a docs-only commit
                       (second, {**now, "measuring_code": "other"}),          # loadgen or a row changed since
                       (third, {**now, "cpu_model": "Another CPU"})):         # another machine
            rid = store.new_run(fp, {**opts, "workloads": [wl]})
            store.finish_run(rid, "finished")
    runner = _Runner(interrupt=set())
    monkeypatch.setattr(steps, "measure", runner)
    out = CliRunner().invoke(app, ["study", "--plan", "--servers", "c-epoll", "--db", str(db)],
                             env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    lines = {ln.split("│")[1].strip(): ln for ln in out.output.splitlines() if ln.count("│") > 3}
    assert "met by run 1" in lines[first]
    assert "to measure" in lines[second] and "to measure" in lines[third]
    # the runs not kept are named with why, never a silent "to measure"
    flat = " ".join(out.output.split())
    assert "stored run 2 not kept: measured by other code" in flat
    assert "stored run 3 not kept: measured on Another CPU" in flat
    # where to go on is said for the run by other code on this machine only (another machine cannot)
    assert flat.count("studies/README.md") == 1 and flat.index("studies/README.md") < flat.index("stored run 3")
    assert "stored run 1 not kept" not in flat


def test_a_study_resumed_in_another_session_reckons_its_eta_from_the_stored_cells(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """A study spread over sessions: before its first run of this session it already says how long the rest
    takes, from the time the stored cells took against their plan (a finished run kept, an interrupted one's
    share), rather than the bare plan; the interrupted run's stored share is not counted as left."""
    from datetime import datetime, timedelta, timezone

    from serverbench.model import CellRecord, RunOptions
    db = tmp_path / "r.db"
    monkeypatch.setattr(steps, "ready_rows", lambda ms, st, ws: [m for m in ms if m.id == "c-epoll"])
    wanted = study.needs(["c-epoll"], 3)
    planned, sized = steps.planned_seconds(wanted, False), steps._sized(wanted, False)
    first, second = wanted[0].workload, wanted[1].workload
    t = datetime(2026, 11, 29, 8, 0, tzinfo=timezone.utc)
    with Store(db) as store:
        for need, reps, status in ((wanted[0], (1, 2, 3), "finished"), (wanted[1], (1,), "interrupted")):
            rid = store.new_run(here(), RunOptions.from_dict({**need.options(), "full": False}).to_dict())
            points = sized[need.workload][0].points
            # each cell twice its share of the plan: the stored work took 2.0× its planned load
            each = 2 * planned[need.workload] / (len(points) * 3)
            for p in points:
                for r in reps:
                    store.record_cell(rid, CellRecord("c-epoll", need.workload, p.label, r, "ok",
                                                      started_at=t.isoformat(),
                                                      finished_at=(t + timedelta(seconds=each)).isoformat()))
                    t += timedelta(hours=1)  # the gaps (other sessions) are not the cells' time
            store.finish_run(rid, status)
    runner = _Runner(interrupt={0})
    monkeypatch.setattr(steps, "measure", runner)
    plan = CliRunner().invoke(app, ["study", "--plan", "--servers", "c-epoll", "--db", str(db)],
                              env={"COLUMNS": "300"})
    assert "met by run 1" in plan.output and "resume run 2 (33% stored)" in plan.output, plan.output
    out = CliRunner().invoke(app, ["study", "--servers", "c-epoll", "--db", str(db)], env={"COLUMNS": "300"})
    assert out.exit_code == 130, out.output
    assert runner.calls == [("resume", 2, None)]
    left = sum(planned.values()) - planned[first] - planned[second] / 3
    assert f"{second} (2 of {len(wanted)}): about {left * 2 / 60:.0f} min left (what was measured so far " \
           f"took 2.0× its planned load)" in out.output
