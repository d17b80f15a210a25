"""The Rich consoles every CLI module prints through."""
from __future__ import annotations

import os

from rich.console import Console


def make_console(stderr: bool = False) -> Console:
    """Rich console; 160 columns when not a terminal (CI logs, pipes) so tables don't fold."""
    c = Console(stderr=stderr)
    if not c.is_terminal and "COLUMNS" not in os.environ:
        c = Console(stderr=stderr, width=160)
    return c


console = make_console()
err_console = make_console(stderr=True)
