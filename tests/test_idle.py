"""processes/idle.py: a server still working off a queue is waited for before an open-load window."""
from __future__ import annotations

import subprocess
import sys
import time

import psutil

from serverbench.processes import idle

# Two processes (the spinner and one child it forks) spin until the same moment, then sleep: the tree uses up
# to two CPUs, so it stays over QUIET_PERCENT of one while tests or builds beside it share the cores (one
# spinner under three busy loops on 2 cores got less than half a CPU and was taken for quiet).
SPIN = ("import os, sys, time\nt = time.monotonic() + float(sys.argv[1])\nos.fork()\n"
        "while time.monotonic() < t: pass\ntime.sleep(60)")


class _Tree:
    """The spinner and its child, started (the child forked: the spin is under way, and stop() knows both
    PIDs) and stopped by PID: the parent first, so the child, then init's, is reaped when killed."""

    def __init__(self, seconds: float) -> None:
        self.p = subprocess.Popen([sys.executable, "-c", SPIN, str(seconds)])
        self.pid = self.p.pid
        deadline = time.monotonic() + 10.0
        self.kids: list[psutil.Process] = []
        while not self.kids and time.monotonic() < deadline and self.p.poll() is None:
            time.sleep(0.005)
            self.kids = psutil.Process(self.pid).children()
        if not self.kids:
            self.stop()
            raise AssertionError("the spinner forked no child within 10 s")

    def stop(self) -> None:
        self.p.kill()
        self.p.wait()
        for k in self.kids:
            try:
                k.kill()
                k.wait(5)
            except psutil.Error:
                pass


def test_a_busy_tree_is_waited_for_until_it_goes_quiet() -> None:
    p = _Tree(1.0)
    try:
        # the spin ends 1 s after the spinner started, by its own clock: a wait under 0.5 s would be a busy
        # tree taken for quiet (the point of this test), one over 5 s a quiet tree still counted busy
        waited, quiet = idle.wait_quiet([p.pid], limit_s=10)
        assert quiet and 0.5 <= waited <= 5.0, waited
        # now asleep: quiet, which wait_quiet says only from a quiet look (a tree still counted busy would
        # end at the limit with quiet=False); how long that took is a timing and is not asserted
        waited, quiet = idle.wait_quiet([p.pid], limit_s=1)
        assert quiet, waited
    finally:
        p.stop()


def test_a_tree_that_stays_busy_is_given_up_on_and_said_so() -> None:
    p = _Tree(60.0)
    try:
        waited, quiet = idle.wait_quiet([p.pid], limit_s=0.5)
        assert not quiet and waited >= 0.5
    finally:
        p.stop()


def test_a_gone_process_is_quiet() -> None:
    p = _Tree(0.0)
    p.stop()
    assert idle.wait_quiet([p.pid], limit_s=1)[1]
