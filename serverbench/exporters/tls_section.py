"""What TLS costs (issue 38), shared by Markdown and HTML: per row, from the same run, the server CPU per
request over TLS ÷ plaintext (`tls-json`'s `tls` point beside its `plain` twin: the record cost with
keep-alive), and from `tls-handshake` per key type the handshakes per second of server CPU and loadgen's
p99 of the handshake, with the CPU a handshake costs under RSA-2048 ÷ under ECDSA P-256. Rows left out
of the TLS workloads (`tls_out`, no `tls_library`, a failed `tls` check) are listed with the stored
reason. Reads stored results only (aggregate's groups and the cells' TLS figures, rules/tlsfigures.py).
"""
from __future__ import annotations

import html
import statistics
from dataclasses import dataclass, field
from typing import Any

from . import section_table
from ..results.formatting import fmt_num, fmt_us
from ..rules import tlsfigures

TITLE = "What TLS costs"
HANDSHAKE_SHARE_NOTED = 0.05  # a TLS window whose own handshakes took this share of its CPU is flagged
JSON_WORKLOAD, HANDSHAKE_WORKLOAD = "tls-json", "tls-handshake"
PLAIN, TLS = "plain", "tls"  # tls-json's points
KEY_TYPES = ("rsa", "ecdsa")  # tls-handshake's points, one per key type
HEADERS = ["server", "model", "TLS library", "CPU/request plaintext", "CPU/request TLS", "TLS ÷ plaintext",
           "RSA handshakes per CPU-second", "RSA handshake p99", "ECDSA handshakes per CPU-second",
           "ECDSA handshake p99", "CPU per handshake RSA ÷ ECDSA"]
NOTE = ("Each row's TLS figures beside its own plaintext from the same run, with the stack's own TLS library and "
        "the harness's certificates. CPU/request: the server's CPU (user + system, its process tree) per "
        "successful request on tls-json, 400 keep-alive connections on /json, first in plaintext, then over TLS "
        "1.3 with an RSA-2048 certificate: the ratio is what record encryption costs. Handshakes per CPU-second: "
        "tls-handshake opens a new connection for every request with session resumption off, so each request "
        "is a full handshake; completed handshakes ÷ the server's CPU seconds, per key type. Handshake p99: "
        "loadgen's, from the TCP connection to the handshake's end. RSA ÷ ECDSA: the server CPU a handshake "
        "costs under RSA-2048 ÷ under ECDSA P-256 (its signature is the server's big share of a handshake). "
        "Medians over the repetitions; — where the row has no result there.")


@dataclass(frozen=True)
class Handshakes:
    """One row under one key type of tls-handshake."""

    cpu_us: float | None  # server CPU per handshake, µs (median over repetitions)
    p99_us: float | None
    failed: dict[str, int] = field(default_factory=dict)  # handshake failures by kind, summed over repetitions

    @property
    def per_cpu_s(self) -> float | None:
        return 1e6 / self.cpu_us if self.cpu_us else None


@dataclass(frozen=True)
class TlsRow:
    server: str
    model: str
    library: str | None
    plain_cpu_us: float | None
    tls_cpu_us: float | None
    handshakes: dict[str, Handshakes]
    negotiated: str | None  # "TLSv1_3 · TLS13_AES_128_GCM_SHA256 · ALPN http/1.1", from its TLS cells
    # tls-json's TLS point: its connections' handshakes inside the measured window, per request
    json_handshakes_per_request: float | None = None

    @property
    def ratio(self) -> float | None:
        """Server CPU per request over TLS ÷ plaintext."""
        return self.tls_cpu_us / self.plain_cpu_us if self.tls_cpu_us and self.plain_cpu_us else None

    @property
    def handshake_share(self) -> float | None:
        """The share of tls-json's TLS CPU per request its window's own handshakes took, estimated at this
        row's CPU per RSA handshake under tls-handshake (a handshake there also serves one request: an
        upper bound)."""
        rsa = self.handshakes.get("rsa")
        if self.json_handshakes_per_request is None or not self.tls_cpu_us or rsa is None or rsa.cpu_us is None:
            return None
        return min(1.0, self.json_handshakes_per_request * rsa.cpu_us / self.tls_cpu_us)

    @property
    def rsa_over_ecdsa(self) -> float | None:
        r, e = self.handshakes.get("rsa"), self.handshakes.get("ecdsa")
        return r.cpu_us / e.cpu_us if r and e and r.cpu_us and e.cpu_us else None


