"""Report outputs from a synthetic store: offline HTML with every server, workload and warning;
Markdown ranked by throughput; CSV with the documented columns; exact histogram merging."""
from __future__ import annotations

import csv
import importlib.util
import re
import statistics
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import typer
from hdrh.histogram import HdrHistogram
from typer.testing import CliRunner

from serverbench.cli.report import register
from serverbench.results.aggregate import merge_histograms
from serverbench.exporters.to_csv import COLUMNS as CSV_COLUMNS
from serverbench.exporters.to_markdown import COLUMNS as MD_COLUMNS
from serverbench.exporters.report import ReportPaths, write_report

FIXTURE = Path(__file__).parent / "fixtures" / "report" / "make_store.py"


def load_fixture() -> Any:
    """tests/fixtures/report/make_store.py as a module (tests/ is not a package)."""
    name = "serverbench_report_fixture"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURE)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses look their module up while the file executes
        spec.loader.exec_module(mod)
    return sys.modules[name]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, int, ReportPaths]:
    tmp = tmp_path_factory.mktemp("report")
    store, run_id = load_fixture().build_store(tmp / "bench.db")
    return store, run_id, write_report(store, run_id, tmp / "out")


class _Refs(HTMLParser):
    """Collects every src/href attribute and counts script elements."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.scripts += tag == "script"
        self.refs += [v or "" for k, v in attrs if k in ("src", "href")]


def test_files_exist_with_run_names(built) -> None:
    _, run_id, paths = built
    for p, ext in ((paths.html, "html"), (paths.markdown, "md"), (paths.csv, "csv")):
        assert p.name == f"run-{run_id}.{ext}" and p.stat().st_size > 0


def test_html_is_self_contained(built) -> None:
    text = built[2].html.read_text()
    parser = _Refs()
    parser.feed(text)
    remote = [r for r in parser.refs if r.startswith(("http://", "https://", "//"))]
    assert remote == []
    assert text.count("* plotly.js v") == 1  # plotly inlined exactly once
    assert "cdn.plot.ly" not in text.split("<script>", 1)[0]  # nothing loaded before the bundle either


def test_html_names_every_server_workload_and_warning(built) -> None:
    mod = load_fixture()
    text = built[2].html.read_text()
    for sid in list(mod.SERVERS) + [mod.SKIPPED_SERVER]:
        assert sid in text
    for wl in ("prantl-wrk", "sweep", "capacity", "stressgrid"):
        assert f'id="{wl}"' in text  # a section (and TOC anchor) per workload
    assert re.search(r'class="sub">\d+ workloads · ', text)
    assert "server on CPU 0, load generator on CPU 1" in text
    assert "stalls expected: model holds at most 64 connections" in text
    assert "requests still unanswered when the run ended, the oldest after 8.0 s" in text
    assert "node-http: noisy" in text
    assert "rust-tokio: client-bound" in text
    assert "java-threads: 2," in text and "timeouts)" in text  # errors warning with counts
    assert "server exited with code 1 before the load ended" in text  # failed cell + error
    assert "Too many open files" in text  # its log tail
    assert "toolchain missing: erl" in text  # skipped cells


def _md_table(md: str, heading: str) -> list[list[str]]:
    section = md.split(heading + "\n", 1)[1]
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    rows = []
    for ln in lines:
        if ln.startswith("|---"):
            continue
        rows.append([c.strip() for c in ln.strip("|").split("|")])
        if len(rows) > 1 and not section.split(ln, 1)[1].lstrip(" \n").startswith("|"):
            break
    return rows


def test_markdown_ranked_by_requests_per_second(built) -> None:
    md = built[2].markdown.read_text()
    header, *rows = _md_table(md, "## prantl-wrk")
    assert header == MD_COLUMNS
    ranked = [r for r in rows if r[0] != "—"]
    rps = [float(r[4].replace(",", "")) for r in ranked]
    assert len(ranked) == 5 and rps == sorted(rps, reverse=True)
    # the two rows whose intervals overlap share one place range: no order inside the noise (issue 49)
    assert [r[0] for r in ranked] == ["1", "2", "3–4", "3–4", "5"]
    assert rows[-1][1] == "elixir-cowboy" and rows[-1][4] == "skipped"
    assert "### sweep · c=1024" in md  # multi-point workloads get a table per point


def test_csv_columns_and_figures(built) -> None:
    store, run_id, paths = built
    with paths.csv.open() as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == CSV_COLUMNS
        rows = list(reader)
    cells = store.cells(run_id)
    assert len(rows) == len({(c.server, c.workload, c.point) for c in cells})
    row = next(r for r in rows if r["workload"] == "prantl-wrk" and r["server"] == "go-nethttp")
    expect = statistics.median(c.metrics.counts.rps for c in cells
                               if c.server == "go-nethttp" and c.workload == "prantl-wrk" and c.status == "ok")
    assert float(row["rps_median"]) == pytest.approx(expect, abs=0.1)
    assert row["reps_ok"] == "3" and row["place"] == "2"
    node = next(r for r in rows if r["workload"] == "prantl-wrk" and r["server"] == "node-http")
    assert node["noisy"] == "True" and float(node["rps_cv"]) > 0.05
    tokio = next(r for r in rows if r["workload"] == "sweep" and r["point"] == "c=1024" and r["server"] == "rust-tokio")
    assert tokio["client_saturated"] == "True"
    cap = [r for r in rows if r["workload"] == "capacity" and r["capacity_rps"]]
    assert len(cap) == 5


def test_histograms_merge_exactly() -> None:
    whole, parts = HdrHistogram(1, 3_600_000_000, 3), [HdrHistogram(1, 3_600_000_000, 3) for _ in range(3)]
    for i in range(3000):
        v = 50 + (i * 7919) % 100_000
        whole.record_value(v)
        parts[i % 3].record_value(v)
    merged = merge_histograms(p.encode() for p in parts)
    assert merged.get_total_count() == 3000
    for pct in (50, 90, 99, 99.9, 100):
        assert merged.get_value_at_percentile(pct) == whole.get_value_at_percentile(pct)
    assert merge_histograms([]) is None


def test_cli_report_prints_three_paths(built, tmp_path: Path) -> None:
    store, run_id, _ = built
    app = typer.Typer()
    register(app)
    res = CliRunner().invoke(app, ["report", "--db", str(store.path), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    printed = [Path(p) for p in res.output.split()]
    assert [p.name for p in printed] == [f"run-{run_id}.html", f"run-{run_id}.md", f"run-{run_id}.csv"]
    assert all(p.exists() for p in printed)
    missing = CliRunner().invoke(app, ["report", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 2 and "no results database" in missing.output


def test_cost_of_ownership_section(built) -> None:
    """Each server's latest profile beside its prantl-wrk throughput, grouped by model, in every format."""
    store, run_id, paths = built
    md = paths.markdown.read_text()
    header, *rows = _md_table(md, "## Cost of ownership")
    assert header[:4] == ["model", "server", "language", "code lines (own + shared)"]
    # four profiled servers (python-asyncio has no profile), models in SPEC order, each named once
    assert [r[1] for r in rows] == ["java-threads", "node-http", "rust-tokio", "go-nethttp"]
    assert [r[0] for r in rows] == ["thread-per-connection", "event-loop", "async-work-stealing", "green-threads"]
    java = rows[0]
    assert java[header.index("RSS per 1,000 idle conns MiB")] == "273.44 (32 → 64)"  # bounded: up to 64
    assert java[header.index("cold build s")] == "75.0 (+5.0 download)"
    rps = float(rows[2][header.index("prantl-wrk req/s")].replace(",", ""))
    from serverbench.results import aggregate
    _, results = aggregate.load(store, run_id)
    tokio = results.group("prantl-wrk", "c=400", "rust-tokio")
    assert rps == pytest.approx(tokio.rps.median, abs=1)
    html = paths.html.read_text()
    assert 'id="cost-of-ownership"' in html and "the trade-off" in html
    from serverbench.exporters import get
    doc = __import__("json").loads(get("json").render(*aggregate.load(store, run_id)))
    assert sorted(doc["profiles"]) == ["go-nethttp", "java-threads", "node-http", "rust-tokio"]
    assert doc["profiles"]["rust-tokio"]["startup_ms"] == 4.0
