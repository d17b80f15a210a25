"""What re-measuring the published studies needs (serverbench/seeds/plan.py), which stored run
meets or resumes a need, which runs the section reads (seeds/runs.py), and `seeds --measure`
skipping, resuming and starting runs (cli/seeds.measure) with the runner replaced by a stand-in
that stores runs as the runner does."""
from pathlib import Path
from types import SimpleNamespace as NS

import pytest
import typer

from serverbench.cli import seeds as cli_report
from serverbench.model import RunOptions
from serverbench.run.lifecycle import MatrixResult
from serverbench.results import pick_runs
from serverbench.seeds import plan, runs
from serverbench.seeds.studies import Study, load_all
from serverbench.store import Store


def _study(claims: list | None = None) -> Study:
    return Study.model_validate({
        "id": "toy", "title": "Toy", "hardware": "h", "method": "m", "versions": {}, "caveats": [],
        "columns": ["requests/s", "notes"],
        "compare": [{"column": "requests/s", "ours": "requests/s", "better": "higher", "workload": "w1",
                     "points": ["p"]}],
        "row": [{"name": "A", "figures": {"requests/s": 10}, "maps_to": ["a"]},
                {"name": "B", "figures": {"requests/s": [1, 2]}, "maps_to": ["b1", "b2"]},
                {"name": "C", "figures": {"notes": "words only"}, "maps_to": ["c"]},
                {"name": "D", "figures": {}, "maps_to": [], "note": "none here"}]})


def test_needs_are_the_compared_rows_with_figures_one_run_per_workload() -> None:
    [n] = plan.needs([_study()])
    assert (n.workload, n.rows, n.repeat, n.memory_limit) == ("w1", ("a", "b1", "b2"), 3, None)
    assert n.why == ("toy: requests/s",)
    assert n.options()["servers"] == ["a", "b1", "b2"] and n.options()["workloads"] == ["w1"]


def test_claims_add_their_rows_and_only_an_out_of_memory_claim_sets_a_ceiling() -> None:
    s = _study()
    claims = [NS(text="ran out", workload="ov", rows=["x", "a"], than=[], expect=[plan.OUT_OF_MEMORY]),
              NS(text="faster", workload="w1", rows=["a"], than=["z"], expect=[]),
              NS(text="slower", workload="w2", rows=["y"], than=[], expect=["slows"])]
    fake = NS(id=s.id, compare=s.compare, row=s.row, claim=claims)
    got = {n.workload: n for n in plan.needs([fake])}
    assert got["w1"].rows == ("a", "b1", "b2", "z") and got["w1"].memory_limit is None
    assert got["ov"].rows == ("x", "a") and got["ov"].memory_limit == plan.MEMORY_LIMIT
    assert got["w2"].memory_limit is None


def test_the_real_studies_need_the_overload_workload_and_prantl_rows() -> None:
    got = {n.workload: n for n in plan.needs(load_all())}
    assert "c-epoll" in got["prantl-wrk"].rows and "nim" in got["prantl-wrk"].rows
    assert {"go-fasthttp", "java-netty", "erlang-mochiweb", "java-rapidoid"} <= set(got["stressgrid-overload"].rows)
    assert set(got["locust-users"].rows) >= {"go-nethttp", "python-fastapi", "java-httpserver"}
    # the claims: the Erlang rows and the out-of-memory ceiling on the overload run, Deepu's comment
    # on the sleep workload
    assert {"erlang-yaws", "erlang-inets", "node-cluster"} <= set(got["stressgrid-overload"].rows)
    assert got["stressgrid-overload"].memory_limit == plan.MEMORY_LIMIT and got["prantl-wrk"].memory_limit is None
    assert set(got["stressgrid"].rows) == {"rust-actix", "rust-tokio", "node-http", "node-cluster"}


def _opts(**kw) -> dict:
    return {**RunOptions(workloads=["w1"], servers=["a", "b1", "b2"], repeat=3, split="auto").to_dict(), **kw}


@pytest.mark.parametrize("change,meets", [
    ({}, True),
    ({"servers": None}, True),  # every row
    ({"servers": ["a", "b1", "b2", "q"]}, True),
    ({"workloads": ["w1", "other"]}, True),
    ({"servers": ["a", "b1"]}, False),
    ({"repeat": 2}, False),
    ({"repeat": 5}, True),
    ({"workloads": ["other"]}, False),
    ({"full": True}, False),
    ({"duration": "2s"}, False),
    ({"server_memory_limit": "1G"}, False),
    ({"target": "http://127.0.0.1:1/"}, False),
])
def test_which_stored_options_meet_a_need(change: dict, meets: bool) -> None:
    [n] = plan.needs([_study()])
    assert plan.meets(_opts(**change), n) is meets


