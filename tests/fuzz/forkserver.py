"""A fork server for the fuzz suite: ``dojo`` processes without the ~0.5-1 s start-up each.

Run as a script by tests/fuzz/runner.py (never imported by the tests):

    python forkserver.py /path/to/venv/bin/dojo

It imports the command line (the console script's entry point, every command module,
and the libraries they import lazily) once, answers ``ready`` and then reads one JSON
request per line on its stdin::

    {"argv": ["dojo", "check", "scene.yaml"], "cwd": "...", "stdout": "...",
     "stderr": "...", "timeout": 30, "memory": 4294967296}

For each request it forks. The child becomes what the ``dojo`` console script is:
its own process group, the request's directory as working directory, stdin from
/dev/null, stdout and stderr on the request's files, the argv in ``sys.argv``; then
it executes the installed console script itself (compiled from its file and run as
``__main__``, so whatever entry point the package declares). What leaves the script
is handled as the interpreter handles it (``finish``): an uncaught exception is
printed by sys.excepthook with exit status 1, SystemExit gives its code, an uncaught
KeyboardInterrupt ends the process by SIGINT; then Python's shutdown steps (threads
joined, atexit handlers, std streams flushed) and libc's exit() (the C libraries'
handlers: HDF5 closes its files). Only the teardown of every module is skipped.

The server waits for the child with a timeout (a pidfd and select), kills the
child's process group with SIGKILL on a hang, and answers one JSON line::

    {"status": <raw wait status>, "exitcode": <int or null>, "signal": <int or null>,
     "timed_out": <bool>, "elapsed": <seconds>}
"""

from __future__ import annotations

import importlib
import json
import os
import re
import resource
import select
import signal
import sys
import time

# Modules the commands import inside their functions (tests/test_imports.py keeps them
# out of `dojo --help`). Importing them here only saves time in every child; a name
# that does not exist (a module renamed) is skipped.
PRELOAD = (
    "numpy",
    "scipy.spatial.transform",
    "h5py",
    "yaml",
    "pydantic",
    "lxml.etree",
    "trimesh",
    "rich.progress",
    "dojo_cli",
    "dojo_cli.api",
    "dojo_cli.scene.loader",
    "dojo_cli.scene.builder",
    "dojo_cli.scene.urdf",
    "dojo_cli.scene.urdf_scene",
    "dojo_cli.scene.robots",
    "dojo_cli.io.storage.writer",
    "dojo_cli.io.storage.reader",
    "dojo_cli.io.gradient_files",
    "dojo_cli.simulation.trajectory",
    "dojo_cli.simulation.run",
    "dojo_cli.simulation.gradient_record",
    "dojo_cli.analysis.gradient_check",
    "dojo_cli.viz.pictures",
    "dojo_cli.viz.meshcat_scene",
)


def preload(dojo_script: str) -> None:
    from dojo_cli.cli import app

    # the console script's own imports ("from dojo_cli.__main__ import main")
    with open(dojo_script, encoding="utf-8", errors="replace") as fh:
        script_modules = re.findall(r"^from\s+([\w.]+)\s+import", fh.read(), re.MULTILINE)
    names = script_modules + list(PRELOAD) + [entry.target.partition(":")[0] for entry in app.COMMANDS]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # What the picture commands do before they draw (matplotlib.use("Agg"), then pyplot),
    # done once here: the font cache is then loaded in every child.
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot
    except ImportError:
        pass


def read_line(fd: int, pending: bytearray) -> bytes | None:
    """One line from ``fd`` (os.read, no buffering that a child could inherit); None at EOF."""
    while b"\n" not in pending:
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        pending += chunk
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return line


def write_line(fd: int, obj: dict) -> None:
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def become_child(req: dict, private_fds: tuple[int, ...]) -> list[str]:
    """In the forked child: set the process up as the real `dojo` would be; return argv."""
    os.setpgid(0, 0)
    for fd in private_fds:
        os.close(fd)
    os.chdir(req["cwd"])
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in (null, out, err):
        os.close(fd)
    memory = req.get("memory")
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    env = req.get("env")
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    return list(req["argv"])


