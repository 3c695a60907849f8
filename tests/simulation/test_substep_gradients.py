"""The derivatives of a step solved as substeps (docs/physics.md "Substeps", Gradients): the
re-expression of a state for another step length (core step_length.h
midpoint_for_step_jacobian) against central finite differences of the map itself."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import _core
from dojo_cli.analysis.gradient_check import four_point, perturb_maximal, tangent_difference
from dojo_cli.model.parameters import PARAMETER_KINDS, parameter_labels, parameter_values, with_parameters
from dojo_cli.simulation.substeps import Substeps

# Solves to rtol = btol = 1e-12: the substeps' Newton solves (no inequalities here) end at
# rounding, so the finite differences measure the map, not the solver's tolerance.
TIGHT = 1e-12
# The 4-point stencil's steps: truncation O(e^4), rounding ~ (the solves' rounding) / e. The
# re-expression (Newton to 1e-14 of the momenta) at 1e-6: measured 1.2e-10 .. 4e-9 (the
# T-handle's inertia of 0.001 kg m^2 wants the smaller step); the substepped step (four
# solves at TIGHT) at 1e-5: measured 7e-9 (A), 1e-9 (B), 2.3e-9 (P) (3e-8 at 1e-6: rounding).
EPS = 1e-6
STEP_EPS = 1e-5
# Jacobian against finite differences, |J - FD| / max(1, |FD|), above what was measured; a
# missing term is far above it (without the springs' second derivatives in the
# re-expressions: 1.0 for the re-expression, 0.1 for the substepped step's A).
FD_TOL = 1e-7

# The cart-pole with springs on both joints (a translational and a rotational spring, so
# that the re-expressions' configuration term, the springs' second derivatives, is
# exercised), midpoint dampers, rotor inertia on both (a linear rotor on the slider, a
# rotational one on the hinge: their left momenta are in the re-expressions), and the pole
# swinging.
CARTPOLE_SET = {"joints.*.spring": 4.0, "joints.*.damper": 0.3, "joints.*.armature": 0.2,
                "joints.pole_hinge.initial.velocity": [2.0]}


@pytest.fixture(scope="module")
def cartpole():
    return dojo.load_scene("cartpole", CARTPOLE_SET)


def _options(mech):
    return dojo.default_options(mech).replace(rtol=TIGHT, btol=TIGHT, max_iter=100)


def _angles(mech, z):
    return np.asarray(_core.unwrapped_coordinates(mech.core, np.ascontiguousarray(z[None]))).reshape(mech.nf)


def _worst(J, FD):
    return float(np.max(np.abs(J - FD) / np.maximum(1.0, np.abs(FD))))


@pytest.mark.parametrize("scene", ["cartpole", "dzhanibekov"])
def test_reexpression_jacobian_matches_finite_differences(scene, cartpole):
    """midpoint_for_step_jacobian (h -> h/4 and back) against finite differences of
    midpoint_for_step: every state column (positions through the springs' forces, velocities
    through both left transforms) and the parameters it depends on (mass, inertia, gravity,
    spring), plus the zero columns of those it does not (damper)."""
    mech = cartpole if scene == "cartpole" else dojo.load_scene("dzhanibekov")
    z = dojo.initial_state(mech)
    fine, fine_data = Substeps(mech, _options(mech)).model(4)
    kinds = ("mass", "inertia", "gravity", "spring", "damper")
    codes = [PARAMETER_KINDS.index(k) for k in kinds]
    labels = parameter_labels(mech, kinds)
    values = parameter_values(mech, labels)
    for direction in ("down", "up"):
        def reexpress(m, z_in, n=4):
            coarse_data = _core.Data(m.core)
            f, fd = Substeps(m, _options(m)).model(n)
            if direction == "down":
                out, ok, _, _ = _core.midpoint_for_step(m.core, coarse_data, f, fd, z_in)
            else:
                out, ok, _, _ = _core.midpoint_for_step(f, fd, m.core, coarse_data, z_in)
            assert ok
            return out

        z_in = z if direction == "down" else reexpress(mech, z)  # a state of h/4 for "up"
        z_out = reexpress(mech, z_in)
        if direction == "down":
            A, P = _core.midpoint_for_step_jacobian(mech.core, _core.Data(mech.core), fine, fine_data, z_in, z_out, codes)
        else:
            A, P = _core.midpoint_for_step_jacobian(fine, fine_data, mech.core, _core.Data(mech.core), z_in, z_out, codes)
        fd_a = np.stack([four_point(lambda d, k=k: tangent_difference(mech.nb, z_out, reexpress(
            mech, perturb_maximal(z_in, mech.nb, k, d))), EPS) for k in range(12 * mech.nb)], axis=1)
        fd_p = np.stack([four_point(lambda d, lab=lab, v=v: tangent_difference(mech.nb, z_out, reexpress(
            with_parameters(mech, [lab], [v + d]), z_in)), EPS * max(1.0, abs(v)))
            for lab, v in zip(labels, values)], axis=1)
        assert _worst(A, fd_a) < FD_TOL, f"{scene} {direction}: A off by {_worst(A, fd_a):.2e}"
        assert _worst(P, fd_p) < FD_TOL, f"{scene} {direction}: P off by {_worst(P, fd_p):.2e}"
        assert np.abs(A).max() > 0 and np.abs(P[:, [i for i, l in enumerate(labels) if ".damper" not in l]]).max() > 0
