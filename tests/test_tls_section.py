"""What TLS costs (exporters/tls_section.py), from a stored run: each row's CPU per request over TLS ÷
plaintext, handshakes per CPU-second and handshake p99 per key type, RSA ÷ ECDSA, the rows left out
with their reason; in the Markdown and HTML reports."""
from __future__ import annotations

import pytest
from hdrh.histogram import HdrHistogram

from serverbench.exporters import tls_section, to_html, to_markdown
from serverbench.model import CellRecord
from serverbench.results import aggregate
from serverbench.store import Store

OUT_REASON = "serves no TLS here (tls_out): Nim's asynchttpserver has no TLS [here]"
FP = {"servers": {"fast": {"model": "event-loop", "language": "Rust", "choices": {"tls_library": "rustls 0.23"}},
                  "slow": {"model": "thread-per-connection", "language": "Java",
                           "choices": {"tls_library": "JSSE (OpenJDK 17)"}},
                  "nim": {"model": "event-loop", "language": "Nim", "choices": {"tls_out": "no TLS"}}},
      "workloads": {"tls-json": {"kind": "throughput"}, "tls-handshake": {"kind": "throughput"}}}


def _hist(values: list[int]) -> str:
    h = HdrHistogram(1, 3_600_000_000, 3)
    for v in values:
        h.record_value(v)
    return h.encode().decode()


