"""How the command line takes the signals that ask it to stop: SIGINT, SIGTERM, SIGHUP.

All three mean the same (Ctrl-C; what `timeout`, batch schedulers and a closed
terminal send): stop cleanly, say so in one line, exit 128 + the signal. A signal
that whoever started us ignores (nohup ignores SIGHUP) stays ignored.

Python's default, KeyboardInterrupt raised wherever the interpreter happens to be,
is wrong in three places, which this module covers:

- While modules are imported. pydantic built its validators and serializers when
  dojo_cli.scene.schema was imported, and a KeyboardInterrupt raised inside that
  build came out as a ``SchemaError`` naming a field (seen in the signal trials of
  issue 11: exit 1 and a traceback, for a Ctrl-C 0.4 s after start). The specs now
  hand pydantic-core finished schemas, whose build runs no Python code (a signal
  waits for the next line; tests/scene/test_specs.py), but any import may be cut
  anywhere: imports run with the signals recorded, and the stop is raised once they
  are done: ``signals_deferred``.
- While a run writes its file (``dojo simulate``): the signal is recorded and the run
  stops at its next block boundary, so that no write is cut in half: ``stop_requests``.
- After the first signal: a second Ctrl-C while the process cleans up and exits would
  raise again inside the clean-up (or, once Python has nothing left to catch it,
  kill the process by SIGINT): ``ignore_stop_signals`` once the stop is under way.
- Where the raise is lost. A handler runs at whatever bytecode the main thread is at,
  and that can be a ``__del__`` or a weak-reference callback, run by the garbage
  collector or when an object is freed (importlib's module locks have one, run during
  every import), where Python prints "Exception ignored in ..." with a traceback and
  carries on. Seen in the signal trials: a SIGTERM lost that way left a run of `dojo
  simulate` going for good, and a Ctrl-C printed that traceback. So the handler also
  records the signal (``pending``), every ``stop_requests`` block starts from it (a
  lost stop is taken at the run's first block boundary), and a dropped Interrupted is
  not printed (``install_stop_handlers`` sets ``sys.unraisablehook``). A command that
  has no block boundaries (``check``, ``energy``, ...) then finishes normally: the
  signal came too late for it, as if it had arrived a moment after the command ended.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived; ``signum`` says which (the exit code is 128 + signum)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_number(exc: KeyboardInterrupt) -> int:
    """The signal behind a KeyboardInterrupt (SIGINT for Python's own)."""
    return getattr(exc, "signum", signal.SIGINT)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


_pending: list[int] = []  # the first stop signal taken by _raise_interrupted, raised or not


def pending() -> int | None:
    """The first stop signal raised as Interrupted in this process, whether or not the
    raise reached anyone (None when there was none)."""
    return _pending[0] if _pending else None


def _raise_interrupted(signum, frame) -> None:
    if not _pending:
        _pending.append(signum)  # (a list: no global statement, and append is atomic)
    raise Interrupted(signum)


def _taken() -> list[signal.Signals]:
    """The stop signals we may handle: not ignored on purpose by whoever started us."""
    if not _in_main_thread():
        return []
    return [sig for sig in STOP_SIGNALS if signal.getsignal(sig) is not signal.SIG_IGN]


class _DroppedStopsUnprinted:
    """sys.unraisablehook: an Interrupted that Python dropped (raised inside a finalizer or a
    weak-reference callback) is not printed; ``pending`` has its signal. Anything else
    goes to the hook that was there before."""

    def __init__(self, previous):
        self.previous = previous

    def __call__(self, unraisable) -> None:
        if isinstance(unraisable.exc_value, Interrupted):
            return
        self.previous(unraisable)


def install_stop_handlers() -> None:
    """At start-up: SIGTERM and SIGHUP raise as SIGINT does (Interrupted, with the signal),
    and a raise that Python drops is recorded, not printed (module docstring)."""
    for sig in _taken():
        signal.signal(sig, _raise_interrupted)
    if not isinstance(sys.unraisablehook, _DroppedStopsUnprinted):
        sys.unraisablehook = _DroppedStopsUnprinted(sys.unraisablehook)


def ignore_signals(signals) -> None:
    """Set ``signals`` to SIG_IGN, even while stop signals keep arriving.

    ``signal.signal`` first runs the Python handlers of signals that came in and were not
    handled yet, and one of those raises (our handler's Interrupted, Python's
    KeyboardInterrupt); and a signal whose handler was set to SIG_IGN after it came in
    makes it raise ``OSError: Signal 2 ignored due to race condition`` (CPython's
    signalmodule.c). Both were seen as a traceback from a second Ctrl-C while the first
    one's clean-up set the handlers (tests/cli/test_signals.py, double SIGINT). Either is
    one more stop signal, which is what is being ignored: each clears the signal's
    tripped flag, so setting it again succeeds."""
    for sig in signals:
        for _ in range(len(STOP_SIGNALS) + 2):  # (each raise clears a tripped signal: a few tries suffice)
            try:
                signal.signal(sig, signal.SIG_IGN)
                break
            except (OSError, KeyboardInterrupt):
                continue


def ignore_stop_signals() -> None:
    """The stop is under way: further stop signals change nothing."""
    ignore_signals(_taken())


class StopRequest:
    """Records the first stop signal; ``check`` raises Interrupted for it."""

    def __init__(self):
        # a stop raised earlier and lost (swallowed in a __del__, module docstring) counts
        self.signum: int | None = pending()

    def handler(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = signum

    def check(self) -> None:
        if self.signum is not None:
            raise Interrupted(self.signum)


@contextlib.contextmanager
def stop_requests():
    """In the block, stop signals are only recorded (``request.check()`` raises them);
    on leaving, the previous handlers come back, or, when leaving by the stop
    (KeyboardInterrupt), stop signals are ignored from then on."""
    request = StopRequest()
    previous = {sig: signal.signal(sig, request.handler) for sig in _taken()}
    stopping = False
    try:
        yield request
    except KeyboardInterrupt:
        stopping = True
        raise
    finally:
        # once the stop is under way, further signals change nothing (ignore_stop_signals)
        if stopping:
            ignore_signals(previous)
        else:
            for sig, handler in previous.items():
                signal.signal(sig, handler)  # (a signal now pending only records itself: request.handler)


@contextlib.contextmanager
def signals_deferred():
    """Record stop signals in the block and raise the first (Interrupted) when it ends."""
    with stop_requests() as request:
        yield
    request.check()
