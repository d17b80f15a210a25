"""The plain tables the report's sections share (tls_section, h2_section): one table from headers and rows of
text, as Markdown lines or an escaped HTML string, numbers right-aligned. Imports nothing of the exporters, so
any section may use it without a cycle through to_markdown."""
from __future__ import annotations

import html


def markdown(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table (pipes in cells escaped), no trailing blank line."""
    return (["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
            + ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows])


def to_html(headers: list[str], rows: list[list[str]], numeric_from: int = 3) -> str:
    """An HTML table of text cells (escaped here); columns from `numeric_from` on are right-aligned numbers."""
    def cls(i: int) -> str:
        return "num" if i >= numeric_from else ""
    head = "".join(f'<th class="{cls(i)}">{html.escape(h)}</th>' for i, h in enumerate(headers))
    trs = "".join("<tr>" + "".join(f'<td class="{cls(i)}">{html.escape(x)}</td>' for i, x in enumerate(r)) + "</tr>"
                  for r in rows)
    return f'<div class="tablewrap"><table><thead><tr>{head}</tr></thead><tbody>{trs}</tbody></table></div>'


__all__ = ["markdown", "to_html"]
