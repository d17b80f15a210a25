"""runner.py end to end: real supervisor + sampler, fake loadgen, tiny Python servers."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "run"))
import runfix  # noqa: E402

from serverbench.catalog import manifests as catalog
from serverbench.run import runner
from serverbench.processes import supervisor  # noqa: E402
from serverbench.catalog import workloads as wl  # noqa: E402
from serverbench.run.runner import RunOptions, run_matrix  # noqa: E402
from serverbench.store import Store  # noqa: E402

WORKLOADS = {
    "mini": """
name = "mini"
description = "two short closed points"
origin = "serverbench"
kind = "throughput"
path = "/"
[quick]
steady_max = "0s"  # tests time the brief warm-up; test_runner checks the steady one
warmup = "200ms"
[[quick.points]]
label = "c=1"
connections = 1
duration = "300ms"
[[quick.points]]
label = "c=2"
connections = 2
duration = "300ms"
[full]
steady_max = "0s"
[[full.points]]
label = "c=1"
connections = 1
duration = "10s"
""",
    "steady": """
name = "steady"
description = "a first point warmed to steady state, a second warmed briefly"
origin = "serverbench"
kind = "throughput"
path = "/"
[quick]
steady_max = "4s"
warmup = "200ms"
[[quick.points]]
label = "c=2"
connections = 2
duration = "300ms"
[[quick.points]]
label = "c=4"
connections = 4
duration = "300ms"
[full]
[[full.points]]
label = "c=2"
connections = 2
duration = "1s"
""",
    "half": """
name = "half"
description = "open load at 50% of calibrated capacity"
origin = "serverbench"
kind = "throughput"
[quick]
steady_max = "0s"  # tests time the brief warm-up; test_runner checks the steady one
[[quick.points]]
label = "rate=50%"
mode = "open"
rate = "50%"
calibration = "300ms"
duration = "300ms"
[full]
steady_max = "0s"
[[full.points]]
label = "rate=50%"
mode = "open"
rate = "50%"
duration = "10s"
""",
    "cap": """
name = "cap"
description = "capacity steps"
origin = "serverbench"
kind = "throughput"
[quick]
steady_max = "0s"  # tests time the brief warm-up; test_runner checks the steady one
[[quick.points]]
label = "p99<10ms"
mode = "capacity"
start_rate = 100
step = 2.0
max_steps = 5
step_duration = "200ms"
p99_limit = "1s"
[full]
steady_max = "0s"
[[full.points]]
label = "p99<10ms"
mode = "capacity"
start_rate = 100
step_duration = "10s"
""",
    "capref": """
