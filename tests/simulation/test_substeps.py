"""A failed step solved again as substeps (simulation.substeps; docs/physics.md "Substeps"):
the variable-step variational integrator against the fixed-step one's laws and against a
run at the smaller step, the re-expression of a state for another step length
(core maximal/step_length.h), and the record a substepped step leaves in a run and a file."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import dojo_cli as dojo
from dojo_cli import _core
from dojo_cli.cli.app import app
from dojo_cli.io.gradient_files import read_gradient_file
from dojo_cli.io.storage import read_gradient_rows, read_storage
from dojo_cli.simulation.initial import initial_state
from dojo_cli.simulation.integrators import Variational
from dojo_cli.simulation.knots import KnotRows
from dojo_cli.simulation.run import run
from dojo_cli.simulation.substeps import Substeps
from dojo_cli.simulation.trajectory import TrajectoryRecorder

# The solves here are taken to rtol = btol = 1e-12 (the variational step's own accuracy is
# then ~1e-13): conservation and agreement are then measured, not the solver's tolerance.
TIGHT = 1e-12
# A free body's momenta are exact in the variational step (Dojo's discrete Legendre
# transforms); measured 1e-13 (angular, N m s, |L| = 0.3) over 200 steps with or without
# substeps: rounding.
MOMENTUM_TOL = 1e-11
# Energy from the knot velocities: a single free body's is exact, 1.3e-12 J (fixed step),
# 7e-13 J (with 60 substepped steps of h/2 and h/4) of 1.5 J over 200 steps at TIGHT; the
# T-handle's oscillates at O(h^2), within 9.8e-6 J (fixed) and 8.6e-6 J (mixed) of 1.9 J.
ENERGY_TOL = 1e-10
# The mixed run's energy error against the fixed-step run's (0.87 measured): bounded alike.
ENERGY_BAND = 1.5
# The substepped run against the run at h/2: the solves' tolerance (TIGHT) times the motion's
# scale; measured (the pendulum) 1e-16 m, 6e-17 (quaternion), 2e-14 rad/s (hinge rate).
AGREEMENT_TOL = 1e-10

# A body tumbling freely about its intermediate axis (the Dzhanibekov T-handle's main body):
# its spin flips, so the angular velocity sweeps every direction in the body.
TUMBLER = """
format: 1
name: tumbler
timestep: 0.01
gravity: [0, 0, 0]
bodies:
  - name: main
    shape: {type: box, size: [0.3, 0.6, 0.1]}
    mass: 1.0
    inertia: [0.03, 0.001, 0.1]
joints:
  - name: floating_base
    type: floating
    parent: origin
    child: main
    initial:
      position: [0, 0, 1, 0, 0, 0]
      velocity: [0.1, 0, 0, 10, 0.01, 0]
