"""`serverbench seeds` end to end on a fixture database: a prantl-wrk run of four rows written through
the real Store (cells shaped as the runner stores them, tests/fixtures/report/make_store.py), read by
the one aggregation, set beside Prantl's published table. Checks the agreement arithmetic and that a
flip without a published or stored figure behind it is "unexplained", never given a cause."""
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from test_report import load_fixture  # tests/ is on sys.path (pytest rootdir import mode)
from typer.testing import CliRunner

from serverbench.cli import app
from serverbench.store import Store

# here: cpp-asio > c-epoll > nginx-lua > crystal; Prantl: cpp 93,477 > crystal 83,469 > openresty 55,108 > c 381
RATES = {"cpp-asio": 66_000, "c-epoll": 59_000, "nginx-lua": 40_000, "crystal": 30_000}


def _fixture_db(path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    ms = load_fixture()
    monkeypatch.setattr(ms, "SERVERS", {sid: ("Rust", "event-loop", "x", "native", rps, None)
                                        for sid, rps in RATES.items()})
    run = ms.SyntheticRun({"cpu_model": "Fixture CPU", "cores": 2, "kernel": "6.1", "servers": {
        sid: {"language": "C", "model": "event-loop", "version": f"{sid} 1"} for sid in RATES}},
        {"workloads": ["prantl-wrk"], "servers": list(RATES), "repeat": 3})
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rng = random.Random(1)
    for rep in (1, 2, 3):
        for sid in RATES:
            at += timedelta(seconds=12)
            ms._cell(run, sid, "prantl-wrk", "c=400", rep, at, **ms._measured(rng, sid, 400, 4.0, noise=0.0))
    with Store(path) as store:
        return ms.write_run(store, run)


def test_seeds_on_a_fixture_database_counts_pairs_and_gives_causes_only_with_figures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "fixture.db"
    rid = _fixture_db(db, monkeypatch)
    out = CliRunner().invoke(app, ["seeds", "--db", str(db)])
    assert out.exit_code == 0, out.output
    text = out.output
    assert f"Runs read: prantl-wrk from run {rid}" in text
    # 4 rows, 6 pairs: cpp-asio keeps its lead over the other three; crystal/openresty, crystal/c and
    # openresty/c flip; tau-b (3 - 3) / 6 = 0
    # the section reads one run per workload: its texts name that run, not "this run" (issue 50)
    assert f"Of 6 pairs, 3 keep their order, 3 flip, 0 are not ordered by the study and 0 not by run {rid}; " \
           "Kendall's tau-b +0.00." in text
    flips = [line for line in text.splitlines() if line.startswith("- ") and " ahead of " in line]
    assert len(flips) == 3, flips
    by_pair = {(f[2:].split(" (")[0], f.split(" ahead of ")[1].split(" (")[0]): f for f in flips}
    # the study's c row had 17,720 socket errors over about 11,430 requests: broken keep-alive
    assert by_pair[("c-epoll", "crystal")].endswith("(381 req/s × 30 s)")
    assert by_pair[("c-epoll", "nginx-lua")].endswith("(381 req/s × 30 s)")
    # openresty's 106 errors over ~1.65M requests show nothing, and no warm-up was stored: unexplained
    assert by_pair[("nginx-lua", "crystal")].endswith(": unexplained")
    # the same run named with --run reads the same
    one = CliRunner().invoke(app, ["seeds", "--db", str(db), "--run", str(rid)])
    assert one.exit_code == 0 and "Of 6 pairs, 3 keep their order, 3 flip" in one.output


def test_seeds_without_a_study_workload_in_the_database_says_how_to_measure(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    Store(db).close()
    out = CliRunner().invoke(app, ["seeds", "--db", str(db)])
    assert out.exit_code == 2
    assert "no run in" in out.output and "serverbench seeds --measure" in out.output


def _overload_db(path: Path, monkeypatch: pytest.MonkeyPatch, verdicts: dict[str, list[str]]) -> int:
    """A stressgrid-overload run of the Erlang rows, 3 repetitions, each cell's stored overload verdict
    (the runner's per-cell figures) given per repetition."""
    ms = load_fixture()
    monkeypatch.setattr(ms, "SERVERS", {sid: ("Go", "actor", "x", "beam", 20_000, None) for sid in verdicts})  # Go: its RSS
    run = ms.SyntheticRun({"cpu_model": "Fixture CPU", "cores": 2, "kernel": "6.1", "servers": {
        sid: {"language": "Erlang", "model": "actor", "version": f"{sid} 1"} for sid in verdicts}},
        {"workloads": ["stressgrid-overload"], "servers": list(verdicts), "repeat": 3})
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    rng = random.Random(1)
    for rep in (1, 2, 3):
        for sid, vs in verdicts.items():
            at += timedelta(seconds=50)
            cell = ms._measured(rng, sid, 400, 40.0, noise=0.0, mode="sessions")
            cell["metrics"].update(kind="overload", overload_verdict=vs[rep - 1], peak_ok_rps=15_000.0 + rep,
                                   overload_reason=f"the figures of repetition {rep}")
            ms._cell(run, sid, "stressgrid-overload", "devices=0-10000", rep, at, **cell)
    with Store(path) as store:
        return ms.write_run(store, run)


ERLANG_CLAIM = "- “Erlang servers serve a fraction of requests as quickly as possible and let the rest time out” " \
               "(Stressgrid's text): "


def test_seeds_answers_a_claim_on_rows_whose_repetitions_disagree_not_settled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 49: one machine's make seeds: erlang-mochiweb sheds, sheds, slows; erlang-inets slows, degrades, slows
    db = tmp_path / "split.db"
    rid = _overload_db(db, monkeypatch, {"erlang-mochiweb": ["sheds", "sheds", "slows"],
                                         "erlang-yaws": ["sheds", "sheds", "sheds"],
                                         "erlang-inets": ["slows", "degrades", "slows"]})
    out = CliRunner().invoke(app, ["seeds", "--db", str(db)])
    assert out.exit_code == 0, out.output
    text = out.output
    claim = next(line for line in text.splitlines() if line.startswith(ERLANG_CLAIM))
    assert claim.startswith(ERLANG_CLAIM + f"**not settled** at stressgrid-overload · devices=0-10000 — not settled "
                            f"by run {rid}: the repetitions disagree for erlang-mochiweb (sheds 2 of 3, slows 1), "
                            "erlang-inets (slows 2 of 3, degrades 1); of the other rows, holds for: erlang-yaws; what "
                            "would settle it: more repetitions (`serverbench seeds --measure --repeat 5`), or the "
                            "full size (`serverbench run --full --workload stressgrid-overload"), claim
    assert "  - erlang-mochiweb: split (sheds 2 of 3, slows 1) — repetition 1: sheds — the figures of repetition 1; " \
           "repetition 2: sheds — the figures of repetition 2; repetition 3: slows — the figures of repetition 3" in text
    assert "  - erlang-yaws: sheds — the figures of repetition 1" in text
    # the same run's report shows the split verdict in the overload table
    report = CliRunner().invoke(app, ["report", str(rid), "--format", "markdown", "--out", str(tmp_path), "--db", str(db)])
    assert report.exit_code == 0, report.output
    md = next(tmp_path.glob("*.md")).read_text()
    assert "| split (sheds 2 of 3, slows 1) |" in md and "**not settled**" in md


def test_seeds_answers_a_claim_whose_rows_agree_from_their_verdicts(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "agreed.db"
    _overload_db(db, monkeypatch, {"erlang-mochiweb": ["sheds"] * 3, "erlang-yaws": ["sheds"] * 3,
                                   "erlang-inets": ["slows"] * 3})
    out = CliRunner().invoke(app, ["seeds", "--db", str(db)])
    assert out.exit_code == 0, out.output
    claim = next(line for line in out.output.splitlines() if line.startswith(ERLANG_CLAIM))
    assert claim.startswith(ERLANG_CLAIM + "**partly** at stressgrid-overload · devices=0-10000 — holds for "
                            "erlang-mochiweb, erlang-yaws; not for erlang-inets"), claim
    assert ": split (" not in out.output and "**not settled**" not in out.output
