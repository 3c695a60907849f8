"""Dojo's ``verbose``: one line per solver iteration (SolverOptions(verbose=True)).

Dojo's mehrotra! prints, when ``opts.verbose``, a table of the iterations of each solve; here
the core records them (``Data.log``: iteration, residual, bvio, alpha, kappa, step, rvio) and
these lines are made from that record: n, bvio, rvio, alpha, kappa (Dojo's mu), the residual's
and the step's infinity norms. ``dojo simulate --verbose`` prints the same table.

Where the lines go is the caller's choice (``write``); the library's default is stderr, as
Dojo prints to its console, so that stdout stays the caller's output.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

HEADER = f"{'n':>4} {'bvio':>9} {'rvio':>9} {'alpha':>9} {'kappa':>9} {'|res|':>9} {'|step|':>9}"


def iteration_line(rec: dict) -> str:
    """One iteration as a line of the table (a record of ``solve_step``'s ``log``).

    Without inequalities (Newton's method) there is no complementarity: bvio and kappa are
    0 and rvio is the residual.
    """
    return (
        f"{rec['iteration']:>4} {rec.get('bvio', 0.0):>9.2e} {rec.get('rvio', rec['residual']):>9.2e} "
        f"{rec['alpha']:>9.2e} {rec.get('kappa', 0.0):>9.2e} {rec['residual']:>9.2e} {rec['step']:>9.2e}"
    )


def iteration_printer(write: Callable[[str], None] | None = None) -> Callable[[dict], None]:
    """A ``log`` callback that writes the table: its header at the first iteration of each solve.

    Args:
        write: receives each line without its newline (default: a line on sys.stderr).
    """
    if write is None:
        def write(line: str) -> None:
            sys.stderr.write(line + "\n")

    def log(rec: dict) -> None:
        if rec["iteration"] == 1:
            write(HEADER)
        write(iteration_line(rec))

    return log
