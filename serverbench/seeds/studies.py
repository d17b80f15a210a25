"""The published studies as data (seeds/*.toml), checked on load: a broken file is one line naming
the file, the field and the fix. Figures are copied from the studies as published; a row's
`maps_to` names the serverbench rows (servers/<id>) that stand for it, empty with a `note` when none
does."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from .. import paths

SEEDS = paths.REPO / "seeds"
# The figures of this run a published column can be set beside (compare.py reads each from a group).
OURS = ("requests/s", "p50", "p99")
Figure = Union[float, tuple[float, float], str]  # a value, a published range [low, high], or words


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
    note: str = ""

    @model_validator(mode="after")
    def _said_why(self) -> "Row":
        if not self.maps_to and not self.note:
            raise ValueError("a row that maps to no serverbench row needs a `note` saying why")
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
    """One study; SeedsError (one line) when the file is not TOML, breaks the model, or maps a row
    to a folder that is not in servers/."""
    try:
        study = Study.model_validate(tomllib.loads(path.read_text()))
    except tomllib.TOMLDecodeError as e:
        raise SeedsError(f"{path}: not TOML ({e}); fix: correct the TOML syntax there") from None
    except ValidationError as e:
        raise SeedsError(f"{path}: {_field(e)}; fix: write that field as serverbench/seeds/studies.py's model says") from None
    if study.id != path.stem:
        raise SeedsError(f"{path}: id: {study.id!r} differs from the file name; fix: set id = {path.stem!r}")
    root = paths.SERVERS if servers is None else servers
    for i, r in enumerate(study.row):
        for sid in r.maps_to:
            if not (root / sid / "server.toml").is_file():
                raise SeedsError(f"{path}: row.{i}.maps_to: {sid!r} is not a row in {root}; fix: name a "
                                 "folder there, or leave maps_to empty with a note saying why")
    return study


def load_all(root: Path | None = None, servers: Path | None = None) -> list[Study]:
    """Every seeds/*.toml, in file-name order."""
    folder = SEEDS if root is None else root
    if not folder.is_dir():
        raise SeedsError(f"{folder}: no seeds folder; the published studies live in seeds/*.toml")
    return [load_file(p, servers) for p in sorted(folder.glob("*.toml"))]


__all__ = ["Study", "Row", "Compare", "Ceiling", "Errors", "SeedsError", "load_file", "load_all", "SEEDS", "OURS", "Figure"]
