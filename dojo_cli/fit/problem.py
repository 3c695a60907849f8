"""The fit's least-squares problem: residuals of recorded motion against the simulation and
their exact Jacobians in the fitted parameters (docs/fit.md).

Two losses, both from Dojo's system identification (Howell et al., "Dojo", 2022, sec. VII-C):

- ``one_step``: from each recorded pair of poses (k-1, k) build the integrator's state at k
  (pose k, midpoint velocities from the two poses: v = (x_k - x_{k-1}) / h and w from
  q_k = q_{k-1} qmap(w), core/math/spatial.h ``integrator_map``), take one step, and compare
  the predicted pose k+1 with the recorded one.
- ``shooting``: multiple shooting over windows of N steps: from the state at the window's
  first pair, N steps, each pose compared. The Jacobian is chained through the steps,
  dz_{k+1}/dtheta = A_k dz_k/dtheta + P_k (A, P of simulation.gradients, exact by the
  implicit function theorem), in the tangent coordinates [x, v, phi, w] per body.

Residual per compared pose and body: the position error (scene length units) and the
orientation error ``rotation_weight * 2 vec(q_rec^* q_pred)`` (radians for small errors,
times a length so both parts are in the same unit). Its derivative in the attitude tangent
phi of q_pred -> q_pred [sqrt(1 - |phi|^2), phi] is 2 (e_w I + [e_v]x) with e = q_rec^* q_pred.

Parameters are the labels of dojo_cli.model.parameters; a free parameter of the fit is a
group of labels tied to one value (one friction for every corner), with bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dojo_cli.math.quaternion import conjugate, multiply, skew
from dojo_cli.model.mechanism import Mechanism
from dojo_cli.model.parameters import parameter_labels, parameter_values, with_parameters
from dojo_cli.physics.contact_queries import sdf_jacobian
from dojo_cli.simulation.gradients import step_gradients
from dojo_cli.simulation.step import solve_step
from dojo_cli.solver.options import SolverOptions
from dojo_cli.solver.status import SolverStatus

LOSSES = ("one_step", "shooting")
# Largest attitude offset |phi_i| of a fitted start state (the retraction q [sqrt(1 - |phi|^2),
# phi] needs |phi| < 1; 0.5 is a 60 degree turn, far beyond any recording's error).
STATE_PHI_BOUND = 0.5
# The parameter kinds a label may belong to, in the order the core's gradients list them.
_KIND_OF = {"mass": "mass", "inertia": "inertia", "gravity": "gravity", "spring": "spring", "damper": "damper",
            "friction": "friction", "radius": "radius", "offset": "offset", "restitution": "restitution"}


def label_kind(label: str) -> str:
    """The parameter kind of a label (``contacts.c1.offset.x`` -> offset)."""
    parts = label.split(".")
    if parts[0] == "gravity":
        return "gravity"
    if parts[0] == "bodies":
        return parts[2]
    return parts[2]


@dataclass
class Recording:
    """One recorded trajectory of the scene's bodies.

    Attributes:
        name: where it came from (``file.npz#12``).
        time: (T,) s, equally spaced by the scene's timestep.
        x: (T, nb, 3) positions of the bodies' centres, world frame.
        q: (T, nb, 4) orientations [w, x, y, z], body to world, sign-continuous.
    """

    name: str
    time: np.ndarray
    x: np.ndarray
    q: np.ndarray

    @property
    def frames(self) -> int:
        return len(self.time)


def midpoint_velocities(x: np.ndarray, q: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """The integrator's midpoint velocities between consecutive poses.

    Args:
        x: (T, nb, 3) positions; q: (T, nb, 4) orientations [w, x, y, z].
        h: timestep, s.

    Returns:
        v15 (T-1, nb, 3) world-frame linear, w15 (T-1, nb, 3) body-frame angular midpoint
        velocities into frames 1..T-1: the inverse of q_k = q_{k-1} qmap(w), qmap(w) =
        (h/2) [sqrt(4/h^2 - |w|^2), w] (core/math/spatial.h integrator_map).
    """
    v = (x[1:] - x[:-1]) / h
    dq = multiply(conjugate(q[:-1]), q[1:])
    dq = dq * np.where(dq[..., :1] < 0.0, -1.0, 1.0)
    return v, (2.0 / h) * dq[..., 1:]


def states_from_poses(x: np.ndarray, q: np.ndarray, h: float) -> np.ndarray:
    """(T-1, 13 nb) the integrator's states at frames 1..T-1 of recorded poses (13 per body
    [x, v15, q, w15])."""
    v, w = midpoint_velocities(x, q, h)
    s = np.concatenate([x[1:], v, q[1:], w], axis=-1)
    return s.reshape(len(s), -1)


def pose_residual(x_pred, q_pred, x_rec, q_rec, rotation_weight: float) -> np.ndarray:
    """(nb, 6) per body [position error, rotation_weight * 2 vec(q_rec^* q_pred)]."""
    e = multiply(conjugate(q_rec), q_pred)
    e = e * np.where(e[..., :1] < 0.0, -1.0, 1.0)
    return np.concatenate([x_pred - x_rec, rotation_weight * 2.0 * e[..., 1:]], axis=-1)


def pose_residual_jacobian(q_pred, q_rec, rotation_weight: float) -> np.ndarray:
    """(nb, 6, 12) derivative of pose_residual in the tangent [x, v, phi, w] of the predicted
    state (docstring of the module)."""
    nb = len(q_pred)
    e = multiply(conjugate(q_rec), q_pred)
    e = e * np.where(e[..., :1] < 0.0, -1.0, 1.0)
    out = np.zeros((nb, 6, 12))
    out[:, 0:3, 0:3] = np.eye(3)
    for b in range(nb):
        out[b, 3:6, 6:9] = rotation_weight * 2.0 * (e[b, 0] * np.eye(3) + skew(e[b, 1:]))
    return out


@dataclass
class Parameters:
    """The fitted parameters: groups of tied labels, one value each.

    Attributes:
        names: (p,) a name per free parameter (its label, or the tie's name).
        groups: (p,) the labels each sets.
        lower, upper: (p,) bounds.
        initial: (p,) starting values.
    """

    names: list[str]
    groups: list[list[str]]
    lower: np.ndarray
    upper: np.ndarray
    initial: np.ndarray

    @property
    def labels(self) -> list[str]:
        return [label for g in self.groups for label in g]

    def expand(self, theta: np.ndarray) -> np.ndarray:
        """The value of every label (len(labels),) from the free values (p,)."""
        return np.concatenate([np.full(len(g), t) for g, t in zip(self.groups, theta)])

    def tie_matrix(self) -> np.ndarray:
        """(len(labels), p): d label values / d free values."""
        out = np.zeros((len(self.labels), len(self.groups)))
        row = 0
        for j, g in enumerate(self.groups):
            out[row:row + len(g), j] = 1.0
            row += len(g)
        return out


@dataclass
class Segment:
    """A piece of a recording the loss compares: the state at ``start`` (a frame >= 1) and the
    recorded poses of the ``steps`` frames after it."""

    recording: int
    start: int
    steps: int


@dataclass
class FitProblem:
    """Residuals and Jacobians of a loss over recordings.

    Attributes:
        mech: the scene's mechanism at the initial parameter values.
        parameters: what is fitted.
        recordings: the training recordings.
        loss: one_step or shooting.
        window: steps per shooting window (1 for one_step).
        rotation_weight: length that turns orientation errors (rad) into the residual's unit.
        opts: solver options of the steps.
        kappa: central-path value the gradients are taken at (None: where the solver stopped).
        fit_states: the segments' start states are fitted too (12 nb values each, offsets from
            the states the recorded poses give), and each start pose is compared with its
            frame: noisy poses then do not enter the states the steps start from (with
            ``shooting``; the one-step loss has one step per state and nothing to fit it by).
        workers: processes the segments are evaluated in (1: this one).
    """

    mech: Mechanism
    parameters: Parameters
    recordings: list[Recording]
    loss: str = "one_step"
    window: int = 1
    rotation_weight: float = 1.0
    opts: SolverOptions | None = None
    kappa: float | None = None
    fit_states: bool = False
    workers: int = 1
    segments: list[Segment] = field(default_factory=list)

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise ValueError(f"loss: expected one of {', '.join(LOSSES)}, got {self.loss!r}")
        if self.fit_states and self.loss != "shooting":
            raise ValueError("fit_states: with the shooting loss only")
        n = 1 if self.loss == "one_step" else int(self.window)
        self.window = n
        self._states = [states_from_poses(r.x, r.q, self.mech.timestep) for r in self.recordings]
        self.segments = []
        for i, r in enumerate(self.recordings):
            # state at frame s (from frames s-1, s), compared at frames s+1 .. s+n
            starts = range(1, r.frames - 1, n)
            self.segments += [Segment(i, s, min(n, r.frames - 1 - s)) for s in starts]
        self.kinds = tuple(k for k in _KIND_OF if any(label_kind(lb) == k for lb in self.parameters.labels))
        all_labels = parameter_labels(self.mech, self.kinds)
        index = {lb: i for i, lb in enumerate(all_labels)}
        self._columns = np.array([index[lb] for lb in self.parameters.labels], dtype=int)
        self._ties = self.parameters.tie_matrix()
        self._pool = None

    @property
    def state_size(self) -> int:
        """Free values of the segments' start states (12 nb each when ``fit_states``)."""
        return 12 * self.mech.nb * len(self.segments) if self.fit_states else 0

    @property
    def size(self) -> int:
        """Length of the vector ``evaluate`` takes: the parameters, then the start states."""
        return len(self.parameters.names) + self.state_size

    @property
    def residual_size(self) -> int:
        return sum(self._segment_size(seg) for seg in self.segments)

    def _segment_size(self, seg: "Segment") -> int:
        """A segment's residual rows: its compared poses (6 nb each), and with ``fit_states``
        its start pose and its start state's contacts (start_penetration)."""
        per = 6 * self.mech.nb
        return per * seg.steps + ((per + self.mech.nc) if self.fit_states else 0)

    def initial(self) -> np.ndarray:
        """The starting vector: the parameters' initial values and zero state offsets."""
        return np.concatenate([self.parameters.initial, np.zeros(self.state_size)])

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) of the vector: the parameters' bounds; the state offsets' orientation
        parts within |phi| < 1 (the retraction's domain) by a box of half width STATE_PHI_BOUND."""
        nb = self.mech.nb
        lo = np.full(self.state_size, -np.inf)
        hi = np.full(self.state_size, np.inf)
        for s in range(len(self.segments)):
            for b in range(nb):
                at = 12 * (nb * s + b) + 6
                lo[at:at + 3], hi[at:at + 3] = -STATE_PHI_BOUND, STATE_PHI_BOUND
        return np.concatenate([self.parameters.lower, lo]), np.concatenate([self.parameters.upper, hi])

    def segment_rows(self) -> list[slice]:
        """The residual rows of each segment (in order)."""
        out, row = [], 0
        for seg in self.segments:
            n = self._segment_size(seg)
            out.append(slice(row, row + n))
            row += n
        return out

    def mechanism(self, theta: np.ndarray) -> Mechanism:
        """The scene's mechanism with the free parameter values theta[:p]."""
        p = len(self.parameters.names)
        return with_parameters(self.mech, self.parameters.labels, self.parameters.expand(np.asarray(theta)[:p]))

    def evaluate(self, theta: np.ndarray, jacobian: bool = True):
        """Residuals (m,), their Jacobian (m, size) (a scipy CSR matrix when ``fit_states``,
        else dense) or None, and the number of steps that did not converge.

        theta: (size,) the parameters' values, then (fit_states) per segment and body the
        start state's offset [dx, dv, phi, dw] from the recorded one (retract_state).
        With ``workers`` > 1 the segments (independent given theta) are split over that many
        forked processes (``close`` ends them)."""
        theta = np.asarray(theta, dtype=float)
        if self.workers > 1 and len(self.segments) > 1:
            parts = self._pool_map(theta, jacobian)
        else:
            parts = [self.evaluate_segments(theta, jacobian, range(len(self.segments)))]
        pieces = [piece for part, _ in parts for piece in part]
        failed = sum(f for _, f in parts)
        res = np.concatenate([piece[0] for piece in pieces]) if pieces else np.zeros(0)
        if not jacobian:
            return res, None, failed
        p = len(self.parameters.names)
        if not self.fit_states:
            return res, np.concatenate([piece[1] for piece in pieces]) if pieces else np.zeros((0, p)), failed
        from scipy import sparse

        ns = 12 * self.mech.nb
        rows, cols, vals = [], [], []
        row = 0
        for index, (r, dense, state) in enumerate(pieces):
            r_idx = np.arange(row, row + len(r))
            for block, c0 in ((dense, 0), (state, p + ns * index)):
                rr, cc = np.nonzero(block)
                rows.append(r_idx[rr])
                cols.append(cc + c0)
                vals.append(block[rr, cc])
            row += len(r)
        jac = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                shape=(self.residual_size, self.size))
        return res, jac, failed

    def evaluate_segments(self, theta: np.ndarray, jacobian: bool, indices) -> tuple[list, int]:
        """Per segment in ``indices``: (residuals, parameter Jacobian block or None, start-state
        Jacobian block or None), and the steps that did not converge."""
        mech = self.mechanism(theta)
        nb, p = mech.nb, len(self.parameters.names)
        ns = 12 * nb
        out, failed = [], 0
        for index in indices:
            seg = self.segments[index]
            rec = self.recordings[seg.recording]
            z = self._states[seg.recording][seg.start - 1]
            n_rows = self._segment_size(seg)
            res = np.zeros(n_rows)
            dz = np.zeros((ns, p))
            ds = None
            row = 0
            seg_jac = np.zeros((n_rows, p)) if jacobian else None
            seg_state = np.zeros((n_rows, ns)) if jacobian and self.fit_states else None
            if self.fit_states:
                z, ds = retract_state(z, theta[p + ns * index:p + ns * (index + 1)], nb)
                zs = z.reshape(nb, 13)
                res[0:6 * nb] = pose_residual(zs[:, 0:3], zs[:, 6:10], rec.x[seg.start], rec.q[seg.start],
                                              self.rotation_weight).reshape(-1)
                if jacobian:
                    J = pose_residual_jacobian(zs[:, 6:10], rec.q[seg.start], self.rotation_weight)
                    seg_state[0:6 * nb] = _per_body(J, ds, nb)
                # the fitted start is a state of the rigid bodies: not inside a surface
                depth, d_state, d_param = start_penetration(mech, z, self.parameters.labels)
                tail = slice(n_rows - mech.nc, n_rows)
                res[tail] = depth
                if jacobian:
                    seg_state[tail] = d_state @ ds
                    seg_jac[tail] = d_param @ self._ties
                row = 6 * nb
            for k in range(seg.steps):
                need_state = k > 0 or self.fit_states
                if jacobian or self.kappa is not None:
                    # relaxed (kappa): the residuals are the relaxed step's too, so they and
                    # their Jacobian describe one smooth map
                    wrt = (("state", "params") if need_state else ("params",)) if jacobian else ()
                    g = step_gradients(mech, z, None, self.opts, wrt=wrt, params=self.kinds if jacobian else (),
                                       kappa=self.kappa)
                    z_next, status = g.next_state, g.result.status
                else:
                    z_next, result = solve_step(mech, z, None, self.opts)
                    status = result.status
                if status != SolverStatus.SUCCESS:
                    failed += 1
                zn = z_next.reshape(nb, 13)
                frame = seg.start + 1 + k
                res[row:row + 6 * nb] = pose_residual(zn[:, 0:3], zn[:, 6:10], rec.x[frame], rec.q[frame],
                                                      self.rotation_weight).reshape(-1)
                if jacobian:
                    dP = g.P[:, self._columns] @ self._ties
                    dz = (g.A @ dz if k else 0.0) + dP
                    J = pose_residual_jacobian(zn[:, 6:10], rec.q[frame], self.rotation_weight)
                    seg_jac[row:row + 6 * nb] = _per_body(J, dz, nb)
                    if self.fit_states:
                        ds = g.A @ ds
                        seg_state[row:row + 6 * nb] = _per_body(J, ds, nb)
                row += 6 * nb
                z = z_next
            out.append((res, seg_jac, seg_state))
        return out, failed

    def _pool_map(self, theta: np.ndarray, jacobian: bool) -> list:
        """evaluate_segments over ``workers`` forked processes, the segments split into
        contiguous chunks of about equal steps."""
        global _POOL_PROBLEM
        if self._pool is None:
            import multiprocessing

            _POOL_PROBLEM = self  # the forked workers inherit it (nothing is pickled but theta)
            self._pool = multiprocessing.get_context("fork").Pool(self.workers)
        steps = np.cumsum([seg.steps for seg in self.segments])
        bounds = np.searchsorted(steps, np.linspace(0, steps[-1], self.workers + 1)[1:-1])
        chunks = [list(c) for c in np.split(np.arange(len(self.segments)), bounds) if len(c)]
        try:
            return self._pool.map(_evaluate_chunk, [(theta, jacobian, c) for c in chunks])
        except BaseException:
            self.close()  # a Ctrl-C reaches the workers too: the pool is not reusable
            raise

    def close(self) -> None:
        """End the worker processes (workers > 1)."""
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


# The problem forked workers evaluate (set before the pool is made; see FitProblem._pool_map).
_POOL_PROBLEM: FitProblem | None = None


def _evaluate_chunk(args) -> tuple[list, int]:
    theta, jacobian, indices = args
    return _POOL_PROBLEM.evaluate_segments(theta, jacobian, indices)


def start_penetration(mech: Mechanism, z: np.ndarray, labels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A fitted start state's contacts inside their surfaces, as residuals: min(0, d_c) per
    contact (m, the pose residuals' unit), (nc,); their Jacobian in the state's tangent
    coordinates [x, v, phi, w] per body (nc, 12 nb); and in the fit's parameter labels (nc,
    len(labels)): a contact's offset and radius move its distance.

    The recorded motion never starts inside (a rigid body does not), but a noisy recorded
    pose can, and the fitted start then may: a step from inside brings the contact out over
    the recovery's time constant (docs/physics.md, "Contacts that start inside"), a motion the
    recording does not have, and the fit bent the contacts' offsets to explain it (1 mm of
    noise: a corner's offset 0.64 for 0.93, 5.4 of its standard errors). These rows keep the
    fitted starts outside, as the recorded bodies were, and are zero wherever they are."""
    nb, nc = mech.nb, mech.nc
    depth = np.zeros(nc)
    d_state = np.zeros((nc, 12 * nb))
    d_param = np.zeros((nc, len(labels)))
    column = {lb: j for j, lb in enumerate(labels)}
    for i, c in enumerate(mech.contacts):
        distance, state, geometry = sdf_jacobian(mech, c, z)
        if distance >= 0.0:
            continue
        depth[i], d_state[i] = distance, state
        for k, part in enumerate(("offset.x", "offset.y", "offset.z", "radius")):
            j = column.get(f"contacts.{c.name}.{part}")
            if j is not None:
                d_param[i, j] = geometry[k]
    return depth, d_state, d_param


def _per_body(J: np.ndarray, dz: np.ndarray, nb: int) -> np.ndarray:
    """(6 nb, c) rows of the pose residuals from their (nb, 6, 12) Jacobians and a state
    derivative dz (12 nb, c)."""
    return np.concatenate([J[b] @ dz[12 * b:12 * b + 12] for b in range(nb)])


def retract_state(z: np.ndarray, offset: np.ndarray, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """The state z (13 nb,) moved by a tangent offset (12 nb,) per body [dx, dv, phi, dw]:
    x + dx, v + dv, q [sqrt(1 - |phi|^2), phi], w + dw; and d(result)/d(offset) (12 nb, 12 nb)
    in the tangent coordinates at the result: identity but for the attitude block
    M = c I + phi phi^T / c - [phi]x, c = sqrt(1 - |phi|^2) (the vector part of
    p(phi)^* p(phi + dphi), p(phi) = [c, phi])."""
    out = np.array(z, dtype=float).reshape(nb, 13)
    d = np.asarray(offset, dtype=float).reshape(nb, 12)
    D = np.eye(12 * nb)
    for b in range(nb):
        phi = d[b, 6:9]
        c = float(np.sqrt(max(1.0 - phi @ phi, 0.0)))
        out[b, 0:3] += d[b, 0:3]
        out[b, 3:6] += d[b, 3:6]
        out[b, 6:10] = multiply(out[b, 6:10], np.concatenate([[c], phi]))
        out[b, 10:13] += d[b, 9:12]
        D[12 * b + 6:12 * b + 9, 12 * b + 6:12 * b + 9] = c * np.eye(3) + np.outer(phi, phi) / c - skew(phi)
    return out.reshape(-1), D


def initial_parameter_values(mech: Mechanism, groups: list[list[str]]) -> np.ndarray:
    """Each group's current value in the scene (the mean when tied labels differ)."""
    return np.array([float(np.mean(parameter_values(mech, g))) for g in groups])
