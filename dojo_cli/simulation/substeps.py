"""A step that fails after all its restarts, solved again as substeps (docs/physics.md,
"Substeps"): the variational integrator's retry.

The interior point can fail a step whose solution exists: light links (fingers, grippers of
a few grams) under contact loads hundreds of times their weight, where the Newton direction
asks for spins past sqrt(2)/h, the fold of the discrete rotational momentum (core
maximal/dynamics.h), and the cones cut every step short (issue 24 item 1). The fold lies at
sqrt(2)/(h/n) for a step of h/n: the same step solved as n substeps converges. So a step
that fails is solved again from the same state as n = 2, then 4, 8, ... SUBSTEP_COUNTS[-1]
substeps of h/n (each a full step of the core with its restarts, of a Model compiled with
the timestep h/n), and the state at t + h is stored: the time grid of the run does not change.

This is a variable-step variational integrator: at a knot between steps of lengths h1 and
h2 the discrete Euler-Lagrange equation D2 L_h1(q_k-1, q_k) + D1 L_h2(q_k, q_k+1) + forces
= 0 holds, through the knot momentum (core maximal/step_length.h: a state of one step
length re-expressed for another, ``_core.midpoint_for_step``). The state handed on after
the substeps is the last substep's re-expressed for a step of h: the midpoint velocities of
an h step with the same knot momentum, so the next step, storage, knot velocities and
``--from`` read it as any other state. A knot whose spin is past what a step of h can
carry (beyond the fold of the h step's transform) has no such state: the retry with that
many substeps fails, and the next count is tried.

The velocities at the knots on either side of a substepped step share each knot's impulse
between its unequal half steps in proportion (``knot_between``, core step_length.h
knot_velocities_between); the integrator hands them on in the block's knot rows.

A knot whose spin no step of h can carry at any count (every count's substeps converge, but
none ends at a state a step of h can start from: g1 with hands dropped limp, step 73, a
finger link spinning at 120-180 rad/s past the fold at sqrt(2)/h = 141 rad/s) is carried
on in substeps: the step is the first count's whose substeps converged, and the run keeps
its end state as a state of h/n (``SubstepResult.carry`` = n). The next step is then
solved as substeps from that state (the same count first, no re-expression; then the
larger counts, re-expressed from h/n), and so on until a step's end fits a step of h
again. Such a carried state has no midpoint velocities of a step of h: the run's record
stores them as NaN (storage ``v_mid``, ``omega_mid``; its knot velocities, positions and
orientations are exact), so nothing reads it as a state of h (``--from`` names it and
asks for another).

Cost: a step that fails at every count has cost its full step and the 2 + 4 + 8 + 16
substeps' solves (each with its restarts). A step that starts from a failed step's state
(not a solution of its step: a run that has diverged) is not retried, so a run that fails
from some step on pays the retry once per stretch of failed steps, not at each.

What a substepped step records: status ``success`` (each substep converged to the solver's
tolerances) and its substep count n in ``solver/substeps`` (1 for a plain step); its
iterations are every solve it took (the failed full step and failed counts included); its
residual and complementarity the largest of its substeps'; its joint impulses and contact
impulses the sums over the substeps (the impulse over the step); its contact distances and
slips the last substep's. The inputs are held over the step (the controller's or the
schedule's input at t_k); external forces are evaluated at each substep's start.

Gradients (``SubstepChain``). The step of h solved as n substeps is the map
z -> R_up(S_n(... S_1(R_down(z)))): R_down re-expresses z for a step of h/n, each S_i is a
step of the Model at h/n, R_up re-expresses the last substep's state for a step of h
(``_core.midpoint_for_step``). Its derivative is the chain rule through them, in the
gradients' tangent coordinates (12 nb per state, docs/gradients.md): with J the derivative
of the current state in (z, u, theta),
    J_z = R_up' A_n ... A_1 R_down',
    J_u = R_up' sum_i A_n ... A_i+1 B_i               (the inputs held over the substeps),
    J_theta = R_up' (sum_i A_n ... A_i+1 P_i + A_n ... A_1 R_down,theta) + R_up,theta,
A_i, B_i, P_i each substep's implicit-function-theorem derivatives on its own solve
(``_core.gradients`` on the substep's Data, right after it, as a full step's are taken) and
R' the re-expressions' Jacobians (core step_length.h ``midpoint_for_step_jacobian``: the
left transforms and the springs' second derivatives). Everything is the core's; this
module only multiplies. A step from or to a carried state has no R_down or R_up (it is no
map between states of h): no chain is built for it, and the run stores NaN rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli import _core
from dojo_cli.model.compiled import model_input
from dojo_cli.model.controller import external_wrench
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.parameters import PARAMETER_KINDS, parameter_labels
from dojo_cli.simulation.step import core_options
from dojo_cli.solver.options import SolverOptions

# The substep counts a failed step is tried with, in order: each halves the step again.
# 16 is the limit: the fold of the rotational momentum moves to 16 sqrt(2)/h (2260 rad/s
# at h = 0.01), past any spin of the example-robot-data robots' links; a step that fails
# at 16 substeps fails (its full step's result is kept, as without the retry).
SUBSTEP_COUNTS = (2, 4, 8, 16)


@dataclass
class SubstepGradients:
    """The derivatives of a step of h solved as n substeps (module docstring, "Gradients"),
    tangent coordinates [x, v, phi, w] per body as a full step's (core gradients.h).

    Attributes:
        A: (12 nb, 12 nb) d z_next / d z, or None (not asked).
        B: (12 nb, nu) d z_next / d u, or None.
        P: (12 nb, p) d z_next / d theta for the parameter kinds asked, or None.
        kappa: the largest central-path value of the substeps' derivatives (0 without
            inequalities).
        singular_node: -1, or the Newton-matrix node of a substep whose matrix at its
            solution is singular (core gradients.h; -2: a re-expression's Jacobian is): no
            derivative there, A, B, P NaN.
    """

    A: np.ndarray | None
    B: np.ndarray | None
    P: np.ndarray | None
    kappa: float
    singular_node: int = -1


def parameter_count(mech: Mechanism, kinds) -> int:
    """Columns of the parameter kind codes ``kinds`` (core gradients.h, PARAMETER_KINDS order)."""
    return len(parameter_labels(mech, [PARAMETER_KINDS[k] for k in kinds])) if kinds else 0


class SubstepChain:
    """The chain rule through a substepped step, accumulated as its maps are taken.

    ``enter`` at the re-expression of z for h/n, ``substep`` after each substep's solve
    (its Data holds the solution), ``leave`` at the re-expression back for h, then
    ``result``. J holds the derivative of the current state: (12 nb, 12 nb) in z, (12 nb, nu)
    in u, (12 nb, p) in theta.

    Args:
        mech: the mechanism of the step.
        wrt: any of "state", "input", "params" (the derivatives to return).
        kinds: parameter kind codes (core gradients.h ParameterKind) for "params".
    """

    def __init__(self, mech: Mechanism, wrt, kinds=()):
        self.wrt = tuple(wrt)
        self.kinds = list(kinds) if "params" in self.wrt else []
        nt = 12 * mech.nb
        self.kappa = 0.0
        self.singular_node = -1
        self.Jz = np.eye(nt)
        self.Ju = np.zeros((nt, mech.nu))
        self.Jp = np.zeros((nt, parameter_count(mech, self.kinds)))

    def _reexpression(self, from_core, from_data, to_core, to_data, z, z_out) -> None:
        """J <- R' J (+ R_theta): z (13 nb,) re-expressed as z_out for to_core's step."""
        if self.singular_node != -1:
            return
        try:
            R, Rp = _core.midpoint_for_step_jacobian(from_core, from_data, to_core, to_data, z, z_out, self.kinds)
        except ValueError:  # (S)'s Jacobian is singular at z_out: the map has no derivative there
            self.singular_node = -2
            return
        self.Jz, self.Ju, self.Jp = R @ self.Jz, R @ self.Ju, R @ self.Jp
        if Rp is not None:
            self.Jp += Rp

    def enter(self, from_core, from_data, to_core, to_data, z, zf) -> None:
        """At R_down: the step's state z (13 nb,) re-expressed as zf for the substeps' Model."""
        self._reexpression(from_core, from_data, to_core, to_data, z, zf)

    def substep(self, core, data) -> None:
        """After a substep's solve in data: J <- A J (+ B, + P), its derivatives on that solve."""
        if self.singular_node != -1:
            return
        try:
            A, B, P, kappa = _core.gradients(core, data, True, "input" in self.wrt, self.kinds, -1.0)
        except RuntimeError:  # the substep's Newton matrix at its solution is singular
            self.singular_node = max(int(data.singular_node), 0)
            return
        self.kappa = max(self.kappa, float(kappa))
        self.Jz = A @ self.Jz
        self.Ju = A @ self.Ju
        if B is not None:
            self.Ju += B.reshape(self.Ju.shape)
        if self.kinds:
            self.Jp = A @ self.Jp + P

    def leave(self, from_core, from_data, to_core, to_data, zf, z_next) -> None:
        """At R_up: the last substep's state zf (13 nb,) re-expressed as z_next for a step of h."""
        self._reexpression(from_core, from_data, to_core, to_data, zf, z_next)

    def result(self) -> SubstepGradients:
        parts = [self.Jz if "state" in self.wrt else None, self.Ju if "input" in self.wrt else None,
                 self.Jp if self.kinds else None]
        if self.singular_node != -1:
            parts = [None if a is None else np.full_like(a, np.nan) for a in parts]
        return SubstepGradients(*parts, kappa=self.kappa if self.singular_node == -1 else np.nan,
                                singular_node=self.singular_node)


@dataclass
class SubstepResult:
    """A step solved as substeps.

    Attributes:
        n: the substep count.
        out: the step's record, as one row of ``_core.rollout``'s arrays (states (1, 13 nb),
            iterations, residual, status, complementarity, impulses, contact_*, singular_node).
        knot0: the velocities at the knot the step starts from, (v (nb, 3), omega (nb, 3),
            minimal_v (nf,)), of its first substep (core energy.h knot_velocities at h/n).
        angle_ref: (nf,) the unwrapped angles at the state reached (Data.angle_ref).
        lam: (nl,) joint impulses to warm-start the next step with: the impulses over the
            step (the substeps' sum, what the record stores, so that a run continued from
            the stored state starts the same).
        gradients: the step's derivatives when asked (``wrt``), else None; None too for a
            step that starts or ends at a carried state (no map between states of h).
        carry: 1 when ``out["states"]`` is re-expressed for a step of h; n when no step of
            h can start from the substeps' end (module docstring): the state is then the
            last substep's, its midpoint velocities those of a step of h/n, and the run
            goes on in substeps from it.
    """

    n: int
    out: dict
    knot0: tuple[np.ndarray, np.ndarray, np.ndarray]
    angle_ref: np.ndarray
    lam: np.ndarray
    gradients: SubstepGradients | None = None
    carry: int = 1


class Substeps:
    """The retry of a run's failed steps as substeps (module docstring).

    Args:
        mech: the mechanism of the run.
        opts: the run's solver options (each substep's solve uses them).
        external: the run's external forces.
        counts: the substep counts to try, in order (default SUBSTEP_COUNTS).
    """

    def __init__(self, mech: Mechanism, opts: SolverOptions, external=(), counts=SUBSTEP_COUNTS):
        self.mech = mech
        self.opts = core_options(opts)
        self.external = tuple(external)
        self.counts = tuple(counts)
        self._models: dict[int, tuple] = {}
        self.scratch = _core.Data(mech.core)  # the conversions' scratch at h (the run's Data is left alone)

    def model(self, n: int):
        """(Model, Data) of a step of h/n: the mechanism's model compiled with that timestep."""
        pair = self._models.get(n)
        if pair is None:
            inp = model_input(self.mech)
            inp.timestep = self.mech.timestep / n
            core = _core.Model(inp)
            pair = self._models[n] = (core, _core.Data(core))
        return pair

    def _model_or_none(self, n: int):
        """model(n), or None where it does not fit in memory: a count whose Model cannot be
        compiled is a count that gives no substeps (the step's failure stands, as when none
        converges), not a MemoryError out of the middle of a run (a second Model of a
        contact-heavy scene beside the run's: Meta-World's button-press walls, 792 contacts)."""
        try:
            return self.model(n)
        except MemoryError:
            return None

    def solve(self, k: int, z: np.ndarray, u, lam: np.ndarray, angles: np.ndarray, spent: int = 0,
              counts=None, h_prev: float | None = None, wrt=(), kinds=(), carried: int = 1) -> SubstepResult | None:
        """Step k from the state z solved as substeps: the first count of ``counts`` (default
        the retry's) whose substeps all converge and whose end state a step of h can start
        from; failing that, the first whose substeps converged, carried on (its state one of
        h/n, ``SubstepResult.carry``; module docstring); None when no count converges.

        Args:
            k: the step's number (the external forces' time t_k = k h).
            z: (13 nb,) the state the step starts from (midpoint velocities of a step of h).
            u: (nu,) the step's inputs, held over its substeps (None: zero).
            lam: (nl,) the joint impulses the full step was warm-started with.
            angles: (nf,) the unwrapped minimal coordinates at z (where limits measure from).
            spent: solver iterations already spent on the step (the failed full step's).
            counts: the substep counts to try (default the retry's).
            h_prev: the length of the step that reached z (default h; h/m after a step
                solved as m substeps), for the knot velocities at z.
            wrt: the derivatives of the step to return (any of "state", "input", "params":
                SubstepChain); none by default. A step from or to a carried state has none
                (``SubstepResult.gradients`` None): its map is not one between states of h.
            kinds: parameter kind codes (core gradients.h) for "params".
            carried: z is a state of h/carried (a carried state, module docstring; 1: of
                h): the counts tried are then that count first (no re-expression), and
                the larger ones of ``counts``.
        """
        mech = self.mech
        h, nb = mech.timestep, mech.nb
        z = np.ascontiguousarray(z, dtype=float)
        u = None if u is None else np.ascontiguousarray(u, dtype=float).reshape(mech.nu)
        nl = mech.nl
        counts = tuple(counts or self.counts)
        source = (mech.core, self.scratch)
        if carried > 1:
            source = self._model_or_none(carried)
            if source is None:
                return None
            counts = (carried,) + tuple(c for c in counts if c > carried)
        carry = None  # the first count whose substeps converged to a state no step of h starts from
        for n in counts:
            pair = self._model_or_none(n)
            if pair is None:
                continue
            core, data = pair
            chain = None
            if n == carried:
                zf = z.copy()
            else:
                zf, ok, _, _ = _core.midpoint_for_step(*source, core, data, z)
                if not ok:
                    continue
                if wrt and carried == 1:
                    chain = SubstepChain(mech, wrt, kinds)
                    chain.enter(mech.core, self.scratch, core, data, z, zf)
            data.angle_ref[:] = angles
            data.warm_valid = False
            lam_f = np.ascontiguousarray(lam, dtype=float) / n
            impulses = np.zeros(nl)
            normal = np.zeros(mech.nc)
            friction = np.zeros((mech.nc, 2))
            residual = complementarity = 0.0
            first = None
            z0f = zf
            status = 0
            for i in range(n):
                f_ext = tau_ext = None
                if self.external:
                    f_ext, tau_ext = external_wrench(mech, list(self.external), k * h + i * h / n,
                                                     zf.reshape(nb, 13)[:, 6:10])
                    f_ext, tau_ext = np.ascontiguousarray(f_ext).reshape(-1), np.ascontiguousarray(tau_ext).reshape(-1)
                status = _core.step(core, data, zf, u, f_ext, tau_ext, lam_f, self.opts)
                spent += data.iterations
                if status != 0:
                    break
                if chain is not None:
                    chain.substep(core, data)  # on the substep's own solve
                lam_f = np.array(data.w[6 * nb: 6 * nb + nl])
                impulses += lam_f
                normal += data.contact_normal_impulse
                friction += data.contact_friction_impulse
                residual = max(residual, data.residual)
                complementarity = max(complementarity, data.complementarity)
                distance, slip = np.array(data.contact_distance), np.array(data.contact_slip)
                _core.advance_angles(core, data)
                zf = np.array(data.z_next)
                if first is None:
                    first = zf
            if status != 0:
                continue
            # the state at t + h re-expressed for the next step of h (step_length.h)
            z_next, ok, _, _ = _core.midpoint_for_step(core, data, mech.core, self.scratch, zf)
            if ok and chain is not None:
                chain.leave(core, data, mech.core, self.scratch, zf, z_next)
            # the velocities at the knot of z, between the step before it and the first substep
            knot0 = knot_between(core, data, z0f, first, h if h_prev is None else h_prev)
            if not ok:
                # no step of h starts from here: kept in case no count's end fits h (carried on)
                z_next = zf
            out = {
                "states": z_next[None],
                "iterations": np.array([spent]),
                "residual": np.array([residual]),
                "status": np.array([0]),
                "complementarity": np.array([complementarity]),
                "impulses": impulses[None],
                "contact_distance": distance[None],
                "contact_normal_impulse": normal[None],
                "contact_friction_impulse": friction[None],
                "contact_slip": slip[None],
                "singular_node": np.array([-1]),
            }
            # the next step starts from the impulses over the step, as a run continued from the
            # stored state does (its solver/impulses row): --from after the substeps is bit for bit
            result = SubstepResult(n, out, knot0, np.array(data.angle_ref), impulses.copy(),
                                   chain.result() if (ok and chain is not None) else None, 1 if ok else n)
            if ok:
                return result
            carry = carry or result
        if carry is not None:
            carry.out["iterations"] = np.array([spent])  # the larger counts tried after it too
        return carry


def knot_between(core, data, z: np.ndarray, z_next: np.ndarray, h1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The velocities at the knot of z between a step of h1 and the step of ``core`` (its
    timestep) from z to z_next (core step_length.h knot_velocities_between: the knot's
    impulse shared between the half steps in proportion): (v (nb, 3), omega (nb, 3),
    minimal_v (nf,), the exact image of the two)."""
    v, omega = _core.knot_velocities_between(core, data, np.ascontiguousarray(z, dtype=float),
                                             np.ascontiguousarray(z_next, dtype=float), float(h1))
    zk = np.array(z, dtype=float).reshape(-1, 13)
    zk[:, 3:6], zk[:, 10:13] = v, omega
    rates = _core.instantaneous_minimal_velocities(core, np.ascontiguousarray(zk.reshape(1, -1)))
    return np.asarray(v), np.asarray(omega), np.asarray(rates).reshape(-1)


__all__ = ["SUBSTEP_COUNTS", "SubstepChain", "SubstepGradients", "SubstepResult", "Substeps", "knot_between"]
