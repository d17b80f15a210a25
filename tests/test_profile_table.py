"""The profile table (issue 49): one answer across kinds of work, gathered from several stored runs of
different workloads written through the real Store (cells shaped as the runner stores them,
tests/fixtures/report/make_store.py) and shown first in Markdown, HTML and a profile CSV."""
from __future__ import annotations

import csv
import io
import json
import random
import re
import tomllib
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from test_report import load_fixture  # tests/ is on sys.path (pytest rootdir import mode)

from serverbench.exporters import to_json
from serverbench.exporters.report import load, write_report
from serverbench.results import profile
from serverbench.results.profile_columns import COLUMNS
from serverbench.store import Store

ROOT = Path(__file__).resolve().parent.parent
HERE, ELSEWHERE = "a" * 40, "b" * 40  # the report's commit, another commit
MODELS = {"fast-a": "event-loop", "fast-b": "event-loop", "slow-c": "thread-per-connection", "gone-d": "actor"}
# per row and repetition, a factor on its rate: fast-a and fast-b overlap (a tie), slow-c is far behind
PLAIN = {"fast-a": (1.00, 1.01, 0.99), "fast-b": (1.005, 0.995, 1.002), "slow-c": (0.50, 0.51, 0.49)}
TLS = {"fast-a": (0.80, 0.81, 0.79), "fast-b": (0.40, 0.41, 0.39)}
NOT_BUILT = "not built; run `serverbench build gone-d`"
TLS_OUT = "serves no TLS here (tls_out): its framework has no TLS of its own"


def _run(ms: Any, commit: str, workload: str, point: str, factors: dict[str, tuple[float, ...]],
         skipped: dict[str, str], at: datetime, code: str | None = None) -> Any:
    fp = {"cpu_model": "Fixture CPU", "cores": 2, "kernel": "6.1", "git_commit": commit, "git_dirty": False,
          **({"measuring_code": code} if code else {}),
          "servers": {sid: {"language": "C", "model": m, "version": f"{sid} 1"} for sid, m in MODELS.items()}}
    run = ms.SyntheticRun(fp, {"workloads": [workload], "repeat": 3})
    rng = random.Random(3)
    for rep in (1, 2, 3):
        for sid, fs in factors.items():
            at += timedelta(seconds=12)
            ms._cell(run, sid, workload, point, rep, at, **ms._measured(rng, sid, 400, 4.0, noise=0.0,
                                                                          factor=fs[rep - 1]))
        for sid, why in skipped.items():
            ms._cell(run, sid, workload, point, rep, at, status="skipped", error=why)
    return run


@pytest.fixture()
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[int]]:
    """Run 1: prantl-wrk here; run 2: tfb-db at another commit; run 3: tls-json here (the report's)."""
    ms = load_fixture()
    monkeypatch.setattr(ms, "SERVERS", {sid: ("Rust", m, "x", "native", 100_000, None) for sid, m in MODELS.items()})
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    db = tmp_path / "profile.db"
    with Store(db) as store:
        ids = [ms.write_run(store, _run(ms, HERE, "prantl-wrk", "c=400", PLAIN, {"gone-d": NOT_BUILT}, at)),
               ms.write_run(store, _run(ms, ELSEWHERE, "tfb-db", "rate=80%", PLAIN, {}, at)),
               ms.write_run(store, _run(ms, HERE, "tls-json", "tls", TLS, {"slow-c": TLS_OUT, "gone-d": NOT_BUILT},
                                        at))]
    return db, ids


def test_every_column_names_a_workload_point_that_exists() -> None:
    """The columns are data: each source is a workload of workloads/*.toml and one of its points."""
    labels: dict[str, set[str]] = {}
    for f in (ROOT / "workloads").glob("*.toml"):
        data = tomllib.loads(f.read_text())
        labels[data["name"]] = {p["label"] for size in ("quick", "full") for p in data.get(size, {}).get("points", [])}
    missing = [(s.workload, s.point) for w in COLUMNS for s in w.sources if s.point not in labels.get(s.workload, ())]
    assert not missing, f"profile columns naming no workload point: {missing}"


