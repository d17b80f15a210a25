"""What each conformance check protects, and what a row's verdict lets it run.

Three kinds (SPEC.md, "Check kinds"):
  measurement  a failure corrupts any measurement (wrong bodies, framing, keep-alive, …): the row is
               refused by every workload, as before (`--allow-unverified` overrides);
  feature      a failure corrupts only loads that use one feature (pipelining, HTTP/1.0, db): the row is
               left out of exactly the workloads and cross-check tools that use it;
  robustness   input no workload sends (garbled requests, smuggling shapes): a failure is a
               deviation, shown to the reader, never a reason to leave the row out.
The kind is looked up by check name when a verdict is read, so verdicts stored before kinds
existed read the same way (a name not listed here counts as measurement: the safe side).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["measurement", "feature", "robustness"]


@dataclass(frozen=True)
class CheckKind:
    kind: Kind
    feature: str | None = None  # the workload feature a feature check protects
    security: bool = False  # a robustness check whose failure is a security hole


MEASUREMENT = CheckKind("measurement")
KINDS: dict[str, CheckKind] = {
    **{name: MEASUREMENT for name in (
        "root", "json", "file", "delay", "delay-cpu", "tenth", "echo", "date", "not-found", "method",
        "keepalive", "connection-close", "split", "idle-connections", "starts", "sigterm")},
    "http10": CheckKind("feature", feature="http10"),
    "pipeline": CheckKind("feature", feature="pipelining"),
    # The database endpoints (dbchecks.py): a wrong /db, /queries, /fortunes, /updates or query count
    # corrupts the database workloads only (`features = ["db"]`); a row without them is skipped.
    **{name: CheckKind("feature", feature="db") for name in ("db", "queries", "fortunes", "db-counts", "updates")},
    # TLS (tlscheck.py): a row that fails it serves the TLS workloads wrongly (`features = ["tls"]`) only;
    # its plaintext is judged by the checks above. A row without tls_library is skipped.
    "tls": CheckKind("feature", feature="tls"),
    # HTTP/2 (h2check.py): a row that fails one serves that mode's workloads wrongly only (`features = ["h2c"]`,
    # `["h2"]`); a row without http2_library is skipped
    "h2c": CheckKind("feature", feature="h2c"),
    "h2": CheckKind("feature", feature="h2"),
    # /compress (compresscheck.py): a wrong answer or a cached one corrupts the compress workloads only
    "compress": CheckKind("feature", feature="compress"),
    "bad-request": CheckKind("robustness"),
    # Input no workload or cross-check tool sends: they all write `Connection: close` in that case,
    # and ab sends Host with HTTP/1.0. A failure is a deviation from RFC 9110/9112, shown, not gated.
    "connection-close-case": CheckKind("robustness"),
    "http10-no-host": CheckKind("robustness"),
    "smuggling": CheckKind("robustness", security=True),
}

# Features (workloads.Feature, TOOL_FEATURES) and the checks protecting them: pipelining ← pipeline,
# http10 ← http10 (the cross-check's ab), db ← db, queries, fortunes, db-counts, updates, tls ← tls, new-connection-per-request ← connection-close (a measurement
# check: declared so the workload says what it uses, it adds no gate of its own).
# Cross-check tools that need a feature on every point: ab speaks HTTP/1.0 only.
TOOL_FEATURES: dict[str, tuple[str, ...]] = {"ab": ("http10",)}


def kind_of(check: str) -> CheckKind:
    return KINDS.get(check, MEASUREMENT)


def gated_workloads(check: str, workloads: Iterable[Any]) -> list[str]:
    """Names of the workloads a failure of `check` keeps a row out of (all of them for measurement)."""
    k = kind_of(check)
    if k.kind == "robustness":
        return []
    ws = [w for w in workloads if not getattr(w, "includes", None)]
    if k.kind == "measurement":
        return [w.name for w in ws]
    return [w.name for w in ws if k.feature in getattr(w, "features", ())]


def gates(check: str, workloads: Iterable[Any]) -> str:
    """In words, what a failure of `check` keeps a row out of."""
    k = kind_of(check)
    if k.kind == "measurement":
        return "every workload"
    names = gated_workloads(check, workloads) + [f"the cross-check's {t}" for t, fs in sorted(TOOL_FEATURES.items())
                                                 if k.feature in fs]
    if not names and k.kind == "feature":  # a feature no workload uses yet still gates those that will
        return f'workloads with features = ["{k.feature}"] (none yet)'
    return ", ".join(names) or "nothing (a deviation)"


@dataclass(frozen=True)
class Failure:
    check: str
    detail: str
    kind: CheckKind

    def line(self) -> str:
        """One line for the reader: the check's own reason, then the check's name."""
        first = (self.detail or "failed").splitlines()[0]
        return f"{first} ({self.check}{', security' if self.kind.security else ''})"


@dataclass(frozen=True)
class Admission:
    """A stored verdict read by kind."""

    refused: list[Failure]  # measurement failures: no workload
    features: dict[str, Failure]  # feature -> the failed check that protects it
    deviations: list[Failure]  # robustness and security failures: shown only

    @property
    def admitted(self) -> bool:
        return not self.refused

    def not_run_reason(self, features: Iterable[str]) -> str | None:
        """Why a row that is admitted cannot run a load using `features` (None: it can)."""
        for f in features:
            if f in self.features:
                return f"not run — {self.features[f].line()}"
        return None


def admission(checks: list[dict], passed: bool | None = None) -> Admission:
    """Sort a verdict's failed checks by kind. `passed` is the stored flag, used only when a
    verdict holds no checks at all (then a failed one is a refusal without a named check)."""
    refused: list[Failure] = []
    features: dict[str, Failure] = {}
    deviations: list[Failure] = []
    for c in checks:
        if c.get("passed") or c.get("skipped"):
            continue
        name = str(c.get("name", "?"))
        f = Failure(name, str(c.get("detail") or ""), kind_of(name))
        if f.kind.kind == "feature" and f.kind.feature:
            features.setdefault(f.kind.feature, f)
        elif f.kind.kind == "robustness":
            deviations.append(f)
        else:
            refused.append(f)
    if not checks and passed is False:
        refused.append(Failure("?", "failed verification, no checks stored", MEASUREMENT))
    return Admission(refused, features, deviations)


def workload_features(w: Any, tool: str | None = None) -> list[str]:
    """What a workload (and, in a cross-check, the tool driving it) uses of a server."""
    return sorted({*getattr(w, "features", ()), *TOOL_FEATURES.get(tool or "", ())})


def reader_lines(a: Admission, workloads: Iterable[Any]) -> list[str]:
    """One line per deviation and per workload a row cannot run, each with the check's reason."""
    ws = [w for w in workloads if not getattr(w, "includes", None)]
    lines = [f"{'security deviation' if f.kind.security else 'deviation'}: {f.line()}" for f in a.deviations]
    for w in ws:
        why = a.not_run_reason(workload_features(w))
        if why is not None:
            lines.append(f"{w.name}: {why}")
    for tool, feats in sorted(TOOL_FEATURES.items()):
        why = a.not_run_reason(feats)
        if why is not None:
            lines.append(f"cross-check with {tool}: {why}")
    return lines


