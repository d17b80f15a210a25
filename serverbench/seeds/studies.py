"""The published studies as data (seeds/*.toml), checked on load: a broken file is one line naming
the file, the field and the fix. Figures are copied from the studies as published; a row's
`maps_to` names the serverbench rows (servers/<id>) that stand for it, empty with a `note` when none
does; its `left_out` names the servers/_left_out.toml entry that says why the row is not built here.
A study's `claim`s are its statements (or a reader's) with the rule that answers each from a stored
run (claims.py)."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .. import paths
from ..catalog import left_out as left_out_file
from ..overtime.overload import SEVERITY

SEEDS = paths.REPO / "seeds"
# The figures of this run a published column can be set beside (compare.py reads each from a group).
OURS = ("requests/s", "p50", "p99")
Figure = Union[float, tuple[float, float], str]  # a value, a published range [low, high], or words
# An overload claim's special verdict: the row's verdict is "crashes" and the run's memory limit ended it.
OUT_OF_MEMORY = "out of memory"
VERDICTS = (*SEVERITY, OUT_OF_MEMORY)


class SeedsError(ValueError):
    """A seeds file that cannot be used; the message is one line naming the file, field and fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Compare(_Strict):
    """One published column set beside one of our figures, at a workload's first point the run has."""
    column: str
    ours: Literal["requests/s", "p50", "p99"]
    better: Literal["higher", "lower"]
    workload: str
    points: list[str]


class Ceiling(_Strict):
    """The study's own statement that its client could not go past `value` in `column`."""
    column: str
    value: float


class Errors(_Strict):
    """The study's error counts: `column`, beside the requests each row sent (about its `rate_column`
    figure × `duration_s`, the study's measured time)."""
    column: str
    rate_column: str
    duration_s: float


class Row(_Strict):
    name: str
    place: int | None = None
    figures: dict[str, Figure] = {}
    approx: bool = False  # published as "≈"
    maps_to: list[str]
    left_out: str | None = None  # the servers/_left_out.toml id of the part of this row not built here
    note: str = ""

    @model_validator(mode="after")
    def _said_why(self) -> "Row":
        if not self.maps_to and not self.note and not self.left_out:
            raise ValueError("a row that maps to no serverbench row needs a `note` or a `left_out` saying why")
        return self


class Claim(_Strict):
    """A statement about the study's rows, answered from a stored run by its rule (claims.py):
    `overload`: each row's overload verdict is one of `expect`; `ratio`: each row's `figure` is
    `factor` times better than each row of `than` (latencies less `minus_ms` first)."""
    text: str
    said_by: str
    workload: str
    points: list[str]
    rows: list[str]
    rule: Literal["overload", "ratio"]
    expect: list[str] = []
    figure: Literal["p50", "p99", "requests/s"] | None = None
    than: list[str] = []
    factor: float | None = None
    better: Literal["higher", "lower"] | None = None
    minus_ms: float | None = None

    @model_validator(mode="after")
    def _rule_complete(self) -> "Claim":
        if not self.rows or not self.points:
            raise ValueError("a claim needs `rows` and `points`")
        ratio = (self.figure, self.than, self.factor, self.better, self.minus_ms)
        if self.rule == "overload":
            if not self.expect or (unknown := sorted(set(self.expect) - set(VERDICTS))):
                raise ValueError(f"an overload claim's `expect` lists verdicts of {list(VERDICTS)}"
                                 + (f", not {unknown}" if self.expect else ""))
            if any(ratio):
                raise ValueError("an overload claim takes `expect` only, not figure/than/factor/better/minus_ms")
            return self
        if self.figure is None or not self.than or self.better is None or not (self.factor or 0) > 0:
            raise ValueError("a ratio claim needs `figure`, `than`, `better` and a `factor` above 0")
        if self.expect or (self.minus_ms is not None and self.figure == "requests/s"):
            raise ValueError("a ratio claim takes no `expect`, and `minus_ms` only for a latency figure")
        return self