def _cell(server: str, workload: str, point: str, rep: int, ok: int, cpu_s: float, *, key: str | None = None,
          handshakes: int = 0, latencies: list[int] | None = None, errors: dict | None = None) -> CellRecord:
    tls = None
    if key is not None:
        lat = sorted(latencies or [1000])
        tls = {"provider": "rustls", "resumption": False, "alpn": "http/1.1", "version": "TLSv1_3",
               "suite": "TLS13_AES_128_GCM_SHA256", "handshakes": handshakes, "resumed": 0,
               "handshake_latency": {"p50": lat[len(lat) // 2], "p99": lat[-1], "max": lat[-1]},
               "handshake_histogram": _hist(lat), "handshake_errors": errors or {"alert": 0, "timeout": 0, "reset": 0}}
    report = {"schema": "loadgen/1", "duration_s": 1.0, "tls": tls,
              "summary": {"requests": ok, "ok": ok, "errors": 0, "rps": float(ok), "latency_us": {"p99": 900.0}}}
    stored_tls = None
    if tls is not None:
        stored_tls = {"key_type": key, "handshakes": handshakes, "version": "TLSv1_3",
                      "suite": "TLS13_AES_128_GCM_SHA256", "alpn": "http/1.1", "provider": "rustls",
                      "handshake_p99_us": float(lat[-1]), "handshake_errors": errors or {}}
    return CellRecord(server, workload, point, rep, "ok", loadgen=report,
                      metrics={"kind": "throughput", "rps": float(ok), "ok": ok, "requests": ok, "errors": 0,
                               "cpu_user_s": cpu_s * 0.75, "cpu_sys_s": cpu_s * 0.25, "tls": stored_tls})


def _cells() -> list[CellRecord]:
    cells = []
    for rep, (plain_cpu, tls_cpu) in ((1, (1.0, 1.5)), (2, (1.2, 1.7))):
        # fast: 10,000 requests each; CPU/request plain 100 and 120 µs (median 110), TLS 150 and 170 (median 160)
        cells += [_cell("fast", "tls-json", "plain", rep, 10_000, plain_cpu),
                  _cell("fast", "tls-json", "tls", rep, 10_000, tls_cpu, key="rsa", handshakes=20),
                  # 1,000 RSA handshakes on 2 s of CPU: 500 per CPU-second; 2,000 ECDSA on 1 s: 2,000
                  _cell("fast", "tls-handshake", "rsa", rep, 1000, 2.0, key="rsa", handshakes=1000,
                        latencies=[1000] * 98 + [1900, 1900 + rep]),
                  _cell("fast", "tls-handshake", "ecdsa", rep, 2000, 1.0, key="ecdsa", handshakes=2000,
                        latencies=[500] * 99 + [1500])]
        # slow: TLS costs 3× plaintext, its window's 10 handshakes (10 ms of CPU each) a 15th of it; some RSA
        # handshakes were refused
        cells += [_cell("slow", "tls-json", "plain", rep, 1000, 0.5),
                  _cell("slow", "tls-json", "tls", rep, 1000, 1.5, key="rsa", handshakes=10),
                  _cell("slow", "tls-handshake", "rsa", rep, 100, 1.0, key="rsa", handshakes=100,
                        errors={"alert": 2, "timeout": 0, "reset": 1})]
        cells += [CellRecord("nim", w, p, rep, "skipped", error=OUT_REASON)
                  for w, p in (("tls-json", "plain"), ("tls-json", "tls"), ("tls-handshake", "rsa"))]
    return cells


@pytest.fixture
def stored(tmp_path):
    with Store(tmp_path / "r.db") as store:
        run_id = store.new_run(FP, {})
        for c in _cells():
            store.record_cell(run_id, c)
        store.finish_run(run_id, "finished")
        yield aggregate.load(store, run_id)


def test_the_figures_per_row_from_the_stored_cells(stored) -> None:
    _, results = stored
    rows, out = tls_section.rows(results)
    assert [r.server for r in rows] == ["fast", "slow"]  # the cheapest TLS first
    fast, slow = rows
    assert (fast.plain_cpu_us, fast.tls_cpu_us) == pytest.approx((110.0, 160.0))
    assert fast.ratio == pytest.approx(160 / 110) and slow.ratio == pytest.approx(3.0)
    assert fast.handshakes["rsa"].per_cpu_s == pytest.approx(500.0)
    assert fast.handshakes["ecdsa"].per_cpu_s == pytest.approx(2000.0)
    assert fast.rsa_over_ecdsa == pytest.approx(4.0) and slow.rsa_over_ecdsa is None  # slow has no ECDSA point
    # p99 from both repetitions' histograms merged (200 handshakes: the 99th percentile is the 198th value)
    assert fast.handshakes["rsa"].p99_us == 1900
    assert fast.handshakes["ecdsa"].p99_us == 500
    assert slow.handshakes["rsa"].failed == {"alert": 4, "reset": 2}
    # the TLS window's own handshakes: 20 of 10,000 requests at 2 ms each (4 µs of 160), 10 of 1,000 at 10 ms
    assert fast.handshake_share == pytest.approx(4 / 160) and slow.handshake_share == pytest.approx(100 / 1500)
    assert fast.library == "rustls 0.23" and fast.negotiated == "TLSv1_3 · TLS13_AES_128_GCM_SHA256 · ALPN http/1.1"
    assert [(o.server, o.reason) for o in out] == [("nim", OUT_REASON)]


def test_markdown_and_html_show_the_section(stored) -> None:
    run, results = stored
    md = to_markdown.render(run, results).decode()
    section = md.split("## What TLS costs", 1)[1]
    assert "| fast | event-loop | rustls 0.23 | 110 µs | 160 µs | 1.45× | 500 | 1.9 ms | 2,000 | 500 µs | 4.00× |" in section
    assert "| slow | thread-per-connection | JSSE (OpenJDK 17) | 500 µs | 1.5 ms | 3.00× | 100 | 1 ms | — | — | — |" in section
    assert f"- nim (event-loop): {OUT_REASON}" in section
    assert "- ⚠ slow: 6 RSA handshakes failed (alert 4, reset 2)" in section
    assert ("- ⚠ slow: tls-json's TLS window includes its connections' handshakes (one per 100 requests), about 7% "
            "of its CPU per request") in section and "⚠ fast: tls-json" not in section
    assert "- event-loop (1 row): TLS ÷ plaintext 1.45×, CPU per handshake RSA ÷ ECDSA 4.00×" in section
    page = to_html.render(run, results).decode()
    assert '<h2 id="what-tls-costs">What TLS costs</h2>' in page
    assert "<td class=\"num\">1.45×</td>" in page and "has no TLS [here]" in page
    assert "Nim&#x27;s asynchttpserver" in page  # escaped


def test_no_section_without_a_tls_workload(tmp_path) -> None:
    with Store(tmp_path / "r.db") as store:
        run_id = store.new_run({"servers": FP["servers"]}, {})
        store.record_cell(run_id, _cell("fast", "tfb-json", "c=256", 1, 1000, 1.0))
        store.finish_run(run_id, "finished")
        run, results = aggregate.load(store, run_id)
    assert tls_section.rows(results) == ([], []) and tls_section.markdown(results) == []
    assert "What TLS costs" not in to_markdown.render(run, results).decode()


def test_a_repetition_that_completed_no_handshake_has_no_handshake_p99() -> None:
    # loadgen reports 0 µs when nothing completed (c-epoll's tls-handshake before its fix): no latency, not 0
    from serverbench.rules import tlsfigures
    dead = _cell("stalled", "tls-handshake", "rsa", 1, 0, 1.0, key="rsa", handshakes=0, latencies=[0])
    dead.loadgen.model_extra["tls"]["handshake_histogram"] = None
    dead.metrics.tls["handshake_p99_us"] = 0.0
    assert tlsfigures.handshake_p99_us([dead]) is None
    live = _cell("fine", "tls-handshake", "rsa", 1, 10, 1.0, key="rsa", handshakes=10, latencies=[500, 900])
    live.loadgen.model_extra["tls"]["handshake_histogram"] = None
    assert tlsfigures.handshake_p99_us([live]) == 900.0
