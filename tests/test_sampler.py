"""Process-tree sampling: CPU of children (also exited ones), RSS, threads, processes; the per-second
series, a root process that dies mid-run, and the RSS limit (memory watchdog)."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import psutil
import pytest

from serverbench.processes.sampler import CPUS_COLUMN, SERIES_COLUMNS, Sampler, Usage
from serverbench.run.measure import SAMPLE_INTERVAL

from conftest import LIFECYCLE, wait_all_gone


def read_line(p: subprocess.Popen, timeout: float = 30.0) -> str:
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    assert ready, "fixture printed nothing in time"
    return p.stdout.readline().decode().strip()


@pytest.fixture
def burner():
    procs: list[subprocess.Popen] = []
    children: dict[int, list[int]] = {}

    def start(*args: str) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, str(LIFECYCLE / "burn.py"), *args],
                             stdout=subprocess.PIPE, start_new_session=True)
        procs.append(p)
        assert read_line(p) == "started"
        children[p.pid] = [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
        return p
    yield start
    for p in procs:  # kill the whole group: a burning child must not outlive the test
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        assert wait_all_gone(children[p.pid]) == []


def test_child_cpu_is_counted_even_after_it_exits(burner) -> None:
    """The root sleeps; all CPU is its child's, which exits before stop()."""
    p = burner("0.45")
    s = Sampler(p.pid, interval=SAMPLE_INTERVAL).start()
    child_cpu = float(read_line(p).removeprefix("child_cpu="))
    assert read_line(p) == "done"  # the child has exited
    u = s.stop()
    assert u.cpu_user_s > 0.3
    # what the child reported using, less what it had used before start(); the parent idles
    assert u.cpu_user_s + u.cpu_sys_s <= child_cpu + 0.15
    assert u.processes_peak == 2
    assert u.rss_peak_bytes > 1_000_000 and 0 < u.rss_mean_bytes <= u.rss_peak_bytes
    assert u.threads_peak >= 2
    assert u.samples >= 5
    assert u.ctx_voluntary >= 0 and u.ctx_involuntary >= 0
    assert u.cpu_percent_mean == pytest.approx(
        100 * (u.cpu_user_s + u.cpu_sys_s) / u.duration_s)


def test_live_burner_over_half_a_second(burner) -> None:
    p = burner("0", "--stay")
    with Sampler(p.pid, interval=0.05) as s:
        time.sleep(0.5)
    u = s.usage
    assert isinstance(u, Usage)
    assert 0.45 <= u.duration_s < 1.5
    # one burning process: at most one CPU, and on a busy machine still a visible share
    assert 0.05 < u.cpu_user_s + u.cpu_sys_s <= u.duration_s * 1.1 + 0.05
    assert 5 < u.cpu_percent_mean <= 115
    assert u.cpu_percent_peak >= u.cpu_percent_mean * 0.8
    assert u.processes_peak == 2
    d = u.to_dict()
    assert set(d) == {"duration_s", "samples", "cpu_user_s", "cpu_sys_s", "cpu_percent_mean",
                      "cpu_percent_peak", "rss_peak_bytes", "rss_mean_bytes", "threads_peak",
                      "ctx_voluntary", "ctx_involuntary", "processes_peak", "series", "died_at_s",
                      "rss_limit_hit_s"}
    assert u.died_at_s is None and u.rss_limit_hit_s is None


def test_idle_process_uses_almost_nothing() -> None:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.2)
        s = Sampler(p.pid, interval=0.02).start()
        time.sleep(0.3)
        u = s.stop()
    finally:
        p.kill()
        p.wait()
    assert u.cpu_user_s + u.cpu_sys_s < 0.05
    assert u.processes_peak == 1 and u.rss_peak_bytes > 0


def test_vanished_process_and_misuse() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    u = Sampler(p.pid, interval=SAMPLE_INTERVAL).start().stop()
    assert (u.processes_peak, u.rss_peak_bytes, u.cpu_user_s) == (0, 0, 0.0)
    assert u.died_at_s == 0.0  # gone before the first sample
    with pytest.raises(RuntimeError, match="before start"):
        Sampler(p.pid, interval=SAMPLE_INTERVAL).stop()
    s = Sampler(p.pid, interval=SAMPLE_INTERVAL).start()
    with pytest.raises(RuntimeError, match="called twice"):
        s.start()
    s.stop()


@pytest.fixture
def grower():
    procs: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, str(LIFECYCLE / "grow.py"), *args], stdout=subprocess.PIPE)
        procs.append(p)
        assert read_line(p) == "started"
        return p
    yield start
    for p in procs:
        p.kill()
        p.wait()


def _rows(u: Usage) -> list[dict]:
    assert u.series["columns"][: len(SERIES_COLUMNS)] == list(SERIES_COLUMNS)
    return [dict(zip(u.series["columns"], r)) for r in u.series["rows"]]


