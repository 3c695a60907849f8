"""RigidBodyDynamics.jl's integrator as a Python API (minimal/integrator.py, issue 29):
ButcherTableau's order check, MuntheKaasIntegrator against the core's simulate, measured
orders of Kutta's and Heun's tableaux, sinks, additional states."""

from __future__ import annotations

import numpy as np
import pytest

import dojo_cli as dojo
from dojo_cli import minimal
from dojo_cli.minimal.integrator import (
    ButcherTableau, CoreDynamics, ExpandingStorage, MechanismState, MuntheKaasIntegrator, RingBufferStorage,
    additional_state, configuration, integrate, runge_kutta_4, set_additional_state, set_velocity, step, velocity,
)
from dojo_cli.minimal.simulate import step_times
from tests.minimal.scenes import TWO_FOURBARS

# Kutta's third-order method (Hairer, Norsett and Wanner I, table 1.1) and Heun's
# second-order one (the explicit trapezoid).
KUTTA3 = ([[0, 0, 0], [0.5, 0, 0], [-1, 2, 0]], [1 / 6, 2 / 3, 1 / 6])
HEUN2 = ([[0, 0], [1, 0]], [0.5, 0.5])
# Round-off of the Python combination of the stages against the core's (a few hundred
# steps; the core multiplies (h a) phidot where Python takes h (a phidot), and sums the
# weights in another order).
ROUND_OFF = 1e-11
# Central differences at step 1e-6: truncation (1e-6)^2, round-off 1e-16 / 1e-6.
FD_TOLERANCE = 1e-8
# Exact up to round-off: a quadrature's sums over eight steps (a few ulps of 0.25), a
# renormalised unit quaternion.
QUADRATURE_ROUND_OFF = 1e-14
# log2 of the error ratio per halving is the order within this (the next error term).
ORDER_SLACK = 0.2


def _model(name, **overrides):
    return minimal.build_model(dojo.load_scene(name, overrides=overrides or None))


def _run(model, x0, final_time, dt, tableau=None, dynamics=None):
    sink = ExpandingStorage(model)
    integ = MuntheKaasIntegrator(MechanismState(model, x0), dynamics, tableau, sink)
    integrate(integ, final_time, dt)
    return sink


# ---------------------------------------------------------------- the tableau


def test_butcher_tableau_checks_its_order_from_the_order_conditions():
    assert runge_kutta_4().order == 4
    assert ButcherTableau(*KUTTA3).order == 3
    assert ButcherTableau(*HEUN2).order == 2
    assert ButcherTableau([[0]], [1]).order == 1  # explicit Euler
    assert ButcherTableau([[0, 0], [0.5, 0]], [0, 1]).order == 2  # the midpoint rule
    # Kutta's 3/8 rule: another fourth-order tableau, with other conditions to meet
    a38 = [[0, 0, 0, 0], [1 / 3, 0, 0, 0], [-1 / 3, 1, 0, 0], [1, -1, 1, 0]]
    assert ButcherTableau(a38, [1 / 8, 3 / 8, 3 / 8, 1 / 8]).order == 4
    # RK4's nodes with 3/8's weights: b c^3 = 1/4 fails, the order drops to 3? no: to 2
    # (b (A c) = 1/8 != 1/6), so the check reads each condition, not the stage count
    a = runge_kutta_4().a
    assert ButcherTableau(a, [1 / 8, 3 / 8, 3 / 8, 1 / 8]).order == 2
    assert np.array_equal(runge_kutta_4().c, [0, 0.5, 0.5, 1])


@pytest.mark.parametrize("args, message", [
    (([[0, 1], [0, 0]], [0.5, 0.5]), "explicit"),
    (([[0, 0], [1, 0]], [0.5, 0.6]), "not 1"),
    (([[0, 0], [1, 0]], [0.5, 0.5], [0, 0.5]), "row 1 of a sums to 1"),
    (([[0, 0], [1, 0]], [1.0]), "a must be"),
    (([[0, 0], [np.nan, 0]], [0.5, 0.5]), "not finite"),
])
def test_butcher_tableau_refuses_what_it_cannot_integrate(args, message):
    with pytest.raises(ValueError, match=message):
        ButcherTableau(*args)


# ---------------------------------------------------------------- against the core