class Study(_Strict):
    id: str
    title: str
    url: str | None = None
    date: str | None = None
    hardware: str
    method: str
    versions: dict[str, str]
    errors: Errors | None = None
    warmup: str | None = None  # the warm-up (or slow ramp) the published method states; None: it names none
    client_ceiling: Ceiling | None = None
    figures_published: bool = True
    caveats: list[str]
    statements: list[str] = []  # what the study's text reports where its figures were charts only
    readings: list[str] = []  # serverbench's readings of the table, kept apart from the study's words
    columns: list[str]
    compare: list[Compare] = []
    claim: list[Claim] = []
    row: list[Row]

    @model_validator(mode="after")
    def _columns_known(self) -> "Study":
        for r in self.row:
            if unknown := set(r.figures) - set(self.columns):
                raise ValueError(f"row {r.name!r} has figures for {sorted(unknown)}, not in `columns`")
        named = [c.column for c in self.compare] + ([self.errors.column, self.errors.rate_column] if self.errors else [])
        named += [self.client_ceiling.column] if self.client_ceiling else []
        if unknown := set(named) - set(self.columns):
            raise ValueError(f"{sorted(unknown)} named by compare/errors/client_ceiling is not in `columns`")
        return self


def _field(err: ValidationError) -> str:
    e = err.errors()[0]
    where = ".".join(str(p) for p in e["loc"]) or "(the file)"
    return f"{where}: {e['msg']}"


def load_file(path: Path, servers: Path | None = None) -> Study:
    """One study; SeedsError (one line) when the file is not TOML, breaks the model, maps a row (or
    names a claim's row) to a folder that is not in servers/, or points a row's `left_out` at an id
    that servers/_left_out.toml does not have."""
    try:
        study = Study.model_validate(tomllib.loads(path.read_text()))
    except tomllib.TOMLDecodeError as e:
        raise SeedsError(f"{path}: not TOML ({e}); fix: correct the TOML syntax there") from None
    except ValidationError as e:
        raise SeedsError(f"{path}: {_field(e)}; fix: write that field as serverbench/seeds/studies.py's model says") from None
    if study.id != path.stem:
        raise SeedsError(f"{path}: id: {study.id!r} differs from the file name; fix: set id = {path.stem!r}")
    root = paths.SERVERS if servers is None else servers
    named = [(f"row.{i}.maps_to", r.maps_to) for i, r in enumerate(study.row)]
    named += [(f"claim.{i}.{f}", ids) for i, c in enumerate(study.claim)
              for f, ids in (("rows", c.rows), ("than", c.than))]
    for where, ids in named:
        for sid in ids:
            if not (root / sid / "server.toml").is_file():
                fix = "leave maps_to empty with a note saying why" if "maps_to" in where else "drop it from the claim"
                raise SeedsError(f"{path}: {where}: {sid!r} is not a row in {root}; fix: name a folder there, or {fix}")
    _left_out_known(path, study, root)
    return study


def _left_out_known(path: Path, study: Study, servers: Path) -> None:
    """Every row's `left_out` names an entry of servers/_left_out.toml (read by doctor's reader)."""
    wanted = [(i, r.left_out) for i, r in enumerate(study.row) if r.left_out]
    if not wanted:
        return
    entries, problem = left_out_file.load(servers)
    if problem:
        raise SeedsError(f"{path}: row.{wanted[0][0]}.left_out: {problem}")
    known = {e.id for e in entries}
    for i, lid in wanted:
        if lid not in known:
            raise SeedsError(f"{path}: row.{i}.left_out: {lid!r} is not an id in {servers / left_out_file.FILE_NAME}; "
                             f"fix: add an entry there saying why it is not built, or name one of {sorted(known)}")


def load_all(root: Path | None = None, servers: Path | None = None) -> list[Study]:
    """Every seeds/*.toml, in file-name order."""
    folder = SEEDS if root is None else root
    if not folder.is_dir():
        raise SeedsError(f"{folder}: no seeds folder; the published studies live in seeds/*.toml")
    return [load_file(p, servers) for p in sorted(folder.glob("*.toml"))]


__all__ = ["Study", "Row", "Compare", "Claim", "OUT_OF_MEMORY", "VERDICTS", "Ceiling", "Errors", "SeedsError",
           "load_file", "load_all", "SEEDS", "OURS", "Figure"]