def _run(i: int, status: str, **opts) -> NS:
    return NS(id=i, status=status, shown_status=status, options=_opts(**opts), owner="4242@host")


def test_a_finished_run_meets_and_a_stopped_run_of_the_same_need_is_resumed() -> None:
    [n] = plan.needs([_study()])
    assert plan.stored_for([], n) == (None, None)
    done = _run(1, "finished")
    assert plan.stored_for([done, _run(2, "interrupted")], n) == (done, None)
    stopped = _run(3, "interrupted")
    assert plan.stored_for([_run(1, "finished", repeat=1), stopped], n) == (None, stopped)
    # a stopped run for other rows or another ceiling is not this need's
    assert plan.stored_for([_run(4, "abandoned", servers=["a"]), _run(5, "failed", server_memory_limit="1G")],
                           n) == (None, None)


def test_a_run_being_measured_now_for_the_same_need_is_in_flight() -> None:
    [n] = plan.needs([_study()])
    live = _run(6, "running")
    assert plan.in_flight([_run(1, "finished"), live], n) is live
    assert plan.in_flight([_run(7, "running", servers=["a"]), _run(8, "abandoned")], n) is None
    # and it is neither met nor resumed
    assert plan.stored_for([live], n) == (None, None)


def test_measure_refuses_to_start_a_need_another_process_is_measuring(tmp_path: Path, monkeypatch) -> None:
    import serverbench.cli.steps as cli_run
    store = Store(tmp_path / "r.db")
    need = plan.Need("prantl-wrk", ("c-epoll",))
    store.new_run({}, RunOptions.from_dict(need.options()).to_dict())  # 'running', owned by this live process
    monkeypatch.setattr(cli_run, "ready_rows", lambda ms, st, ws: ms)
    runner = _Runner(interrupt=set())
    monkeypatch.setattr(cli_run, "measure", runner)
    with pytest.raises(typer.Exit) as e:
        cli_report.measure(store, [need])
    assert e.value.exit_code == 1 and runner.calls == []


def test_the_section_reads_the_run_with_most_of_the_rows_newest_among_equals(monkeypatch) -> None:
    [n] = plan.needs([_study()])
    stored = [_run(1, "finished"), _run(2, "finished", servers=["a"]), _run(3, "interrupted"),
              _run(4, "finished", workloads=["else"]), _run(5, "finished", workloads=["quick"])]
    cells = {1: {"w1"}, 2: {"w1"}, 3: {"w1"}, 4: {"else"}, 5: set()}  # run 5 stored no ok cell of w1
    loaded = []

    def load(store, rid):
        loaded.append(rid)
        return None, NS(workloads=[NS(name="w1", points=[NS(label="p", groups=[NS(server="a")])])])
    monkeypatch.setattr(pick_runs.aggregate, "load", load)
    got = runs.latest(NS(runs=lambda: stored, measured_workloads=lambda: cells), [n])
    assert got.runs == {"w1": 3} and got.newest.id == 3 and loaded == [3]
    assert "w1 from run 3" in got.sources()


def test_a_run_without_figures_for_the_workload_is_passed_over(monkeypatch) -> None:
    [n] = plan.needs([_study()])
    stored = [_run(1, "finished"), _run(2, "finished")]
    empty = NS(workloads=[NS(name="w1", points=[NS(label="p", groups=[])])])
    full = NS(workloads=[NS(name="w1", points=[NS(label="p", groups=[NS(server="a")])])])
    monkeypatch.setattr(pick_runs.aggregate, "load", lambda store, rid: (None, full if rid == 1 else empty))
    cells = {1: {"w1"}, 2: {"w1"}}
    assert runs.latest(NS(runs=lambda: stored, measured_workloads=lambda: cells), [n]).runs == {"w1": 1}