def test_the_profile_gathers_a_column_per_kind_measured_here(stored: tuple[Path, list[int]]) -> None:
    db, (plain_run, other_commit, tls_run) = stored
    with Store(db) as store:
        _, results = load(store, tls_run)
    p = results.profile
    assert p.shown and [(c.name, c.workload, c.point, c.run_id) for c in p.columns] == [
        ("plaintext", "prantl-wrk", "c=400", plain_run), ("tls-json", "tls-json", "tls", tls_run)]
    # a row per server, every column in it
    assert sorted(r.server for r in p.rows) == sorted(MODELS)
    row = {r.server: r for r in p.rows}
    # fast-a and fast-b are within the repetitions' noise of each other: one place range, never an order
    assert row["fast-a"].cells["plaintext"].place_text == row["fast-b"].cells["plaintext"].place_text == "1–2"
    assert row["slow-c"].cells["plaintext"].place_text == "3"
    assert row["fast-a"].cells["tls-json"].place_text == "1" and row["fast-b"].cells["tls-json"].place_text == "2"
    fig = row["slow-c"].cells["plaintext"].figure
    assert fig is not None and fig.n == 3 and fig.ci_low < fig.median < fig.ci_high
    # rows with no figure say why, from the reason their skipped cells stored
    assert (row["slow-c"].cells["tls-json"].why, row["slow-c"].cells["tls-json"].reason) == (profile.DECLARED, TLS_OUT)
    assert row["gone-d"].cells["plaintext"].why == profile.NOT_BUILT
    # the run at another commit is left out, in one line naming it and both commits
    assert p.left_out == [f"run {other_commit} (tfb-db) left out: measured at commit {ELSEWHERE[:12]}, this run at "
                          f"{HERE[:12]}; re-run its workloads here at this commit to set them beside this run"]
    assert "db" in p.unmeasured and "json" in p.unmeasured
    # one row per concurrency model: the median of its rows' places, a range counted at its middle
    models = {m.model: m for m in p.models}
    assert models["event-loop"].cells["plaintext"].median_place == 1.5
    assert models["event-loop"].cells["tls-json"].median_place == 1.5 and models["event-loop"].cells["tls-json"].rows == 2
    assert "actor" not in models  # gone-d, its only row, has no place anywhere: no median to give


