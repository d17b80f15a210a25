"""The profile table's columns as data: the kinds of work a service does and, for each, the stored
workload point that stands for it (a headline point). results/profile.py reads this table only; a
new kind of work (compress, head-of-line, h2) is one more entry here, once its workload exists in
workloads/*.toml (tests/test_profile_table.py checks that every source names a workload point there).

Why a typed table here and not a TOML the catalog loads: which point stands for a kind of work is a
reporting rule, like overtime/overload.py's RULES and results/noisy.py's, not a workload's
definition; a workload file says what to measure, this says which of its points a reader's summary
reads. Ten entries need no loader, no schema and no error lines of their own, and a typo is caught
by the test against workloads/*.toml rather than at a reader's report.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """One workload point that can stand for a kind of work."""

    workload: str
    point: str


@dataclass(frozen=True)
class Work:
    """A column: the kind of work, the points that can stand for it (the first one stored is read)
    and why that point."""

    name: str
    sources: tuple[Source, ...]
    why: str


COLUMNS: tuple[Work, ...] = (
    Work("plaintext", (Source("prantl-wrk", "c=400"), Source("tfb-plaintext", "c=256,p=16")),
         "400 keep-alive connections on GET / (Prantl's wrk test), else TechEmpower's pipelined plaintext"),
    Work("json", (Source("tfb-json", "c=256"),), "TechEmpower JSON, 256 connections, no pipelining"),
    Work("db", (Source("tfb-db", "rate=80%"),),
         "one query per request at 80 % of the run's db rate: the load near a real service's busy hour"),
    Work("queries", (Source("tfb-queries", "q=20"),), "20 queries per request: the pool and the driver's waits"),
    Work("fortunes", (Source("tfb-fortunes", "rate=80%"),),
         "a query, a sort and an escaped HTML page, at 80 % of the run's db rate"),
    Work("updates", (Source("tfb-updates", "q=20"),), "20 reads and 20 writes per request"),
    Work("tls-json", (Source("tls-json", "tls"),), "JSON over TLS 1.3 on 400 kept connections: record encryption"),
    Work("tls-handshake", (Source("tls-handshake", "ecdsa"),),
         "a full TLS handshake per request with ECDSA P-256, the key type a new deployment picks"),
    # slowloris: the shape that holds a connection without finishing a request, which costs a
    # thread-per-connection server a thread each; the other shapes (idle, garbage, slow-reader) can
    # be columns of their own when a reader needs them
    Work("noisy", (Source("noisy", "slowloris"),),
         "the legitimate traffic's p99 while slowloris clients hold connections beside it"),
    Work("overload", (Source("stressgrid-overload", "devices=0-10000"),),
         "demand ramped past every row's capacity (Stressgrid): the peak it still served"),
    Work("compress", (Source("compress", "kb=64"),),
         "CPU work in the request: the gzip of 64 KiB of JSON per request, closed load (the library and the model)"),
    Work("head-of-line", (Source("head-of-line", "heavy 1%"),),
         "the light requests' p99 while 1 % of the requests gzip 1 MiB: what one heavy request costs the others"),
    # the restart: every connection reset, which every pool meets in production; the freeze (a stall)
    # is the workload's other point
    Work("db outage", (Source("tfb-db-outage", "restart"),),
         "PostgreSQL restarted under load: whether the row came back, and how many seconds after the database"),
    # HttpArena's shape (h2load -c 256 -m 100) over TLS, the way browsers and API clients speak HTTP/2
    Work("h2", (Source("h2-json", "h2"), Source("h2c-json", "h2c")),
         "HTTP/2 on /json, 256 connections of 100 streams each, over TLS (else cleartext h2c)"),
)


__all__ = ["Source", "Work", "COLUMNS"]
