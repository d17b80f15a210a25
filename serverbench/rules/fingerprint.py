"""A stored run's fingerprint read back: its normal form, the report's words for its CPU split, and
when two runs are comparable (the same machine and the same measuring code).

Flat keys (cores, server_cpus, client_cpus, loadgen_version, git_commit, git_dirty, ...) as
docs/DESIGN.md lists them; runs stored before 0.1.0's layout settled used nested
`pinning`/`loadgen`/`git` objects, which `normalize` flattens for readers. run/fingerprint.py takes
the fingerprint; run/split.py chooses the split this describes.
"""
from __future__ import annotations

import hashlib
from typing import Any, Iterable

# What must match for two runs' figures to stand in one table: the machine ...
MACHINE = ("cpu_model", "cores")
# ... and the code that measured them. A commit touching only these paths cannot change a figure a run
# stores (words, tests, benches, CI, the published studies' data and the report's own side, which reads
# stored cells): runs before and after it stay comparable, so a study measured over several sessions
# keeps its earlier workloads. studies/ holds a study's own store, committed so that a fresh checkout
# resumes it. Everything else (loadgen, servers, workloads, the harness) counts.
REPORT_SIDE = ("docs/", "tests/", "bench/", ".ci/", "seeds/", "studies/", "README.md", "SPEC.md",
               "serverbench/exporters/", "serverbench/charts/", "serverbench/seeds/")


def measuring(path: str) -> bool:
    """Whether a file at `path` (relative to the checkout) is part of the code that measures."""
    return not path.startswith(REPORT_SIDE)


def measuring_code(tree: Iterable[str], diff: str = "") -> str:
    """One digest of the measuring code: `tree` the lines of `git ls-tree -r HEAD` (mode, type, object,
    tab, path), `diff` the uncommitted changes to measuring paths (empty when clean)."""
    h = hashlib.sha256()
    for line in sorted(tree):
        if "\t" in line and measuring(line.split("\t", 1)[1]):
            h.update(line.encode() + b"\n")
    h.update(diff.encode())
    return h.hexdigest()[:16]


def differs(fp: dict[str, Any], here: dict[str, Any]) -> str | None:
    """Why a run with (normal) fingerprint `fp` cannot stand beside one with `here`, in words: another
    machine, or other measuring code (the commit where either run predates `measuring_code`); None when
    comparable."""
    if any(fp.get(k) != here.get(k) for k in MACHINE):
        return (f"measured on {fp.get('cpu_model') or '?'} with {fp.get('cores') or '?'} cores, this run on "
                f"{here.get('cpu_model') or '?'} with {here.get('cores') or '?'}")
    if fp.get("measuring_code") and here.get("measuring_code"):
        if fp["measuring_code"] == here["measuring_code"]:
            return None
        return (f"measured by other code (commit {str(fp.get('git_commit') or '?')[:12]}, this run at "
                f"{str(here.get('git_commit') or '?')[:12]}: loadgen, servers, workloads or harness differ)")
    if fp.get("git_commit") != here.get("git_commit"):
        return (f"measured at commit {str(fp.get('git_commit') or '?')[:12]}, this run at "
                f"{str(here.get('git_commit') or '?')[:12]}")
    return None


def normalize(fp: dict[str, Any] | None) -> dict[str, Any]:
    """The flat form of a stored fingerprint, whichever layout it was stored in."""
    fp = dict(fp or {})
    pin = fp.pop("pinning", None) or {}
    lg = fp.pop("loadgen", None) or {}
    git = fp.pop("git", None) or {}
    fp.setdefault("cores", fp.pop("cpu_count", None))
    fp.setdefault("server_cpus", pin.get("server_cpus"))
    fp.setdefault("client_cpus", pin.get("client_cpus"))
    fp.setdefault("loadgen_version", lg.get("version"))
    fp.setdefault("git_commit", git.get("commit"))
    fp.setdefault("git_dirty", git.get("dirty"))
    fp["servers"] = {sid: {**info, "version": info.get("version") or info.get("toolchain")}
                     for sid, info in (fp.get("servers") or {}).items()}
    return fp


def describe_split(record: dict[str, Any] | None) -> str | None:
    """The report's line on how the run's CPUs were split (the fingerprint's `cpu_split`); None before
    runs stored it."""
    if not record:
        return None
    mode = record.get("mode")
    if mode == "manual":
        return "as given (--server-cpus/--client-cpus)"
    if mode == "half":
        return "two halves (--split half)"
    cal = record.get("calibration")
    text = "auto"
    if cal:
        text += (f": one load-generator CPU drove {cal['client_per_cpu']:,.0f} req/s, one server CPU of "
                 f"{cal['reference']} served {cal['server_per_cpu']:,.0f} ({cal['seconds']:g} s calibration)")
    text += f"; {record['note']}" if record.get("note") else ""
    return text + (f"; {record['db_note']}" if record.get("db_note") else "")


__all__ = ["normalize", "describe_split", "differs", "measuring", "measuring_code", "MACHINE", "REPORT_SIDE"]


def describe_database(facts: dict[str, Any] | None) -> str | None:
    """The report's line on the run's database (the fingerprint's `database`); None for a run without one."""
    if not facts:
        return None
    s = facts.get("settings") or {}
    where = (f"the harness's own on CPU {','.join(map(str, facts.get('cpus') or []))}"
             if facts.get("where") == "managed" else f"an existing one at {facts.get('url', '?')}")
    kept = ", ".join(f"{k} {s[k]}" for k in ("synchronous_commit", "max_connections", "shared_buffers", "fsync")
                     if k in s)
    return f"PostgreSQL {str(facts.get('version') or '?').split(' ')[0]}, {where}" + (f" ({kept})" if kept else "")


def describe_db_choices(c: dict[str, Any] | None) -> str | None:
    """A db row's driver, pool and how its queries wait (SPEC.md, Choices); None for a row without them."""
    if not c or not c.get("db_driver"):
        return None
    return (f"{c['db_driver']}, pool {c.get('db_pool')}; queries {c.get('db_wait')}"
            f"{', pipelined' if c.get('db_pipelining') == 'on' else ''}"
            f"{', prepared' if c.get('db_prepared') == 'on' else ''}")
