"""Diagnosis: the anatomy of one step the interior point fails (issue 24 item 1).

Usage:
    python benchmarks/hard_step.py ROBOT STEP [--tolerances relative|absolute] [--warm-start]
                                   [--state FILE.npz] [--save FILE.npz] [--null] [--rows N]

ROBOT is an example-robot-data file stem, imported as benchmarks/robot_zoo.py does
(``dojo import-urdf URDF --floating --contacts collision --merge-fixed``, through the Python
API). The state before STEP comes from the limp drop run up to it (``dojo.simulate``), or
from ``--state`` (a file ``--save`` wrote: the state, the warm-start impulses of the step
before, the step and the robot). The step is then solved alone (``solve_step``: the core's
step with its restarts, core/maximal/step.h) and what the solver left is printed:

- every attempt (the first solve, the restarts of each sweep; a contact joining within its
  margin re-solves too): its iterations, its last step length alpha, and its last raw
  violations (rvio: equations, bvio: complementarity; the core's log);
- the iterate the step kept (the closest attempt): the rows furthest from the test in their
  units (core/maximal/tolerances.h), each named (a body's momentum, a joint's constraint, a
  limit, a contact's gap, friction, slip or complementarity row);
- the loaded contacts (normal impulse above 1 % of the largest): the body, its mass, the gap
  slack sn, the normal impulse gn, the slip |vt| and the friction's share of its cone |b| / psi
  (1: sliding; below 1: sticking; a slip near zero with |b| / psi near 1 is the switch
  between the two, where the solution is not strictly complementary);
- the bodies' angular speeds against the fold of the discrete rotational momentum at
  |w| = sqrt(2) / h (core/maximal/dynamics.h: (h/2) J w sqrt(4/h^2 - |w|^2) is largest
  there; beyond it the momentum falls as |w| grows, the spurious branch of a rotation of more
  than 90 degrees per step);
- with ``--null``: the near-null direction of the step's Newton matrix at that iterate
  (inverse iteration with a sparse LU of the dense matrix, core ``step_matrix_dense``: the
  raw linearisation, without the interior point's Nesterov-Todd scaling; a minute and a GB
  for 10,000 unknowns): the smallest singular value against the largest entry, the unknowns
  the direction moves (right vector) and the equations that are nearly dependent (left).

``--warm-start``: the drop run with ``solver.warm_start: true`` (core/maximal/step.h, "Warm
start"), each step in one Data as the run loop takes them, and STEP taken in that Data, so
that it starts warm from step STEP-1's cones as in the run (attempt 0 is then the warm
attempt; ``--state`` cannot carry the cones, so it is refused with it).

Exit status 0; the printout is the result. Needs example-robot-data
(``pip install 'dojo_cli[robots]'``) and, for ``--null``, scipy.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

# The loaded contacts: normal impulse above this fraction of the step's largest.
LOADED_FRACTION = 1e-2
# Inverse-iteration sweeps for the near-null direction (each one solve with the LU and one
# with its transpose; the smallest singular value is well separated in the cases seen).
NULL_SWEEPS = 30
# Entries of a direction printed.
NULL_ENTRIES = 12


def import_robot(stem: str):
    """The robot as benchmarks/robot_zoo.py imports it (floating, collision contacts, fixed links merged)."""
    from dojo_cli.scene import robots
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict
    from dojo_cli.scene.urdf import UrdfOptions, read_urdf

    root = robots.example_robot_data_root()
    if root is None:
        sys.exit(f"example-robot-data is not installed ({robots.ROBOTS_EXTRA_INSTALL})")
    paths = sorted((root / "robots").rglob(f"{stem}.urdf"))
    if not paths:
        sys.exit(f"no {stem}.urdf in example-robot-data")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the importer's notes
        result = read_urdf(paths[0], UrdfOptions(floating=True, contacts="collision", merge_fixed=True, meshes=False))
        return build_mechanism(spec_from_dict(result.scene, file=str(paths[0])))


class Rows:
    """Names of the step's unknowns and residual rows (w's layout, core/maximal/model.h: the
    bodies' [v, w], the joints' constraint impulses, the limits' slacks then impulses, the
    contacts' slacks then impulses; a residual row sits at the unknown it is solved for)."""

    def __init__(self, mech):
        from dojo_cli.model.joint_types import CONSTRAINED, input_dimension

        m = mech.core
        self.mech, self.n, self.nb = mech, m.n, m.nb
        self.lam = 6 * m.nb
        self.lim_s = self.lam + m.nl
        self.lim_g = self.lim_s + m.nlim
        self.contact_start = list(m.contact_start)
        # joint of each constraint row and of each free coordinate, in the joints' order
        self.row_joint: list[int] = []
        self.free_joint: list[int] = []
        for j, joint in enumerate(mech.joints):
            self.row_joint += [j] * sum(CONSTRAINED[joint.type])
            self.free_joint += [j] * input_dimension(joint.type)
        if len(self.row_joint) != m.nl or len(self.free_joint) != m.nf:
            self.row_joint, self.free_joint = [], []  # locks or a layout this reading does not know: unnamed
        self.limit_free = list(m.limit_free)

    def body(self, b: int) -> str:
        body = self.mech.bodies[b]
        return f"{body.name} ({body.mass:.3g} kg)"

    def contact_of(self, i: int) -> tuple[int, int, int]:
        """(contact, index within its half, half size) of unknown i >= the first contact's."""
        c = int(np.searchsorted(self.contact_start, i, side="right")) - 1
        half = (self.contact_start[c + 1] - self.contact_start[c]) // 2
        return c, i - self.contact_start[c], half

    def name(self, i: int) -> str:
        if i < self.lam:
            b, k = divmod(i, 6)
            return f"body {self.body(b)} {'linear' if k < 3 else 'angular'} {'xyz'[k % 3]}"
        if i < self.lim_s:
            r = i - self.lam
            if not self.row_joint:
                return f"joint row {r}"
            j = self.row_joint[r]
            return f"joint {self.mech.joints[j].name} row {r - self.row_joint.index(j)}"
        if i < self.lim_g + (self.lim_g - self.lim_s):
            s = i < self.lim_g
            limit = i - (self.lim_s if s else self.lim_g)
            f = self.limit_free[limit]
            joint = self.mech.joints[self.free_joint[f]].name if self.free_joint else f"free {f}"
            return f"limit {limit} of {joint} {'slack (s gamma row)' if s else 'impulse (bound row)'}"
        c, k, half = self.contact_of(i)
        contact = self.mech.contacts[c]
        # contact.h: s = (sn, e0, e1, e2), gamma = (gn, psi, b1, b2); rows: gn sn, the cone
        # product, d - sn, mu gn - psi, vt - e
        names = {4: ("gn sn", "cone product 0", "cone product 1", "cone product 2",
                     "gap d - sn", "mu gn - psi", "slip vt1 - e1", "slip vt2 - e2")}
        label = names[half][k] if half in names else f"{'s' if k < half else 'gamma'}{k % half}"
        return f"contact {contact.name} on {self.body(contact.body)}: {label}"


