"""A killed harness leaves nothing behind: neither the server nor the loadgen of the cell in flight."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from serverbench import paths
from serverbench.store import Store

CHILD = Path(__file__).parent / "fixtures" / "lifecycle" / "run_child.py"
LOADGEN = paths.loadgen_binary()


def _wait_for_cell(h: subprocess.Popen, timeout: float = 30.0) -> list[psutil.Process]:
    """The harness's descendants once both the server and a measuring loadgen run."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert h.poll() is None, "the harness ended before its cell started"
        kids = psutil.Process(h.pid).children(recursive=True)
        names = set()
        for k in kids:
            try:
                names.add(k.name())
            except psutil.Error:
                pass
        if "loadgen" in names and any("python" in n for n in names):
            return kids
        time.sleep(0.1)
    raise AssertionError("no loadgen and server appeared under the harness")


def _gone(procs: list[psutil.Process], timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    left = procs
    while time.monotonic() < deadline:
        left = [p for p in left if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not left:
            return []
        time.sleep(0.1)
    return [f"{p.pid} {p.name()}" for p in left]


@pytest.mark.skipif(not LOADGEN.is_file(), reason=f"needs the loadgen binary ({LOADGEN}); `make loadgen`")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killed_harness_leaves_no_loadgen_and_no_server(tmp_path: Path, sig: int) -> None:
    db = tmp_path / "r.db"
    h = subprocess.Popen([sys.executable, str(CHILD), str(db), str(tmp_path / "logs")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        kids = _wait_for_cell(h)
        time.sleep(0.5)  # into the measured run
        os.kill(h.pid, sig)
        h.wait(15)
        left = _gone(kids)
        assert left == [], f"still running after {signal.Signals(sig).name} of the harness: {left}"
        if sig == signal.SIGTERM:
            run = Store(db).run(1)
            assert run.status == "interrupted"
    finally:
        if h.poll() is None:
            h.kill()
            h.wait(5)
        for p in psutil.Process().children(recursive=True):  # nothing of ours may survive a failure
            if p.pid != h.pid:
                p.kill()