def wait_child(pid: int, timeout: float) -> tuple[int, bool]:
    """(raw wait status, timed out) of ``pid``, killing its process group after ``timeout`` s."""
    timed_out = False
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    deadline = time.monotonic() + timeout
    if pidfd is not None:
        try:
            ready, _, _ = select.select([pidfd], [], [], timeout)
        finally:
            os.close(pidfd)
        timed_out = not ready
    else:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status, False
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.002)
    if timed_out:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, status = os.waitpid(pid, 0)
    # anything the case started in its group (a browser, a server) goes with it
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return status, timed_out


def serve(dojo_script: str) -> list[str] | None:
    """The server loop. Returns argv in a forked child; None when the client hangs up."""
    # The protocol runs on private copies of fds 0 and 1; fds 0 and 1 themselves (and the
    # sys.stdin/sys.stdout objects every child inherits) become /dev/null and stay unused.
    proto_in, proto_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    preload(dojo_script)
    sys.stdout.flush()
    sys.stderr.flush()
    write_line(proto_out, {"ready": True, "pid": os.getpid()})
    pending = bytearray()
    while True:
        line = read_line(proto_in, pending)
        if line is None:
            return None
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            return become_child(req, (proto_in, proto_out))
        status, timed_out = wait_child(pid, float(req.get("timeout", 30)))
        write_line(proto_out, {
            "status": status,
            "exitcode": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "timed_out": timed_out,
            "elapsed": time.monotonic() - start,
        })


def system_exit_status(exc: SystemExit) -> int:
    """The exit status the interpreter gives an uncaught SystemExit (Python/pythonrun.c)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:  # noqa: BLE001, S110 - as the interpreter: a broken stderr is not reported
        pass
    return 1


def finish(status: int, interrupted: bool) -> None:
    """End the child as Py_FinalizeEx and exit() would, minus the teardown of every module.

    Python's shutdown joins the non-daemon threads, runs the atexit handlers and flushes
    sys.stdout and sys.stderr (a failing stdout flush gives exit 120); then C's exit()
    runs the C libraries' handlers (HDF5 closes the files left open). The module teardown
    in between (half a second with numpy, scipy, matplotlib, h5py loaded) changes nothing
    a user sees, and is the one step skipped: libc's exit() is called directly.
    """
    import atexit
    import ctypes
    import threading

    try:
        threading._shutdown()
    except Exception:  # noqa: BLE001, S110 - Py_FinalizeEx goes on whatever the threads did
        pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception as exc:  # noqa: BLE001
            if stream is sys.stdout:
                status = 120
                try:
                    sys.stderr.write(f"Exception ignored in: {stream!r}\n{type(exc).__name__}: {exc}\n")
                    sys.stderr.flush()
                except Exception:  # noqa: BLE001, S110 - stderr itself is broken
                    pass
    if interrupted:
        # an uncaught KeyboardInterrupt ends the interpreter by SIGINT (Python >= 3.8)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    ctypes.CDLL(None).exit(status)
    os._exit(status)


if __name__ == "__main__":
    dojo_script = os.path.abspath(sys.argv[1])
    # sys.path as the console script has it: its own folder first, not tests/fuzz
    sys.path[0] = os.path.dirname(dojo_script)
    argv = serve(dojo_script)
    if argv is None:
        sys.exit(0)
    # From here on this process is `dojo`: the console script itself runs as __main__
    # (whatever entry point the installed package names), and what leaves it is handled
    # as the interpreter handles what leaves a script.
    sys.argv = [dojo_script, *argv[1:]]
    with open(dojo_script, "rb") as fh:
        code = compile(fh.read(), dojo_script, "exec")
    interrupted = False
    try:
        exec(code, {"__name__": "__main__", "__file__": dojo_script, "__builtins__": __builtins__})  # noqa: S102
        status = 0
    except SystemExit as exc:
        status = system_exit_status(exc)
    except BaseException as exc:  # noqa: BLE001 - printed as the interpreter prints it
        sys.excepthook(type(exc), exc, exc.__traceback__)
        status, interrupted = 1, isinstance(exc, KeyboardInterrupt)
    finish(status, interrupted)
