"""The CPU outlier rule (issue 27): a row whose server CPU per successful request is far above its
runtime family's is either explained in its server.toml or an open defect the report must name.

At each point of a run, a row is compared with the median of the *other* rows of its runtime family
(JVM, BEAM, V8/JS, CPython, native, …); alone in its family, with the median of every other row.
Past FACTOR times that median it gets a finding: a warning when its manifest has no `explanation`,
an info note quoting the explanation when it has one. The family is derived from the manifest's
language and runtime, which the run's fingerprint stores, so a stored run is judged the same later.
"""
from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

FACTOR = 5.0  # how many times the peers' median CPU per request a row may use before it is flagged

# language (lower case) → runtime family: rows that share a VM or an interpreter cost alike
_FAMILY_BY_LANGUAGE: dict[str, str] = {
    "java": "JVM", "kotlin": "JVM", "scala": "JVM", "clojure": "JVM", "groovy": "JVM",
    "erlang": "BEAM", "elixir": "BEAM", "gleam": "BEAM",
    "javascript": "V8/JS", "typescript": "V8/JS",
    "python": "CPython",
    "c": "native", "c++": "native", "rust": "native", "go": "native", "crystal": "native",
    "nim": "native", "zig": "native", "d": "native",
}


def family(info: Mapping[str, Any]) -> str:
    """The runtime family of a row from its fingerprint entry (language, runtime)."""
    language = str(info.get("language") or "").strip().lower()
    runtime = str(info.get("runtime") or "").lower()
    if language == "python" and "pypy" in runtime:
        return "PyPy"  # a JIT, not the CPython interpreter
    return _FAMILY_BY_LANGUAGE.get(language, info.get("language") or "unknown")


class Row(Protocol):
    """What the rule needs of a group (aggregate.Group has these)."""

    server: str
    info: dict[str, Any]

    @property
    def cpu_us_per_request(self) -> float | None: ...


@dataclass(frozen=True)
class Finding:
    server: str
    cpu_us: float  # this row's server CPU per successful request
    median_us: float  # its peers' median
    peers: str  # "the JVM rows'" or "the field's"
    explanation: str  # from the manifest ("" = none: an open defect)

    @property
    def ratio(self) -> float:
        return self.cpu_us / self.median_us

    @property
    def severity(self) -> Literal["info", "warning"]:
        return "info" if self.explanation else "warning"

    @property
    def kind(self) -> str:
        return "cpu-explained" if self.explanation else "cpu-outlier"

    def text(self) -> str:
        """Without the server's name (the group's warning adds it)."""
        head = (f"{self.cpu_us:,.0f} µs CPU per request, {self.ratio:.0f}× {self.peers} median "
                f"({self.median_us:,.0f} µs)")
        where = f"servers/{self.server}/server.toml"
        if self.explanation:
            return f"{head}; explained in {where}: {self.explanation}"
        return f"{head}: see {where} — no explanation there, an open defect"


def judge(rows: Iterable[Row]) -> list[Finding]:
    """The findings among one point's rows (rows without a CPU figure take no part)."""
    measured = [(r, r.cpu_us_per_request) for r in rows]
    measured = [(r, cpu) for r, cpu in measured if cpu is not None and cpu > 0]
    out = []
    for row, cpu in measured:
        fam = family(row.info)
        kin = [c for r, c in measured if r is not row and family(r.info) == fam]
        peers = kin or [c for r, c in measured if r is not row]
        if not peers:
            continue
        median = statistics.median(peers)
        if cpu > FACTOR * median:
            label = f"the {fam} rows'" if kin else "the field's"
            out.append(Finding(row.server, cpu, median, label, str(row.info.get("explanation") or "").strip()))
    return out
