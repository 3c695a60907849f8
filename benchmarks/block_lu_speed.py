"""Block-sparse LU speed (dojo_cli._core.testing.BlockSystem) against dense LAPACK LU on the same matrix.

Usage:
    python benchmarks/block_lu_speed.py [--patterns a,b] [--batches B] [--blas-threads N]

For each pattern (the Newton-matrix shapes of a step, in the core's elimination order):
- ``chain20``, ``chain100``: n-link chains, bodies of 6 unknowns and revolute joints of 5,
  each child body then its parent joint, leaves to root (220 and 1100 unknowns, no fill);
- ``box8``: one body (6) with 8 corner contacts of 8 unknowns, contacts first (70 unknowns);
- optional: ``chain20_limits`` (joints of 7: a revolute joint with its 2 limit rows),
  ``box8_c12`` (contacts of 12), ``fourbar`` (a loop-closing joint last: 8 fill blocks);

it times, as the best per-call time over B short batches (default 300 of ~0.2 ms; fewer for the
slow dense solves, at most 1-2 s per measurement), which on a shared machine picks the batches
that nothing interrupted:
- ``kernel``: ``BlockSystem.time_kernels``: factor and one solve timed in C++ (no Python
  call in the loop), i.e. what the compiled step will pay;
- ``python``: ``system.factor(values); system.solve(b)`` from Python (adds the nanobind
  call, array checks, and the result array: ~1-2 us);
- ``LAPACK``: ``scipy.linalg.lu_factor(A); lu_solve(lu, b)`` on the dense matrix
  (``check_finite=False``), from Python, in the same run;
- ``ratio``: LAPACK / block LU, both from Python (same call overheads), and LAPACK / kernel.
Also ``solve x16``: the kernel time of one solve with 16 right-hand sides.

The values are shaped like a step's matrix (inertias, rigid-body Jacobians that differ on
the two sides, 1e-10 on the joint diagonals), so the partial pivoting inside blocks does
what it does in a step. Every solve's backward error is checked before timing.
BLAS runs on one thread (set before numpy loads; ``--blas-threads 0`` leaves the
environment alone): at these sizes OpenBLAS threads only cost.
"""

from __future__ import annotations

import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402  (BLAS threads are set before numpy loads)

BLAS_THREADS = bench_common.pin_blas_threads(sys.argv)

import argparse  # noqa: E402
import gc  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy  # noqa: E402
from scipy.linalg import lu_factor, lu_solve  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dojo_cli._core.testing import BlockSystem  # noqa: E402

DEFAULT_PATTERNS = ("chain20", "chain100", "box8")
ALL_PATTERNS = DEFAULT_PATTERNS + ("chain20_limits", "box8_c12", "fourbar")


class Pattern:
    def __init__(self):
        self.sizes, self.kinds, self.blocks, self.order = [], [], [], []

    def node(self, kind: str, size: int) -> int:
        self.sizes.append(size)
        self.kinds.append(kind)
        k = len(self.sizes) - 1
        self.blocks.append((k, k))
        return k

    def couple(self, i: int, j: int) -> None:
        self.blocks += [(i, j), (j, i)]


def chain(n_links: int, joint: int = 5) -> Pattern:
    p = Pattern()
    bodies = [p.node("body", 6) for _ in range(n_links)]
    joints = [p.node("joint", joint) for _ in range(n_links)]
    for k in range(n_links):
        p.couple(bodies[k], joints[k])  # joint k: body k-1 (the world for k = 0) to body k
        if k > 0:
            p.couple(bodies[k - 1], joints[k])
    for k in reversed(range(n_links)):
        p.order += [bodies[k], joints[k]]
    return p


def box(n_contacts: int = 8, contact: int = 8) -> Pattern:
    p = Pattern()
    body = p.node("body", 6)
    for _ in range(n_contacts):
        c = p.node("contact", contact)
        p.couple(c, body)
        p.order.append(c)
    p.order.append(body)
    return p


def fourbar() -> Pattern:
    p = Pattern()
    b1, b2, b3 = (p.node("body", 6) for _ in range(3))
    j1, j2, j3, loop = (p.node("joint", 5) for _ in range(4))
    for a, b in ((b1, j1), (b1, j2), (b2, j2), (b3, j3), (b2, loop), (b3, loop)):
        p.couple(a, b)
    p.order = [b2, j2, b1, j1, b3, j3, loop]
    return p


PATTERNS = {
    "chain20": lambda: chain(20),
    "chain100": lambda: chain(100),
    "box8": lambda: box(8, 8),
    "chain20_limits": lambda: chain(20, joint=7),
    "box8_c12": lambda: box(8, 12),
    "fourbar": fourbar,
}


def rigid_jacobian(rng, rows: int) -> np.ndarray:
    r = rng.uniform(-0.6, 0.6, 3)
    transform = np.eye(6)
    transform[:3, 3:] = -np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    return np.linalg.qr(rng.normal(size=(6, 6)))[0][:rows] @ transform