@pytest.mark.parametrize("scene, overrides", [
    ("double_pendulum", {}),
    ("spherical_chain", {"gravity": [0, 0, -9.81]}),  # floating and spherical joints: the Lie-group maps
    ("rbd_fourbar", {}),  # a loop joint, RBD's default Baumgarte gains
])
def test_default_dynamics_and_rk4_equal_simulate(scene, overrides):
    model = _model(scene, **overrides)
    rng = np.random.default_rng(5)
    x0 = minimal.randn_state(model, rng) if scene == "spherical_chain" else minimal.init_state(model)
    if scene == "rbd_fourbar":  # RBD's opened loop (test_rk4.py): the Baumgarte terms act
        x0[0] = 1.7
        x0[model.nq:] = [0.5, -0.47295, 0.341]
    ts, qs, vs = minimal.simulate(model, x0, 0.2, dt=1e-3)
    sink = _run(model, x0, 0.2, 1e-3)
    assert np.array_equal(sink.ts, ts)  # RBD's loop: the same additions of dt
    assert np.max(np.abs(sink.qs - qs)) < ROUND_OFF
    assert np.max(np.abs(sink.vs - vs)) < ROUND_OFF
    assert np.max(np.abs(vs[-1] - vs[0])) > 0.05  # it moved


def test_core_dynamics_control_is_simulates_control():
    model = _model("double_pendulum")
    x0 = minimal.init_state(model)
    ts, qs, vs = minimal.simulate(model, x0, 0.1, dt=1e-3, control=lambda tau, t, x: tau.__setitem__(
        slice(None), [np.sin(5 * t), -x[0]]))
    seen = []

    def control(tau, t, state):
        seen.append(t)
        tau[:] = [np.sin(5 * t), -configuration(state)[0]]

    sink = _run(model, x0, 0.1, 1e-3, dynamics=CoreDynamics(model, control=control))
    assert len(seen) == 4 * (len(ts) - 1)  # once per stage
    free = _run(model, x0, 0.1, 1e-3)
    assert np.max(np.abs(free.vs[-1] - vs[-1])) > 1e-3  # the torques act
    assert np.max(np.abs(sink.qs - qs)) < ROUND_OFF and np.max(np.abs(sink.vs - vs)) < ROUND_OFF


def test_the_cores_coordinate_maps_move_the_configuration_with_the_velocity():
    """global(q0, 0) = q0; and along q(e) = global(q0, phi + e phidot), phidot the core's
    rate at (q, v), the configuration moves as q' = E(q) v (velocity_kinematics): central
    differences, on a chain with a floating base and spherical joints (SO(3) and SE(3) maps)."""
    model = _model("spherical_chain")
    rng = np.random.default_rng(11)
    x0 = minimal.randn_state(model, rng)
    q0 = x0[: model.nq]
    # (the map renormalises the quaternions: equal to their round-off)
    assert np.max(np.abs(minimal.global_coordinates(model, q0, np.zeros(model.nv)) - q0)) < QUADRATURE_ROUND_OFF
    phi = 0.7 * rng.standard_normal(model.nv)  # rotations of about 1 rad: far from the series branches
    v = rng.standard_normal(model.nv)
    q = minimal.global_coordinates(model, q0, phi)
    phid = minimal.local_coordinate_rates(model, q, phi, v)
    eps = 1e-6
    fd = (minimal.global_coordinates(model, q0, phi + eps * phid)
          - minimal.global_coordinates(model, q0, phi - eps * phid)) / (2 * eps)
    qdot = minimal.velocity_kinematics(model, q) @ v
    assert np.max(np.abs(fd - qdot)) < FD_TOLERANCE * max(1.0, np.max(np.abs(qdot))), np.max(np.abs(fd - qdot))


# ---------------------------------------------------------------- measured orders


@pytest.mark.parametrize("scene, overrides, final_time", [
    ("double_pendulum", {}, 1.0),
    ("spherical_chain", {"gravity": [0, 0, -9.81]}, 0.5),
])
@pytest.mark.parametrize("tableau, order", [(KUTTA3, 3), (HEUN2, 2)])
def test_kutta_and_heun_converge_at_their_order(scene, overrides, final_time, tableau, order):
    model = _model(scene, **overrides)
    rng = np.random.default_rng(7)
    x0 = minimal.init_state(model) if scene == "double_pendulum" else minimal.randn_state(model, rng)
    if scene != "double_pendulum":
        x0[model.nq:] *= 0.5
    tab = ButcherTableau(*tableau)
    assert tab.order == order
    # a tiny-step reference by the core's RK4 (its error 1e-13 is far below the ones measured)
    tr, qr, vr = minimal.simulate(model, x0, final_time, dt=2.0**-12)
    ref = np.concatenate([qr[-1], vr[-1]])
    errors = []
    for p in (6, 7, 8):
        sink = _run(model, x0, final_time, 2.0**-p, tab)
        assert sink.ts[-1] == final_time
        x = np.concatenate([sink.qs[-1], sink.vs[-1]])
        errors.append(np.max(np.abs(minimal.state_error(model, x, ref))))
    ratios = np.array([errors[0] / errors[1], errors[1] / errors[2]])
    # halving dt divides the error by 2^p
    assert np.all(np.abs(np.log2(ratios) - order) < ORDER_SLACK), (errors, ratios)


