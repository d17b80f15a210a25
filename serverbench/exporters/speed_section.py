"""The note a report opens with when the machine's own speed moved during the run (issue 49 item 5),
shared by Markdown and HTML: what rules/machine_speed.py judged over the cells' probes, handed out by
the aggregation as `RunResults.speed`; nothing when the speed held or no cell was probed."""
from __future__ import annotations

import html as _html

from ..results.aggregate import RunResults
from ..rules.machine_speed import RULE

LABEL = "machine speed"  # the HTML box's label, as a group warning's kind is shown


def note(results: RunResults) -> str | None:
    """The sentences, with the rule (None: the probes stayed within the rule's spread, or there were none)."""
    return f"{results.speed.text()} (Noted when {RULE}.)" if results.speed is not None else None


def markdown(results: RunResults) -> list[str]:
    """The note as Markdown lines (none when there is nothing to say)."""
    text = note(results)
    return [f"⚠ {text}", ""] if text else []


def html(results: RunResults) -> str:
    """The note as a warning box of the HTML page ("" when there is nothing to say)."""
    text = note(results)
    return (f'<div class="warnings"><ul><li class="w-speed"><b>{LABEL}</b>{_html.escape(text)}'
            "</li></ul></div>") if text else ""


__all__ = ["LABEL", "note", "markdown", "html"]