class _Runner:
    """Stands in for cli/steps.measure: stores a run with the options it is given (as run_matrix
    does), finishing it or ending it 'interrupted' on the calls listed in `interrupt`."""

    def __init__(self, interrupt: set[int]) -> None:
        self.calls: list[tuple] = []
        self.interrupt = interrupt

    def __call__(self, store: Store, opts: RunOptions, manifests=None, workloads=None, resume=None, **kw):
        rid = resume if resume is not None else store.new_run({}, opts.to_dict())
        status = "interrupted" if len(self.calls) in self.interrupt else "finished"
        self.calls.append(("resume" if resume is not None else "new", rid,
                           None if resume is not None else sorted(m.id for m in manifests)))
        store.finish_run(rid, status)
        return MatrixResult(rid, status)


def test_measure_skips_met_needs_resumes_an_interrupted_one_and_leaves_out_unverified_rows(
        tmp_path: Path, monkeypatch) -> None:
    import serverbench.cli.steps as cli_run
    store = Store(tmp_path / "r.db")
    needs = [plan.Need("prantl-wrk", ("c-epoll", "nim")), plan.Need("stressgrid-overload", ("go-tcp",), 3, "1G")]
    # nim failed verify: only c-epoll is measured, and the stored run names c-epoll only
    monkeypatch.setattr(cli_run, "ready_rows", lambda ms, st, ws: [m for m in ms if m.id != "nim"])
    runner = _Runner(interrupt={1})
    monkeypatch.setattr(cli_run, "measure", runner)
    with pytest.raises(typer.Exit) as e:
        cli_report.measure(store, needs)
    assert e.value.exit_code == 130
    assert runner.calls == [("new", 1, ["c-epoll"]), ("new", 2, ["go-tcp"])]
    assert store.run(2).options["server_memory_limit"] == "1G"
    # the same command again: prantl-wrk is met by run 1, run 2 is resumed, nothing new is started
    assert cli_report.measure(store, needs) == [1, 2]
    assert runner.calls[2:] == [("resume", 2, None)]
    # and a third time everything is met
    assert cli_report.measure(store, needs) == [1, 2] and len(runner.calls) == 3


def test_the_section_names_the_run_each_workload_came_from() -> None:
    from serverbench.seeds import section
    measured = runs.Measured(workloads=[], runs={"prantl-wrk": 4, "stressgrid-overload": 7}, newest=NS(id=7, fingerprint={}))
    lines = section.markdown(measured.newest, measured, load_all(), everything=True)
    assert any("Runs read: prantl-wrk from run 4, stressgrid-overload from run 7. The newest, run 7" in x for x in lines)
    single = section.markdown(NS(id=3, fingerprint={}), NS(workloads=[]), load_all(), everything=True)
    assert any(x.startswith("This run (3)") for x in single) and not any("Runs read" in x for x in single)


def test_each_table_takes_its_rows_versions_from_the_run_that_measured_its_workload() -> None:
    from serverbench.seeds import compare, section
    prantl = next(s for s in load_all() if s.id == "prantl")
    group = NS(server="c-epoll", throughput=NS(median=50_000.0), latency={}, figures=NS(warmup=None))
    wl = NS(name="prantl-wrk", points=[NS(label="c=400", groups=[group])])
    old = NS(id=4, fingerprint={"servers": {"c-epoll": {"version": "gcc 12"}}})
    newest = NS(id=9, fingerprint={"servers": {"go-fasthttp": {"version": "go1.26"}}})  # another workload's run
    measured = runs.Measured(workloads=[wl], runs={"prantl-wrk": 4, "stressgrid-overload": 9}, newest=newest,
                             rows={4: old, 9: newest})
    [c] = compare.comparisons([prantl], measured)
    assert ["c", "13", "381", "c-epoll", "gcc 12", "50,000"] in section.rows(c, newest, measured)
    # a single run: its own fingerprint, as before
    assert ["c", "13", "381", "c-epoll", "—", "50,000"] in section.rows(c, newest, NS(workloads=[wl]))


def test_texts_name_the_run_they_read() -> None:
    """Issue 50: reading one run per workload, no text says "this run": a table names the run its
    workload came from, a workload no stored run measured says so, a claim's evidence names its run."""
    from serverbench.seeds import section
    measured = runs.Measured(workloads=[], runs={"prantl-wrk": 4}, newest=NS(id=4, fingerprint={}))
    text = "\n".join(section.markdown(measured.newest, measured, load_all(), everything=True))
    assert "(not measured in any stored run)" in text and "this run" not in text
    one = "\n".join(section.markdown(NS(id=3, fingerprint={}), NS(workloads=[]), load_all(), everything=True))
    assert "(not measured in this run)" in one