def refused(v: Any) -> list[str]:
    """The measurement checks a stored verdict (store.Verdict) failed: the row runs nothing."""
    return [f.check for f in admission(v.checks, v.passed).refused]


def not_run(v: Any | None, w: Any, tool: str | None = None) -> str | None:
    """Why a row with verdict `v` (None: never verified) is left out of workload `w` (driven by
    `tool` in a cross-check): a feature check it failed that the load uses. None: it runs."""
    if v is None:
        return None
    return admission(v.checks, v.passed).not_run_reason(workload_features(w, tool))


def feature_unchecked(v: Any | None, feature: str, row: str | None = None) -> str | None:
    """Why a row is left out of a workload using `feature` although it failed none of its checks: they
    were skipped or absent at its verify (the db checks without PostgreSQL; every feature check a
    `make bench` verify leaves out, as its workload uses none). None: they ran (or the row was never
    verified, which the gate judges on its own). `row`: its id, for the fix."""
    if v is None:
        return None
    names = [n for n, k in KINDS.items() if k.kind == "feature" and k.feature == feature]
    ran = {str(c.get("name")): c for c in v.checks}
    for n in names:
        c = ran.get(n)
        if c is None or c.get("skipped"):
            why = f" ({c.get('detail')})" if c is not None and c.get("detail") else ""
            fix = f"`serverbench verify {row}`" if row else "verify it again where they can run"
            return f"its {feature} checks did not run at verify{why}; fix: {fix}"
    return None


def checks_for(features: Iterable[str] | None, names: Iterable[str]) -> list[str]:
    """Of the checks `names`, those a verify for loads using `features` runs (all when None): every
    measurement and robustness check, and the feature checks of those features only. `make bench`
    measures plain HTTP/1.1: its verify leaves the TLS, HTTP/2, database and CPU-work checks (each a
    start of its own, the database a PostgreSQL) to a verify for the workloads that use them."""
    if features is None:
        return list(names)
    fs = set(features)
    return [n for n in names if kind_of(n).kind != "feature" or kind_of(n).feature in fs]


# A feature a row serves only when its [choices] declare it (SPEC.md); every row serves the others
# (pipelining, HTTP/1.0).
_DECLARED_BY = {"db": "db", "compress": "compress", "tls": "tls", "h2": "h2", "h2c": "h2"}


def serves_feature(m: Any, feature: str) -> bool:
    """Whether row `m`'s manifest says it serves `feature` (so its checks must have run to admit it)."""
    attr = _DECLARED_BY.get(feature)
    return True if attr is None else bool(getattr(getattr(m, "choices", None), attr, False))
