"""Run one tool invocation pinned to the client CPUs, bounded in time, with its own CPU time.

Like loadgen.py: the tool runs under `taskset`, dies with the harness (PDEATHSIG), and its CPU
time is the rusage `os.wait4` returns for it (its reaped children included). It runs in its own
session so that a tool past its deadline is stopped as a whole group, by its pid.
"""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..processes.sampler import Sampler
from ..processes.supervisor import die_with_parent, pinned
from ..run.measure import SAMPLE_INTERVAL
from ..rules.saturation import saturated
from .translate import Invocation

MAX_FILE_BYTES = 4 << 20  # result files larger than this are not kept (Locust's history, say)
# k6 would otherwise report usage to its vendor; nothing here leaves the machine
TOOL_ENV = {"K6_NO_USAGE_REPORT": "true"}


@dataclass
class ToolOutput:
    """One tool run: what it printed and wrote, and what its client used (a `Load` of run/measure.py)."""

    stdout: str
    stderr: str
    files: dict[str, str] = field(default_factory=dict)  # what the tool wrote into its directory
    exit_code: int | None = None  # None: killed at the deadline
    wall_s: float = 0.0
    cpu_s: float = 0.0
    argv: list[str] = field(default_factory=list)  # the command as run, pinning excluded
    cpu_peak_percent: float | None = None  # the tool's busiest sampling interval, 100 = one core
    cores: int = 1  # cores the tool could use (its invocation's): the saturation denominator

    @property
    def killed(self) -> bool:
        return self.exit_code is None

    @property
    def client_cpu_percent(self) -> float:
        return 100.0 * self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def client_saturated(self) -> bool:
        return saturated(self.client_cpu_percent, self.cores)


def _stop_group(pid: int) -> float | None:
    """SIGTERM the tool's process group, SIGKILL after 2 s; reaps the tool and returns its CPU
    seconds (None when it could not be reaped in time). Bounded."""
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)  # start_new_session: the tool's pid is its group id
        except (ProcessLookupError, PermissionError):
            pass
        end = time.monotonic() + wait
        while time.monotonic() < end:
            try:
                done, _, ru = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if done:
                return ru.ru_utime + ru.ru_stime
            time.sleep(0.02)
    return None


def run_tool(exe: Path, inv: Invocation, client_cpus: list[int] | None) -> ToolOutput:
    """Run `exe` with the invocation's arguments and files; never longer than `inv.limit_s`."""
    with tempfile.TemporaryDirectory(prefix=f"serverbench-{inv.tool}-") as tmp:
        d = Path(tmp)
        for name, content in inv.files.items():
            (d / name).write_text(content.replace("{dir}", tmp))
        argv = [str(exe), *(a.replace("{dir}", tmp) for a in inv.args)]
        out_f, err_f = open(d / ".stdout", "w+b"), open(d / ".stderr", "w+b")
        parent = os.getpid()
        t0 = time.monotonic()
        proc = subprocess.Popen(pinned(argv, client_cpus), cwd=tmp, stdin=subprocess.DEVNULL, stdout=out_f,
                                stderr=err_f, env={**os.environ, **TOOL_ENV}, start_new_session=True,
                                preexec_fn=lambda: die_with_parent(parent, signal.SIGKILL))
        code: int | None = None
        cpu = 0.0
        reaped = False
        sampler = Sampler(proc.pid, interval=SAMPLE_INTERVAL).start()
        try:
            while True:
                pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    reaped = True
                    code = os.waitstatus_to_exitcode(status)
                    cpu = ru.ru_utime + ru.ru_stime
                    break
                if time.monotonic() - t0 > inv.limit_s:
                    break
                time.sleep(0.02)
        finally:
            peak = sampler.stop().cpu_percent_peak
            if not reaped:
                # past the deadline, Ctrl-C or any error: never leave the tool running
                cpu = _stop_group(proc.pid) or 0.0
            proc.returncode = 0  # reaped by wait4; keep Popen from touching the pid again
        wall = time.monotonic() - t0
        out_f.seek(0)
        err_f.seek(0)
        stdout, stderr = out_f.read().decode(errors="replace"), err_f.read().decode(errors="replace")
        out_f.close()
        err_f.close()
        files = {}
        for f in d.iterdir():
            if f.name.startswith(".") or f.name in inv.files or not f.is_file():
                continue
            if f.stat().st_size <= MAX_FILE_BYTES:
                files[f.name] = f.read_text(errors="replace")
        shown = [a.replace("{dir}", "$DIR") for a in inv.args]
    return ToolOutput(stdout, stderr, files, code, wall, cpu, [inv.tool, *shown], round(peak, 1), inv.cores)


__all__ = ["run_tool", "ToolOutput"]
