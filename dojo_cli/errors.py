"""The one exception family of dojo_cli.

Library code raises these; only the command line catches them, prints one
``file:line: field: message`` line per problem and exits with ``exit_code``.
"""

from __future__ import annotations

from dataclasses import dataclass


class DojoError(Exception):
    """Base class of every error dojo_cli raises on purpose."""

    exit_code: int = 2

    def lines(self) -> list[str]:
        """One human-readable line per problem."""
        return [str(self)]


@dataclass
class Problem:
    """One problem found in an input file.

    Attributes:
        file: the file (or "--set" / "<string>") the problem is in.
        line: 1-based line number, or None when unknown (overrides, built scenes).
        field: dotted field path, e.g. ``bodies.0.mass``; empty for whole-file problems.
        message: what is wrong, e.g. ``must be > 0``.
    """

    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class SceneError(DojoError):
    """An invalid scene (or override, or controller file): exit code 2."""

    exit_code = 2

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem("<scene>", None, "", problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]


class SceneFileError(SceneError):
    """A scene file (or a preset, a sweep file) that cannot be found or read: an I/O problem,
    exit code 3, as every missing or unreadable input file is (README, exit codes). Still a
    SceneError, so code that handles scene problems handles it."""

    exit_code = 3


class InputError(DojoError):
    """Invalid command-line input that is not a scene (flags, state files): exit code 2."""

    exit_code = 2


class SolverError(DojoError):
    """The solver failed and the caller asked to abort: exit code 1."""

    exit_code = 1


class StorageError(DojoError):
    """Reading or writing a storage file failed: exit code 3."""

    exit_code = 3


def from_core(exc: Exception, what: str) -> DojoError:
    """The DojoError for an exception raised by the compiled core (dojo_cli._core).

    Bad arguments (the binding's ValueError or TypeError: a wrong size, a wrong type)
    are InputError; a failure inside the core (RuntimeError: a matrix that cannot be
    factorised) is SolverError. Callers ``raise from_core(exc, what) from None``.
    """
    if isinstance(exc, (ValueError, TypeError)):
        return InputError(f"{what}: {exc}")
    return SolverError(f"{what}: {exc}")


def shown(value, limit: int = 60) -> str:
    """A value read from a file as a message shows it: its repr (control characters
    escaped), cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
