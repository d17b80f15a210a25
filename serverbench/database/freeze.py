"""A PostgreSQL frozen for a while, as a network stall leaves it: every one of its processes stopped
(SIGSTOP), its connections open and silent, then continued (SIGCONT). Run as a process of its own
(`python -m serverbench.database.freeze SECONDS POSTMASTER_PID`, started by `cluster.ManagedPostgres.freeze`)
so that nothing stays stopped whatever happens to the harness: the kernel sends it SIGTERM when the
harness dies (PR_SET_PDEATHSIG, set by its starter), and on SIGTERM it continues every process it
stopped at once. A stopped backend would never see its postmaster gone (the harness's death SIGKILLs the
postmaster), so without this it would stay, stopped, for good.

It prints `frozen` when every process is stopped and `thawed` when they are continued, one line each, for
the harness to time the outage by.
"""
from __future__ import annotations

import signal
import sys
import threading

import psutil

_stopped: list[psutil.Process] = []  # appended to and read by the main thread only (the handler runs there)


def _signal_all(sig: int) -> None:
    for p in _stopped:
        try:
            p.send_signal(sig)  # psutil checks the process's start time: a reused PID is left alone
        except psutil.Error:
            pass


def _thaw_and_exit(_signum: int, _frame: object) -> None:
    _signal_all(signal.SIGCONT)  # SIGCONT twice is harmless: no lock, which the handler could wait on forever
    sys.exit(0)


def freeze(seconds: float, postmaster: int) -> None:
    """Stop the postmaster first (it forks no new backend meanwhile), then its children; wait; continue
    them all."""
    signal.signal(signal.SIGTERM, _thaw_and_exit)
    root = psutil.Process(postmaster)
    _stopped.append(root)  # listed before it is stopped: a SIGTERM in between continues it
    root.send_signal(signal.SIGSTOP)
    for child in root.children(recursive=True):
        _stopped.append(child)
        try:
            child.send_signal(signal.SIGSTOP)
        except psutil.Error:
            pass
    print("frozen", flush=True)
    threading.Event().wait(seconds)
    _signal_all(signal.SIGCONT)
    print("thawed", flush=True)


if __name__ == "__main__":
    freeze(float(sys.argv[1]), int(sys.argv[2]))