@dataclass(frozen=True)
class RowOut:
    server: str
    model: str
    reason: str


def _groups(results: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """(workload, point) -> server -> group, for the TLS workloads' points."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for wl in results.workloads:
        if wl.name in (JSON_WORKLOAD, HANDSHAKE_WORKLOAD):
            for pt in wl.points:
                out[(wl.name, pt.label)] = {g.server: g for g in pt.groups}
    return out


def _negotiated(groups: list[Any]) -> str | None:
    for g in groups:
        for c in g.ok:
            t = tlsfigures.stored(c.metrics)
            if t is not None and t.version:
                return " · ".join(x for x in (t.version, t.suite, f"ALPN {t.alpn}" if t.alpn else "no ALPN") if x)
    return None


def _handshakes(g: Any) -> Handshakes:
    failed: dict[str, int] = {}
    for c in g.ok:
        t = tlsfigures.stored(c.metrics)
        for kind, n in (t.handshake_errors.items() if t else ()):
            failed[kind] = failed.get(kind, 0) + n
    return Handshakes(g.median(tlsfigures.server_cpu_per_handshake_us), tlsfigures.handshake_p99_us(g.ok),
                      {k: n for k, n in failed.items() if n})


def rows(results: Any) -> tuple[list[TlsRow], list[RowOut]]:
    """The rows measured in the TLS workloads (cheapest TLS first), and those left out with the reason."""
    by_point = _groups(results)
    servers = list(dict.fromkeys(s for gs in by_point.values() for s in gs))
    measured: list[TlsRow] = []
    out: list[RowOut] = []
    for s in servers:
        mine = {key: gs[s] for key, gs in by_point.items() if s in gs}
        any_g = next(iter(mine.values()))
        if not any(g.ok for g in mine.values()):
            skipped = [c for g in mine.values() for c in g.bad if c.status == "skipped" and c.error]
            if skipped:
                out.append(RowOut(s, any_g.model, skipped[0].error))
                continue
        plain, tls = mine.get((JSON_WORKLOAD, PLAIN)), mine.get((JSON_WORKLOAD, TLS))
        hs = {k: _handshakes(g) for k in KEY_TYPES if (g := mine.get((HANDSHAKE_WORKLOAD, k))) is not None}
        choices = any_g.info.get("choices") or {}
        tls_groups = [g for (w, p), g in mine.items() if not (w == JSON_WORKLOAD and p == PLAIN)]
        measured.append(TlsRow(s, any_g.model, choices.get("tls_library"),
                               plain.cpu_us_per_request if plain else None, tls.cpu_us_per_request if tls else None,
                               hs, _negotiated(tls_groups),
                               tls.median(tlsfigures.handshakes_per_request) if tls else None))
    measured.sort(key=lambda r: (r.ratio is None, r.ratio or 0.0, r.server))
    return measured, out


def _ratio(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def cells(r: TlsRow) -> list[str]:
    rsa, ecdsa = r.handshakes.get("rsa"), r.handshakes.get("ecdsa")
    return [r.server, r.model, r.library or "not declared",
            fmt_us(r.plain_cpu_us), fmt_us(r.tls_cpu_us), _ratio(r.ratio),
            fmt_num(rsa.per_cpu_s if rsa else None), fmt_us(rsa.p99_us if rsa else None),
            fmt_num(ecdsa.per_cpu_s if ecdsa else None), fmt_us(ecdsa.p99_us if ecdsa else None),
            _ratio(r.rsa_over_ecdsa)]


def by_model(measured: list[TlsRow]) -> list[str]:
    """Per concurrency model: the median of its rows' TLS ÷ plaintext and RSA ÷ ECDSA, and how many rows."""
    models: dict[str, list[TlsRow]] = {}
    for r in measured:
        models.setdefault(r.model, []).append(r)
    out = []
    for model, rs in sorted(models.items()):
        ratios = [r.ratio for r in rs if r.ratio is not None]
        keys = [r.rsa_over_ecdsa for r in rs if r.rsa_over_ecdsa is not None]
        if ratios or keys:
            out.append(f"{model} ({len(rs)} row{'s' if len(rs) != 1 else ''}): TLS ÷ plaintext "
                       f"{_ratio(statistics.median(ratios) if ratios else None)}, CPU per handshake RSA ÷ ECDSA "
                       f"{_ratio(statistics.median(keys) if keys else None)}")
    return out


def notes(measured: list[TlsRow]) -> list[str]:
    """What was negotiated (rows grouped by it) and every row whose handshakes failed, one line each."""
    agreed: dict[str, list[str]] = {}
    for r in measured:
        if r.negotiated:
            agreed.setdefault(r.negotiated, []).append(r.server)
    lines = [f"negotiated {what}: {', '.join(servers)}" for what, servers in sorted(agreed.items())]
    for r in measured:
        if (share := r.handshake_share) is not None and share >= HANDSHAKE_SHARE_NOTED:
            lines.append(f"⚠ {r.server}: tls-json's TLS window includes its connections' handshakes (one per "
                         f"{1 / r.json_handshakes_per_request:,.0f} requests), about {share:.0%} of its CPU per request "
                         "at its CPU per RSA handshake: part of TLS ÷ plaintext is handshakes, not records")
    for r in measured:
        for key, h in r.handshakes.items():
            if h.failed:
                kinds = ", ".join(f"{k} {n:,}" for k, n in sorted(h.failed.items()))
                lines.append(f"⚠ {r.server}: {sum(h.failed.values()):,} {key.upper()} handshakes failed ({kinds})")
    return lines


def markdown(results: Any) -> list[str]:
    """The section as Markdown lines (none when the run measured no TLS workload)."""
    measured, out = rows(results)
    if not measured and not out:
        return []
    lines = [f"## {TITLE}", "", NOTE, ""]
    if measured:
        lines += section_table.markdown(HEADERS, [cells(r) for r in measured]) + [""]
        lines += [f"- {n}" for n in by_model(measured) + notes(measured)]
        lines += [""] if lines[-1] != "" else []
    if out:
        lines += ["Left out of the TLS workloads:", ""] + [f"- {o.server} ({o.model}): {o.reason}" for o in out] + [""]
    return lines


def to_page(page: Any, results: Any) -> None:
    """The section on the HTML report's page (its `heading(level, text)` and `add(html)`)."""
    measured, out = rows(results)
    if not measured and not out:
        return
    esc = html.escape
    page.heading(2, TITLE)
    page.add(f'<p class="desc">{esc(NOTE)}</p>')
    if measured:
        items = "".join(f"<li>{esc(n)}</li>" for n in by_model(measured) + notes(measured))
        page.add(section_table.to_html(HEADERS, [cells(r) for r in measured]) + (f"<ul>{items}</ul>" if items else ""))
    if out:
        page.add("<p>Left out of the TLS workloads:</p><ul>"
                 + "".join(f"<li>{esc(o.server)} ({esc(o.model)}): {esc(o.reason)}</li>" for o in out) + "</ul>")


__all__ = ["TITLE", "NOTE", "HEADERS", "Handshakes", "TlsRow", "RowOut", "rows", "cells", "by_model", "notes",
           "markdown", "to_page"]
