"""Process-tree sampling: CPU of children (also exited ones), RSS, threads, processes."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import psutil
import pytest

from serverbench.sampler import Sampler, Usage

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
    s = Sampler(p.pid).start()
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
                      "ctx_voluntary", "ctx_involuntary", "processes_peak"}


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
    u = Sampler(p.pid).start().stop()
    assert (u.processes_peak, u.rss_peak_bytes, u.cpu_user_s) == (0, 0, 0.0)
    with pytest.raises(RuntimeError, match="before start"):
        Sampler(p.pid).stop()
    s = Sampler(p.pid).start()
    with pytest.raises(RuntimeError, match="called twice"):
        s.start()
    s.stop()