def test_a_run_at_another_commit_by_the_same_measuring_code_stands_beside(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit touching only words, tests or the report's side leaves runs comparable (a study spread
    over sessions); one that changed the measuring code (loadgen, a row, the harness) does not."""
    ms = load_fixture()
    monkeypatch.setattr(ms, "SERVERS", {sid: ("Rust", m, "x", "native", 100_000, None) for sid, m in MODELS.items()})
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    with Store(tmp_path / "p.db") as store:
        same = ms.write_run(store, _run(ms, ELSEWHERE, "prantl-wrk", "c=400", PLAIN, {}, at, code="m1"))
        other = ms.write_run(store, _run(ms, ELSEWHERE, "tfb-db", "rate=80%", PLAIN, {}, at, code="m0"))
        own = ms.write_run(store, _run(ms, HERE, "tls-json", "tls", TLS, {"slow-c": TLS_OUT}, at, code="m1"))
        _, results = load(store, own)
    p = results.profile
    assert [(c.name, c.run_id) for c in p.columns] == [("plaintext", same), ("tls-json", own)]
    assert len(p.left_out) == 1 and p.left_out[0].startswith(f"run {other} (tfb-db) left out: measured by other code")


def test_every_format_opens_with_the_profile(stored: tuple[Path, list[int]], tmp_path: Path) -> None:
    db, (_, _, tls_run) = stored
    with Store(db) as store:
        paths = write_report(store, tls_run, tmp_path / "out")
    md = paths.markdown.read_text()
    first = [line for line in md.splitlines() if line.startswith("## ")][0]
    assert first == "## Profile across kinds of work"
    assert "| fast-a | event-loop | 1–2 · " in md and "| median of event-loop | event-loop | 1.5 (2 rows) |" in md
    # each model's median row follows its rows
    servers = [line.split(" | ")[0][2:] for line in md.split("## At a glance")[0].splitlines() if line.startswith("| ")]
    assert servers[1:7] == ["gone-d", "fast-a", "fast-b", "median of event-loop", "slow-c",
                           "median of thread-per-connection"]
    assert f"no figure: slow-c — tls-json: {profile.DECLARED}: {TLS_OUT}" in md
    page = paths.html.read_text()
    assert re.findall(r'<h2 id="[^"]*">([^<]*)</h2>', page)[0] == "Profile across kinds of work"
    # the heat map: the tie is coloured as one (its range's middle), the last place red
    table = page.split('<table class="profile">')[1].split("</table>")[0]
    colours = {server: re.findall(r'style="background:([^"]+)"', tr)
               for server, tr in re.findall(r"<tr><td>([^<]*)</td>(.*?)</tr>", table)}
    # 1–2 of 3 places: its middle, 1.5, a quarter of the way from green (120) to red (0)
    assert colours["fast-a"][0] == colours["fast-b"][0] == "hsl(90, 65%, 82%)"
    assert colours["slow-c"][0] == "hsl(0, 65%, 82%)" and colours["fast-a"][1] == "hsl(120, 65%, 82%)"
    rows = list(csv.DictReader(io.StringIO(paths.files["profile-csv"].read_text())))
    assert {(r["server"], r["work"], r["place_first"], r["place_last"]) for r in rows} >= {
        ("fast-a", "plaintext", "1", "2"), ("fast-b", "plaintext", "1", "2"), ("slow-c", "plaintext", "3", "3")}
    assert next(r for r in rows if r["server"] == "slow-c" and r["work"] == "tls-json")["why"] == profile.DECLARED
    # the JSON export carries the same records, numbers as numbers
    with Store(db) as store:
        run, results = load(store, tls_run)
    doc = json.loads(to_json.render(run, results))
    recs = {(r["server"], r["work"]): r for r in doc["profile"]}
    assert (recs[("fast-a", "plaintext")]["place_first"], recs[("fast-a", "plaintext")]["place_last"]) == (1, 2)
    assert recs[("slow-c", "tls-json")]["why"] == profile.DECLARED and len(recs) == len(rows)


def test_a_report_of_one_kind_of_work_is_unchanged(stored: tuple[Path, list[int]], tmp_path: Path) -> None:
    """Run 1 holds prantl-wrk only and no run before it: no profile, no profile CSV."""
    db, (plain_run, _, _) = stored
    with Store(db) as store:
        paths = write_report(store, plain_run, tmp_path / "one")
    assert "Profile across kinds of work" not in paths.markdown.read_text()
    assert "Profile across kinds of work" not in paths.html.read_text()
    assert "profile-csv" not in paths.files and sorted(p.name for p in (tmp_path / "one").iterdir()) == [
        f"run-{plain_run}.csv", f"run-{plain_run}.html", f"run-{plain_run}.md"]


def test_a_skip_reason_is_classed_by_the_rules() -> None:
    assert profile.reason_class("not run — wrong /db body (db)") == profile.FAILED_CHECK
    assert profile.reason_class("not a db row: it declares no db_* choices (SPEC.md, Database endpoints)") \
        == profile.DECLARED
    assert profile.reason_class("never verified; run `serverbench verify x`") == profile.NOT_VERIFIED
    assert profile.reason_class("needs 4 server CPUs; the server machine has 2") == profile.SKIPPED


def test_a_p99_column_shows_the_p99_and_its_interval() -> None:
    """A fixed-load or noisy column is ranked by p99: its cells say so, in time units, lower first."""
    from serverbench.exporters import profile_section
    from serverbench.results.stats import summarize
    col = profile.Column(COLUMNS[2], "tfb-db", "rate=80%", "fixed-load", 4, "p99", 3)
    c = profile.Cell(place=(2, 3), figure=summarize([1500.0, 1800.0, 2100.0]), note="did not hold the rate")
    assert profile_section.cell_text(c, col) == "2–3 · p99 1.8 ms [1.5 ms–2.1 ms, 75%] · did not hold the rate"
    one = profile.Cell(place=(1, 1), figure=summarize([900.0]))
    assert profile_section.figure_text(one, col) == "p99 900 µs"  # one repetition: no interval to give


def test_the_reports_own_run_answers_for_a_column_it_measured(stored: tuple[Path, list[int]]) -> None:
    """Run 4 measured tfb-plaintext, the plaintext column's second source: the report of run 4 reads it
    rather than run 1's prantl-wrk, so the table agrees with the sections below it."""
    db, (_, _, tls_run) = stored
    ms = load_fixture()
    with Store(db) as store:
        own = ms.write_run(store, _run(ms, HERE, "tfb-plaintext", "c=256,p=16", TLS, {},
                                       datetime(2026, 1, 2, tzinfo=timezone.utc)))
        _, results = load(store, own)
    cols = {c.name: (c.workload, c.run_id) for c in results.profile.columns}
    assert cols == {"plaintext": ("tfb-plaintext", own), "tls-json": ("tls-json", tls_run)}


def test_a_cell_says_why_a_better_figure_stands_lower() -> None:
    """A row ranked after one with a lower req/s (its warm-up never became steady, or it left connections
    waiting) says so in its cell: the study's c-epoll served the most TLS JSON and stood third."""
    from types import SimpleNamespace as NS
    base = dict(held=None, degraded=False, client_bound_group=False, noise_effect=None, kind="throughput",
                not_steady=False, unfair=False, served_text=lambda: "served 64 of 400 connections")
    assert profile._note(NS(**base)) == ""
    assert profile._note(NS(**{**base, "not_steady": True})) == "not steady (ranked after the steady rows)"
    assert profile._note(NS(**{**base, "unfair": True})) == "unfair: served 64 of 400 connections"
