"""TLS figures (issue 38): what a TLS point's cell keeps of loadgen's `tls` object, and the figures a
report reads back from a row's TLS cells. Pure: processes/loadgen.py builds a `TlsFigures` from a
loadgen report, the cell stores it as `tls` (model.CellMetrics), and the report reads it here.

loadgen's object (null for plaintext): `provider` (its rustls crypto provider), `resumption`
(--tls-resume), `alpn`, `version` and `suite` (what its handshakes negotiated), `handshakes` and
`resumed` (completed in the measured window), `handshake_latency` (µs, the latency summary's shape),
`handshake_histogram` (HdrHistogram V2, base64) and `handshake_errors` by kind (alert, timeout, reset).
"""
from __future__ import annotations

import statistics
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..model import CellMetrics, CellRecord, Percentiles
from .shards import merge_encoded

KeyType = Literal["rsa", "ecdsa"]
ERROR_KINDS = ("alert", "timeout", "reset")


class LoadgenTls(BaseModel):
    """loadgen's `tls` object as it writes it."""

    model_config = ConfigDict(extra="allow")
    provider: str
    resumption: bool
    alpn: str | None = None
    version: str | None = None
    suite: str | None = None
    handshakes: int
    resumed: int = 0
    handshake_latency: Percentiles | None = None
    handshake_histogram: str | None = None
    handshake_errors: dict[str, int] = Field(default_factory=dict)


class TlsFigures(BaseModel):
    """A TLS point's cell: how its connections were secured and what their handshakes took."""

    model_config = ConfigDict(extra="forbid")
    key_type: KeyType | None = Field(None, description="the server certificate's key (the point's `tls`)")
    provider: str | None = Field(None, description="loadgen's rustls crypto provider")
    resumption: bool = Field(False, description="loadgen allowed session resumption (--tls-resume)")
    alpn: str | None = Field(None, description="the protocol ALPN agreed (None: the server answered none)")
    version: str | None = Field(None, description="the TLS version negotiated")
    suite: str | None = Field(None, description="the cipher suite negotiated")
    handshakes: int = Field(0, description="handshakes completed in the measured run")
    resumed: int = Field(0, description="of those, resumed sessions")
    handshake_p50_us: float | None = Field(None, description="TCP connected → handshake done, µs")
    handshake_p99_us: float | None = None
    handshake_max_us: float | None = None
    handshake_errors: dict[str, int] = Field(default_factory=dict, description="failed handshakes by kind: "
                                                                               "alert, timeout, reset")

    @property
    def failed(self) -> int:
        """Handshakes that failed, every kind."""
        return sum(self.handshake_errors.values())


def from_loadgen(raw: Any, key_type: str | None) -> TlsFigures | None:
    """A cell's figures from loadgen's `tls` object and the point's key type; None for plaintext (null or
    absent). ValueError naming the field when the object is not loadgen's."""
    if raw is None:
        return None
    try:
        t = LoadgenTls.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(the object)"
        raise ValueError(f"field tls.{where}: {first['msg']}") from None
    lat = t.handshake_latency
    return TlsFigures(key_type=key_type, provider=t.provider, resumption=t.resumption, alpn=t.alpn,
                      version=t.version, suite=t.suite, handshakes=t.handshakes, resumed=t.resumed,
                      handshake_p50_us=lat.p50 if lat else None, handshake_p99_us=lat.p99 if lat else None,
                      handshake_max_us=lat.max if lat else None, handshake_errors=dict(t.handshake_errors))


def stored(m: CellMetrics) -> TlsFigures | None:
    """A stored cell's TLS figures (None: a plaintext cell)."""
    return TlsFigures.model_validate(m.tls) if m.tls else None


def server_cpu_per_handshake_us(m: CellMetrics) -> float | None:
    """The server's CPU (user + system, its process tree over the measured run) per completed handshake,
    µs: the inverse of handshakes per second of server CPU. A new connection per request also serves one
    request each, so this is what a request with its handshake cost, which is what the load asked for."""
    t = stored(m)
    cpu = (m.usage.cpu_user_s or 0.0) + (m.usage.cpu_sys_s or 0.0)
    if t is None or not t.handshakes or m.usage.cpu_user_s is None or cpu <= 0:
        return None
    return 1e6 * cpu / t.handshakes


def handshakes_per_request(m: CellMetrics) -> float | None:
    """Handshakes completed in the measured run per successful request: with keep-alive, those of
    reconnects (the connections' first handshakes are in the run's warm-up, measure.keeps_connections;
    cells stored before that have them in the window)."""
    t = stored(m)
    return t.handshakes / m.counts.ok if t is not None and m.counts.ok else None


def handshake_p99_us(cells: Iterable[CellRecord]) -> float | None:
    """p99 of the handshake over a row's repetitions: exact from their merged histograms when every cell
    has one, else the median of the cells' own p99s (as the latency's fallback)."""
    cells = list(cells)
    encoded = [((c.loadgen.model_extra or {}).get("tls") or {}).get("handshake_histogram") if c.loadgen else None
               for c in cells]
    if encoded and all(encoded):
        try:
            h = merge_encoded(e for e in encoded if e)
        except Exception:  # a corrupt payload: the stored per-repetition figures below
            h = None
        if h is not None and h.get_total_count():
            return float(h.get_value_at_percentile(99))
    # a repetition that completed no handshake has no handshake latency (loadgen reports 0 there)
    p99s = [t.handshake_p99_us for c in cells
            if (t := stored(c.metrics)) and t.handshake_p99_us is not None and t.handshakes]
    return statistics.median(p99s) if p99s else None


__all__ = ["KeyType", "ERROR_KINDS", "LoadgenTls", "TlsFigures", "from_loadgen", "stored",
           "server_cpu_per_handshake_us", "handshakes_per_request", "handshake_p99_us"]
