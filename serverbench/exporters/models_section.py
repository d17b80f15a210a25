"""The concurrency-model legend and the rows' notes, shared by Markdown and HTML: what each model
in the run predicts (model_notes.NOTES) and, per row, its manifest's `explanation` and what its
TCP_NODELAY choice means for latency (SPEC.md, Choices)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..results.model_notes import note

MODEL_HEADERS = ["model", "what it predicts", "rows"]
NOTE_HEADERS = ["server", "note"]
NAGLE = ("TCP_NODELAY off (its stack's default): harmless while each response leaves in one write; a response "
         "written in two pieces waits for the client's delayed ACK (about 40 ms on Linux), which would show as a "
         "p50 near 40 ms under keep-alive load (java-httpserver's and erlang-inets' notes say where it does)")


def models(servers: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    """[model, note, rows] for each model in the run, in first-seen alphabetical order of rows."""
    by_model: dict[str, list[str]] = {}
    for sid, info in sorted(servers.items()):
        by_model.setdefault(str(info.get("model") or "unknown"), []).append(sid)
    return [[m, note(m) or "(no note: not a model SPEC.md lists)", ", ".join(rows)]
            for m, rows in sorted(by_model.items())]


def row_notes(servers: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    """[server, note] for rows that carry an explanation or leave Nagle on."""
    out = []
    for sid, info in sorted(servers.items()):
        parts = [str(info.get("explanation") or "").strip()]
        if ((info.get("choices") or {}).get("nodelay")) == "off":
            parts.append(NAGLE)
        text = " ".join(p if p.endswith(".") else p + "." for p in parts if p)
        if text:
            out.append([sid, text])
    return out


def nodelay(c: Mapping[str, Any] | None) -> str:
    """The row's TCP_NODELAY choice for a table cell."""
    return str((c or {}).get("nodelay") or "not declared")