def build(p: Pattern, rng) -> tuple[BlockSystem, np.ndarray]:
    perm = rng.permutation(sum(p.sizes))
    unknowns, start = [], 0
    for m in p.sizes:
        unknowns.append([int(u) for u in perm[start : start + m]])
        start += m
    system = BlockSystem(unknowns, p.blocks, p.order)
    values = np.zeros(system.structural_size)

    def put(i, j, block):
        o = system.block_offsets[system.find(i, j)]
        values[o : o + block.size] = block.ravel()

    for i, j in set(p.blocks):
        mi, ki, kj = p.sizes[i], p.kinds[i], p.kinds[j]
        if i == j and ki == "body":
            put(i, i, np.diag(np.r_[np.full(3, rng.uniform(0.5, 2)), rng.uniform(0.05, 0.5, 3)]) + 0.02 * rng.normal(size=(6, 6)))
        elif i == j and ki == "joint":  # equality rows regularised; limit rows (beyond 5) complementarity-like
            put(i, i, np.diag(np.r_[np.full(min(mi, 5), -1e-10), rng.uniform(0.5, 2.0, max(mi - 5, 0))]))
        elif i == j:
            put(i, i, rng.normal(size=(mi, mi)) + 3 * np.eye(mi))
        elif kj == "body":
            g3 = np.vstack([rigid_jacobian(rng, min(mi - r0, 6)) for r0 in range(0, mi, 6)])
            put(i, j, g3)
            put(j, i, -(g3 + 0.01 * rng.normal(size=g3.shape)).T)
    return system, values


def best_per_call(fn, batch_seconds: float, budget: float, max_batches: int) -> float:
    """The best per-call time over many short batches (~batch_seconds each, at most `budget` seconds in all):
    on a shared machine the best batch is one that nothing interrupted."""
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    calls = max(1, int(batch_seconds / once))
    batches = max(3, min(max_batches, int(budget / (calls * once))))
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(batches):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best = min(best, (time.perf_counter() - t0) / calls)
    finally:
        gc.enable()
    return best


def time_pattern(name: str, batches: int) -> dict:
    rng = np.random.default_rng(0)
    system, values = build(PATTERNS[name](), rng)
    a = system.to_dense(values)
    b = rng.normal(size=system.n)
    b16 = rng.normal(size=(system.n, 16))

    assert system.factor(values), name
    x = system.solve(b)  # normwise backward error (the four-bar is singular up to its 1e-10 regularisation)
    err = np.abs(b - a @ x).max() / (np.abs(a).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max())
    assert err < 1e-13, (name, err)

    def python_block():
        system.factor(values)
        system.solve(b)

    def dense():
        lu_solve(lu_factor(a, check_finite=False), b, check_finite=False)

    # the kernels: ~0.2 ms batches inside C++
    t0 = time.perf_counter()
    system.time_kernels(values, b, repeat=1, batches=1)
    repeat = max(1, int(2e-4 / max(time.perf_counter() - t0, 1e-7)))
    kernel_factor, kernel_solve = system.time_kernels(values, b, repeat=repeat, batches=batches)
    _, kernel_solve16 = system.time_kernels(values, b16, repeat=max(1, repeat // 4), batches=batches)
    python = best_per_call(python_block, 2e-4, 1.0, batches)
    lapack = best_per_call(dense, 2e-4, 2.0, batches)
    kernel = kernel_factor + kernel_solve
    return {
        "pattern": name, "n": system.n, "blocks": system.n_structural, "fill": system.fill,
        "factor_us": kernel_factor * 1e6, "solve_us": kernel_solve * 1e6, "kernel_us": kernel * 1e6,
        "solve16_us": kernel_solve16 * 1e6, "python_us": python * 1e6, "lapack_us": lapack * 1e6,
        "ratio_python": lapack / python, "ratio_kernel": lapack / kernel,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patterns", default=",".join(DEFAULT_PATTERNS), help=f"any of {', '.join(ALL_PATTERNS)}, or all")
    parser.add_argument("--batches", type=int, default=300, help="timed batches (~0.2 ms each) per measurement; the best is kept")
    parser.add_argument("--blas-threads", default="1", help="BLAS threads (0: leave the environment alone)")
    args = parser.parse_args()
    names = list(ALL_PATTERNS) if args.patterns == "all" else [s.strip() for s in args.patterns.split(",") if s.strip()]
    unknown = [s for s in names if s not in PATTERNS]
    if unknown:
        parser.error(f"unknown pattern(s) {unknown}; choose from {', '.join(ALL_PATTERNS)}")

    rows = [time_pattern(name, args.batches) for name in names]
    print(f"numpy {np.__version__}, scipy {scipy.__version__}, python {platform.python_version()}, "
          f"{platform.machine()}, BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}; "
          f"best per-call time over {args.batches} batches, microseconds")
    print(f"{'pattern':<15}{'n':>5}{'blocks':>7}{'fill':>5} | {'factor':>7}{'solve':>7}{'f+s':>7}{'solve x16':>10}"
          f" | {'python f+s':>11}{'LAPACK f+s':>11} | {'LAPACK/python':>14}{'LAPACK/kernel':>14}")
    for r in rows:
        print(f"{r['pattern']:<15}{r['n']:>5}{r['blocks']:>7}{r['fill']:>5} | {r['factor_us']:>7.2f}{r['solve_us']:>7.2f}"
              f"{r['kernel_us']:>7.2f}{r['solve16_us']:>10.2f} | {r['python_us']:>11.2f}{r['lapack_us']:>11.1f}"
              f" | {r['ratio_python']:>13.1f}x{r['ratio_kernel']:>13.1f}x")
    print("factor, solve, f+s, solve x16: the C++ kernels (BlockSystem.time_kernels); python f+s: "
          "system.factor(values); system.solve(b) from Python; LAPACK f+s: scipy lu_factor + lu_solve on the dense matrix.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
