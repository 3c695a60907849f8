"""Running `dojo` as a user would, checking what every case must satisfy, recording outcomes.

- ``ForkServer``: the client of forkserver.py (one per test process); ``run_real`` the
  plain subprocess (the true-process sample, and the reference the fork path is held to).
- ``violations``: the properties of issue 11 every case must keep.
- ``Recorder``: one JSON line per case (family, command, exit code, violations), and a
  copy of each failing case under the findings folder with the command that reproduces it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SERVER = HERE / "forkserver.py"

# issue 11: 0 success, 1 solver failure (--abort-on-failure), 2 invalid input, 3 I/O,
# 4 complete with failed steps. 128 + N only after a signal, and the fuzz sends none.
ALLOWED_EXIT_CODES = frozenset({0, 1, 2, 3, 4})
CASE_TIMEOUT = 30.0
# Address space of one case: a run that needs more is an unbounded input (alias bombs),
# and must not take the machine with it. Gives a MemoryError (a traceback) instead.
CASE_MEMORY = 4 << 30
# The datasets that hold states (docs/storage.md): all finite in a file that says complete.
STATE_DATASETS = ("time", "x", "q", "v", "omega", "v_mid", "omega_mid", "px", "pq", "minimal/q", "minimal/v")
NUMPY_WARNINGS = ("RuntimeWarning", "overflow encountered", "invalid value encountered", "divide by zero encountered")


def dojo_executable() -> Path:
    exe = Path(sys.executable).with_name("dojo")
    if not exe.exists():
        exe = REPO / ".venv" / "bin" / "dojo"
    return exe


def case_environment() -> dict[str, str]:
    """The environment of every case, fork or real: the test's, with one BLAS thread (two
    pytest workers on two cores; numbers do not depend on it) and no Python warning options
    that a user would not have."""
    env = dict(os.environ)
    for key in ("PYTHONWARNINGS", "PYTHONDEVMODE", "PYTHONFAULTHANDLER", "COVERAGE_PROCESS_START", "MPLBACKEND"):
        env.pop(key, None)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONHASHSEED="0")
    if os.environ.get("DOJO_FUZZ_SHOW_WARNINGS") == "1":
        # `dojo` hides RuntimeWarnings unless Python was asked for warnings (-W / PYTHONWARNINGS):
        # ask, to find the overflows the library produces but users are not shown (issue 11, item 7)
        env["PYTHONWARNINGS"] = "default::RuntimeWarning"
    return env


def _default_signals() -> None:
    """In a child: the dispositions of a terminal's process (a test worker may ignore or
    block signals, and both are inherited)."""
    sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)
    for sig in sigs:
        signal.signal(sig, signal.SIG_DFL)


@dataclass
class Result:
    argv: list[str]
    cwd: Path
    exitcode: int | None  # None when killed by a signal
    signal: int | None
    timed_out: bool
    stdout: str
    stderr: str
    elapsed: float
    how: str = "fork"

    @property
    def code(self) -> str:
        """The outcome as one word: exit code, sig<N> or hang."""
        if self.timed_out:
            return "hang"
        if self.signal is not None:
            return f"sig{self.signal}"
        return str(self.exitcode)


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="backslashreplace")
    except OSError:
        return ""


class ForkServer:
    """One forkserver.py process; ``run`` a `dojo` command line in it."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        self.log = open(scratch / "forkserver.log", "ab")  # noqa: SIM115 - the server's stderr, closed by close()
        self.proc = None
        self._start()

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(dojo_executable())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            env=case_environment(), cwd=self.scratch, preexec_fn=_default_signals,  # noqa: PLW1509 - signal dispositions only
        )
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError(f"the fork server did not start; see {self.scratch / 'forkserver.log'}")
        json.loads(ready)

    def run(self, argv: list[str], cwd: Path, timeout: float = CASE_TIMEOUT) -> Result:
        """``dojo argv[1:]`` in ``cwd``; stdout and stderr go to files in ``cwd``'s parent."""
        if self.proc.poll() is not None:
            self._start()
        stem = hashlib.sha1(repr((argv, str(cwd), time.monotonic())).encode()).hexdigest()[:10]
        out, err = self.scratch / f"{stem}.out", self.scratch / f"{stem}.err"
        req = {"argv": ["dojo", *argv], "cwd": str(cwd), "stdout": str(out), "stderr": str(err),
               "timeout": timeout, "memory": CASE_MEMORY}
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the fork server died; see {self.scratch / 'forkserver.log'}")
        rep = json.loads(line)
        res = Result(list(argv), cwd, rep["exitcode"], rep["signal"], rep["timed_out"], _read(out), _read(err),
                     rep["elapsed"], "fork")
        for p in (out, err):
            p.unlink(missing_ok=True)
        return res

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def run_real(argv: list[str], cwd: Path, timeout: float = CASE_TIMEOUT) -> Result:
    """``dojo argv`` as a plain subprocess: the installed console script, a fresh interpreter."""

    def limits():
        _default_signals()
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (CASE_MEMORY, CASE_MEMORY))

    start = time.monotonic()
    proc = subprocess.Popen([str(dojo_executable()), *argv], cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=case_environment(),
                            preexec_fn=limits, start_new_session=True)  # noqa: PLW1509 - signals and rlimit only
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    rc = proc.returncode
    return Result(list(argv), cwd, rc if rc >= 0 else None, -rc if rc < 0 else None, timed_out,
                  out.decode("utf-8", errors="backslashreplace"), err.decode("utf-8", errors="backslashreplace"),
                  time.monotonic() - start, "real")


