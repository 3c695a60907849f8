"""Helpers shared by the benchmarks (no numpy at import: pin_blas_threads must run first).

- ``pin_blas_threads(argv)``: set the BLAS thread count from ``--blas-threads N`` (default 1)
  in the environment, before numpy is imported. The matrices of a step are tiny, where
  OpenBLAS threads only cost; on a loaded 2-core machine a multi-right-hand-side solve with
  2 threads was measured at ~12 ms instead of ~12 us. ``--blas-threads 0`` leaves the
  environment alone. The variables are inherited by child processes.
- ``blas_limit(n)``: also limit the already-loaded BLAS with threadpoolctl when it is
  installed (a no-op context otherwise; the environment variables still hold).
- ``timed(fn)``: wall time of one call with the garbage collector off.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time

BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pin_blas_threads(argv: list[str], default: str = "1") -> str:
    """Read ``--blas-threads N`` from argv (default ``default``) and, unless it is 0,
    set the BLAS thread variables to N. Call it before numpy loads; returns N."""
    threads = default
    for i, arg in enumerate(argv):
        if arg == "--blas-threads" and i + 1 < len(argv):
            threads = argv[i + 1]
        elif arg.startswith("--blas-threads="):
            threads = arg.split("=", 1)[1]
    if threads != "0":
        for var in BLAS_VARIABLES:
            os.environ[var] = threads
    return threads


def blas_limit(threads: str):
    """threadpoolctl's limit on the loaded BLAS/OpenMP pools, if threadpoolctl is installed
    and ``threads`` is not "0"; returns (context manager, description)."""
    if threads == "0":
        return contextlib.nullcontext(), "left to the environment"
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext(), f"{threads} (environment variables set before numpy loaded)"
    return threadpool_limits(limits=int(threads)), f"{threads} (threadpoolctl and environment variables)"


def timed(fn):
    """(seconds, fn's result) of one call, with the garbage collector collected, then off."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out
    finally:
        gc.enable()
