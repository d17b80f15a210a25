"""What the runner reports while it measures; the CLI renders these (the runner prints nothing)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from ..model import CellRecord


@dataclass(frozen=True)
class RunStarted:
    run_id: int
    resumed: bool
    servers: int
    workloads: int
    repeat: int
    planned_s: float  # seconds of load at most (each warm-up to a steady rate at its longest)
    server_cpus: list[int]
    client_cpus: list[int]


@dataclass(frozen=True)
class CellStarted:
    """A (server, workload, point, repetition) is about to be measured (or its server started)."""

    what: str


@dataclass(frozen=True)
class CellFinished:
    cell: CellRecord
    advance_s: float  # planned seconds this cell accounted for (progress)


@dataclass(frozen=True)
class RepetitionEnded:
    """Every planned cell of repetition `repetition` (of `repeat`) is stored: a first answer can be read."""

    run_id: int
    repetition: int
    repeat: int


@dataclass(frozen=True)
class RunEnded:
    run_id: int
    status: str  # finished | interrupted | failed
    error: str | None
    ok: int
    failed: int
    skipped: int


Event = Union[RunStarted, CellStarted, CellFinished, RepetitionEnded, RunEnded]
Listener = Callable[[Event], None]


def ignore(_: Event) -> None:
    """The default listener: nothing to show."""
