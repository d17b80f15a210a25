"""`serverbench profile`: source lines, dependencies, builds, artifact, start-up and idle memory,
measured on fixture rows (tests/fixtures/profile) with known answers, stored and reported."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from serverbench.catalog import build
from serverbench import cli, paths
from serverbench.cost import idle_cost
from serverbench.cost.artifact import measure_artifact
from serverbench.cost.build_cost import cold_build
from serverbench.catalog.manifests import load_catalog
from serverbench.cli.views import JSON_KEYS
from serverbench.cost.code_lines import count_lines
from serverbench.cost.dependencies import cargo, direct_dependencies, gomod, package_json, pom, requirements
from serverbench.cost.idle_cost import connection_levels, measure_memory, measure_startup, per_connection, slope
from serverbench.store import RssLevel, ServerProfile
from serverbench.cost.profiler import ProfileOptions, _carry_cold, profile_server
from serverbench.store import Store

FIXTURES = Path(__file__).parent / "fixtures" / "profile"


@pytest.fixture(autouse=True)
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixtures settle at once; the real waits (2 s idle, 1 s windows) are for real servers."""
    monkeypatch.setattr(idle_cost, "IDLE_AFTER_READY_S", 0.3)
    monkeypatch.setattr(idle_cost, "SETTLE_S", 0.2)
    monkeypatch.setattr(idle_cost, "RSS_WINDOW_S", 0.3)


