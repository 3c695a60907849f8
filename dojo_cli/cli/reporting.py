"""How every command reports: lines on stderr, and DojoError as one line per problem plus its exit code.

Library errors (the DojoError family) are caught here, at the edge of each command, and
printed ``file:line: field: message`` with the error's exit code: 2 invalid input, 1
solver failure with --abort-on-failure, 3 I/O.
"""

from __future__ import annotations

import functools

import typer

from dojo_cli.errors import DojoError


def echo_err(line: str) -> None:
    """One line on stderr."""
    typer.echo(line, err=True)


def reports_errors(command):
    """Print DojoError problems one per line and exit with the error's code."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except DojoError as exc:
            for line in exc.lines():
                echo_err(line)
            raise typer.Exit(exc.exit_code) from None

    return wrapper