def attempts(log: np.ndarray) -> list[np.ndarray]:
    """The core's log split into its attempts (the iteration count starts again at 1)."""
    starts = [k for k in range(len(log)) if log[k, 0] == 1] + [len(log)]
    return [log[a:b] for a, b in zip(starts[:-1], starts[1:])]


def near_null(mech, z: np.ndarray, w: np.ndarray, rows: Rows) -> None:
    """The smallest singular pair of the step's Newton matrix at w (inverse iteration)."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spl

    from dojo_cli import _core

    n = mech.core.n
    dense = np.asarray(_core.testing.step_matrix_dense(mech.core, mech.core_data, z, None, w)).reshape(n, n)
    matrix = sp.csc_matrix(dense)
    del dense
    lu = spl.splu(matrix)
    rng = np.random.default_rng(0)
    right, left = rng.standard_normal(n), rng.standard_normal(n)
    for _ in range(NULL_SWEEPS):
        right = lu.solve(right)
        right /= np.linalg.norm(right)
        left = lu.solve(left, trans="T")
        left /= np.linalg.norm(left)
    sigma = float(np.linalg.norm(matrix @ right))
    print(f"\nnear-null direction of the Newton matrix: smallest singular value ~ {sigma:.2e}, "
          f"largest entry {abs(matrix).max():.3g}")
    print("  unknowns it moves (right singular vector):")
    for i in np.argsort(-np.abs(right))[:NULL_ENTRIES]:
        print(f"    {right[i]:+.3f}  {rows.name(int(i))}")
    print("  equations nearly dependent (left singular vector):")
    for i in np.argsort(-np.abs(left))[:NULL_ENTRIES]:
        print(f"    {left[i]:+.3f}  {rows.name(int(i))}")


def warm_run(mech, steps: int, opts):
    """The limp drop's first `steps` steps in one Data, as the run loop takes them (each step
    from the previous one's joint impulses, the unwrapped angles carried, the warm start from
    the previous converged step): (the state before step `steps`, its warm-start impulses,
    the Data). Checked against dojo.simulate's states, bit for bit."""
    import dojo_cli as dojo
    from dojo_cli import _core
    from dojo_cli.simulation.initial import initial_state
    from dojo_cli.simulation.step import solve_step

    z = np.asarray(initial_state(mech), float).reshape(-1)
    data = _core.Data(mech.core)
    lam = np.zeros(mech.nl)
    for _ in range(steps):
        z, result = solve_step(mech, z, None, opts, lam0=lam, data=data)
        lam[:] = result.w[6 * mech.nb : 6 * mech.nb + mech.nl]
        _core.advance_angles(mech.core, data)
    run = dojo.simulate(mech, steps=steps, opts=opts)
    if steps and not np.array_equal(run.state(steps), z):
        print(f"note: the replayed state differs from dojo.simulate's by {np.abs(run.state(steps) - z).max():.2e}")
    return z, lam, data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("robot")
    parser.add_argument("step", type=int)
    parser.add_argument("--tolerances", choices=("relative", "absolute"), default="relative")
    parser.add_argument("--state", type=Path, help="the state a --save wrote, instead of running the drop")
    parser.add_argument("--save", type=Path, help="write the state before the step and its warm start")
    parser.add_argument("--null", action="store_true", help="the Newton matrix's near-null direction (slow)")
    parser.add_argument("--warm-start", action="store_true",
                        help="the run and the step with solver.warm_start: true, the step in the run's Data")
    parser.add_argument("--rows", type=int, default=8, help="rows of the kept iterate printed")
    args = parser.parse_args(argv)

    import dojo_cli as dojo
    from dojo_cli import _core
    from dojo_cli.simulation.step import solve_step

    mech = import_robot(args.robot)
    opts = dojo.default_options(mech).replace(tolerances=args.tolerances, warm_start=args.warm_start)
    data = None
    if args.warm_start:
        if args.state:
            sys.exit("--warm-start replays the run: a --state file does not hold the previous step's cones")
        z, lam0, data = warm_run(mech, args.step, opts)
    elif args.state:
        saved = np.load(args.state)
        z, lam0 = saved["state"], saved["impulses"]
    else:
        traj = dojo.simulate(mech, steps=args.step, opts=opts)
        z, lam0 = traj.state(args.step), traj.impulses[args.step - 1]
    if args.save:
        np.savez_compressed(args.save, state=z, impulses=lam0, step=args.step, robot=args.robot)
    _, result = solve_step(mech, z, lam0=lam0, opts=opts, data=data)
    data, m = data or mech.core_data, mech.core
    rows = Rows(mech)
    print(f"{args.robot} step {args.step} ({args.tolerances}): {result.status.value}, "
          f"{result.iterations} iterations, {data.restarts} restarts; {mech.nb} bodies, {m.n} unknowns"
          + (f"; started warm {data.warm_started}, fell back {data.warm_fell_back}" if args.warm_start else ""))
    print(" attempt  iterations  last alpha       rvio       bvio")
    for k, att in enumerate(attempts(np.asarray(data.log))):
        print(f" {k:7d}  {len(att):10d}  {att[-1, 3]:10.2e} {att[-1, 6]:10.2e} {att[-1, 2]:10.2e}")

    w = np.asarray(data.w).copy()
    r = np.asarray(data.residual_vector)
    scale = np.asarray(m.row_scale) if args.tolerances == "relative" else np.ones(m.n)
    raw = _core.testing.violations(m, r, relative=False)
    units = _core.testing.violations(m, r, relative=args.tolerances == "relative")
    print(f"\nkept iterate: raw (rvio, bvio) = ({raw[0]:.2e}, {raw[1]:.2e}), in the rows' units "
          f"({units[0]:.2e}, {units[1]:.2e}) against (rtol, btol) = ({opts.rtol:g}, {opts.btol:g})")
    print("  rows furthest from the test (|r| / unit):")
    for i in np.argsort(-np.abs(r) / scale)[: args.rows]:
        print(f"    {abs(r[i]) / scale[i]:.2e}  r {r[i]:+.2e}  {rows.name(int(i))}")

    active = [c for c in range(mech.nc) if w[rows.contact_start[c]] != 0.0]
    loads = {c: w[rows.contact_start[c] + rows.contact_of(rows.contact_start[c])[2]] for c in active}
    heaviest = max(loads.values(), default=0.0)
    print(f"\n  loaded contacts (gn > {LOADED_FRACTION:g} x the largest, {heaviest:.3g} N s), "
          f"{len(active)} in the solve:")
    print(f"    {'contact':31s} {'body':35s} {'sn [m]':>9s} {'gn [N s]':>10s}  {'|vt| [m/s]':>10s}  {'|b|/psi':>7s}")
    for c in sorted(active, key=lambda c: -loads[c]):
        if loads[c] < LOADED_FRACTION * heaviest:
            break
        s0 = rows.contact_start[c]
        half = rows.contact_of(s0)[2]
        contact = mech.contacts[c]
        line = f"    {contact.name:31s} {rows.body(contact.body):35s} {w[s0]:9.2e} {w[s0 + half]:10.3e}"
        if half == 4:
            slip = float(np.hypot(*w[s0 + 2 : s0 + 4]))
            share = float(np.hypot(*w[s0 + 6 : s0 + 8]) / max(w[s0 + 5], 1e-300))
            line += f"  {slip:10.2e}  {share:7.4f}"
        print(line)

    h = m.h
    speed = np.linalg.norm(w[: 6 * m.nb].reshape(m.nb, 6)[:, 3:], axis=1) * h / np.sqrt(2.0)
    b = int(np.argmax(speed))
    print(f"\n  fastest rotation: {rows.body(b)} at {speed[b]:.3f} of the fold sqrt(2)/h "
          f"({np.sqrt(2.0) / h:.0f} rad/s); bodies beyond it: {int(np.sum(speed > 1.0))}")
    if args.null:
        near_null(mech, np.asarray(z, float), w, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
