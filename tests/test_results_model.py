"""One results model: every output reads the same aggregation, and a run's status tells how it ended."""
from __future__ import annotations

import csv
import io
import json
import statistics
import sys
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram
from rich.console import Console
from typer.testing import CliRunner

from serverbench.results import aggregate
from serverbench.cli import app
from serverbench.results.compare import compare
from serverbench.exporters import to_csv, to_json, to_markdown
from serverbench.results.formatting import fmt_us
from serverbench.model import CellRecord, LoadgenFormatError, LoadgenReport
from serverbench.cli.views import summary_table
from serverbench.store import Store

# Three repetitions whose latency distributions differ: the merged p99 is none of the
# per-repetition p99s, and not their median either.
REPS = [  # (rps, [(latency µs, count)])
    (10_000.0, [(1_000, 9_700), (5_000, 200), (30_000, 100)]),   # p99 5 ms
    (12_000.0, [(1_000, 9_900), (8_000, 100)]),                   # p99 1 ms
    (11_000.0, [(1_000, 9_800), (12_000, 150), (40_000, 50)]),    # p99 12 ms; merged: 8 ms
]


def _loadgen(rps: float, values: list[tuple[int, int]]) -> dict:
    h = HdrHistogram(1, 3_600_000_000, 3)
    for v, n in values:
        h.record_value(v, n)
    n = h.get_total_count()
    p99 = h.get_value_at_percentile(99)
    return {"schema": "loadgen/1", "duration_s": n / rps,
            "summary": {"requests": n, "responses": n, "ok": n, "errors": 0, "rps": rps,
                        "latency_us": {"p50": h.get_value_at_percentile(50), "p99": p99, "max": h.get_max_value()}},
            "histograms": {"latency": h.encode().decode() if isinstance(h.encode(), bytes) else h.encode()}}


@pytest.fixture
def run(tmp_path: Path) -> tuple[Store, int, float, float]:
    store = Store(tmp_path / "r.db")
    rid = store.new_run({"servers": {"srv": {"model": "event-loop", "language": "C"}}}, {"repeat": 3})
    merged = HdrHistogram(1, 3_600_000_000, 3)
    for rep, (rps, values) in enumerate(REPS, 1):
        lg = _loadgen(rps, values)
        merged.add(HdrHistogram.decode(lg["histograms"]["latency"]))
        store.record_cell(rid, CellRecord("srv", "prantl-wrk", "c=400", rep, "ok", loadgen=lg, metrics={
            "rps": rps, "requests": lg["summary"]["requests"], "errors": 0,
            "p99_us": lg["summary"]["latency_us"]["p99"], "p50_us": lg["summary"]["latency_us"]["p50"]}))
    store.finish_run(rid, "finished")
    return store, rid, float(merged.get_value_at_percentile(99)), statistics.median(r for r, _ in REPS)


def test_every_output_gives_the_same_p99_and_rps(run) -> None:
    store, rid, p99, rps = run
    per_rep = [c.metrics.latency.p99_us for c in store.cells(rid)]
    assert p99 not in per_rep and p99 != statistics.median(per_rep)  # the test means something
    row, results = aggregate.load(store, rid)
    g = results.group("prantl-wrk", "c=400", "srv")
    assert g.figures.latency.p99_us == p99 and g.figures.rate.rps_median == rps

    # console summary (what `serverbench run` prints at the end)
    buf = io.StringIO()
    Console(file=buf, width=200).print(summary_table(results))
    line = next(ln for ln in buf.getvalue().splitlines() if "srv" in ln)
    assert fmt_us(p99) in line and f"{rps:,.0f}" in line

    # Markdown
    md = to_markdown.render(row, results).decode()
    mrow = next(ln for ln in md.splitlines() if ln.startswith("| 1 | srv"))
    cols = dict(zip(to_markdown.COLUMNS, (c.strip() for c in mrow.strip("|").split("|"))))
    assert cols["requests/s (successful, median)"] == f"{rps:,.0f}" and cols["p99 (all due)"] == fmt_us(p99)

    # CSV
    [crow] = list(csv.DictReader(io.StringIO(to_csv.render(row, results).decode())))
    assert float(crow["p99_us"]) == p99 and float(crow["rps_median"]) == rps

    # JSON export, through the CLI
    out = CliRunner().invoke(app, ["export", str(rid), "--format", "json", "--db", str(store.path)])
    assert out.exit_code == 0, out.output
    [jgroup] = json.loads(out.stdout)["groups"]
    assert jgroup["p99_us"] == p99 and jgroup["rps_median"] == rps
    assert json.loads(to_json.render(row, results))["groups"] == [jgroup]

    # compare (a run against itself)
    [crow2] = compare(store, rid, rid)
    assert crow2.p99_a == crow2.p99_b == p99 and crow2.a.median == rps


def test_a_run_that_raises_is_failed_and_keeps_its_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
    import runfix
    from serverbench.catalog import manifests as catalog
    from serverbench.run import runner
    from serverbench.catalog import workloads as wl
    from serverbench.model import RunOptions
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp_path)))
    monkeypatch.setenv("FAKE_LOADGEN_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    wdir = tmp_path / "w"
    wdir.mkdir()
    (wdir / "two.toml").write_text('name = "two"\ndescription = "d"\norigin = "serverbench"\nkind = "throughput"\npath = "/"\n'
                                   '[quick]\nsteady_max = "0s"\n[[quick.points]]\nlabel = "a"\nconnections = 1\nduration = "200ms"\n'
                                   '[[quick.points]]\nlabel = "b"\nconnections = 1\nduration = "200ms"\n'
                                   '[full]\n[[full.points]]\nlabel = "a"\nconnections = 1\nduration = "1s"\n')
    real = runner.run_loadgen
    calls = []

    def breaking(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return real(*a, **kw)

    monkeypatch.setattr(runner, "run_loadgen", breaking)
    store = Store(tmp_path / "r.db")
    m = catalog.load_catalog(runfix.SERVERS).servers["py-ok"]
    opts = RunOptions(servers=["py-ok"], workloads=["two"], repeat=1, allow_unverified=True,
                      server_cpus=[0], client_cpus=[0])
    with pytest.raises(RuntimeError, match="disk on fire"):
        runner.run_matrix(store, opts, manifests=[m], workloads=[wl.load_workloads(wdir)["two"]],
                          fingerprint={})
    rid = store.latest_run_id()
    r = store.run(rid)
    assert r.status == "failed" and r.error == "RuntimeError: disk on fire"
    assert [(c.point, c.status) for c in store.cells(rid)] == [("a", "ok")]


def test_a_bad_loadgen_file_names_file_and_field() -> None:
    with pytest.raises(LoadgenFormatError, match=r"^out\.json: field summary\.latency_us: Field required; rebuild"):
        LoadgenReport.parse({"schema": "loadgen/1", "summary": {"requests": 1, "errors": 0, "rps": 1.0}}, "out.json")
    with pytest.raises(LoadgenFormatError, match=r"^out\.json: field summary\.rps: Input should be a valid number"):
        LoadgenReport.parse({"schema": "loadgen/1", "summary": {"requests": 1, "errors": 0, "rps": "fast",
                                                                "latency_us": {}}}, "out.json")
