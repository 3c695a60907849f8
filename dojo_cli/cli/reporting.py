"""How every command reports: lines on stderr, and DojoError as one line per problem plus its exit code.

Library errors (the DojoError family) are caught here, at the edge of each command, and
printed ``file:line: field: message`` with the error's exit code: 2 invalid input, 1
solver failure with --abort-on-failure, 3 I/O.
"""

from __future__ import annotations

import functools

import typer

from dojo_cli.errors import DojoError


def printable(text: str) -> str:
    """``text`` with every character that is not printable written as its escape
    (``\\x1b``, ``\\x00``): a file name, a YAML key or a value from a hostile input never
    sends control characters (terminal escape sequences) to the user's terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def echo_err(line: str) -> None:
    """One line on stderr, control characters escaped."""
    typer.echo(printable(line), err=True)


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
