"""The workload kinds, once: what each kind is ranked by and which rules apply to it. Every rule that
depends on a workload's kind (the warm-up, the ranking, the client-bound block, the over-time
verdicts and tables) reads the sets below instead of a tuple of its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["throughput", "fixed-load", "capacity", "sweep", "overload", "soak", "cores", "noisy", "db-outage",
               "head-of-line"]


@dataclass(frozen=True)
class KindRules:
    """Which rules a workload kind follows."""

    # judged second by second (a ramp past capacity, a long steady load): the workload keeps its own
    # shape, so no steady warm-up; a crash is a finding (the verdict says "crashes"), not a failure
    over_time: bool = False
    # demand is fixed: every row that keeps up answers the same requests/s, so rows rank by p99
    fixed_demand: bool = False
    # ranked by a p99 (over every due request, or soak's worst second) rather than by requests/s
    by_p99: bool = False
    # a closed load whose top rows can be limited by the load generator: a client-bound block can form
    client_bound: bool = False
    # each point a fresh server start (what one point did to the row must not carry into the next)
    start_per_point: bool = False
    # a disturbed point beside its quiet twin (the same load in the same start): ratios and a verdict
    twinned: bool = False
    # failures and a fallen rate are what the workload measures (its verdict says them): not a warning,
    # not "degraded" or "did not hold" beside it
    failures_measured: bool = False


KINDS: dict[str, KindRules] = {
    "throughput": KindRules(client_bound=True),
    "fixed-load": KindRules(fixed_demand=True, by_p99=True),
    "capacity": KindRules(),
    "sweep": KindRules(client_bound=True),
    "overload": KindRules(over_time=True),
    "soak": KindRules(over_time=True, by_p99=True),
    "cores": KindRules(client_bound=True),
    "noisy": KindRules(fixed_demand=True, by_p99=True, twinned=True),
    "db-outage": KindRules(over_time=True, start_per_point=True, failures_measured=True),
    "head-of-line": KindRules(fixed_demand=True, by_p99=True, twinned=True),
}


def _having(rule: str) -> tuple[str, ...]:
    return tuple(name for name, rules in KINDS.items() if getattr(rules, rule))


OVER_TIME = _having("over_time")  # ("overload", "soak", "db-outage")
FIXED_DEMAND = _having("fixed_demand")  # ("fixed-load", "noisy", "head-of-line")
P99_KINDS = _having("by_p99")  # ("fixed-load", "soak", "noisy", "head-of-line")
TWINNED = _having("twinned")  # ("noisy", "head-of-line")
FAILURES_MEASURED = _having("failures_measured")  # ("db-outage",)
CLIENT_BOUND_KINDS = _having("client_bound")  # ("throughput", "sweep", "cores")

# What each kind ranks by, and why that metric fits it (shown with every ranking).
RANKED_BY: dict[str, tuple[str, str]] = {
    "throughput": ("successful requests/s",
                   "the load is closed (each connection waits for its answer), so a faster server answers "
                   "more; cells with more than 1 % errors rank after the clean ones"),
    "fixed-load": ("p99 over every due request, then timeouts, then server CPU per request (rows that did not "
                   "hold the rate after, by the rate they answered)",
                   "demand is fixed, so every server that keeps up answers the same requests/s; what differs "
                   "is how long requests wait (timed-out and unanswered ones count at their age) and what "
                   "the answers cost"),
    "capacity": ("the highest offered rate held with p99 under the limit",
                 "open load stepped up until latency breaks: the rate a server sustains, not a race"),
    "sweep": ("successful requests/s at each concurrency level",
              "closed load at rising connection counts shows where each model stops scaling"),
    "overload": ("peak successful responses/s, with the overload verdict beside it",
                 "demand ramps past every row's capacity, as in Stressgrid: the peak says how far a row got, "
                 "the verdict (holds, sheds, slows, degrades, crashes) what it did beyond it — neither alone "
                 "describes a row"),
    "soak": ("the worst one-second p99, then the spread of the per-second p99s",
             "a fixed rate every row can hold, for minutes: rows answer the same requests/s, so what tells "
             "them apart is the pauses (garbage collection, compaction) that show as single bad seconds"),
    "cores": ("successful requests/s at the most server cores measured on CPUs of its own, the speedup over "
              "1 core beside it",
              "the same closed load at 1, 2, 4 … server CPUs, each a fresh start: the highest count at which the "
              "server did not share a CPU with the load generator is the most of the machine a row could use "
              "cleanly, and the speedup says how well its model turned cores into answers; each point's own "
              "table ranks by requests/s at that count"),
    "head-of-line": ("the light requests' p99 over every due request, then their successful rate, then server CPU "
                     "per request",
                     "the light demand is fixed and the same for every row; heavy requests that compute (gzip of 1 MiB) "
                     "are mixed in at a small fixed share on connections of their own, and what differs is how long the "
                     "light ones wait behind them: each heavy point is also shown as a ratio of its quiet twin (the "
                     "same light load alone, in the same start), with a verdict"),
    "db-outage": ("the verdict (recovers, recovers slowly, stays broken, crashes), then the seconds from the "
                  "database being back to the rate before the outage, then the requests that failed",
                  "the same fixed rate for every row on /db while the harness restarts or freezes PostgreSQL: "
                  "what tells rows apart is not speed but whether and how fast their driver and pool come back, "
                  "and whether they answer errors at once or leave requests hanging meanwhile"),
    # not a workload's kind: the fixed-rate step that orders a throughput point's client-bound block or
    # top tie (run/fixed_rate.py) stores its cells as a point of this kind beside the point it orders
    "efficiency": ("server CPU per successful request at one common fixed rate, p99 beside it",
                   "requests/s could not order these rows (each served more than the load generator could ask "
                   "on this machine, or their rates were within the repetitions' noise); at one rate every row "
                   "holds, what a request costs the server tells them apart, and 1 ÷ that cost projects each "
                   "one's capacity"),
    "noisy": ("the legitimate traffic's p99 over every due request, then its successful rate, then server CPU "
              "per legitimate request",
              "the legitimate demand is fixed and the same for every row, as in fixed-load; what differs is what "
              "the bad clients beside it cost the good ones. Each noise point is also shown as a ratio of its quiet "
              "twin (the same load in the same start, no noise), with a verdict"),
}


__all__ = ["Kind", "KindRules", "KINDS", "OVER_TIME", "FIXED_DEMAND", "P99_KINDS", "CLIENT_BOUND_KINDS", "TWINNED",
           "FAILURES_MEASURED",
           "RANKED_BY"]
