"""How the command line takes signals.

A signal's default Python behaviour (KeyboardInterrupt raised wherever the
interpreter happens to be) is wrong in two places, which this module covers:

- While modules are imported. pydantic builds its validators and serializers when
  dojo_cli.scene.schema is imported, and a KeyboardInterrupt raised inside that
  build comes out as a ``SchemaError`` naming a field (seen in the signal trials of
  issue 11: exit 1 and a traceback, for a Ctrl-C 0.4 s after start). So imports run
  with Ctrl-C recorded and raised once they are done: ``interrupts_deferred``.
- While a run writes its file (``dojo simulate``): handled there, at block boundaries.
"""

from __future__ import annotations

import contextlib
import signal
import threading


@contextlib.contextmanager
def interrupts_deferred():
    """Record SIGINT in the block and raise KeyboardInterrupt when it ends.

    Only in the main thread (the only one Python delivers signals to) and only when
    SIGINT has Python's default handler (not ignored, not taken by someone else).
    """
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt
