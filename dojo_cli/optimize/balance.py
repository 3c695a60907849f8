"""A balancing stand: an LQR about a static equilibrium, for a robot that its support cannot
hold under a PD law (issue 24 item 4; ``dojo import-urdf --stand``, docs/urdf.md).

scene.stand gives a legged robot its standing pose and a PD stand. Where its support does
not hold the centre of mass (no area, or the centre of mass outside it: bolt's two round
feet touch the ground at a point each, a line), no joint PD holds it up; scene.stand then
leans it, turning the whole robot about its feet until the centre of mass is over the line
between them (``StandReport.balance``), and this module gives it a full-state linear
controller u = u0 - K (y - y0) on the minimal state (the scene's ``linear`` controller,
core/maximal/linear_controller.h) made from the step itself:

1. **The equilibrium.** y0 is the leaned pose with zero velocities; u0 the joint inputs that
   keep it where it is: Gauss-Newton on the step's residual y1(y0, u) - y0 over the joint
   inputs, with the step's own input sensitivities B (``EQUILIBRIUM_ITERATIONS`` steps, each
   a least-squares solve; the floating base has no input; the squeeze between the feet,
   which no motion reveals, is the least-squares minimum-norm one). The contact forces are the
   step's (the interior point's), so u0 is what the simulation needs, with the feet as they
   rest on the ground.
2. **The linearisation.** A and B of one step in minimal coordinates at (y0, u0)
   (simulation.gradients.minimal_step_gradients: the implicit-function-theorem derivatives,
   the contacts as they act at rest: the interior point's own sensitivities, the feet held
   by friction).
3. **The gauge.** The base's horizontal position and its yaw about the vertical are
   symmetries of a step on flat ground: shifting or turning the whole state moves the next
   state the same way (A G = G for the three directions G, exact for the two shifts, to
   1e-6 for the turn). They are neutrally stable and no input moves them (friction holds the
   feet), so the pair (A, B) is not stabilisable as it is: the Riccati equation is solved on
   the complement. With S = [T G] (T an orthonormal basis of G's orthogonal complement),
   S^-1 A S = [[A_r, 0], [*, I]], A_r = (S^-1 A T)[:n-3], B_r = (S^-1 B)[:n-3], and the
   gain K = K_r (S^-1)[:n-3], so that K G = 0: the law ignores where on the floor the robot
   stands and which way it faces.
4. **The gain.** K_r from the discrete algebraic Riccati equation (scipy's
   solve_discrete_are) with Bryson's weights: Q = T^T diag(1 / BALANCE_ANGLE^2 on the
   coordinates, 1 / BALANCE_RATE^2 on the velocities) T, R = I / torque^2 with torque =
   BALANCE_TORQUE_FRACTION m g l (m the robot's mass, l its centre of mass's height).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dojo_cli.errors import Problem, SceneError

# Gauss-Newton steps of u0: on bolt the step's residual |y1 - y0| goes 0.22, 4e-5, 6e-5,
# 2.65e-5, then stays (the contacts' settling under the interior point's relaxation: a
# residual no input removes).
EQUILIBRIUM_ITERATIONS = 4

# Bryson's rule: the deviations the LQR weighs as equal to one another. A pose error of
# 0.01 rad (or m) and a rate error of 0.1 rad/s (or m/s)...
BALANCE_ANGLE = 0.01
BALANCE_RATE = 0.1
# ... against a joint input of this fraction of the robot's weight times its centre of
# mass's height (bolt: 1.3 kg, 0.30 m: 0.19 N m). Measured on bolt with a push on its trunk
# along x (across the line of its feet) for 0.1 s, 2.5 s run: at this fraction (|K| <= 277)
# 0.3 N and 0.5 N are caught, 1 N and 2 N make it fall with every step converged; at 0.25
# (|K| <= 649) 0.3 N is caught but at 1 N a lifted foot's light shank (0.03 kg) meets gains
# past the explicit law's stability and 51 steps fail with the state thrown kilometres away.
BALANCE_TORQUE_FRACTION = 0.05

# Shift of the whole state (m, rad) by which the gauge directions are differenced.
GAUGE_STEP = 1e-6

# A closed-loop eigenvalue within this of 1 in modulus is a neutral mode: a position the
# feet's friction holds wherever it is and no input reaches (bolt's stance width: the feet
# stick where they are; 1 - 1.5e-6 per step, the interior point's relaxation its only
# spring). It neither grows nor decays in a run; the Riccati solution leaves it.
NEUTRAL = 1e-5


@dataclass
class Balance:
    """The balance controller and what it was made from.

    Attributes:
        u0: (nu,) the inputs that hold the equilibrium.
        K: (nu, 2 nf) the gain (K G = 0 on the gauge directions).
        y0: (2 nf,) the equilibrium (minimal state, zero velocities).
        residual: |y1(y0, u0) - y0| of one step from the equilibrium.
        open_loop: the largest eigenvalue modulus of the reduced A (> 1: it falls).
        closed_loop: the largest of A_r - B_r K_r below NEUTRAL (< 1: it stands).
        neutral: how many eigenvalues of A_r - B_r K_r are within NEUTRAL of 1: positions
            friction holds and no input moves (bolt: one, the distance between its feet).
    """

    u0: np.ndarray
    K: np.ndarray
    y0: np.ndarray
    residual: float
    open_loop: float
    closed_loop: float
    neutral: int


def _gauge_directions(mech, y0: np.ndarray) -> np.ndarray:
    """(2 nf, 3) the minimal-state directions of shifting the whole state along world x and
    y and turning it about world z (central differences of the maximal state so moved:
    positions and linear velocities turned, orientations premultiplied, body-frame angular
    velocities unchanged)."""
    from dojo_cli.math.quaternion import multiply, quaternion_from_rotation_vector
    from dojo_cli.physics.coordinates import maximal_to_minimal, minimal_to_maximal

    z0 = minimal_to_maximal(mech, y0).reshape(mech.nb, 13)

    def moved(shift: np.ndarray) -> np.ndarray:
        z = z0.copy()
        c, s = np.cos(shift[2]), np.sin(shift[2])
        turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        z[:, 0:3] = z[:, 0:3] @ turn.T + np.array([shift[0], shift[1], 0.0])
        z[:, 3:6] = z[:, 3:6] @ turn.T
        yaw = quaternion_from_rotation_vector(np.array([0.0, 0.0, shift[2]]))
        z[:, 6:10] = [multiply(yaw, q) for q in z[:, 6:10]]
        return maximal_to_minimal(mech, z.reshape(-1))

    return np.column_stack([(moved(GAUGE_STEP * d) - moved(-GAUGE_STEP * d)) / (2.0 * GAUGE_STEP) for d in np.eye(3)])


def balance_controller(mech, file: str = "") -> Balance:
    """The LQR balance about the mechanism's initial pose (module doc).

    Args:
        mech: a floating robot (its first joint floating, no ``actuators``) whose initial
            pose is a standing equilibrium: its feet on the ground, its centre of mass over
            them (scene.stand's lean).
        file: the name errors give.

    Raises:
        SceneError: the robot is not floating or has actuators; the step does not converge
            at the pose; or the Riccati equation has no stabilising solution (the message
            says which).
    """
    import scipy.linalg

    from dojo_cli.errors import DojoError
    from dojo_cli.physics.coordinates import interleave_minimal, maximal_to_minimal, split_minimal
    from dojo_cli.simulation.gradients import minimal_step_gradients

    nf, nu, n = mech.nf, mech.nu, 2 * mech.nf
    if not mech.joints or mech.joints[0].type != "floating" or mech.has_actuators:
        raise SceneError(Problem(file, None, "stand", "a balance controller needs a floating robot whose inputs are "
                                 "its joints' (no actuators)"))
    base_inputs = mech.joint_free_range[0]
    joint_inputs = [i for i in range(nu) if not base_inputs.start <= i < base_inputs.stop]
    theta, _ = split_minimal(mech, maximal_to_minimal(mech, mech.initial_t0))
    y0 = interleave_minimal(mech, theta, np.zeros(nf))
    u0 = np.zeros(nu)
    try:
        # 1. u0: the joint inputs under which one step from rest stays at rest
        for _ in range(EQUILIBRIUM_ITERATIONS):
            g = minimal_step_gradients(mech, y0, u0)
            du, *_ = np.linalg.lstsq(g.B[:, joint_inputs], y0 - g.next_state, rcond=None)
            u0[joint_inputs] += du
        # 2. the step's linearisation there
        g = minimal_step_gradients(mech, y0, u0)
    except DojoError as exc:
        raise SceneError(Problem(file, None, "stand", f"the balance controller's step from the standing pose: {exc}")) from None
    residual = float(np.linalg.norm(g.next_state - y0))
    # 3. the gauge (x, y, yaw) removed
    G = _gauge_directions(mech, y0)
    T = np.linalg.svd(G, full_matrices=True)[0][:, 3:]
    S_inv = np.linalg.inv(np.hstack([T, G]))[: n - 3]
    A_r = S_inv @ g.A @ T
    B_r = S_inv @ g.B[:, joint_inputs]
    # 4. the gain (Bryson's weights)
    coordinate = interleave_minimal(mech, np.ones(nf), np.zeros(nf)) > 0
    weights = np.where(coordinate, 1.0 / BALANCE_ANGLE**2, 1.0 / BALANCE_RATE**2)
    # the centre of mass's height above the ground (the stand puts the feet at z = 0)
    masses = np.array([b.mass for b in mech.bodies])
    height = float(masses @ mech.initial_t0.reshape(mech.nb, 13)[:, 2] / masses.sum())
    torque = BALANCE_TORQUE_FRACTION * masses.sum() * float(np.linalg.norm(mech.gravity)) * height
    if not torque > 0.0:
        raise SceneError(Problem(file, None, "stand", f"a balance controller needs the centre of mass above the ground "
                                 f"and gravity (height {height:g} m)"))
    Q = T.T @ np.diag(weights) @ T
    R = np.eye(len(joint_inputs)) / torque**2
    try:
        P = scipy.linalg.solve_discrete_are(A_r, B_r, Q, R)
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise SceneError(Problem(file, None, "stand", f"the balance controller: the Riccati equation has no stabilising "
                                 f"solution about the standing pose ({exc})")) from None
    K_r = np.linalg.solve(R + B_r.T @ P @ B_r, B_r.T @ P @ A_r)
    K = np.zeros((nu, n))
    K[joint_inputs] = K_r @ S_inv
    closed = np.abs(np.linalg.eigvals(A_r - B_r @ K_r))
    neutral = np.abs(closed - 1.0) <= NEUTRAL
    return Balance(u0=u0, K=K, y0=y0, residual=residual, open_loop=float(np.max(np.abs(np.linalg.eigvals(A_r)))),
                   closed_loop=float(np.max(closed[~neutral], initial=0.0)), neutral=int(np.sum(neutral)))


def add_balance(scene: dict, report, file: str) -> Balance:
    """Replace the PD controller of a leaned stand scene (scene.stand's ``StandReport.balance``)
    by the balance controller about its pose: the scene's ``linear`` controller, u0, K and
    y0 as balance_controller makes them, and a note with its numbers on ``report``.

    Raises:
        SceneError: as balance_controller.
    """
    from dojo_cli.scene.builder import build_mechanism
    from dojo_cli.scene.loader import spec_from_dict

    mech = build_mechanism(spec_from_dict({**scene, "controller": {"type": "none"}}, file=file))
    balance = balance_controller(mech, file)
    scene["controller"] = {
        "type": "linear",
        "u0": [float(v) for v in balance.u0],
        "K": [[float(v) for v in row] for row in balance.K],
        "y0": [float(v) for v in balance.y0],
    }
    report.notes.append(
        f"balance controller: LQR about the leaned pose on the step's own linearisation (contacts as they act at rest), "
        f"the base's x, y and yaw left out (symmetries: no input moves them); largest eigenvalue modulus per step "
        f"{balance.open_loop:.4f} without it, {balance.closed_loop:.4f} with it (and {balance.neutral} at 1: positions "
        f"the feet's friction holds, as the distance between them); the pose moves {balance.residual:.1e} in one step "
        "under u0")
    return balance


def stand_import_balanced(path, options, shown: str, srdf=None, timestep: float | None = None):
    """``dojo import-urdf --stand``: scene.stand.stand_import, and where the robot must balance
    (``StandReport.balance``) its PD replaced by the balance controller (add_balance).
    Returns (UrdfImport, StandReport).

    Raises:
        SceneError: as stand_import and balance_controller.
    """
    from dojo_cli.scene.stand import stand_import

    result, report = stand_import(path, options, shown, srdf=srdf, timestep=timestep)
    if report.balance:
        add_balance(result.scene, report, shown)
    return result, report
