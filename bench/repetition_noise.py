#!/usr/bin/env python3
"""Where the spread between repetitions comes from (issue 35 item 3).

Runs one row's prantl-wrk through the harness itself (`serverbench run`, as `make bench` does: a fresh
start per repetition, warmed to steady, server on CPU 0, load on CPU 1) REPEAT times at each measured
window length in WINDOWS, alternating the windows round by round so a drift of the machine weighs on
both. Prints, per window: the median, the CV of the repetitions' requests/s, and the same over the
quiet repetitions only (other processes under QUIET % of a CPU on the server's CPU, the harness's own
`others_cpu_percent`), and the rank correlation between each repetition's rate and the other work
measured beside it. A CV that falls with the window says the window is too short; one that falls when
the disturbed repetitions are left out says the spread is other work on the machine.

Usage: .venv/bin/python bench/repetition_noise.py [ROW]   (default c-epoll)
Env: REPEAT (8), WINDOWS ("4s 8s"), QUIET (5), ROUNDS (2: each round runs REPEAT/ROUNDS per window).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from serverbench.store import Store  # noqa: E402


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Rank correlation (no ties handling beyond average ranks); None below 3 pairs."""
    if len(xs) < 3:
        return None

    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for k, i in enumerate(order):
            r[i] = float(k)
        return r
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return num / den if den else None


def cv(v: list[float]) -> float | None:
    return statistics.stdev(v) / statistics.mean(v) if len(v) > 1 and statistics.mean(v) else None


def run_round(row: str, window: str, n: int, db: Path) -> None:
    cmd = [str(ROOT / ".venv/bin/serverbench"), "run", "-s", row, "-w", "prantl-wrk", "--repeat", str(n),
           "--duration", window, "--db", str(db), "--allow-unverified"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)


def main() -> None:
    row = sys.argv[1] if len(sys.argv) > 1 else "c-epoll"
    repeat, rounds = int(os.environ.get("REPEAT", "8")), int(os.environ.get("ROUNDS", "2"))
    windows = os.environ.get("WINDOWS", "4s 8s").split()
    quiet = float(os.environ.get("QUIET", "5"))
    tmp = Path(tempfile.mkdtemp(prefix="repetition-noise-"))
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}; {row}, prantl-wrk, "
          f"{repeat} repetitions per window in {rounds} rounds")
    for r in range(rounds):
        for w in (windows if r % 2 == 0 else windows[::-1]):
            run_round(row, w, max(1, repeat // rounds), tmp / f"{w}.db")
    for w in windows:
        cells = [c for rid in range(1, rounds + 1) for c in Store(tmp / f"{w}.db").cells(rid) if c.status == "ok"
                 and not c.metrics.fixed_rate_of]
        rates = [float(c.metrics.counts.rps or 0) for c in cells]
        others = [float(c.metrics.over_time.others_cpu_percent or 0) for c in cells]
        calm = [r for r, o in zip(rates, others) if o < quiet]
        rho = spearman(rates, others)
        c_all, c_calm = cv(rates), cv(calm)
        print(f"window {w:>4}: n={len(rates)} median {statistics.median(rates):,.0f} req/s, CV "
              f"{c_all:.1%}" if c_all is not None else f"window {w}: too few repetitions", end="")
        print(f"; quiet only (others < {quiet:g} % CPU) n={len(calm)} CV "
              + (f"{c_calm:.1%}" if c_calm is not None else "—")
              + f"; rank correlation rate vs other work {rho:+.2f}" if rho is not None else "")
        print("   per repetition (req/s, others % CPU, steady after s): " + ", ".join(
            f"{r:,.0f}/{o:.0f}/{c.metrics.warmup.warmup_steady_s or 0:.0f}" for r, o, c in zip(rates, others, cells)))
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
