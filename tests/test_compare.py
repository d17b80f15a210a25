"""compare(): ratios between two runs and the noise rule, on runs built cell by cell."""
from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from serverbench.cli.report import register
from serverbench.results.compare import IMPROVEMENT, REGRESSION, UNJUDGED, WITHIN_NOISE, compare, judge
from serverbench.results.stats import summarize
from serverbench.store import CellRecord, Store

# server -> (run A rps per repetition, run B rps per repetition)
RUNS = {
    "slower": ([1000, 1010, 990], [800, 808, 792]),       # a 20 % regression, tight repetitions
    "same": ([1000, 1020, 980], [1010, 1030, 990]),       # +1 %: ranges overlap
    "faster": ([1000, 1010, 990], [1300, 1310, 1290]),    # +30 %
    "shaky": ([1000, 1300, 700], [800, 1050, 560]),       # -20 % but CV ~30 %: within noise
    "single": ([1000], [1070]),                           # one repetition each: no noise to judge by
    "single_big": ([1000, 1001, 999], [1300]),            # +30 %, but B has one repetition
    "gone": ([1000, 1000], []),                           # failed in B
}


def _cell(server: str, rep: int, rps: float | None, p99: float = 2000.0) -> CellRecord:
    if rps is None:
        return CellRecord(server, "prantl-wrk", "c=400", rep, "failed", error="server crashed")
    return CellRecord(server, "prantl-wrk", "c=400", rep, "ok", metrics={"rps": rps, "p99_us": p99})


@pytest.fixture
def store(tmp_path: Path) -> tuple[Store, int, int]:
    st = Store(tmp_path / "bench.db")
    a, b = st.new_run({}, {}), st.new_run({}, {})
    for server, (ra, rb) in RUNS.items():
        for i, v in enumerate(ra, 1):
            st.record_cell(a, _cell(server, i, v))
        for i, v in enumerate(rb or [None], 1):
            # "slower" also gets slower at the tail: p99 doubles
            st.record_cell(b, _cell(server, i, v, 4000.0 + i if server == "slower" else 2000.0 + i))
    return st, a, b


def test_ratios_and_verdicts(store) -> None:
    st, a, b = store
    rows = {r.server: r for r in compare(st, a, b)}
    assert set(rows) == set(RUNS)
    assert rows["slower"].ratio == pytest.approx(0.8) and rows["slower"].verdict == REGRESSION
    assert rows["slower"].significant
    assert rows["slower"].p99_ratio == pytest.approx(4002 / 2000) and rows["slower"].p99_verdict == REGRESSION
    assert rows["same"].ratio == pytest.approx(1.01) and rows["same"].verdict == WITHIN_NOISE
    assert not rows["same"].significant
    assert rows["faster"].verdict == IMPROVEMENT
    assert rows["shaky"].ratio == pytest.approx(0.8) and rows["shaky"].verdict == WITHIN_NOISE
    assert rows["shaky"].threshold == pytest.approx(2 * max(rows["shaky"].a.cv, rows["shaky"].b.cv))
    assert rows["single"].verdict == UNJUDGED and rows["single"].ratio == pytest.approx(1.07)
    assert rows["single_big"].verdict == UNJUDGED and not rows["single_big"].significant
    assert rows["gone"].verdict == "only in A" and rows["gone"].ratio is None


def test_judge_needs_both_separation_and_effect() -> None:
    tight = summarize([1000, 1001, 999])
    # ranges apart but only 2 % away: under the 5 % floor
    assert judge(tight, summarize([1020, 1021, 1019]))[2] == WITHIN_NOISE
    # 10 % away, ranges apart: significant
    assert judge(tight, summarize([900, 901, 899]))[2] == REGRESSION
    # latency: higher is worse
    assert judge(tight, summarize([1200, 1201, 1199]), higher_is_better=False)[2] == REGRESSION


def test_cli_compare_table(store) -> None:
    st, a, b = store
    app = typer.Typer()
    register(app)
    res = CliRunner().invoke(app, ["compare", str(a), str(b), "--db", str(st.path)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "regression" in res.output and "improvement" in res.output and "within noise" in res.output
    assert "0.800" in res.output
    assert "1 regressions, 1 improvements, 2 within noise, 2 not judged; 1 measured in only one run" in res.output
    assert "only in A" not in res.output  # listed with --all
    every = CliRunner().invoke(app, ["compare", str(a), str(b), "--all", "--db", str(st.path)],
                               env={"COLUMNS": "200"})
    assert "only in A" in every.output and "not judged" in every.output
    bad = CliRunner().invoke(app, ["compare", str(a), "99", "--db", str(st.path)])
    assert bad.exit_code == 2 and "no run 99" in bad.output
