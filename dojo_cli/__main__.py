"""The ``dojo`` executable (pyproject.toml [project.scripts]) and ``python -m dojo_cli``.

This module imports nothing of the command line at import time, so that what
happens while Python imports it (typer, then the command's own modules: about half
a second of start-up) is inside ``main``'s handling:

- Ctrl-C during start-up ends with one line and exit 130, not a traceback from
  whichever import it interrupted (issue 11). Once a command runs, its own handling
  takes over (``dojo simulate`` finishes its file as 'interrupted').
- numpy's RuntimeWarnings (overflow, invalid value) are not shown to users unless
  they ask with ``-W``/``PYTHONWARNINGS``, the standard practice for applications
  (Python's warnings documentation, "Overriding the default filter"). The library
  is meant to produce none: the test suite turns them into errors (pyproject.toml),
  so one that appears there is a bug fixed at its source, and numbers are checked
  before arithmetic can overflow.
"""

from __future__ import annotations

import sys

from dojo_cli.errors import EXIT_INTERRUPTED  # a light module: no library is imported


def main() -> None:
    """Run the ``dojo`` command line on ``sys.argv``."""
    if not sys.warnoptions:
        import warnings

        warnings.simplefilter("ignore", RuntimeWarning)
    try:
        from dojo_cli.cli.signals import interrupts_deferred  # light: no library imported

        with interrupts_deferred():
            from dojo_cli.cli.app import app
        app()
    except KeyboardInterrupt:
        # start-up, before typer's own handling (LazyGroup.invoke) is in place
        sys.stderr.write("dojo: interrupted\n")
        raise SystemExit(EXIT_INTERRUPTED) from None


if __name__ == "__main__":
    main()