# ------------------------------------------------------------------ properties
@dataclass
class Violation:
    kind: str  # traceback, numpy-warning, exit-code, signal, hang, silent-error, nonfinite-complete, ...
    signature: str  # what groups cases with the same cause
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.signature}"


_FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')


def _short(path: str) -> str:
    for marker in ("dojo_cli/", "site-packages/", "lib/python3"):
        i = path.rfind(marker)
        if i >= 0:
            return path[i:] if marker == "dojo_cli/" else path[i + len(marker):]
    return os.path.basename(path)


def traceback_signature(stderr: str) -> str:
    """'ExcType at dojo_cli/file.py:function (in lib.py:function)' of the last traceback."""
    lines = stderr.splitlines()
    start = max(i for i, ln in enumerate(lines) if "Traceback (most recent call last)" in ln)
    frames, exc = [], "?"
    for ln in lines[start + 1:]:
        m = _FRAME.match(ln)
        if m:
            frames.append((m["file"], m["func"]))
        elif ln and not ln.startswith(" ") and not ln.startswith("^"):
            exc = ln.split(":", 1)[0].strip()
            break
    ours = [f for f in frames if "dojo_cli/" in f[0]]
    where = f"{_short(ours[-1][0])}:{ours[-1][1]}" if ours else "?"
    inner = f"{_short(frames[-1][0])}:{frames[-1][1]}" if frames else "?"
    return f"{exc} at {where}" + (f" (in {inner})" if inner != where else "")


def _warning_signature(stderr: str) -> str:
    for ln in stderr.splitlines():
        m = re.search(r"(\S+\.py):(\d+): (\w*Warning): (.*)$", ln)
        if m and any(w in ln for w in NUMPY_WARNINGS):
            return f"{m[3]} at {_short(m[1])}: {m[4]}"
    for ln in stderr.splitlines():
        if any(w in ln for w in NUMPY_WARNINGS):
            return ln.strip()[:120]
    return "?"


def storage_violations(path: Path) -> list[Violation]:
    """A storage file that says ``complete`` holds only finite states."""
    import h5py
    import numpy as np

    try:
        with h5py.File(path, "r") as f:
            status = f.attrs.get("status")
            if isinstance(status, bytes):
                status = status.decode(errors="replace")
            if status != "complete":
                return []
            bad = []
            for name in STATE_DATASETS:
                if name in f and isinstance(f[name], h5py.Dataset):
                    ds = f[name]
                    # in slices: a file may claim 10^9 rows, which whole would not fit in memory
                    rows = ds.shape[0] if ds.shape else 1
                    for start in range(0, rows, 100_000):
                        data = np.asarray(ds[start : start + 100_000] if ds.shape else ds[()])
                        if data.dtype.kind in "fc" and not np.all(np.isfinite(data)):
                            bad.append(name)
                            break
    except Exception as exc:  # noqa: BLE001 - an unreadable output is reported by the caller
        return [Violation("unreadable-output", f"{type(exc).__name__} opening an output file", str(exc)[:300])]
    if bad:
        return [Violation("nonfinite-complete", "status complete with non-finite " + ",".join(bad), str(path))]
    return []


def violations(res: Result, outputs: list[Path] = (), expect_written: Path | None = None) -> list[Violation]:
    """Everything wrong with one case, empty when it behaved."""
    found: list[Violation] = []
    err = res.stderr
    if res.timed_out:
        found.append(Violation("hang", f"no exit within {CASE_TIMEOUT:g} s: dojo {res.argv[0]}", ""))
    elif res.signal is not None:
        name = signal.Signals(res.signal).name if res.signal in signal.Signals._value2member_map_ else str(res.signal)
        found.append(Violation("signal", f"killed by {name}: dojo {res.argv[0]}", err[-2000:]))
    elif res.exitcode not in ALLOWED_EXIT_CODES:
        found.append(Violation("exit-code", f"exit {res.exitcode}: dojo {res.argv[0]}", err[-2000:]))
    if "Traceback" in err:
        found.append(Violation("traceback", traceback_signature(err) if "Traceback (most recent call last)" in err
                               else "'Traceback' in stderr", err[-4000:]))
    if any(w in err for w in NUMPY_WARNINGS):
        found.append(Violation("numpy-warning", _warning_signature(err), err[-2000:]))
    if not res.timed_out and res.exitcode not in (0, None) and not err.strip():
        found.append(Violation("silent-error", f"exit {res.exitcode} with nothing on stderr: dojo {res.argv[0]}",
                               res.stdout[-1000:]))
    if not res.timed_out and res.signal is None:
        for p in outputs:
            p = res.cwd / p
            if p.exists() and p.is_file() and p.stat().st_size > 0:
                found += storage_violations(p)
        if expect_written is not None and res.exitcode == 0:
            p = res.cwd / expect_written
            if not p.exists():
                found.append(Violation("missing-output", f"exit 0 without its output file: dojo {res.argv[0]}", str(p)))
    return found