def test_per_second_series_follows_a_growing_server(grower) -> None:
    """8 MiB more every 0.2 s: each second's row holds about 40 MiB more than the one before."""
    p = grower("8")
    s = Sampler(p.pid, interval=SAMPLE_INTERVAL, cpus=sorted(os.sched_getaffinity(0))).start()
    time.sleep(3.3)
    u = s.stop()
    rows = _rows(u)
    assert abs(u.series["started_unix"] - time.time()) < 10
    assert len(rows) == 4  # three whole seconds and the last, partial one
    assert [round(r["t_s"]) for r in rows[:3]] == [1, 2, 3]
    assert all(0.7 <= r["dt_s"] <= 1.3 for r in rows[:3])
    assert 0 < rows[-1]["dt_s"] < 0.7
    assert sum(r["dt_s"] for r in rows) == pytest.approx(u.duration_s, abs=0.05)
    growth = [(b["rss_bytes"] - a["rss_bytes"]) / 2**20 for a, b in zip(rows[:3], rows[1:3])]
    assert all(20 < g < 60 for g in growth), growth  # 40 MiB a second, give or take a sample
    assert rows[-1]["rss_bytes"] == u.rss_peak_bytes
    assert all(r["processes"] == 1 and r["threads"] >= 1 for r in rows)
    # the rows split the totals between them
    assert sum(r["cpu_user_s"] + r["cpu_sys_s"] for r in rows) == pytest.approx(u.cpu_user_s + u.cpu_sys_s, abs=0.02)
    assert sum(r["ctx_voluntary"] for r in rows) == u.ctx_voluntary
    # other processes' CPU on the server's CPUs: a column of its own, never negative
    assert all(r[CPUS_COLUMN] >= 0 for r in rows) and u.series["columns"][-1] == CPUS_COLUMN


def test_a_server_that_exits_mid_run_is_recorded_with_the_time_it_died(grower) -> None:
    p = grower("4", "--exit-after", "1.2")
    s = Sampler(p.pid, interval=SAMPLE_INTERVAL).start()
    time.sleep(2.6)
    u = s.stop()  # p is our child: a zombie until reaped, which the sampler counts as gone
    assert p.poll() == 7
    assert u.died_at_s is not None and 1.0 <= u.died_at_s <= 1.2 + 0.2 + 0.3  # within a sample (+ start-up)
    rows = _rows(u)
    assert rows[0]["processes"] == 1 and rows[0]["rss_bytes"] > 0
    assert rows[-1]["processes"] == 0 and rows[-1]["rss_bytes"] == 0
    assert u.processes_peak == 1


def test_rss_limit_calls_back_once_when_the_tree_passes_it(grower) -> None:
    p = grower("10")
    base = psutil.Process(p.pid).memory_info().rss
    hits: list[int] = []

    def kill(rss: int) -> None:
        hits.append(rss)
        p.kill()
    s = Sampler(p.pid, interval=SAMPLE_INTERVAL, rss_limit=base + 30 * 2**20, on_rss_limit=kill).start()
    time.sleep(2.5)
    u = s.stop()
    assert len(hits) == 1 and hits[0] > base + 30 * 2**20
    # 10 MiB per 0.2 s: the limit is passed after about 0.6 s, seen at the next sample
    assert u.rss_limit_hit_s is not None and 0.4 <= u.rss_limit_hit_s <= 1.6
    assert u.died_at_s is not None and u.rss_limit_hit_s <= u.died_at_s <= u.rss_limit_hit_s + 0.5


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_other_processes_are_counted_on_the_server_cpus_only(grower) -> None:
    """A busy loop pinned to the server's CPU is another process's CPU there (about one CPU's worth
    a second); the same loop pinned to the other CPU is not."""
    cpus = sorted(os.sched_getaffinity(0))
    loop = "import time\nt = time.time()\nwhile time.time() - t < 2.6: pass"
    p = grower("0")  # the "server": idle, pinned to the first CPU below
    os.sched_setaffinity(p.pid, {cpus[0]})
    shares = {}
    for where in (cpus[0], cpus[1]):
        s = Sampler(p.pid, interval=SAMPLE_INTERVAL, cpus=[cpus[0]]).start()
        busy = subprocess.Popen(["taskset", "-c", str(where), sys.executable, "-c", loop])
        try:
            busy.wait(10)
        finally:
            busy.kill()
            busy.wait()
        u = s.stop()
        rows = _rows(u)[:2]  # whole seconds while the loop ran
        shares[where] = [r[CPUS_COLUMN] / r["dt_s"] for r in rows]
    assert all(0.6 <= x <= 1.1 for x in shares[cpus[0]]), shares
    assert all(x <= 0.15 for x in shares[cpus[1]]), shares