# ---------------------------------------------------------------- sinks


class Recorder:
    """A user sink: RBD's OdeResultsSink protocol by duck typing."""

    def __init__(self):
        self.initial = None
        self.calls = []

    def initialize(self, state):
        self.initial = state.x

    def process(self, t, state):
        self.calls.append((t, state.x))


def test_sinks_receive_every_step():
    model = _model("double_pendulum")
    x0 = minimal.init_state(model)
    rec = Recorder()
    integrate(MuntheKaasIntegrator(MechanismState(model, x0), sink=rec), 0.1, 0.01)
    ts = step_times(0.1, 0.01)
    assert len(ts) == 12  # 0.01 added ten times is below 0.1: RBD's loop takes 11 steps
    assert np.array_equal(rec.initial, x0)
    assert [t for t, _ in rec.calls] == list(ts[1:])
    full = _run(model, x0, 0.1, 0.01)
    assert np.array_equal(np.array([x for _, x in rec.calls]), np.hstack([full.qs, full.vs])[1:])
    # the ring buffer keeps the last 3 (with wrap-around), as simulate(keep_last=3)
    ring = RingBufferStorage(model, 3)
    integrate(MuntheKaasIntegrator(MechanismState(model, x0), sink=ring), 0.1, 0.01)
    assert ring.count == 12 and ring.last_index == 11 % 3
    tl, ql, vl = minimal.simulate(model, x0, 0.1, dt=0.01, keep_last=3)
    rt, rq, rv = ring.ordered()
    assert np.array_equal(rt, tl)
    assert np.max(np.abs(rq - ql)) < ROUND_OFF and np.max(np.abs(rv - vl)) < ROUND_OFF
    # an expanding storage grows past its size hint
    grow = ExpandingStorage(model, 2)
    integrate(MuntheKaasIntegrator(MechanismState(model, x0), sink=grow), 0.1, 0.01)
    assert np.array_equal(grow.ts, ts) and np.array_equal(grow.qs, full.qs)


def test_integrator_refuses_a_sink_or_dynamics_it_cannot_call():
    model = _model("double_pendulum")
    with pytest.raises(TypeError, match="no initialize and no process"):
        MuntheKaasIntegrator(model, sink=object())
    with pytest.raises(TypeError, match="dynamics takes 2"):
        MuntheKaasIntegrator(model, lambda vd, t: None)
    with pytest.raises(TypeError, match="1 additional states"):
        MuntheKaasIntegrator(MechanismState(model, s=[0.0]), lambda vd, t, state: None)
    integ = MuntheKaasIntegrator(model, lambda vd, t, state: vd.fill(np.nan))
    with pytest.raises(FloatingPointError, match="after step 1"):
        integrate(integ, 0.1, 0.01)


# ---------------------------------------------------------------- additional states


def test_additional_states_integrate_a_known_function_exactly():
    """s' = (t^3, t^2): RK4 is Simpson's rule on a quadrature, exact for cubics; Kutta's
    third-order method too for t^2. s(T) = (T^4 / 4, T^3 / 3)."""
    model = _model("double_pendulum")
    # the core's dynamics for the mechanism, the quadrature's integrands for the additional states
    dynamics = CoreDynamics(model, additional=lambda sd, t, state: sd.__setitem__(slice(None), [t**3, t**2]))

    for tableau, exact in ((runge_kutta_4(), [0, 1]), (ButcherTableau(*KUTTA3), [1])):
        state = MechanismState(model, s=[0.0, 0.0])
        sink = ExpandingStorage(model, ns=2)
        integrate(MuntheKaasIntegrator(state, dynamics, tableau, sink), 1.0, 0.125)  # ends at 1 exactly
        T = sink.ts[-1]
        assert abs(T - 1.0) < QUADRATURE_ROUND_OFF and len(sink.ss) == len(sink.ts) == 9
        s = additional_state(state)
        for k in exact:
            assert abs(s[k] - [T**4 / 4, T**3 / 3][k]) < QUADRATURE_ROUND_OFF, (tableau, s)
        assert np.array_equal(sink.ss[-1], s)
    # the mechanism's states are those without the additional ones (they do not couple)
    plain = _run(model, minimal.init_state(model), 1.0, 0.125, ButcherTableau(*KUTTA3))
    assert np.array_equal(plain.qs, sink.qs) and np.array_equal(plain.vs, sink.vs)