"""


def _run(mech, steps, opts=None, z0=None, **kwargs):
    """A run of the variational integrator with its options (forced_substeps, substeps)."""
    recorder = TrajectoryRecorder()
    integrator = Variational(mech, initial_state(mech) if z0 is None else z0, opts=opts, **kwargs)
    summary = run(mech, steps, KnotRows(mech, recorder), integrator)
    return recorder.trajectory(mech), summary


@pytest.fixture(scope="module")
def tumbler(tmp_path_factory):
    path = tmp_path_factory.mktemp("scene") / "tumbler.yaml"
    path.write_text(TUMBLER)
    return dojo.load_scene(str(path))


@pytest.mark.parametrize("scene", ["tumbler", "dzhanibekov"])
def test_steps_of_h_h2_h4_mixed_keep_momentum_and_energy(scene, tumbler):
    """60 of 200 steps (seeded) solved as 2 or 4 substeps, free bodies in zero gravity (one
    tumbling body; the Dzhanibekov T-handle, two bodies welded by a fixed joint): the momenta
    stay exact and the energy bounded as in the fixed-step run (the variable-step equation at
    each knot is the discrete Euler-Lagrange equation of the two steps' Lagrangians, and the
    knot velocities share each knot's impulse between its unequal half steps)."""
    mech = tumbler if scene == "tumbler" else dojo.load_scene(scene)
    opts = dojo.default_options(mech).replace(rtol=TIGHT, btol=TIGHT)
    rng = np.random.default_rng(0)
    forced = {int(k): int(rng.choice([2, 4])) for k in rng.choice(200, 60, replace=False)}
    fixed, _ = _run(mech, 200, opts)
    mixed, summary = _run(mech, 200, opts, forced_substeps=forced)
    assert summary.substepped_steps == 60 and summary.failed_steps == 0, summary
    assert np.array_equal(np.flatnonzero(mixed.substeps > 1), sorted(forced))
    drift = {}
    for name, traj in (("fixed", fixed), ("mixed", mixed)):
        p, L = dojo.momentum(mech, traj)
        energy = dojo.mechanical_energy(mech, traj)
        assert np.abs(p - p[0]).max() < MOMENTUM_TOL, f"{name}: linear momentum moved {np.abs(p - p[0]).max():.2e}"
        assert np.abs(L - L[0]).max() < MOMENTUM_TOL, f"{name}: angular momentum moved {np.abs(L - L[0]).max():.2e}"
        drift[name] = np.abs(energy - energy[0]).max()
    assert drift["mixed"] < max(ENERGY_BAND * drift["fixed"], ENERGY_TOL), drift
    # the substeps changed the motion (the flip's phase depends on the step): not the same run
    assert np.abs(mixed.omega[-1] - fixed.omega[-1]).max() > 1e-3


def test_a_substepped_step_is_the_run_at_half_the_step():
    """The pendulum's step 20 forced into 2 substeps ends where the scene at h/2, started
    from the run's knot 20 (its velocities at t_20), is after 2 steps: the variable-step
    integrator is the fixed-step one at h/2 between the knots (the knot momentum is handed
    over exactly; the joint's impulse share differs by J^T mu, which the step absorbs)."""
    mech = dojo.load_scene("pendulum")
    opts = dojo.default_options(mech).replace(rtol=TIGHT, btol=TIGHT)
    traj, _ = _run(mech, 22, opts, forced_substeps={20: 2})
    assert list(traj.substeps[19:22]) == [1, 2, 1]
    half = dojo.load_scene("pendulum", {"timestep": mech.timestep / 2})
    z0 = dojo.initial_state(half, positions=np.concatenate([traj.x[20], traj.q[20]], axis=1),
                            velocities=np.concatenate([traj.v[20], traj.omega[20]], axis=1), opts=opts)
    ref = dojo.simulate(half, steps=2, z0=z0, opts=opts)
    err_x = np.abs(traj.x[21] - ref.x[2]).max()
    err_q = np.abs(traj.q[21] - ref.q[2]).max()
    assert err_x < AGREEMENT_TOL and err_q < AGREEMENT_TOL, f"x {err_x:.2e} m, q {err_q:.2e} from the run at h/2"
    # the velocity at the knot after the substeps, whose impulse is shared between half
    # steps of h/2 and h (core step_length.h knot_velocities_between): the run at h/2's there
    # (an even split would put it 1e-2 rad/s off)
    err_v = np.abs(traj.minimal_v[21] - ref.minimal_v[2]).max()
    assert err_v < AGREEMENT_TOL, f"knot 21: hinge rate {err_v:.2e} rad/s from the run at h/2"


def test_the_reexpressed_state_keeps_the_knot_momentum(tumbler):
    """core step_length.h: a state of h re-expressed for h/4 and back is the same state, and
    a step of h/4 from it is the step of the model at h/4 (the map is the identity on
    positions and a bijection on the physical branch)."""
    mech = tumbler
    opts = dojo.default_options(mech)
    z = initial_state(mech)
    sub = Substeps(mech, opts)
    fine, fine_data = sub.model(4)
    zf, ok, _, residual = _core.midpoint_for_step(mech.core, _core.Data(mech.core), fine, fine_data, z)
    assert ok and residual < 1e-14, residual
    back, ok, _, _ = _core.midpoint_for_step(fine, fine_data, mech.core, _core.Data(mech.core), zf)
    assert ok
    np.testing.assert_allclose(back, z, rtol=0, atol=1e-13)
    for i in (0, 6, 7, 8, 9):  # x and the quaternion untouched
        assert np.array_equal(zf[i::13][: mech.nb], z[i::13][: mech.nb])
    # gravity-free and force-free: the left transforms of the two states agree (dynamics.h)
    h, hf = mech.timestep, mech.timestep / 4
    J = np.diag(mech.bodies[0].inertia) if np.ndim(mech.bodies[0].inertia) == 1 else np.asarray(mech.bodies[0].inertia)

    def left(w, step):
        s = np.sqrt(4 / step**2 - w @ w)
        return step / 2 * (s * J @ w - np.cross(w, J @ w))

    np.testing.assert_allclose(left(zf[10:13], hf), left(z[10:13], h), rtol=0, atol=1e-14)
    np.testing.assert_allclose(zf[3:6], z[3:6], rtol=0, atol=1e-15)


def test_a_spin_past_the_fold_of_the_longer_step_has_no_state():
    """The fold of a step's rotational momentum (core dynamics.h): a body spinning at 200
    rad/s over a step of h/4 = 2.5 ms holds an angular momentum no midpoint velocity of a
    step of 10 ms has (its largest is at sqrt(2)/h = 141 rad/s): the map refuses."""
    path_scene = TUMBLER.replace("velocity: [0.1, 0, 0, 10, 0.01, 0]", "velocity: [0, 0, 0, 0, 0, 0]")
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "spin.yaml"
        path.write_text(path_scene)
        mech = dojo.load_scene(str(path))
    sub = Substeps(mech, dojo.default_options(mech))
    fine, fine_data = sub.model(4)
    z = initial_state(mech).copy()
    z[12] = 200.0  # w15 about z (the major axis) over a step of h/4
    back, ok, _, _ = _core.midpoint_for_step(fine, fine_data, mech.core, _core.Data(mech.core), z)
    assert not ok and np.array_equal(back, z)


def test_a_substepped_step_in_a_file_and_its_gradients(tmp_path, monkeypatch):
    """The record of a substepped step: status success, solver/substeps n in the file (1 for
    the others), the run's summary note; with --gradients, its A and B are those of the
    substeps' composed map (simulation.substeps.SubstepChain; checked against finite
    differences in test_substep_gradients.py), never those of the full step."""
    mech = dojo.load_scene("box")
    traj, _ = _run(mech, 12, forced_substeps={5: 4})
    assert traj.status == ["success"] * 12 and list(traj.substeps) == [1] * 5 + [4] + [1] * 6
    # a block with a closed-loop step (gradients) takes the same state as the fast path
    grads, _ = _run(mech, 12, forced_substeps={5: 4}, gradients=("state",))
    np.testing.assert_allclose(grads.x, traj.x, rtol=0, atol=1e-12)

    integrator = Variational(mech, initial_state(mech), forced_substeps={5: 4}, gradients=("state", "input"))
    blocks = [integrator.advance(k, 1)[0] for k in range(7)]
    for k in (4, 5, 6):
        assert all(np.isfinite(blocks[k].gradients[name]).all() for name in ("gradients/A", "gradients/B")), k
    # the composed map's, from the state before it: not the full step's
    full = dojo.step_gradients(mech, blocks[4].z[-1], None, wrt=("state",), angles=blocks[4].minimal_q[-1])
    assert np.abs(blocks[5].gradients["gradients/A"][0] - full.A).max() > 1e-6

    # the command line: the note (even with -q) and the file's record; the retry forced at
    # step 5 (a real failing step is a robot's: tests/robots/test_robot_zoo.py)
    original = Variational.__init__

    def forced_init(self, *args, **kwargs):
        original(self, *args, **dict(kwargs, forced_substeps={5: 4}))

    monkeypatch.setattr(Variational, "__init__", forced_init)
    out = tmp_path / "box.h5"
    result = CliRunner().invoke(app, ["simulate", "box", "--steps", "12", "-q", "-o", str(out), "--gradients"])
    assert result.exit_code == 0, result.output
    assert "1 of 12 steps failed at h = 0.01 s and were solved as substeps, the first at step 5 (t = 0.05 s) as 4 " \
           "substeps of 0.0025 s" in result.output, result.output
    assert "those of the substeps' composed map" in result.output, result.output
    rows = read_gradient_rows(out, [5])
    np.testing.assert_allclose(rows["gradients/A"][0], blocks[5].gradients["gradients/A"][0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(rows["gradients/B"][0], blocks[5].gradients["gradients/B"][0], rtol=0, atol=1e-9)
    stored = read_storage(out)
    assert stored.status == "complete" and stored.trajectory.status == ["success"] * 12
    assert list(stored.trajectory.substeps) == list(traj.substeps)
    np.testing.assert_allclose(stored.trajectory.x, traj.x, rtol=0, atol=1e-12)
    # dojo gradients of that step: the map the run took (its 4 substeps'), as the run stored
    # it, and --check's finite differences of that map agree (the box is in the air: smooth);
    # --kappa of it refused (the relaxed map of substeps is not defined). Of the step before
    # it: the full step's. dojo step of it: the full step, with a warning
    runner = CliRunner()
    g_out = tmp_path / "g5.json"
    done = runner.invoke(app, ["gradients", "box", "--from", str(out), "--index", "5", "-o", str(g_out)])
    assert done.exit_code == 0, done.output
    assert "solved as 4 substeps of 0.0025 s, as the run did" in done.output, done.output
    np.testing.assert_allclose(read_gradient_file(g_out).matrices["A"], rows["gradients/A"][0], rtol=0, atol=1e-12)
    checked = runner.invoke(app, ["gradients", "box", "--from", str(out), "--index", "5", "--check"])
    assert checked.exit_code == 0 and "finite-difference check" in checked.output, checked.output
    refused = runner.invoke(app, ["gradients", "box", "--from", str(out), "--index", "5", "--kappa", "1e-4"])
    assert refused.exit_code == 2 and "--kappa: the run solved step 5" in refused.output, refused.output
    assert runner.invoke(app, ["gradients", "box", "--from", str(out), "--index", "4"]).exit_code == 0
    stepped = runner.invoke(app, ["step", "box", "--from", str(out), "--index", "5", "--json"])
    assert stepped.exit_code == 0 and "this is the full step" in stepped.output, stepped.output


def test_a_warm_run_records_a_cold_start_after_a_step_solved_as_substeps():
    """With the warm start (solver/start, core maximal/step.h) the step after one solved as
    substeps starts cold: the substeps' solves were another model's, so the run's data holds
    no warm start for it. Its start record says so (what `--from` the next state restores),
    and the run is warm again from the step after."""
    mech = dojo.load_scene("box", overrides={"solver.warm_start": True, "contacts.*.margin": 0.01})
    traj, _ = _run(mech, 104, mech.default_options, forced_substeps={100: 2})
    assert list(np.flatnonzero(np.asarray(traj.substeps) > 1)) == [100]
    assert list(traj.solver_start[98:103, 0]) == [1.0, 1.0, 0.0, 1.0, 1.0]
    plain, _ = _run(mech, 104, mech.default_options)
    assert traj.iterations[101] > plain.iterations[101], "the step after the substeps did not start cold"


def test_a_spin_past_the_fold_is_carried_on_in_substeps():
    """A state no step of h can start from (its knot momentum past the largest a step of h
    carries, at its fold |w15| = sqrt(2)/h, simulation.substeps "carried on"): the run goes
    on in substeps from it until a step's end fits h again. The pendulum without gravity
    spinning at 90 rad/s (midpoint), its hinge driven by +668 N m for three steps and -668
    N m for three (20 rad/s a step), every step forced into 2 substeps: the fastest knots are
    carried (no midpoint velocities of a step of h: NaN in the record; the slower ones before
    and after are not), every step converges, and the run is the scene's run at h/2 with the
    same inputs (positions and knot velocities at every knot)."""
    overrides = {"gravity": [0, 0, 0], "joints.hinge.initial.velocity": [90.0]}
    mech = dojo.load_scene("pendulum", overrides)
    opts = dojo.default_options(mech).replace(rtol=TIGHT, btol=TIGHT)
    torque = [668.0] * 3 + [-668.0] * 3 + [0.0]  # (the last: the step past the end, for the last knot)
    traj, summary = _run(mech, 6, opts, forced_substeps={k: 2 for k in range(6)},
                         controller=lambda mech, k, z: [torque[k]])
    assert summary.failed_steps == 0 and list(traj.substeps) == [2] * 6, (summary, traj.substeps)
    rate = traj.minimal_v[:, 0]
    carried = ~np.isfinite(traj.omega_mid[:, 0, 0])
    assert carried.any() and not carried[0] and not carried[-1], (rate, carried)
    assert rate[carried].min() > rate[~carried].max(), f"carried at {rate[carried]}, not at {rate[~carried]} rad/s"
    assert np.all(np.isfinite(traj.omega)) and np.all(np.isfinite(traj.q)), "a carried knot's state is exact"
    # the run at h/2 from the run's first substep's start (the initial state re-expressed)
    half = dojo.load_scene("pendulum", dict(overrides, timestep=mech.timestep / 2))
    z0, ok, _, _ = _core.midpoint_for_step(mech.core, _core.Data(mech.core), half.core, _core.Data(half.core),
                                           initial_state(mech))
    ref = dojo.simulate(half, steps=12, opts=opts, controller=lambda mech, k, z: [torque[k // 2]], z0=z0)
    err_q = np.abs(traj.q - ref.q[::2]).max()
    # the knot rates between two substepped steps (the first and last knots border a step of h)
    err_v = np.abs(rate[1:-1] - ref.minimal_v[2:-2:2, 0]).max()
    assert err_q < AGREEMENT_TOL and err_v < AGREEMENT_TOL, f"q {err_q:.2e}, hinge rate {err_v:.2e} rad/s from h/2"



def test_a_run_from_a_carried_state_is_refused_with_its_cause(tmp_path):
    """A carried knot has no midpoint velocities of a step of h (NaN v_mid, omega_mid in its
    file): ``dojo simulate --from`` it exits 2 naming the state and why, and --from the knot
    before the stretch runs."""
    from dojo_cli.io.storage import StorageWriter
    from dojo_cli.physics.energy import knot_momenta
    from dojo_cli.simulation.trajectory import write_trajectory

    overrides = {"gravity": [0, 0, 0], "joints.hinge.initial.velocity": [90.0]}
    mech = dojo.load_scene("pendulum", overrides)
    torque = [668.0] * 3 + [-668.0] * 3 + [0.0] * 3  # then two full steps without input
    traj, _ = _run(mech, 8, forced_substeps={k: 2 for k in range(6)}, controller=lambda mech, k, z: [torque[k]])
    carried = np.flatnonzero(~np.isfinite(traj.omega_mid[:, 0, 0]))
    assert carried.size, "no carried state"
    out = tmp_path / "spin.h5"
    with StorageWriter(out, scene_yaml="", scene_name="pendulum", timestep=mech.timestep, gravity=list(mech.gravity),
                       solver_options={}, integrator="dojo-variational-midpoint", body_names=[b.name for b in mech.bodies],
                       minimal_q_names=["hinge"], minimal_v_names=["hinge"], input_dim=mech.nu, dojo_cli_version="0",
                       velocities="knot", momenta=lambda q, v, w: knot_momenta(mech, q, v, w)) as writer:
        write_trajectory(writer, traj)
    base = ["simulate", "pendulum", "--set", "gravity=[0,0,0]", "--steps", "1", "-q", "--from", str(out)]
    res = CliRunner().invoke(app, base + ["--index", str(carried[0]), "-o", str(tmp_path / "a.h5")])
    assert res.exit_code == 2 and "solved as substeps" in res.output and "Traceback" not in res.output, res.output
    # after the stretch: the run's own next steps, bit for bit (the warm start's impulses are
    # the substeps' sum, the stored row)
    res = CliRunner().invoke(app, base[:4] + ["--steps", "2", "-q", "--from", str(out), "--index", "6",
                                               "-o", str(tmp_path / "b.h5")])
    assert res.exit_code == 0, res.output
    more = read_storage(tmp_path / "b.h5").trajectory
    assert np.array_equal(more.x, traj.x[6:]) and np.array_equal(more.q, traj.q[6:]), np.abs(more.q - traj.q[6:]).max()


def test_a_step_from_or_to_a_carried_state_has_nan_gradients():
    """A step that starts or ends at a carried state (a state of h/n) is no map between states
    of h: its gradient rows are NaN, never the composed map's of another step length; the
    substepped steps between states of h keep their composed derivatives (finite). The
    pendulum spun past the fold of h, as in test_a_spin_past_the_fold_is_carried_on_in_substeps."""
    overrides = {"gravity": [0, 0, 0], "joints.hinge.initial.velocity": [90.0]}
    mech = dojo.load_scene("pendulum", overrides)
    opts = dojo.default_options(mech).replace(rtol=TIGHT, btol=TIGHT)
    # spun up and down again (the knots between carried), then three substepped steps at the
    # first rate, between states of h
    torque = [668.0] * 3 + [-668.0] * 3 + [0.0] * 3
    integrator = Variational(mech, initial_state(mech), opts=opts, forced_substeps={k: 2 for k in range(9)},
                             gradients=("state",), controller=lambda mech, k, z: [torque[k]])
    finite = []
    for k in range(9):
        start_carried = integrator.carried > 1
        block = integrator.advance(k, 1)[0]
        between_states_of_h = not start_carried and integrator.carried == 1
        A = block.gradients["gradients/A"][0]
        assert block.status_code[0] == 0, k
        assert np.isfinite(A).all() if between_states_of_h else np.isnan(A).all(), (k, start_carried, integrator.carried)
        finite.append(between_states_of_h)
    assert any(finite) and not all(finite), finite


def test_a_substep_model_that_does_not_fit_in_memory_leaves_the_step_as_it_was(monkeypatch):
    """A count whose Model cannot be compiled (MemoryError: a second Model of a contact-heavy
    scene beside the run's) gives no substeps: the step is the full step, its status the full
    step's, and the run goes on; never a MemoryError out of the run. Forced substeps at step 5
    of the pendulum then give the plain run, bit for bit."""
    mech = dojo.load_scene("pendulum")
    plain, _ = _run(mech, 10)

    def no_memory(self, n):
        raise MemoryError("std::bad_alloc")

    monkeypatch.setattr(Substeps, "model", no_memory)
    forced, summary = _run(mech, 10, forced_substeps={5: 2})
    assert summary.failed_steps == 0 and summary.substepped_steps == 0, summary
    assert list(forced.substeps) == [1] * 10
    assert np.array_equal(forced.q, plain.q) and np.array_equal(forced.x, plain.x)