name = "capref"
description = "capacity steps, then bisection"
origin = "serverbench"
kind = "throughput"
[quick]
steady_max = "0s"  # tests time the brief warm-up; test_runner checks the steady one
[[quick.points]]
label = "p99<1s"
mode = "capacity"
start_rate = 100
step = 2.0
max_steps = 5
refine = 2
step_duration = "200ms"
p99_limit = "1s"
[full]
steady_max = "0s"
[[full.points]]
label = "p99<1s"
mode = "capacity"
start_rate = 100
step_duration = "10s"
""",
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SERVERBENCH_LOADGEN", str(runfix.fake_loadgen(tmp_path)))
    monkeypatch.setenv("FAKE_LOADGEN_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setattr("serverbench.paths.LOGS", tmp_path / "logs")
    wdir = tmp_path / "workloads"
    wdir.mkdir()
    for name, text in WORKLOADS.items():
        (wdir / f"{name}.toml").write_text(text)
    cat = catalog.load_catalog(runfix.SERVERS)
    assert cat.errors == []
    return {"store": Store(tmp_path / "r.db"), "servers": cat.servers, "workloads": wl.load_workloads(wdir),
            "calls": tmp_path / "calls.jsonl"}


def go(env, servers, workloads, **kw):
    opts = RunOptions(servers=servers, workloads=workloads, repeat=kw.pop("repeat", 1),
                      allow_unverified=kw.pop("allow_unverified", True), ready_timeout=kw.pop("ready_timeout", 10),
                      server_cpus=[0], client_cpus=[sorted(__import__("os").sched_getaffinity(0))[-1]])
    return run_matrix(env["store"], opts, manifests=[env["servers"][s] for s in servers],
                      workloads=[env["workloads"][w] for w in workloads],
                      fingerprint={"test": True}, **kw)


def test_cells_recorded_with_cpu_memory_and_stats(env) -> None:
    res = go(env, ["py-ok"], ["mini"], repeat=2)
    assert (res.status, res.ok, res.failed, res.skipped) == ("finished", 4, 0, 0)
    cells = env["store"].cells(res.run_id)
    assert [(c.point, c.repetition) for c in cells] == [("c=1", 1), ("c=2", 1), ("c=1", 2), ("c=2", 2)]
    for c in cells:
        m = c.metrics
        assert m.counts.rps > 0 and m.counts.ok > 0 and m.counts.errors == 0 and m.latency.p99_us > 0
        assert m.usage.cpu_user_s + m.usage.cpu_sys_s > 0 and m.usage.cpu_percent > 0
        assert m.usage.rss_peak_bytes > 5_000_000 and m.usage.threads_peak >= 1
        assert m.client.client_cpu_percent > 0 and m.client.client_saturated in (True, False)
        assert m.setup.bound is None and m.setup.workers == 1
        assert 0 <= m.timing.overhead_s < 3 and m.setup.warmup_s == 0.2
        assert c.loadgen.schema_ == "loadgen/1" and c.usage["samples"] > 0
    assert cells[0].metrics.timing.server_start_s is not None and cells[1].metrics.timing.server_start_s is None
    assert env["store"].run(res.run_id).status == "finished"
    # what the report needs of the workload is stored with the run (it never re-reads the file)
    assert env["store"].run(res.run_id).fingerprint["workloads"] == {"mini": env["workloads"]["mini"].facts()}
    from serverbench.results import aggregate
    _, results = aggregate.load(env["store"], res.run_id)
    g = results.group("mini", "c=1", "py-ok")
    assert g.rps.n == 2 and g.rps.min <= g.rps.median <= g.rps.max
    # warm-up ran before each measured point, as a separate loadgen run
    calls = runfix.log_lines(env["calls"])
    assert [c["argv"][4] for c in calls] == ["200ms", "300ms"] * 4, [c["argv"][4] for c in calls]
    assert supervisor._LIVE == {}


def test_crash_mid_run_is_a_failed_cell_and_the_matrix_continues(env) -> None:
    res = go(env, ["py-crash", "py-ok"], ["mini"])
    cells = {(c.server, c.point): c for c in env["store"].cells(res.run_id)}
    crashed = cells[("py-crash", "c=1")]
    assert crashed.status == "failed" and "exited with code 3 during the" in crashed.error
    assert "simulated crash after 40 requests" in crashed.log_tail
    after = cells[("py-crash", "c=2")]
    assert after.status == "failed" and "before this point" in after.error
    assert cells[("py-ok", "c=1")].status == "ok" and cells[("py-ok", "c=2")].status == "ok"
    assert res.status == "finished"


def test_never_ready_is_failed_with_a_clear_error(env) -> None:
    res = go(env, ["py-never-ready", "py-ok"], ["mini"], ready_timeout=1.0)
    cells = env["store"].cells(res.run_id)
    bad = [c for c in cells if c.server == "py-never-ready"]
    assert len(bad) == 2 and all(c.status == "failed" for c in bad)
    assert "server did not start" in bad[0].error and "did not become ready" in bad[0].error
    assert "tiny_server mode=never-ready" in bad[0].log_tail
    assert all(c.status == "ok" for c in cells if c.server == "py-ok")


def test_repetitions_alternate_the_server_order(env) -> None:
    res = go(env, ["py-ok", "py-never-ready"], ["mini"], repeat=2, ready_timeout=1.0)
    order = [(c.repetition, c.server) for c in env["store"].cells(res.run_id) if c.point == "c=1"]
    assert order == [(1, "py-ok"), (1, "py-never-ready"), (2, "py-never-ready"), (2, "py-ok")]


def test_a_first_answer_is_read_after_every_rows_first_repetition(env, tmp_path: Path, monkeypatch) -> None:
    """Issue 49: RepetitionEnded after each repetition's last cell, before the next one's first; the CLI's
    listener prints and writes the provisional answer from the cells stored by then."""
    from serverbench.cli import steps
    from serverbench.run.events import CellFinished, RepetitionEnded
    seen: list[tuple[str, int]] = []

    def listen(ev) -> None:
        if isinstance(ev, RepetitionEnded):
            seen.append(("ended", ev.repetition))
            if ev.repetition == 1:
                monkeypatch.setattr("serverbench.paths.REPORTS", tmp_path / "reports")
                text = steps.provisional(env["store"], ev.run_id, ev.repeat).read_text()
                assert text.startswith("> **PROVISIONAL: 1 of 2 repetitions measured") and "py-ok" in text
                assert {c.repetition for c in env["store"].cells(ev.run_id)} == {1}
        elif isinstance(ev, CellFinished):
            seen.append(("cell", ev.cell.repetition))
    go(env, ["py-ok", "py-never-ready"], ["mini"], repeat=2, ready_timeout=1.0, on_event=listen)
    ends = [i for i, e in enumerate(seen) if e[0] == "ended"]
    assert [seen[i] for i in ends] == [("ended", 1), ("ended", 2)] and ends[1] == len(seen) - 1
    assert all(r == 1 for kind, r in seen[:ends[0]]) and all(r == 2 for kind, r in seen[ends[0] + 1:ends[1]])


def test_unverified_servers_are_skipped_with_the_reason(env) -> None:
    res = go(env, ["py-ok"], ["mini"], allow_unverified=False)
    cells = env["store"].cells(res.run_id)
    assert [c.status for c in cells] == ["skipped", "skipped"]
    assert "never verified; run `serverbench verify py-ok`" in cells[0].error
    from serverbench.catalog import build
    env["store"].record_verdict("py-ok", True, [], build.folder_hash(env["servers"]["py-ok"]))
    res = go(env, ["py-ok"], ["mini"], allow_unverified=False)
    assert res.ok == 2
    env["store"].record_verdict("py-ok", True, [], "stale-hash")
    res = go(env, ["py-ok"], ["mini"], allow_unverified=False)
    assert "changed since it was verified" in env["store"].cells(res.run_id)[0].error


def test_rate_percent_is_calibrated(env) -> None:
    res = go(env, ["py-ok"], ["half"])
    [c] = env["store"].cells(res.run_id)
    assert c.status == "ok", c.error
    cap = c.metrics.setup.calibration_rps
    assert cap > 0 and c.metrics.offered.target_rate == max(1.0, round(cap * 0.5, 1))
    calib, measured = runfix.log_lines(env["calls"])
    assert "--connections" in calib["argv"] and calib["argv"][calib["argv"].index("--connections") + 1] == "64"
    assert float(measured["argv"][measured["argv"].index("--rate") + 1]) == c.metrics.offered.target_rate


def test_capacity_steps_until_p99_breaks(env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LOADGEN_CAPACITY", "300")  # above 300 req/s the fake reports p99 = 5 s
    res = go(env, ["py-ok"], ["cap"])
    [c] = env["store"].cells(res.run_id)
    assert c.status == "ok", c.error
    steps = c.metrics.capacity.steps
    assert [s.rate for s in steps] == [100, 200, 400]
    assert [s.held for s in steps] == [True, True, False] and steps[-1].p99_us == 5_000_000
    assert c.metrics.capacity.capacity_target_rate == 200 and c.metrics.capacity.capacity_rps == pytest.approx(200, abs=5)
    assert c.metrics.usage.cpu_user_s + c.metrics.usage.cpu_sys_s > 0
    assert c.metrics.capacity.capacity_ceiling is False and c.metrics.capacity.capacity_client_bound is False


def test_capacity_that_never_breaks_is_flagged_as_a_lower_bound(env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LOADGEN_CAPACITY", "100000")
    res = go(env, ["py-ok"], ["cap"])
    [c] = env["store"].cells(res.run_id)
    assert [s.held for s in c.metrics.capacity.steps] == [True] * 5
    assert c.metrics.capacity.capacity_ceiling is True and c.metrics.capacity.capacity_target_rate == 1600
    from serverbench.results import aggregate
    [wl] = aggregate.collect(res.run_id, env["store"].cells(res.run_id), {}, facts={}).workloads
    [g] = wl.points[0].groups
    assert any(w.kind == "lower-bound" for w in g.warnings)


def test_capacity_bisects_between_the_last_held_and_the_first_failed_rate(
        env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LOADGEN_CAPACITY", "300")
    res = go(env, ["py-ok"], ["capref"])
    [c] = env["store"].cells(res.run_id)
    assert c.status == "ok", c.error
    steps = c.metrics.capacity.steps
    # 100, 200 hold, 400 fails; then sqrt(200*400) = 282.8 holds, sqrt(282.8*400) = 336.3 fails
    assert [s.rate for s in steps] == [100, 200, 400, 282.8, 336.3]
    assert [s.held for s in steps] == [True, True, False, True, False]
    assert c.metrics.capacity.capacity_target_rate == 282.8


def test_resume_runs_only_cells_not_done(env) -> None:
    store = env["store"]
    res = go(env, ["py-ok"], ["mini"])
    cells = store.cells(res.run_id)
    first = cells[0]
    first.status, first.error = "failed", "pretend it crashed"
    store.record_cell(res.run_id, first)
    store.finish_run(res.run_id, "interrupted")
    before = len(runfix.log_lines(env["calls"]))
    again = run_matrix(store, RunOptions(), resume=res.run_id, manifests=[env["servers"]["py-ok"]],
                       workloads=[env["workloads"]["mini"]])
    new_calls = runfix.log_lines(env["calls"])[before:]
    assert len(new_calls) == 2  # warm-up + measured run of the one failed cell
    assert again.run_id == res.run_id and again.status == "finished"
    assert [c.status for c in store.cells(res.run_id)] == ["ok", "ok"]
    assert store.run(res.run_id).options["servers"] == ["py-ok"]


def test_ctrl_c_marks_the_run_interrupted_and_stops_the_server(env, monkeypatch: pytest.MonkeyPatch) -> None:
    real = runner.run_loadgen
    calls = []

    def interrupting(*a, **kw):
        calls.append(1)
        if len(calls) == 3:  # warm-up + measured of c=1 done; interrupt during c=2's warm-up
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(runner, "run_loadgen", interrupting)
    res = go(env, ["py-ok"], ["mini"])
    assert res.status == "interrupted" and env["store"].run(res.run_id).status == "interrupted"
    assert [c.point for c in env["store"].cells(res.run_id)] == ["c=1"]
    assert env["store"].done_keys(res.run_id) == {("py-ok", "mini", "c=1", 1)}
    assert supervisor._LIVE == {}


def test_verify_stores_verdict_with_sigterm_check(env, monkeypatch: pytest.MonkeyPatch) -> None:
    from serverbench.catalog import build
    from serverbench import verify as vf
    from serverbench.verify.show import verify_and_show
    from serverbench.verify import servers as vservers
    seen = {}

    def fake_verify(url, m, *, workers, pid=None, only=None, tls=None, h2=None):  # the real checks: test_verify*.py
        if only == ["tls"]:  # the second call, after the plaintext start stopped: py-ok is no tls row
            assert tls is None
            return [vf.CheckResult("tls", True, "not a tls row", skipped=True)]
        if only == ["h2c", "h2"]:  # the third: py-ok is no h2 row either
            assert h2 is None
            return [vf.CheckResult(n, True, "not an h2 row", skipped=True) for n in only]
        seen.update(url=url, workers=workers, pid=pid)
        return [vf.CheckResult("root", True, "ok"), vf.CheckResult("file", False, "404")]

    monkeypatch.setattr(vservers, "verify", fake_verify)
    m = env["servers"]["py-ok"]
    passed, failed = verify_and_show([m], env["store"], server_cpus=[0], allow_unavailable=False)
    assert (passed, failed) == ([], ["py-ok"])
    assert seen["url"].startswith("http://127.0.0.1:") and seen["workers"] == 1 and seen["pid"] > 0
    v = env["store"].verdict("py-ok")
    assert not v.passed and v.folder_hash == build.folder_hash(m)
    assert [(c["name"], c["passed"]) for c in v.checks] == [("root", True), ("file", False), ("sigterm", True),
                                                            ("tls", True), ("h2c", True), ("h2", True)]
    # a failed verdict keeps the server out of runs, naming the failed check
    res = go(env, ["py-ok"], ["mini"], allow_unverified=False)
    assert "failed verification (file)" in env["store"].cells(res.run_id)[0].error


def test_cli_results_export_and_errors(env, tmp_path: Path) -> None:
    import csv
    import json
    from typer.testing import CliRunner
    from serverbench.cli import app
    res = go(env, ["py-ok"], ["mini"])
    db = str(env["store"].path)
    cli = CliRunner()
    out = cli.invoke(app, ["results", "--db", db])
    assert out.exit_code == 0 and "finished" in out.output and "py-ok" in out.output
    out = cli.invoke(app, ["export", str(res.run_id), "--format", "json", "--db", db])
    data = json.loads(out.stdout)
    assert data["run"]["id"] == res.run_id and len(data["cells"]) == 2
    assert data["cells"][0]["loadgen"]["schema"] == "loadgen/1"
    assert [g["point"] for g in data["groups"]] == ["c=1", "c=2"]
    f = tmp_path / "x.csv"
    out = cli.invoke(app, ["export", "latest", "--format", "csv", "--out", str(f), "--db", db])
    rows = list(csv.DictReader(f.open()))
    assert out.exit_code == 0 and [r["point"] for r in rows] == ["c=1", "c=2"] and float(rows[0]["rps_median"]) > 0
    out = cli.invoke(app, ["export", "42", "--db", db])
    assert out.exit_code == 2 and "no run 42" in out.output
    out = cli.invoke(app, ["run", "-w", "nope", "--db", db])
    assert out.exit_code == 2 and "unknown workload 'nope'; known:" in out.output
    out = cli.invoke(app, ["workloads"])
    assert out.exit_code == 0 and "stressgrid" in out.output


def test_first_point_of_a_start_is_warmed_to_steady_state_in_one_second_rounds(env) -> None:
    from serverbench.rules import warmup
    res = go(env, ["py-ok"], ["steady"])
    assert (res.status, res.ok) == ("finished", 2)
    first, later = env["store"].cells(res.run_id)
    m = first.metrics
    assert m.warmup.warmup_max_s == 4 and 1 <= len(m.warmup.warmup_rates) <= 4 and all(r > 0 for r in m.warmup.warmup_rates)
    # steady exactly when the rule holds on the rates it stored; otherwise it ran to its maximum
    assert m.warmup.warmup_steady is warmup.is_steady(m.warmup.warmup_rates)
    assert m.warmup.warmup_steady or len(m.warmup.warmup_rates) == 4
    assert (m.warmup.warmup_steady_s == len(m.warmup.warmup_rates)) if m.warmup.warmup_steady else m.warmup.warmup_steady_s is None
    # the later point of the same start: the brief warm-up, not judged
    assert later.metrics.warmup.warmup_brief is True and later.metrics.warmup.warmup_steady is None
    durations = [c["argv"][4] for c in runfix.log_lines(env["calls"])]
    rounds = len(m.warmup.warmup_rates)
    assert durations == ["1s"] * rounds + ["300ms", "200ms", "300ms"], durations


def test_a_run_whose_cells_were_all_skipped_exits_1_naming_why(env, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    from types import SimpleNamespace
    from typer.testing import CliRunner
    from serverbench.cli import app
    from serverbench.cli.views import nothing_measured
    monkeypatch.setattr("serverbench.paths.SERVERS", runfix.SERVERS)
    monkeypatch.setattr("serverbench.paths.WORKLOADS", tmp_path / "workloads")
    cpus = sorted(os.sched_getaffinity(0))
    db = str(env["store"].path)
    # neither row was ever verified (and --allow-unverified was not given): every cell is skipped
    args = ["run", "-s", "py-ok,py-crash", "-w", "mini", "--quick", "--server-cpus", str(cpus[0]),
            "--client-cpus", str(cpus[-1]), "--db", db]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 1, out.output
    errors = [x for x in out.output.splitlines() if x.startswith("error:")]
    assert errors == ["error: run 1 measured nothing: all 4 cells were skipped (py-ok, py-crash: never verified; run "
                      "`serverbench verify py-ok py-crash` (or pass --allow-unverified))"], out.output
    assert "run 1 finished: 0 ok, 0 failed, 4 skipped" in out.output  # the summary is still printed first
    resumed = CliRunner().invoke(app, ["run", "--resume", "1", "--db", db])
    assert resumed.exit_code == 1 and "error: run 1 measured nothing" in resumed.output, resumed.output
    # distinct reasons, at most REASONS_SHOWN of them; a run that measured or failed a cell is not "nothing"
    cells = [SimpleNamespace(server=f"r{i}", status="skipped", error=f"reason {i}") for i in range(5)]
    ended = SimpleNamespace(run_id=7, status="finished", ok=0, failed=0, skipped=5)
    assert nothing_measured(ended, cells) == ("run 7 measured nothing: all 5 cells were skipped (r0: reason 0; "
                                              "r1: reason 1; r2: reason 2; 2 more reasons in `serverbench report 7`)")
    for other in ({"ok": 1}, {"failed": 1}, {"status": "interrupted"}):
        assert nothing_measured(SimpleNamespace(**{**vars(ended), **other}), cells) is None


def test_the_provisional_glance_names_the_figure_each_point_ranks_by() -> None:
    """head-of-line and the other p99 kinds rank by the p99 (every row holds the same rate): the first answer
    shows that, not a rate every row shares."""
    from types import SimpleNamespace
    from serverbench.cli.steps import _ranked_figure

    def group(kind: str) -> SimpleNamespace:
        return SimpleNamespace(server="r", kind=kind, throughput=SimpleNamespace(median=1000.0),
                               median=lambda f: f(SimpleNamespace(latency=SimpleNamespace(p99_us=2_500.0))))
    assert _ranked_figure(group("head-of-line")) == "r (p99 2.5 ms)"
    assert _ranked_figure(group("throughput")) == "r (1,000 req/s)"


def test_a_start_per_point_keeps_a_log_per_point_and_each_store_its_own_folder(env, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from serverbench import paths
    from serverbench.catalog.kinds import KINDS, KindRules
    # mini's two points each in a start of their own, as a db-outage workload's restart and freeze are
    monkeypatch.setitem(KINDS, "throughput", KindRules(client_bound=True, start_per_point=True))
    res = go(env, ["py-ok"], ["mini"])
    folder = paths.run_logs(res.run_id, env["store"].path)
    assert sorted(p.name for p in folder.glob("py-ok.*.log")) == ["py-ok.mini.c=1.r1.log", "py-ok.mini.c=2.r1.log"]
    # another store's run of the same id writes into a folder of its own, never into this run's
    other = Store(tmp_path / "other" / "r.db")
    again = run_matrix(other, RunOptions(servers=["py-ok"], workloads=["mini"], repeat=1, allow_unverified=True,
                                         ready_timeout=10, server_cpus=[0],
                                         client_cpus=[sorted(__import__("os").sched_getaffinity(0))[-1]]),
                       manifests=[env["servers"]["py-ok"]], workloads=[env["workloads"]["mini"]], fingerprint={})
    assert again.run_id == res.run_id
    theirs = paths.run_logs(again.run_id, other.path)
    assert theirs != folder and theirs.parent.name.startswith("r-") and len(list(theirs.glob("py-ok.*.log"))) == 2
    assert paths.run_logs(3, paths.DB_PATH) == paths.LOGS / "run-3"  # the default store's folders as before
