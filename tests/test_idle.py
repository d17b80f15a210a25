"""processes/idle.py: a server still working off a queue is waited for before an open-load window."""
from __future__ import annotations

import subprocess
import sys

from serverbench.processes import idle

SPIN = "import time, sys\nt = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < t: pass\ntime.sleep(60)"


def _spinner(seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", SPIN, str(seconds)])


def test_a_busy_tree_is_waited_for_until_it_goes_quiet() -> None:
    p = _spinner(1.0)
    try:
        waited, quiet = idle.wait_quiet([p.pid], limit_s=10)
        assert quiet and 0.5 <= waited <= 5.0, waited
        # now asleep: quiet at the first look or soon after (one look is LOOK_S; the limit is generous so a
        # loaded machine does not fail it, while a tree still counted busy would take the whole limit)
        waited, quiet = idle.wait_quiet([p.pid], limit_s=1)
        assert quiet and waited < 1.0, waited
    finally:
        p.kill()
        p.wait()


def test_a_tree_that_stays_busy_is_given_up_on_and_said_so() -> None:
    p = _spinner(60.0)
    try:
        waited, quiet = idle.wait_quiet([p.pid], limit_s=0.5)
        assert not quiet and waited >= 0.5
    finally:
        p.kill()
        p.wait()


def test_a_gone_process_is_quiet() -> None:
    p = _spinner(0.0)
    p.kill()
    p.wait()
    assert idle.wait_quiet([p.pid], limit_s=1)[1]