@pytest.fixture()
def rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The fixture rows copied out of the repository (builds write into them), logs and stamps in tmp."""
    root = tmp_path / "profile"
    shutil.copytree(FIXTURES, root)
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STAMPS", tmp_path / "stamps")
    monkeypatch.setattr(paths, "SERVERS", root / "servers")
    cat = load_catalog(root / "servers")
    assert cat.errors == []
    return cat.servers


def test_code_lines_count_code_only(rows: dict) -> None:
    c = count_lines(rows["counted"])
    # app.py: 4 code lines of 9 (comments, blanks and a trailing-comment line that is code);
    # build.sh: 3 of 4; gen.py ("DO NOT EDIT"), Cargo.lock, README.md and server.toml: none.
    assert (c.own, c.by_language["Python"], c.by_language["Bash"]) == (7, 4, 3)
    # lib.js in the shared folder: 3 (pygount does not count a line holding only "}")
    assert (c.shared, c.total, c.files) == (3, 10, 3)
    assert {"counted/Cargo.lock: lock file", "counted/gen.py: generated",
            "counted/README.md: prose (Markdown)"} <= set(c.skipped)


def test_direct_dependencies_from_the_manifests(rows: dict) -> None:
    d = direct_dependencies(rows["counted"])
    assert (d.manifest, d.names) == ("requirements.in", ["flask", "requests"])
    assert cargo('[dependencies]\ntokio = "1"\nlocal = { path = "../x" }\n[dev-dependencies]\nt = "1"\n') == ["tokio"]
    mod = ("module m\n\nrequire serverbench/c v0.0.0\nrequire github.com/a/b v1.0.0\n"
           "require (\n\tgithub.com/c/d v1.2.0\n\tgithub.com/e/f v1.0.0 // indirect\n)\n"
           "replace serverbench/c => ../_shared/c\n")
    assert gomod(mod) == ["github.com/a/b", "github.com/c/d"]
    xml = ('<project xmlns="http://maven.apache.org/POM/4.0.0"><dependencies>'
           '<dependency><groupId>io.netty</groupId><artifactId>netty</artifactId></dependency>'
           '<dependency><groupId>junit</groupId><artifactId>junit</artifactId><scope>test</scope></dependency>'
           '</dependencies><build><plugins><plugin><dependencies><dependency><groupId>p</groupId>'
           '<artifactId>plugin-dep</artifactId></dependency></dependencies></plugin></plugins></build></project>')
    assert pom(xml) == ["io.netty:netty"]
    assert package_json('{"dependencies": {"b": "1", "a": "2"}, "devDependencies": {"c": "1"}}') == ["a", "b"]
    assert requirements("x==1 \\\n    --hash=sha256:ab\n# c\ny[extra]>=2; python_version>'3'\n-r other.txt\n") == ["x", "y"]


def test_cold_build_uses_private_empty_caches_and_leaves_the_row_alone(rows: dict, tmp_path: Path) -> None:
    m = rows["counted"]
    before = sorted(p.name for p in m.dir.iterdir())
    cold = cold_build(m, work=tmp_path / "work")
    assert cold.error is None and cold.seconds is not None and cold.download_s is None
    assert sorted(p.name for p in m.dir.iterdir()) == before  # no bin/ in the row's own folder
    assert list((tmp_path / "work").iterdir()) == []  # the copy and its caches are gone
    log = (paths.LOGS / "profile-cold-counted.log").read_text()
    line = next(ln for ln in log.splitlines() if ln.startswith("CARGO_TARGET_DIR="))
    target, xdg = (part.split("=", 1)[1] for part in line.split())
    work = str(tmp_path / "work" / "cold-counted" / "caches")
    assert target.startswith(work) and xdg.startswith(work)
    assert target != str(paths.CARGO_TARGET)


def test_warm_build_and_artifact_of_a_from_source_row(rows: dict) -> None:
    m = rows["counted"]
    p = profile_server(m, ProfileOptions(cold=False, starts=1, levels=(5, 10), server_cpus=[], client_cpus=[]))
    assert p.build_warm_s is not None and p.build_warm_s < 10
    assert build.is_built(m)  # the warm build left a valid stamp behind
    art = measure_artifact(m)
    assert art.kind == "source + installed packages" and art.paths == [".", "../_shared/counted-lib"]
    assert p.artifact_bytes == art.bytes > 0
    assert p.errors == [], p.errors
    assert p.startup_ms is not None and [lv.held for lv in p.rss_levels] == [5, 10]


def test_startup_of_a_server_that_sleeps_a_second(rows: dict) -> None:
    slow = measure_startup(rows["sleepy"], starts=2, cpus=None, workers=None, ready_timeout=20)
    fast = measure_startup(rows["quick"], starts=2, cpus=None, workers=None, ready_timeout=20)
    assert slow.error is None and len(slow.runs_ms) == 2
    assert slow.median_ms is not None and 1000 <= slow.median_ms < 5000
    assert fast.median_ms is not None and fast.median_ms < slow.median_ms - 900


def test_memory_per_connection_is_the_slope(rows: dict) -> None:
    per_conn = 256 * 1024  # the fixture writes this much for every open connection
    mem = measure_memory(rows["perconn"], levels=[20, 120], server_cpus=None, client_cpus=None, workers=None,
                         ready_timeout=20)
    assert mem.errors == [] and [lv.held for lv in mem.levels] == [20, 120]
    assert mem.idle_rss_bytes is not None and mem.idle_rss_bytes < mem.levels[0].rss_bytes
    assert mem.per_connection_bytes is not None
    assert 0.8 * per_conn < mem.per_connection_bytes < 1.3 * per_conn, mem.per_connection_bytes


def test_bounded_models_stay_within_their_bound() -> None:
    assert connection_levels((1000, 10_000), None) == [1000, 10_000]
    assert connection_levels((1000, 10_000), 5000) == [1000, 5000]
    assert connection_levels((1000, 10_000), 64) == [32, 64]  # two levels, so a slope
    assert slope([(0, 100), (10, 1100), (110, 11100)]) == 100.0
    assert slope([(10, 1100)]) is None


def test_a_level_that_lost_its_connections_is_left_out_of_the_slope() -> None:
    # an idle timeout shorter than the time to open 10,000: most were closed when RSS was read
    lost = [RssLevel(requested=1000, held=1000, rss_bytes=30_000_000),
            RssLevel(requested=10_000, held=1322, rss_bytes=90_000_000)]
    per_conn, points, note = per_connection(lost, idle_rss=10_000_000)
    assert (per_conn, points) == (20_000.0, [0, 1000]) and note is not None and "from idle to 1,000" in note
    kept = [RssLevel(requested=1000, held=1000, rss_bytes=30_000_000),
            RssLevel(requested=10_000, held=9920, rss_bytes=210_000_000)]
    assert per_connection(kept, idle_rss=10_000_000) == ((210_000_000 - 30_000_000) / 8920, [1000, 9920], None)


def test_cold_figures_carry_over_only_for_the_same_code() -> None:
    old = ServerProfile(server="s", measured_at="t0", folder_hash="h", build_cold_s=12.5, build_download_s=3.0)
    same = ServerProfile(server="s", measured_at="t1", folder_hash="h")
    _carry_cold(same, old)
    assert (same.build_cold_s, same.build_download_s, same.build_cold_at) == (12.5, 3.0, "t0")
    changed = ServerProfile(server="s", measured_at="t1", folder_hash="other")
    _carry_cold(changed, old)
    assert changed.build_cold_s is None


def test_cli_profile_stores_and_writes_json(rows: dict, tmp_path: Path) -> None:
    db, out = tmp_path / "p.db", tmp_path / "profile.json"
    r = CliRunner().invoke(cli.app, ["profile", "quick", "--starts", "2", "--levels", "5,15", "--db", str(db),
                                     "--json", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert list(doc) == ["quick"] and set(JSON_KEYS) <= set(doc["quick"])
    q = doc["quick"]
    assert q["source_lines"] == 0 and q["dependencies"] == 0  # the row is only a run command
    assert q["startup_ms"] > 0 and q["idle_rss_bytes"] > 0 and q["rss_per_connection_bytes"] is not None
    assert q["build_cold_s"] is None and q["build_warm_s"] is None  # nothing to build
    stored = Store(db).latest_profile("quick")
    assert stored is not None and stored.startup_ms == q["startup_ms"]
    # --only-changed (make bench): the same code keeps its complete profile, nothing is measured again
    again = CliRunner().invoke(cli.app, ["profile", "quick", "--only-changed", "--db", str(db)])
    assert again.exit_code == 0, again.output
    assert Store(db).db.execute("SELECT COUNT(*) FROM profiles").fetchone()[0] == 1


def test_a_profile_without_the_warm_rebuild_keeps_an_earlier_figure_of_the_same_code(rows: dict) -> None:
    """`make bench` (quick) skips the warm rebuild: the row must be built already, and a warm figure
    of the same code measured earlier is kept, never one of other code."""
    m = rows["counted"]
    opts = dict(cold=False, starts=1, levels=(5, 10), server_cpus=[], client_cpus=[])
    first = profile_server(m, ProfileOptions(**opts))
    assert first.build_warm_s is not None
    again = profile_server(m, ProfileOptions(warm=False, **opts), previous=first)
    assert again.build_warm_s == first.build_warm_s and again.errors == [], again.errors
    assert again.startup_ms is not None  # the rest of the profile still ran
    other = first.model_copy(update={"folder_hash": "other code"})
    assert profile_server(m, ProfileOptions(warm=False, **opts), previous=other).build_warm_s is None
    build._stamp(m).unlink()  # not built any more: nothing to start, said in one line
    unbuilt = profile_server(m, ProfileOptions(warm=False, **opts), previous=first)
    assert unbuilt.startup_ms is None and any("not built" in e for e in unbuilt.errors), unbuilt.errors


def test_the_start_up_of_a_run_s_starts_is_taken_not_measured_again(rows: dict) -> None:
    """Issue 49: `make bench` times each row's starts once, in the run; the profile reads them from the
    run's cells (the first point of each start, a cores sweep's pinned starts left out) instead of
    starting the row again. The sleepy row takes over a second to start: a new start would show it."""
    from serverbench.cost.idle_cost import startups_of
    from serverbench.model import CellRecord

    def cell(server: str, point: str, rep: int, start_s: float | None, cores: int | None = None,
             status: str = "ok") -> CellRecord:
        return CellRecord(server, "w", point, rep, status, metrics={"server_start_s": start_s, "server_cores": cores})
    cells = [cell("sleepy", "a", 1, 0.040), cell("sleepy", "b", 1, None), cell("sleepy", "a", 2, 0.060),
             cell("sleepy", "a", 3, 0.050), cell("sleepy", "cores=1", 1, 0.5, cores=1),
             cell("sleepy", "a", 4, 0.9, status="failed"), cell("quick", "a", 1, 0.010)]
    got = startups_of(cells)
    assert got == {"sleepy": [40.0, 60.0, 50.0], "quick": [10.0]}
    p = profile_server(rows["sleepy"], ProfileOptions(cold=False, warm=False, starts=2, levels=(5,), startups=got))
    assert p.startup_ms == 50.0 and p.startup_runs_ms == [40.0, 60.0, 50.0]
