"""What a cell records about the database behind it (issue 37): the PostgreSQL's CPU over the measured
run, per request, and what the row was given. Its own record so a database's work is shown beside the
server's and never added to it (the server's usage is its own process tree only).

Pure: imports nothing of the harness; model.py stores a `DatabaseFigures` with each cell.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DatabaseFigures(BaseModel):
    """The database's share of a cell: None everywhere for a workload without one."""

    model_config = ConfigDict(extra="forbid")
    db_cpu_user_s: float | None = Field(None, description="PostgreSQL's processes (postmaster and backends), "
                                                          "user CPU over the measured run")
    db_cpu_sys_s: float | None = Field(None, description="the same, system CPU")
    db_cpu_percent: float | None = Field(None, description="their mean CPU, 100 = one core")
    db_cpu_us_per_req: float | None = Field(None, description="their CPU per successful request, µs; never "
                                                              "part of the server's CPU per request")
    db_pool: int | None = Field(None, description="$DB_POOL the row was given (connections per process)")
    db_connections_peak: int | None = Field(None, description="the most connections the row held open to the "
                                                              "database at the once-a-second looks")
    db_active_peak: int | None = Field(None, description="the most of them running a query at one look")
    db_cpus: list[int] | None = Field(None, description="the CPUs PostgreSQL was pinned to (None: an "
                                                        "existing database, --db-url)")
    db_shares_client_cpus: bool | None = Field(None, description="PostgreSQL ran on the load generator's CPUs; "
                                                                 "its CPU counts in the client's headroom")
    calibrated_on: str | None = Field(None, description='rate_basis = "run": the row whose closed-loop '
                                                        "capacity set the rate every row was offered")


def per_request_us(cpu_s: float, ok: int) -> float | None:
    """CPU seconds spread over successful requests, µs; None without one."""
    return round(cpu_s / ok * 1e6, 2) if ok > 0 else None