def test_an_integral_state_removes_a_pd_controllers_steady_state_error():
    """A PI(D) controller on the pendulum's shoulder: PD alone holds the arm off its target
    by the gravity torque over kp; the integral state (set_additional_state, read by the
    control) drives that error to zero."""
    model = _model("pendulum")
    target, kp, kd, ki = 0.5, 20.0, 4.0, 40.0

    def run(with_integral):
        def dynamics(vd, sd, t, state):
            q, v, s = configuration(state), velocity(state), additional_state(state)
            tau = np.array([kp * (target - q[0]) - kd * v[0] + (ki * s[0] if with_integral else 0.0)])
            vd[:] = minimal.forward_dynamics(model, state.x, tau)
            sd[:] = target - q[0]

        state = MechanismState(model, s=[0.0])
        set_velocity(state, [0.0])
        set_additional_state(state, [0.0])
        integrate(MuntheKaasIntegrator(state, dynamics, runge_kutta_4(), RingBufferStorage(model, 1, ns=1)), 10.0, 0.01)
        return target - configuration(state)[0], abs(velocity(state)[0])

    # PD alone rests where kp e = C(target - e), the torque holding the arm (RNEA at rest),
    # solved by fixed-point iteration (a contraction: C' / kp is about 0.3)
    e_rest = 0.0
    for _ in range(60):
        e_rest = minimal.inverse_dynamics(model, np.array([target - e_rest, 0.0]), np.zeros(1))[0] / kp
    e_pd, _ = run(False)
    assert e_rest > 0.05 and abs(e_pd - e_rest) < 1e-5, (e_pd, e_rest)
    e_pi, w = run(True)
    assert abs(e_pi) < 1e-7 * e_pd and w < 1e-7, (e_pi, w)  # measured 1.5e-11 rad, 3.5e-11 rad/s


# ---------------------------------------------------------------- RBD's ConstDict


def test_one_pair_of_gains_is_every_loop_joints_like_rbds_constdict():
    """stabilization_gains=(kp, kd) (RBD's ConstDict) gives every loop joint those gains: the
    same run as naming each joint with them, through simulate and through the integrator's
    CoreDynamics; both loops, opened by different amounts, close at that pair's rate (kp = 50,
    kd = 10: the gap decays like exp(-5 t))."""
    model = minimal.build_model(dojo.load_scene(TWO_FOURBARS))
    assert model.loop_joints == ["joint4", "b_joint4"]
    x0 = minimal.init_state(model)
    start = {tj.name: tj.q.start for tj in model.joints}
    x0[start["joint1"]] = 1.7
    x0[start["b_joint1"]] = 1.9
    integ = minimal.Rk4(model, None)
    gap0 = integ.loop_errors(x0)[:, 0]
    assert np.all(gap0 > 1e-2) and abs(gap0[0] - gap0[1]) > 1e-2
    gains = (50.0, 10.0)
    one = minimal.simulate(model, x0, 1.0, dt=1e-3, stabilization_gains=gains)
    each = minimal.simulate(model, x0, 1.0, dt=1e-3, stabilization_gains={"joint4": gains, "b_joint4": gains})
    for a, b in zip(one, each):
        assert np.array_equal(a, b)
    x1 = np.concatenate([one[1][-1], one[2][-1]])
    gap1 = integ.loop_errors(x1)[:, 0]
    assert np.all(gap1 < 0.01 * gap0), (gap0, gap1)  # exp(-5) = 0.0067 linearised; measured 0.0045
    # other gains on one joint change that loop's run only
    other = minimal.simulate(model, x0, 1.0, dt=1e-3, stabilization_gains={"joint4": gains, "b_joint4": (100.0, 20.0)})
    a_rows = [tj.q for tj in model.joints if not tj.name.startswith("b_")]
    b_rows = [tj.q for tj in model.joints if tj.name.startswith("b_")]
    assert max(np.max(np.abs(other[1][:, r] - one[1][:, r])) for r in a_rows) < ROUND_OFF
    assert max(np.max(np.abs(other[1][:, r] - one[1][:, r])) for r in b_rows) > 1e-3
    # the integrator's default dynamics with the same option
    sink = ExpandingStorage(model)
    integrate(MuntheKaasIntegrator(MechanismState(model, x0), CoreDynamics(model, stabilization_gains=gains),
                                   None, sink), 1.0, 1e-3)
    assert np.max(np.abs(sink.qs - one[1])) < ROUND_OFF and np.max(np.abs(sink.vs - one[2])) < ROUND_OFF
