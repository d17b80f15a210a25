"""The loadgen's JSON (schema `loadgen/1`, docs/DESIGN.md): one run's `--json` output, validated.

Kept apart from model.py (which re-exports these names) so that the results model stays one screen of
figure groups; nothing here knows a cell or a run.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

LOADGEN_SCHEMA = "loadgen/1"
REBUILD = "rebuild loadgen (`make loadgen`)"


class LoadgenFormatError(Exception):
    """A loadgen result that does not match `loadgen/1` (one line naming the source and field)."""


# -- the loadgen's JSON (schema loadgen/1, docs/DESIGN.md) --------------------------------------
class Percentiles(BaseModel):
    """Latency summary in µs (loadgen `summary.latency_us` and friends)."""

    model_config = ConfigDict(extra="allow")
    min: float | None = None
    mean: float | None = None
    stdev: float | None = None
    p50: float | None = None
    p75: float | None = None
    p90: float | None = None
    p99: float | None = None
    p99_9: float | None = None
    p99_99: float | None = None
    max: float | None = None


class LoadgenSummary(BaseModel):
    model_config = ConfigDict(extra="allow")
    requests: int
    responses: int = 0
    ok: int = 0
    errors: int
    rps: float
    bytes_read: int = 0
    connections_opened: int = 0
    missed_sends: int = 0
    unanswered: int = 0
    unanswered_oldest_us: float = 0
    # Requests that were due (sent + never sent); absent from older loadgen builds.
    due: int | None = None
    never_sent: int | None = None
    dropped: int | None = None
    latency_us: Percentiles
    answered_latency_us: Percentiles | None = None
    service_us: Percentiles | None = None


class LoadgenHistograms(BaseModel):
    """HdrHistogram V2, base64: `latency` is what the percentiles are computed from."""

    model_config = ConfigDict(extra="allow")
    latency: str | None = None
    service: str | None = None
    answered: str | None = None


class LoadgenReport(BaseModel):
    """One loadgen run's `--json` output."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    schema_: Literal["loadgen/1"] = Field(alias="schema")
    loadgen_version: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    started_at: str | None = None
    duration_s: float | None = None
    interrupted: bool = False
    summary: LoadgenSummary
    error_classes: dict[str, int] = Field(default_factory=dict)
    status_codes: dict[str, int] = Field(default_factory=dict)
    histograms: LoadgenHistograms = Field(default_factory=LoadgenHistograms)
    timeline: list[dict[str, Any]] = Field(default_factory=list)

    @classmethod
    def parse(cls, data: Any, source: str) -> "LoadgenReport":
        """Validate `data`; LoadgenFormatError names `source` and the first bad field."""
        if not isinstance(data, dict) or data.get("schema") != LOADGEN_SCHEMA:
            got = data.get("schema") if isinstance(data, dict) else type(data).__name__
            raise LoadgenFormatError(f"{source}: schema is {got!r}, expected {LOADGEN_SCHEMA!r}; {REBUILD}")
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise LoadgenFormatError(f"{source}: field {where}: {first['msg']}; {REBUILD}") from None

    def dump(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")
