"""Numbers as rich tables on the console: labelled vectors and matrices (`dojo dynamics`, `dojo analyze`).

Not a command module: commands import it (as they import dojo_cli.cli.shared), never each
other. rich is imported when a table is made, not with this module.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.cli.shared import printable

# Printed numbers: significant digits (--json and -o keep every digit).
DIGITS = 6


def number_text(value: float) -> str:
    """A number with DIGITS significant digits, never "-0"."""
    return f"{value + 0.0:.{DIGITS}g}"  # + 0.0: no "-0"


def number_table(title: str, head: list[str]):
    """A rich Table titled ``title``: a first column of names, then right-aligned number columns."""
    from rich import box
    from rich.table import Table

    t = Table(title=printable(title), box=box.SIMPLE_HEAD, title_justify="left")
    t.add_column(head[0], no_wrap=True, overflow="fold")
    for h in head[1:]:
        t.add_column(h, justify="right", no_wrap=True, overflow="fold", min_width=DIGITS + 6)
    return t


def print_matrix(console, title: str, mat: np.ndarray, rows: list[str], cols: list[str]) -> None:
    """A labelled matrix in blocks of columns that fit the console's width.

    Args:
        console: a rich Console.
        mat: (len(rows), len(cols)) the numbers.
    """
    row_w = max([len(r) for r in rows] + [4])
    widths = [max(len(c), DIGITS + 6) for c in cols]
    room = max(console.width - row_w - 4, 1)
    start = 0
    while start < len(cols) or start == 0:
        end, used = start, 0
        while end < len(cols) and (end == start or used + widths[end] + 3 <= room):
            used += widths[end] + 3
            end += 1
        part = "" if start == 0 and end == len(cols) else f" (columns {start + 1}..{end} of {len(cols)})"
        t = number_table(title + part, [""] + cols[start:end])
        for i, r in enumerate(rows):
            t.add_row(printable(r), *(number_text(v) for v in mat[i, start:end]))
        console.print(t)
        if end >= len(cols):
            break
        start = end
