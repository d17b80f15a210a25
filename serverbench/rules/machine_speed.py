"""Noise that can be explained (issue 49 item 5): whether the machine's own speed moved during a run,
and whether a cell's server CPUs lost time to steal, over model.py's `MachineSpeed` records (the
probes and steal processes/speed.py measured around each cell's measured run).

This VM's speed drifts by up to 2x over an hour (bench/machine_noise.py), and the rows' repetitions
spread by a median CV of 11 %: a reader told that the machine itself moved during the run knows
that figures measured at different times differ for that reason too. The rules, as data:
- SPEED_MOVED: the slowest cell's probe at least this far below the fastest cell's = the machine's
  speed moved (8 probes in a row on one CPU of the busy VM stayed within 5 % of each other, so a
  tenth is the machine, not the probe);
- STEAL_WARN_PERCENT: a repetition whose server CPUs lost at least this share of their time to the
  hypervisor carries a `steal` warning (a CPU-second of the server did less in that window).
"""
from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..model import CellRecord, MachineSpeed

SPEED_MOVED = 0.10
STEAL_WARN_PERCENT = 5.0
RULE = (f"the machine's speed moved: the slowest cell's CPU probe ran at least {SPEED_MOVED:.0%} below the "
        "fastest cell's (SHA-256 MiB per CPU-second, pinned to the server's CPUs, before and after each "
        "measured run)")


def cell_speed(m: MachineSpeed) -> float | None:
    """A cell's speed: the mean of its probes before and after the measured run (one alone when the
    other is missing; None without a probe)."""
    probes = [v for v in (m.speed_before_mib_s, m.speed_after_mib_s) if v]
    return statistics.fmean(probes) if probes else None


def _clock(iso: str | None) -> str:
    try:
        return datetime.fromisoformat(iso or "").strftime("%H:%M:%S")
    except ValueError:
        return "?"


def _name(c: CellRecord) -> str:
    return f"{c.server} {c.workload} {c.point} repetition {c.repetition}"


@dataclass(frozen=True)
class SpeedMoved:
    """The machine's speed moved during a run: by how much, and when (its slowest and fastest cells)."""

    drop: float  # 1 − slowest ÷ fastest
    slowest: float  # MiB per CPU-second
    fastest: float
    slowest_cell: str
    fastest_cell: str
    slowest_at: str  # the cell's start, HH:MM:SS
    fastest_at: str
    cells: int  # cells with a probe
    first_half: float  # the median speed of the cells that started in the run's first half …
    second_half: float  # … and of those in its second half

    def text(self) -> str:
        trend = self.second_half / self.first_half - 1 if self.first_half else 0.0
        return (f"The machine's own speed moved during this run: the slowest cell's CPU probe ran {self.drop:.0%} "
                f"below the fastest's ({self.slowest:,.0f} vs {self.fastest:,.0f} MiB per CPU-second; slowest at "
                f"{self.slowest_at}, {self.slowest_cell}; fastest at {self.fastest_at}, {self.fastest_cell}; "
                f"the second half of the run's {self.cells} cells ran {trend:+.0%} against the first). Figures "
                "measured at different times can differ by that much for this reason alone; each cell's probes "
                "are stored with it (speed_before_mib_s, speed_after_mib_s).")


def judge(cells: Sequence[CellRecord]) -> SpeedMoved | None:
    """SpeedMoved when the probes of a run's cells spread by SPEED_MOVED or more, else None (also with
    fewer than 2 cells probed: a run stored before the probes, or a server not on this machine)."""
    probed = sorted(((c, s) for c in cells if (s := cell_speed(c.metrics.speed)) is not None),
                    key=lambda cs: cs[0].started_at or "")
    if len(probed) < 2:
        return None
    slow = min(probed, key=lambda cs: cs[1])
    fast = max(probed, key=lambda cs: cs[1])
    drop = 1 - slow[1] / fast[1]
    if drop < SPEED_MOVED:
        return None
    half = len(probed) // 2
    return SpeedMoved(drop, slow[1], fast[1], _name(slow[0]), _name(fast[0]), _clock(slow[0].started_at),
                      _clock(fast[0].started_at), len(probed), statistics.median(s for _, s in probed[:half]),
                      statistics.median(s for _, s in probed[half:]))


def steal_warnings(cells: Sequence[CellRecord]) -> list[tuple[str, str, str]]:
    """(kind, severity, text): `steal` when a repetition's server CPUs lost STEAL_WARN_PERCENT or more of
    their time to the hypervisor during its measured run."""
    steal = [(c.repetition, s) for c in cells if (s := c.metrics.speed.steal_percent) is not None]
    high = [(rep, s) for rep, s in steal if s >= STEAL_WARN_PERCENT]
    if not high:
        return []
    shown = ", ".join(f"repetition {rep}: {s:.1f} %" for rep, s in high)
    return [("steal", "warning", f"steal — the hypervisor took the server's CPUs for ≥ {STEAL_WARN_PERCENT:g} % of "
             f"the measured run ({shown}; /proc/stat steal): those repetitions ran on a slower machine")]


__all__ = ["SPEED_MOVED", "STEAL_WARN_PERCENT", "RULE", "SpeedMoved", "cell_speed", "judge", "steal_warnings"]