# ------------------------------------------------------------------ recording
def _slug(text: str, n: int = 70) -> str:
    s = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")
    return (s[:n] or "x") + "-" + hashlib.sha1(text.encode()).hexdigest()[:6]


def shell_command(argv: list[str]) -> str:
    return "dojo " + " ".join(shlex.quote(os.fsdecode(os.fsencode(a))) for a in argv)


class Recorder:
    """Outcomes of the cases of one test process.

    Every case is a JSON line in ``<log_dir>/cases-<worker>.jsonl`` (family, command,
    outcome, violations). A case with violations is copied into
    ``<findings>/<family>/<kind>-<signature>/<case>/``: its input files, ``cmd.sh`` (cd there
    and run it to reproduce), stdout, stderr and what was wrong; at most KEEP per signature
    and worker, smallest inputs preferred.
    """

    KEEP = 4

    def __init__(self, log_dir: Path, findings: Path, worker: str):
        self.log_dir, self.findings = log_dir, findings
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"cases-{worker}.jsonl"
        self.kept: dict[tuple[str, str], int] = {}
        self.failures: dict[str, list[tuple[str, Path | None, str]]] = {}  # test -> (violation, saved, command)

    def record(self, test: str, family: str, res: Result, found: list[Violation], inputs: list[Path] = (),
               extra: dict | None = None) -> None:
        saved = None
        if found:
            saved = self._save(family, res, found, inputs)
        entry = {"family": family, "command": res.argv[0] if res.argv else "", "outcome": res.code,
                 "violations": [str(v) for v in found], "elapsed": round(res.elapsed, 3), "how": res.how,
                 "saved": str(saved) if saved else None,
                 "stderr": res.stderr.strip().splitlines()[0][:160] if res.stderr.strip() else "", "argv": [os.fsdecode(os.fsencode(a)) for a in res.argv][:12]}
        if extra:
            entry.update(extra)
        with open(self.log_path, "a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(json.dumps(entry, ensure_ascii=True) + "\n")
        for v in found:
            self.failures.setdefault(test, []).append((str(v), saved, shell_command(res.argv)))

    def _save(self, family: str, res: Result, found: list[Violation], inputs: list[Path]) -> Path | None:
        key = (family, f"{found[0].kind}-{found[0].signature}")
        n = self.kept.get(key, 0)
        if n >= self.KEEP:
            return None
        self.kept[key] = n + 1
        dest = self.findings / family / _slug(key[1]) / f"case-{os.getpid()}-{n}"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        for p in inputs:
            src = res.cwd / p
            if src.is_file():
                shutil.copy2(src, dest / src.name)
        (dest / "cmd.sh").write_text("#!/bin/sh\n# run in this folder\n" + shell_command(res.argv) + "\n")
        (dest / "stdout.txt").write_text(res.stdout, errors="backslashreplace")
        (dest / "stderr.txt").write_text(res.stderr, errors="backslashreplace")
        (dest / "violations.txt").write_text(
            "\n\n".join(f"{v.kind}: {v.signature}\n{v.detail}" for v in found), errors="backslashreplace")
        (dest / "outcome.txt").write_text(f"{res.code}\n")
        return dest

    def summary(self, test: str) -> str:
        """The violations of ``test``, grouped, each with a saved reproducer (for the assertion)."""
        groups: dict[str, list[tuple[Path | None, str]]] = {}
        for v, saved, cmd in self.failures.get(test, []):
            groups.setdefault(v, []).append((saved, cmd))
        total = sum(len(g) for g in groups.values())
        lines = [f"{total} violations in {len(groups)} groups (findings under {self.findings}):"]
        for v, cases in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            saved = next((s for s, _ in cases if s is not None), None)
            cmd = min((c for _, c in cases), key=len)
            lines.append(f"- {len(cases)} x {v}\n    e.g. {cmd[:300]}" + (f"\n    saved: {saved}" if saved else ""))
        return "\n".join(lines)

