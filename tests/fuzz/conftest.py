"""The fuzz suite's profiles and its session: a fork server, a recorder, base runs.

Profiles (``pytest tests/fuzz --hypothesis-profile=NAME``; registered in profiles.py):

- ``fuzz-ci`` (used whenever the loaded profile is not ``long``): a few hundred cases over
  the four families, derandomized (the same cases on every run), no deadline.
- ``long``: thousands of cases (at least 2,000 over the families), random. Scale it with
  DOJO_FUZZ_SCALE (e.g. 2.5). Register-only: the tests take their settings from here,
  so loading neither profile changes the rest of the test suite.

Environment:
- DOJO_FUZZ_LOG: folder of the per-case JSON lines (default: in pytest's basetemp).
- DOJO_FUZZ_FINDINGS: folder of the failing cases (default: in pytest's basetemp).
- DOJO_FUZZ_RAISE=1: fail at the first violation, so that hypothesis shrinks it (slow:
  each shrink step is a process; for working on one bug).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import currently_in_test_context, event, seed, settings

from tests.fuzz.runner import ForkServer, Recorder, Result, Violation, violations

# The budget of each family, as a fraction of the profile's max_examples.
WEIGHTS = {"scenes": 1.2, "set": 0.9, "storage": 1.0, "urdf": 0.6}



# Each family runs as SHARDS tests (pytest-xdist spreads them over the workers), each with
# its share of the examples and, in CI, its own fixed seed.
SHARDS = 2


def long_profile() -> bool:
    """--hypothesis-profile=long (on any path: tests/fuzz/profiles.py), or
    DOJO_FUZZ_PROFILE=long (the fuzz suite alone)."""
    return settings.get_current_profile_name() == "long" or os.environ.get("DOJO_FUZZ_PROFILE") == "long"


def family_settings(family: str, shard: int):
    """The decorators of one family shard's @given: its settings (long or fuzz-ci) and, in
    CI, a fixed seed (so the CI sample is the same on every run; the long profile is random)."""
    name = "long" if long_profile() else "fuzz-ci"
    base = settings.get_profile(name)
    scale = float(os.environ.get("DOJO_FUZZ_SCALE", "1")) if name == "long" else 1.0
    n = max(1, round(base.max_examples * WEIGHTS[family] * scale / SHARDS))
    chosen = settings(base, max_examples=n)

    def decorate(test):
        test = chosen(test)
        return test if name == "long" else seed(20240 + 97 * shard + sum(map(ord, family)))(test)

    return decorate


class Fuzz:
    """What the families share: run a case, check it, record it, clean up."""

    def __init__(self, root: Path, server: ForkServer, recorder: Recorder, raise_now: bool):
        self.root, self.server, self.recorder, self.raise_now = root, server, recorder, raise_now
        self._n = itertools.count()
        self.seen: dict[tuple[str, str], Result] = {}

    def case_dir(self) -> Path:
        d = self.root / "cases" / f"c{next(self._n)}"
        d.mkdir(parents=True)
        return d

    def done(self, case_dir: Path) -> None:
        shutil.rmtree(case_dir, ignore_errors=True)

    def run(self, test: str, family: str, argv: list[str], cwd: Path, inputs=(), outputs=(),
            expect_written: str | None = None, extra: dict | None = None) -> Result:
        # Hypothesis often generates the same case again (it mutates earlier examples): a
        # case already run (same command line, same input files) is not run twice.
        key = hashlib.sha1(repr(argv).encode())
        for name in inputs:
            p = cwd / name
            key.update(p.read_bytes() if p.is_file() else b"-")
        key = (family, key.hexdigest())
        if key in self.seen:
            return self.seen[key]
        res = self.server.run(argv, cwd)
        self.seen[key] = res
        found = violations(res, [cwd / o for o in outputs], expect_written)
        self.check(test, family, res, found, inputs, extra)
        return res

    def check(self, test: str, family: str, res: Result, found: list[Violation], inputs=(), extra=None) -> None:
        self.recorder.record(test, family, res, found, [res.cwd / i for i in inputs], extra)
        if currently_in_test_context():
            event(f"{family}: dojo {res.argv[0] if res.argv else ''} -> {res.code}")
            for v in found:
                event(f"{family}: VIOLATION {v.kind}")
        if found and self.raise_now:
            raise AssertionError("\n".join(f"{v.kind}: {v.signature}\n{v.detail[-1500:]}" for v in found))

    def assert_clean(self, test: str) -> None:
        if self.recorder.failures.get(test):
            pytest.fail(self.recorder.summary(test), pytrace=False)


@pytest.fixture(scope="session")
def fuzz(tmp_path_factory) -> Fuzz:
    root = tmp_path_factory.mktemp("fuzz")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    log = Path(os.environ.get("DOJO_FUZZ_LOG") or root / "log")
    findings = Path(os.environ.get("DOJO_FUZZ_FINDINGS") or root / "findings")
    server = ForkServer(root / "server")
    try:
        yield Fuzz(root, server, Recorder(log, findings, worker), os.environ.get("DOJO_FUZZ_RAISE") == "1")
    finally:
        server.close()


BASE_RUNS = {"pendulum": ["--steps", "8"], "box": ["--steps", "8"], "sphere": ["--steps", "8"]}


@pytest.fixture(scope="session")
def base_runs(fuzz) -> dict[str, Path]:
    """Small real runs to damage: pendulum (a joint), box (eight contacts), sphere (rolling contact)."""
    d = fuzz.root / "base"
    d.mkdir()
    runs = {}
    for name, args in BASE_RUNS.items():
        res = fuzz.server.run(["simulate", name, "-o", f"{name}.h5", "-q", *args], d)
        assert res.exitcode == 0 and (d / f"{name}.h5").exists(), f"base run {name}: {res.code}\n{res.stderr}"
        runs[name] = d / f"{name}.h5"
    return runs
