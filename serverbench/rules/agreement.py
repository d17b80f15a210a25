"""When a row's repetitions agree on a verdict (issue 49). The overload verdict (overtime/overload.py) and
the noisy verdict (results/noisy.py) are judged per repetition; the row's verdict is the one its judged
repetitions all gave, or *split*, with how many gave each ("sheds 2 of 3, slows 1").

Never the majority's: two repetitions against one is what the next run reverses. `make seeds` answered
Stressgrid's Erlang claim "no" on one machine and "partly" on another from the same 3 repetitions'
rule, erlang-mochiweb shedding in two of them and slowing in the third: a verdict the repetitions
disagree on is not a verdict, and a claim built on it is not settled by the run (seeds/claims.py).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

SPLIT = "split"
# The share of a row's judged repetitions that must give one verdict for it to be the row's verdict.
# 1.0: all of them. Anything lower lets a majority speak for the row, which is what issue 49 refuses.
AGREEING_SHARE = 1.0
RULE = ("A row's verdict is the one all of its judged repetitions gave; where they differ it is split, with how "
        "many gave each (\"sheds 2 of 3, slows 1\"), never the most common one: more repetitions or a longer run "
        "settle it.")


@dataclass(frozen=True)
class Agreement:
    """What a row's repetitions said: the verdict (the agreed one, SPLIT, or None when no repetition was
    judged) and each verdict with how many repetitions gave it, the most given first."""

    verdict: str | None
    counts: tuple[tuple[str, int], ...] = ()

    @property
    def judged(self) -> int:
        """How many repetitions gave a verdict."""
        return sum(n for _, n in self.counts)

    @property
    def split(self) -> bool:
        return self.verdict == SPLIT

    def text(self) -> str | None:
        """'sheds 2 of 3, slows 1' (the most given first, with the number judged), None when none was."""
        if not self.counts:
            return None
        (first, n), rest = self.counts[0], self.counts[1:]
        return ", ".join([f"{first} {n} of {self.judged}"] + [f"{v} {k}" for v, k in rest])


def agree(verdicts: Iterable[str | None], order: Sequence[str] = ()) -> Agreement:
    """The row's verdict from its repetitions' (None: a repetition that could not be judged, left out).
    `order`: the verdicts' order (a rule table's), which breaks ties in the counts' order."""
    counts = Counter(v for v in verdicts if v)
    if not counts:
        return Agreement(None)
    rank = {v: i for i, v in enumerate(order)}
    ranked = tuple(sorted(counts.items(), key=lambda vn: (-vn[1], rank.get(vn[0], len(rank)), vn[0])))
    top, n = ranked[0]
    judged = sum(counts.values())
    return Agreement(top if n >= AGREEING_SHARE * judged else SPLIT, ranked)


__all__ = ["Agreement", "agree", "SPLIT", "AGREEING_SHARE", "RULE"]
