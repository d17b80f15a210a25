"""What a real database changes (issue 37, item 7), shared by Markdown and HTML: for the rows a run
measured both under `stressgrid` (a sleep standing in for the backend, as Stressgrid's study did) and
under a db workload, their order in each, and which rows moved. Orders are taken among the rows both
have (place 1..k in each), from the ranked groups the report already shows; a row without a result
in either is left out. Reads stored results only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SLEEP_WORKLOAD = "stressgrid"
DB_WORKLOADS = ("tfb-db", "tfb-fortunes", "tfb-queries", "tfb-updates")
HEADERS = ["server", "model", "under stressgrid (sleep)", "under the database", "moved"]
NOTE = ("Stressgrid modelled its backend as a sleep; here the same rows wait on a real PostgreSQL through their "
        "own driver and pool. Places are among the rows measured on both (1 = best); a move up means the "
        "database suits that model better than the sleep predicted.")


@dataclass(frozen=True)
class Move:
    server: str
    model: str
    sleep_place: int
    db_place: int

    @property
    def moved(self) -> str:
        d = self.sleep_place - self.db_place
        return "—" if d == 0 else (f"up {d}" if d > 0 else f"down {-d}")


@dataclass(frozen=True)
class Comparison:
    workload: str
    point: str
    moves: list[Move]

    @property
    def title(self) -> str:
        return f"{SLEEP_WORKLOAD} beside {self.workload} · {self.point}"

    @property
    def kendall_tau(self) -> float | None:
        """Agreement of the two orders: 1 the same, -1 reversed (Kendall's tau, no ties by construction)."""
        n = len(self.moves)
        if n < 2:
            return None
        pairs = [(a, b) for i, a in enumerate(self.moves) for b in self.moves[i + 1:]]
        agree = sum(1 if (a.sleep_place - b.sleep_place) * (a.db_place - b.db_place) > 0 else -1 for a, b in pairs)
        return agree / len(pairs)


def _order(groups: list[Any]) -> list[Any]:
    return [g for g in groups if g.throughput is not None and g.place is not None]


def comparisons(results: Any) -> list[Comparison]:
    """One comparison per point of each db workload in the run, when it shares two rows with stressgrid."""
    by_name = {w.name: w for w in results.workloads}
    sleep = by_name.get(SLEEP_WORKLOAD)
    if sleep is None or not sleep.points:
        return []
    sleep_order = _order(sleep.points[0].groups)
    out = []
    for name in DB_WORKLOADS:
        for pt in (by_name[name].points if name in by_name else []):
            db_order = _order(pt.groups)
            common = {g.server for g in sleep_order} & {g.server for g in db_order}
            if len(common) < 2:
                continue
            s_rank = {g.server: i + 1 for i, g in enumerate(x for x in sleep_order if x.server in common)}
            d_rank = {g.server: i + 1 for i, g in enumerate(x for x in db_order if x.server in common)}
            models = {g.server: g.model for g in db_order}
            moves = sorted((Move(s, models[s], s_rank[s], d_rank[s]) for s in common), key=lambda m: m.db_place)
            out.append(Comparison(name, pt.label, moves))
    return out


def cells(m: Move) -> list[str]:
    return [m.server, m.model, str(m.sleep_place), str(m.db_place), m.moved]


def summary(c: Comparison) -> str:
    tau = c.kendall_tau
    movers = [f"{m.server} ({m.model}) {m.moved}" for m in c.moves if m.sleep_place != m.db_place]
    agree = f"the orders agree with Kendall's tau {tau:+.2f}" if tau is not None else ""
    return (agree + ("; moved: " + ", ".join(movers) if movers else "; no row moved")) + "."
