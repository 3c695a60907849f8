"""skydy's symbolic side (docs/analysis.md "Symbolic equations"): a small scene's equations of
motion, its equilibria and the linearisation about each, as sympy expressions in the scene's
named parameters.

``derive(mech)`` returns ``SymbolicEquations``:

    M(q) v' + C(q, v) + G(q) = tau_passive(q, v) + B(q) u,    q' = E(q) v

in the scene's minimal coordinates (dojo_cli.minimal: q the joints' coordinates, v the
minimal model's velocities, u the scene's inputs), with the joint coordinates and velocities
as symbols named as ``dojo analyze`` names them (``pole_joint``, ``pole_joint:dot``,
``plane:vx``) and every non-zero physical parameter a symbol named by its label (the labels
of dojo_cli.model.parameters where there is one): ``bodies.pole.mass``,
``bodies.pole.inertia.yy`` (about the centre of mass, body frame), ``gravity.z``,
``joints.hinge.parent_vertex.z`` and ``joints.hinge.child_vertex.z`` (the scene's joint
points, so the lengths), ``joints.hinge.spring.0``, ``joints.hinge.damper.0``,
``joints.hinge.spring_offset.0``, ``joints.hinge.armature.0``. A parameter that is zero in
the scene is the number 0 (a structural zero: a centre of mass on the axis, no spring).
Joint axes, orientation offsets and actuator directions, points and gains are numbers (the
scene's, exact where they are simple: 0, +-1, sqrt(2)/2), not symbols: they define the
structure, not a physical constant.

The derivation is Kane's method (Kane and Levinson, Dynamics: Theory and Applications,
1985, ch. 6) on the structure the minimal model compiled for the core (MinimalModel.joints:
parent, predecessor placement, translation directions, revolute axis): per body, the centre
of mass c(q) and the body angular velocity w = W(q) v give the partial velocities
V = dc/dq E(q) and W, and

    M = sum_b m V^T V + W^T I W,
    C = sum_b m V^T (d(V v)/dq E v) + W^T (I d(W v)/dq E v + w x I w),
    G = -sum_b m V^T g,

tau_passive = E^T (-k (q - q0) - c E v) (Dojo's spring and damper on each free coordinate,
minimal.passive_forces), and B the scene's input map (minimal.B_func: a joint input's
E_t^T or 1, a body actuator's V_P^T R f + W^T t). Joints with at most one rotation
(revolute angles and translations: revolute, prismatic, planar, planar_axis, cylindrical,
skydy's `dofs` subsets with one rotation) are derived; quaternion and swing joints
(spherical, floating, orbital) are refused, as are scenes with more than
MAX_SYMBOLIC_COORDINATES coordinates (the expressions grow past reading, and sympy's time
with them).

The numbers come from the C++ core, not from these expressions: ``check`` evaluates them at
the scene's values and compares them with the core's M, C, passive forces and B (minimal)
and with ``dojo analyze``'s linearisation (analysis.linearize) at the equilibria.

Equilibria (v = 0, u = 0: G(q) = tau_passive(q, 0)) are the core's (analysis.equilibria:
Newton and multistart); each coordinate is then recognised as an exact value (a rational
multiple of pi, or a spring offset symbol) when the equations vanish identically there, in
every parameter; otherwise it stays the core's number and the equilibrium says so
(``exact`` False). The linearisation about an equilibrium, in dojo analyze's error
coordinates [dq; dv] (minimal.state_error), is A = [[0, I], [-M^-1 dbias/dq E, -M^-1
dbias/dv]], B = [[0], [M^-1 B]] with bias = C + G - tau_passive (bias = 0 and u = 0 there,
so M's derivative drops out).

sympy is an optional dependency (the ``symbolic`` extra); this module imports it, nothing
else in dojo_cli does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dojo_cli.errors import InputError

try:
    import sympy as sp
except ImportError:  # pragma: no cover - the message below is the user's
    sp = None

# More minimal coordinates than this are refused: the double pendulum's M has a dozen terms,
# a 5-link chain's entries hundreds, and sympy's simplification time grows with them.
MAX_SYMBOLIC_COORDINATES = 4
# The check's tolerance on |symbolic - core| relative to max(1, |core|): both are the same
# formulas in double precision, so they agree to rounding (measured 1e-15); the brief's 1e-9.
CHECK_TOL = 1e-9
# An equilibrium coordinate within this of a simple multiple of pi is a candidate for that
# exact value (then kept only if the equations vanish there identically): the core's Newton
# converges to 1e-11.
EXACT_TOL = 1e-9
# A structural number (axis, rotation entry) is written exactly (0, 1, sqrt(2)/2) when the
# exact value rounds to it within STRUCTURAL_ULPS units in the last place: the scene's unit
# vectors and the builder's rotations are exact to rounding; otherwise it stays a Float.
STRUCTURAL_ULPS = 4
# The longest exact form accepted (longer nsimplify results are rational approximations of
# a generic number, not an exact value: "1234/5677").
EXACT_FORM_CHARS = 12
# Explicit A = [[0, I], [-M^-1 K, -M^-1 D]] up to this many free coordinates; past it the
# blocks (M, K, D, B at the equilibrium) are given: a 4x4 adjugate's entries run to hundreds
# of terms, unreadable, and sympy needs about 20 s per equilibrium to factor them.
EXPLICIT_INVERSE_MAX = 3
# Significant digits of a numeric equilibrium coordinate in the text (the JSON keeps 17).
DISPLAY_DIGITS = 12
# States of the check: the initial state and these many seeded random ones.
CHECK_STATES = 3


def _require_sympy():
    if sp is None:
        raise InputError("the symbolic analysis needs sympy: pip install 'dojo_cli[symbolic]'")


@dataclass
class SymbolicEquilibrium:
    """An equilibrium (v = 0, u = 0) and the linearisation about it.

    Attributes:
        q: (nq,) its coordinates: exact expressions, or the core's numbers (``exact`` False);
            a ``free`` coordinate stays its own symbol (any value).
        exact: the equations vanish identically (in every parameter) at ``q``.
        free: coordinates the dynamics do not depend on (the cart's x): any value.
        x: (nx,) the core's equilibrium (free coordinates at the initial pose).
        lin: the linearisation about it (``linearization``): blocks M, K, D, B_tau at the
            point and A, B (None past EXPLICIT_INVERSE_MAX).
    """

    q: list
    exact: bool
    free: list[str]
    x: np.ndarray
    lin: dict


@dataclass
class SymbolicEquations:
    """M(q) v' + C(q, v) + G(q) = tau_passive(q, v) + B(q) u and q' = E(q) v (module doc).

    Attributes:
        scene_name: for messages and titles.
        q, v, u: the coordinate, velocity and input symbols (nq, nv, nu).
        parameters: label -> symbol, every parameter the expressions may contain.
        values: symbol -> the scene's value.
        M, C, G, tau_passive, B, E: sympy matrices (nv, nv), (nv, 1) x3, (nv, nu), (nq, nv).
        free_v: (nf,) the velocity indices not held by a locked joint (all without locks).
        state_names: dojo analyze's error-state names [dq_f; dv_f].
        equilibria: filled by ``equilibria``.
    """

    scene_name: str
    q: list
    v: list
    u: list
    parameters: dict
    values: dict
    M: object
    C: object
    G: object
    tau_passive: object
    B: object
    E: object
    free_v: np.ndarray
    state_names: list[str]
    model: object = None
    equilibria: list[SymbolicEquilibrium] = field(default_factory=list)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def bias(self):
        """(nv, 1) C + G - tau_passive (dojo analyze's bias)."""
        return self.C + self.G - self.tau_passive

    def bias_jacobians(self):
        """(K, D): d bias/dq E (nv, nv) and d bias/dv (nv, nv), the error-coordinate
        derivatives of the bias (cached)."""
        if "jac" not in self._cache:
            qv, vv = sp.Matrix(self.q), sp.Matrix(self.v)
            self._cache["jac"] = (self.bias.jacobian(qv) * self.E, self.bias.jacobian(vv))
        return self._cache["jac"]

    def numeric(self, which: str = "dynamics"):
        """A numpy function of x (nx,) at the scene's values (lambdified once, cached):
        ``dynamics`` -> (M, C, G, tau_passive, B, E); ``linearization`` -> (M, K, D, B)."""
        if which not in self._cache:
            mats = [self.M, self.C, self.G, self.tau_passive, self.B, self.E] if which == "dynamics" \
                else [self.M, *self.bias_jacobians(), self.B]
            params = list(self.values)
            fn = sp.lambdify([self.q, self.v, params], mats, modules="numpy")
            values = [self.values[p] for p in params]
            nq = len(self.q)
            shapes = [m.shape for m in mats]

            def evaluate(x, fn=fn, values=values, nq=nq, shapes=shapes):
                x = np.asarray(x, dtype=float).reshape(-1)
                out = fn(list(x[:nq]), list(x[nq:]), values)
                return [np.asarray(o, dtype=float).reshape(sh) for o, sh in zip(out, shapes)]

            self._cache[which] = evaluate
        return self._cache[which]

    def used_parameters(self) -> list[str]:
        """The labels of the parameters the equations contain, in label order."""
        syms = set()
        for mat in (self.M, self.C, self.G, self.tau_passive, self.B):
            syms |= mat.free_symbols
        return [label for label, s in self.parameters.items() if s in syms]

    def _numbers(self, values: dict | None) -> dict:
        out = dict(self.values)
        for label, value in (values or {}).items():
            out[self.parameters[label]] = float(value)
        return out


# ----------------------------------------------------------------- derivation
def _exact(value: float):
    """A structural number (axis, rotation entry) as an exact sympy number when it is one."""
    value = float(value)
    if value == 0.0:
        return sp.Integer(0)
    guess = sp.nsimplify(value, [sp.sqrt(2), sp.sqrt(3)], rational=False)
    if abs(float(guess) - value) <= STRUCTURAL_ULPS * np.finfo(float).eps * max(1.0, abs(value)) \
            and len(str(guess)) <= EXACT_FORM_CHARS:
        return guess
    return sp.Float(value, 17)


def _exact_matrix(arr) -> object:
    arr = np.atleast_2d(np.asarray(arr, dtype=float))
    return sp.Matrix(arr.shape[0], arr.shape[1], [_exact(v) for v in arr.reshape(-1)])


def _rotation(axis, angle):
    """R = exp([axis]x angle) for a unit axis (Rodrigues)."""
    a = sp.Matrix(axis)
    K = sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return sp.eye(3) + sp.sin(angle) * K + (1 - sp.cos(angle)) * K * K


def _cross(a, b):
    return sp.Matrix([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


class _Parameters:
    """Labels -> symbols, a zero value the number 0 (module doc)."""

    def __init__(self):
        self.symbols: dict[str, object] = {}
        self.values: dict[object, float] = {}

    def __call__(self, label: str, value: float):
        value = float(value)
        if value == 0.0:
            return sp.Integer(0)
        s = self.symbols.get(label)
        if s is None:
            s = self.symbols[label] = sp.Symbol(label, real=True)
            self.values[s] = value
        return s

    def vector(self, prefix: str, values) -> object:
        return sp.Matrix([self(f"{prefix}.{c}", v) for c, v in zip("xyz", np.asarray(values, dtype=float))])


def _refuse(mech, model, scene_name: str) -> None:
    from dojo_cli.minimal.model import ROT_NONE, ROT_REVOLUTE

    if mech.nc:
        names = ", ".join(str(getattr(c, "name", "") or f"#{i}") for i, c in enumerate(mech.contacts))
        raise InputError(f"{scene_name}: has contacts ({names}); the symbolic analysis takes joint-only scenes "
                         "(remove them, e.g. --set contacts=[])")
    if model.loop_joints:
        raise InputError(f"{scene_name}: loop-closing joints ({', '.join(model.loop_joints)}); the symbolic analysis "
                         "takes kinematic trees")
    bad = [f"{tj.name} ({tj.type.value})" for tj in model.joints if tj.rot not in (ROT_NONE, ROT_REVOLUTE)]
    if bad:
        raise InputError(f"{scene_name}: joints with more than one rotation ({', '.join(bad)}); the symbolic analysis "
                         "takes translations and revolute angles only (use the numeric dojo analyze)")
    if model.nq > MAX_SYMBOLIC_COORDINATES:
        raise InputError(f"{scene_name}: {model.nq} minimal coordinates; the symbolic analysis takes at most "
                         f"{MAX_SYMBOLIC_COORDINATES} (MAX_SYMBOLIC_COORDINATES; use the numeric dojo analyze)")


def derive(mech, scene_name: str | None = None, simplify: bool = True) -> SymbolicEquations:
    """The symbolic equations of motion of a joint-only scene (module doc).

    Args:
        mech: the scene's mechanism (``dojo.load_scene``).
        scene_name: for messages (default the mechanism's name).
        simplify: trigonometric simplification of every entry (off: faster, longer).

    Raises:
        InputError: sympy is missing; the scene has contacts, loop-closing joints, a joint
            with more than one rotation, or more than MAX_SYMBOLIC_COORDINATES coordinates.
    """
    _require_sympy()
    from dojo_cli import minimal
    from dojo_cli.analysis.analyze import free_indices, state_names, velocity_state_names
    from dojo_cli.minimal.model import ROT_REVOLUTE

    scene_name = scene_name or mech.name
    model = minimal.build_model(mech)
    _refuse(mech, model, scene_name)
    nq, nv = model.nq, model.nv
    q = [sp.Symbol(n, real=True) for n in model.config_names]
    v = [sp.Symbol(n, real=True) for n in velocity_state_names(model)]
    names = mech.input_names()
    u = [sp.Symbol(n, real=True) for n in names]
    qv, vv = sp.Matrix(q), sp.Matrix(v)
    par = _Parameters()

    gravity = par.vector("gravity", mech.gravity)
    E = sp.zeros(nq, nv)
    frames = {}  # tree joint k -> (R, p, w_body) of its successor frame (world R, p; body-frame w)
    bodies = []  # (m, I (3x3), c world, w body, R, tree joint)
    for k, tj in enumerate(model.joints):
        joint = mech.joints[tj.index]
        if tj.parent < 0:
            Rl, pl, wl = sp.eye(3), sp.zeros(3, 1), sp.zeros(3, 1)
            shift = sp.zeros(3, 1)
        else:
            Rl, pl, wl = frames[tj.parent]
            parent_joint = mech.joints[model.joints[tj.parent].index]
            shift = -par.vector(f"joints.{parent_joint.name}.child_vertex", parent_joint.child_vertex)
        place_R = _exact_matrix(tj.placement_rotation)
        place_t = shift + par.vector(f"joints.{joint.name}.parent_vertex", joint.parent_vertex)
        nt = tj.n_trans
        qj = qv[tj.q.start: tj.q.stop, :]
        vj = vv[tj.v.start: tj.v.stop, :]
        D = _exact_matrix(tj.directions) if nt else sp.zeros(0, 3)
        if tj.rot == ROT_REVOLUTE:
            axis = _exact_matrix(tj.axis.reshape(3, 1))
            RJ = _rotation(axis, qj[nt])
            w_rel = axis * vj[nt]
            E[tj.q.start + nt, tj.v.start + nt] = 1
        else:
            RJ, w_rel = sp.eye(3), sp.zeros(3, 1)
        p_j = D.T * qj[:nt, :] if nt else sp.zeros(3, 1)
        if nt:
            # q_t' = D R_J D^T v_t unless measured in the predecessor frame (MinimalModel doc)
            Et = sp.eye(nt) if (tj.trans_pred or tj.rot != ROT_REVOLUTE) else D * RJ * D.T
            E[tj.q.start: tj.q.start + nt, tj.v.start: tj.v.start + nt] = Et
        R_p = Rl * place_R
        p_p = pl + Rl * place_t
        R = R_p * RJ
        p = p_p + R_p * p_j
        w = RJ.T * (place_R.T * wl) + w_rel
        frames[k] = (R, p, w)
        b = tj.body
        name = mech.bodies[b].name
        m = par(f"bodies.{name}.mass", mech.mass[b])
        inertia = np.asarray(mech.inertia[b], dtype=float)
        I = sp.zeros(3, 3)
        for comp, (r, c) in {"xx": (0, 0), "yy": (1, 1), "zz": (2, 2), "xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}.items():
            I[r, c] = I[c, r] = par(f"bodies.{name}.inertia.{comp}", inertia[r, c])
        com = -par.vector(f"joints.{joint.name}.child_vertex", joint.child_vertex)
        c = p + R * com
        bodies.append((m, I, c, w, R, k))

    def partial(vec):
        """(3, nv) d vec'/dv of a position vec(q): its Jacobian times E."""
        return vec.jacobian(qv) * E

    def rate(expr):
        """d expr / dt along q' = E v at fixed v (the part of the acceleration without v')."""
        return expr.jacobian(qv) * (E * vv)

    M = sp.zeros(nv, nv)
    C = sp.zeros(nv, 1)
    G = sp.zeros(nv, 1)
    for m, I, c, w, _, _ in bodies:
        V = partial(c)
        W = w.jacobian(vv)
        M += m * V.T * V + W.T * I * W
        C += m * V.T * rate(V * vv) + W.T * (I * rate(w) + _cross(w, I * w))
        G -= m * V.T * gravity

    # springs, dampers, rotor inertia per free coordinate (MinimalModel: a tree joint's free
    # coordinates are its velocities, translations then rotation)
    tau = sp.zeros(nv, 1)
    for tj in model.joints:
        joint = mech.joints[tj.index]
        cols = mech.joint_free_range[tj.index]
        Ej = E[tj.q.start: tj.q.stop, tj.v.start: tj.v.stop]
        qj = qv[tj.q.start: tj.q.stop, :]
        rates = Ej * vv[tj.v.start: tj.v.stop, :]
        force = sp.zeros(tj.q.stop - tj.q.start, 1)
        for i, col in enumerate(range(cols.start, cols.stop)):
            k_ = par(f"joints.{joint.name}.spring.{i}", mech.spring[col])
            q0 = par(f"joints.{joint.name}.spring_offset.{i}", mech.spring_offset[col])
            d_ = par(f"joints.{joint.name}.damper.{i}", mech.damper[col])
            force[i] = -k_ * (qj[i] - q0) - d_ * rates[i]
            if getattr(mech, "has_armature", False) and mech.armature[col] != 0:
                M[tj.v.start + i, tj.v.start + i] += par(f"joints.{joint.name}.armature.{i}", mech.armature[col])
        tau[tj.v.start: tj.v.stop, 0] = Ej.T * force

    B = _input_map(mech, model, E, bodies, qv, vv)

    if simplify:
        angles = [qv[tj.q.start + tj.n_trans] for tj in model.joints if tj.rot == ROT_REVOLUTE]
        M, C, G, tau, B, E = (_simplify(X, angles) for X in (M, C, G, tau, B, E))
    free = free_indices(model)
    eqs = SymbolicEquations(scene_name, q, v, u, par.symbols, par.values, M, C, G, tau, B, E,
                            free, state_names(model), model=model)
    return eqs


def _input_map(mech, model, E, bodies, qv, vv):
    """(nv, nu) B: the joint inputs' block (E_t^T, 1) times the scene's input map, and each
    body actuator's column gain (V_P^T R f + W^T t) (minimal.B_func)."""
    from dojo_cli.minimal.model import ROT_REVOLUTE

    nv = model.nv
    Bj = sp.zeros(nv, mech.nf)
    driven = {int(mech.free_joint[f]) for f in mech.actuator_free if f >= 0}
    for tj in model.joints:
        cols = mech.joint_free_range[tj.index]
        if cols.stop == cols.start or tj.index not in driven:
            continue
        nt, r0, c0 = tj.n_trans, tj.v.start, cols.start
        if nt:
            Bj[r0: r0 + nt, c0: c0 + nt] = E[tj.q.start: tj.q.start + nt, tj.v.start: tj.v.start + nt].T
        if tj.rot == ROT_REVOLUTE:
            Bj[r0 + nt, c0 + nt] = 1
    B = Bj * _exact_matrix(mech.input_map()) if mech.nf and mech.nu else sp.zeros(nv, mech.nu)
    body_frames = {k: (c, w, R) for _, _, c, w, R, k in bodies}
    joint_of_body = {tj.body: k for k, tj in enumerate(model.joints)}
    for a, act in enumerate(mech.actuators):
        if act.body < 0:
            continue
        k = joint_of_body.get(act.body)
        if k is None:
            raise InputError(f"actuator {act.name!r}: body {mech.bodies[act.body].name!r} is not in the tree")
        c, w, R = body_frames[k]
        col = sp.zeros(nv, 1)
        if act.force is not None:  # at the point c + R p, along R f (body frame)
            point = c + R * _exact_matrix(np.asarray(act.point, dtype=float).reshape(3, 1))
            col += (point.jacobian(qv) * E).T * (R * _exact_matrix(np.asarray(act.force, float).reshape(3, 1)))
        if act.torque is not None:  # body-frame torque on the body angular velocity w = W v
            col += w.jacobian(vv).T * _exact_matrix(np.asarray(act.torque, float).reshape(3, 1))
        B[:, a] = _exact(act.gain) * col
    return B


def _simplify(X, angles=()):
    """Every entry in a canonical form: a polynomial in the sines and cosines of the revolute
    angles (each joint's rotation is its own Rodrigues matrix, so no sums of angles appear)
    reduced modulo cos^2 = 1 - sin^2, so that sin^2 + cos^2 = 1 cancels. Polynomial
    remainders take milliseconds where sympy's trigsimp took 90 s on a 4-coordinate chain."""
    sines = [sp.Dummy(f"s{i}") for i in range(len(angles))]
    cosines = [sp.Dummy(f"c{i}") for i in range(len(angles))]
    to_poly = {}
    for a, s_, c_ in zip(angles, sines, cosines):
        to_poly[sp.sin(a)] = s_
        to_poly[sp.cos(a)] = c_
    back = {v: k for k, v in to_poly.items()}

    def one(e):
        if e == 0:
            return e
        e = sp.expand(e.xreplace(to_poly))
        for s_, c_ in zip(sines, cosines):
            if e.has(c_):
                e = sp.expand(sp.rem(e, c_**2 + s_**2 - 1, c_)) if sp.degree(e, c_) > 1 else e
        e = sp.factor_terms(e.xreplace(back))
        return e

    return X.applyfunc(one)


# ----------------------------------------------------------------- equilibria
def _candidate(value: float):
    """An equilibrium coordinate as an exact number when it is a simple multiple of pi."""
    guess = sp.nsimplify(float(value), [sp.pi], tolerance=EXACT_TOL, rational=False)
    return guess if len(str(guess)) <= EXACT_FORM_CHARS else None


def _is_zero(expr) -> bool:
    """Identically zero: at exact angles the sines and cosines are numbers, so what is left
    is a polynomial in the parameters, zero when its expansion is."""
    return sp.expand(expr) == 0


def linearization(eqs: SymbolicEquations, q_star: dict, values: bool = False) -> dict:
    """The linearisation about the equilibrium q_star (symbol -> expression; v = 0, u = 0)
    in dojo analyze's error coordinates over the free velocities (module doc): the blocks at
    the point, ``M`` (nf, nf), ``K`` = d bias/dq E, ``D`` = d bias/dv (nf, nf), ``B_tau``
    (nf, nu), and ``A`` (2 nf, 2 nf), ``B`` (2 nf, nu) as explicit expressions when nf <=
    EXPLICIT_INVERSE_MAX (else None: A = [[0, I], [-M^-1 K, -M^-1 D]], B = [[0], [M^-1 B_tau]]).
    With ``values``, all at the scene's parameter values, as numbers."""
    subs = dict(q_star)
    subs.update({s: 0 for s in eqs.v})
    free = list(eqs.free_v)
    nf = len(free)
    cols = list(range(len(eqs.u)))
    if values:  # numbers: the same formulas lambdified, solved in double precision
        x = np.array([float(subs.get(s, 0.0)) for s in eqs.q] + [0.0] * len(eqs.v))
        Mv, Kv, Dv, Bv = eqs.numeric("linearization")(x)
        blocks = {"M": Mv[np.ix_(free, free)], "K": Kv[np.ix_(free, free)], "D": Dv[np.ix_(free, free)],
                  "B_tau": Bv[free].reshape(nf, -1)}
        A, B = _first_order(blocks)
        return {**{k: sp.Matrix(v) for k, v in blocks.items()}, "A": sp.Matrix(A), "B": sp.Matrix(B)}
    K_sym, D_sym = eqs.bias_jacobians()
    blocks = {"M": eqs.M.subs(subs).extract(free, free), "K": K_sym.subs(subs).extract(free, free),
              "D": D_sym.subs(subs).extract(free, free), "B_tau": eqs.B.subs(subs).extract(free, cols)}
    blocks = {k: v.applyfunc(sp.factor_terms) for k, v in blocks.items()}
    if nf > EXPLICIT_INVERSE_MAX:
        return {**blocks, "A": None, "B": None}
    # M^-1 = adj(M) / det(M): one common denominator, each numerator factored (factors the
    # two share cancel as the product is formed)
    Mf = blocks["M"]
    det = sp.factor(Mf.det(method="berkowitz"))
    adj = Mf.adjugate(method="berkowitz")

    def solved(rhs):
        return (adj * rhs).applyfunc(lambda e: sp.factor(sp.expand(e)) / det)

    A = sp.zeros(2 * nf, 2 * nf)
    A[:nf, nf:] = sp.eye(nf)
    A[nf:, :nf] = solved(-blocks["K"])
    A[nf:, nf:] = solved(-blocks["D"])
    B = sp.zeros(2 * nf, len(cols))
    B[nf:, :] = solved(blocks["B_tau"])
    return {**blocks, "A": A, "B": B}


def _first_order(blocks: dict) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) numbers from numeric blocks M, K, D, B_tau (linearization's doc)."""
    M, K, D, Bt = (np.asarray(blocks[k], dtype=float) for k in ("M", "K", "D", "B_tau"))
    nf = M.shape[0]
    Bt = Bt.reshape(nf, -1)
    sol = np.linalg.solve(M, np.hstack([-K, -D, Bt])) if nf else np.zeros((0, 2 * nf + Bt.shape[1]))
    A = np.zeros((2 * nf, 2 * nf))
    A[:nf, nf:] = np.eye(nf)
    A[nf:, :] = sol[:, : 2 * nf]
    B = np.zeros((2 * nf, Bt.shape[1]))
    B[nf:, :] = sol[:, 2 * nf:]
    return A, B


def equilibria(eqs: SymbolicEquations, starts: int | None = None, seed: int = 0) -> list[SymbolicEquilibrium]:
    """The scene's unforced equilibria (the core's, analysis.equilibria), each recognised as
    exact where it is, with the linearisation about it (module doc)."""
    from dojo_cli import analysis

    model = eqs.model
    residual = (eqs.G - eqs.tau_passive).subs({s: 0 for s in eqs.v})
    rows = list(eqs.free_v)
    out = []
    for e in analysis.equilibria(model, starts=starts, seed=seed):
        q_num = e.x[: model.nq]
        subs, exact = {}, True
        for k, (s, name, val) in enumerate(zip(eqs.q, model.config_names, q_num)):
            if name in e.free or model.locked_q[k]:
                continue  # any value / held where the state has it: the symbol stays
            guess = _candidate(val)
            if guess is None:
                exact = False
                break
            subs[s] = guess
        if exact:
            exact = all(_is_zero(residual[r].subs(subs)) for r in rows)
        if not exact:
            # no closed form: q* is the core's number, an equilibrium at the scene's values only,
            # so the linearisation is given there too (as numbers), not in the parameters
            subs = {s: sp.Float(float(val), 17) for s, val in zip(eqs.q, q_num)}
        lin = linearization(eqs, subs, values=not exact)
        out.append(SymbolicEquilibrium([subs.get(s, s) for s in eqs.q], exact, list(e.free), e.x.copy(), lin))
    eqs.equilibria = out
    return out


def evaluate(eqs: SymbolicEquations, mat, x, values: dict | None = None) -> np.ndarray:
    """A symbolic matrix (or expression) at state x (nx,) and the scene's parameter values
    (``values``: label -> value overrides some)."""
    numbers = eqs._numbers(values)
    x = np.asarray(x, dtype=float).reshape(-1)
    nq = len(eqs.q)
    numbers.update({s: float(v) for s, v in zip(eqs.q, x[:nq])})
    numbers.update({s: float(v) for s, v in zip(eqs.v, x[nq:])})
    mat = sp.Matrix(mat) if not isinstance(mat, sp.MatrixBase) else mat
    syms = sorted(mat.free_symbols, key=str)
    fn = sp.lambdify([syms], mat, modules="numpy")
    return np.asarray(fn([numbers[s] for s in syms]), dtype=float).reshape(mat.shape)


def first_order(eqs: SymbolicEquations, e: SymbolicEquilibrium, values: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of an equilibrium as numbers at the scene's values: its explicit expressions
    evaluated, or (past EXPLICIT_INVERSE_MAX) its symbolic blocks evaluated and solved."""
    if e.lin["A"] is not None:
        return evaluate(eqs, e.lin["A"], e.x, values), evaluate(eqs, e.lin["B"], e.x, values)
    return _first_order({k: evaluate(eqs, e.lin[k], e.x, values) for k in ("M", "K", "D", "B_tau")})


# ----------------------------------------------------------------- check
def check(eqs: SymbolicEquations, seed: int = 0, states: int = CHECK_STATES) -> dict:
    """The expressions at the scene's values against the core (module doc): the largest
    difference, relative to max(1, |core|), of M, C + G (minimal.C_func), tau_passive
    (minimal.passive_forces), B (minimal.B_func) and E at the initial state and ``states``
    seeded random ones, and of A, B at each equilibrium against analysis.linearize.

    Returns:
        {"dynamics": max difference, "states": count, "linearization": max difference or
        None, "equilibria": count, "tolerance": CHECK_TOL, "ok": both within it}.
    """
    from dojo_cli import analysis, minimal

    model = eqs.model
    rng = np.random.default_rng(seed)
    x0 = minimal.init_state(model)
    xs = [x0] + [x0 + rng.uniform(-1.0, 1.0, model.nx) for _ in range(states)]
    f = eqs.numeric("dynamics")
    worst = 0.0
    for x in xs:
        Mv, Cv, Gv, Tv, Bv, Ev = f(x)
        worst = max(worst, relative_difference(Mv, minimal.M_func(model, x)),
                    relative_difference(Cv + Gv, minimal.C_func(model, x)),
                    relative_difference(Tv, minimal.passive_forces(model, x)),
                    relative_difference(Ev, minimal.velocity_kinematics(model, x)))
        if model.nu:
            worst = max(worst, relative_difference(Bv, minimal.B_func(model, x)))
    lin_worst = None
    for e in eqs.equilibria:
        lin = analysis.linearize(model, e.x, accessibility=False)
        A, B = first_order(eqs, e)
        d = max(relative_difference(A, lin.A), relative_difference(B, lin.B))
        lin_worst = d if lin_worst is None else max(lin_worst, d)
    ok = worst <= CHECK_TOL and (lin_worst is None or lin_worst <= CHECK_TOL)
    return {"dynamics": worst, "states": len(xs), "linearization": lin_worst, "equilibria": len(eqs.equilibria),
            "tolerance": CHECK_TOL, "ok": ok}


def relative_difference(sym, core) -> float:
    """max |sym - core| / max(1, max |core|) (0 for empty arrays)."""
    core = np.asarray(core, dtype=float)
    if core.size == 0:
        return 0.0
    return float(np.max(np.abs(np.asarray(sym, dtype=float).reshape(core.shape) - core)) / max(1.0, float(np.max(np.abs(core)))))


# ----------------------------------------------------------------- output
def _entries(name: str, mat, rows: list[str], cols: list[str] | None, symmetric: bool = False) -> list[str]:
    out = []
    for i in range(mat.shape[0]):
        for j in range(mat.shape[1]):
            if symmetric and j < i:
                continue
            e = mat[i, j]
            if e == 0:
                continue
            where = rows[i] if cols is None else f"{rows[i]}, {cols[j]}"
            out.append(f"{name}[{where}] = {sp.sstr(e)}")
    return out


def _value_text(value, exact: bool) -> str:
    """An equilibrium coordinate: its exact form, or the core's number to DISPLAY_DIGITS."""
    if exact or not value.is_Number:
        return sp.sstr(value)
    return f"{float(value):.{DISPLAY_DIGITS}g}"


def text_lines(eqs: SymbolicEquations, checked: dict | None = None) -> list[str]:
    """The equations, the equilibria and their linearisations, readable (sympy's str of each
    non-zero entry, labelled by coordinate names)."""
    vn = [str(s) for s in eqs.v]
    qn = [str(s) for s in eqs.q]
    un = [str(s) for s in eqs.u]
    lines = [
        "M(q) v' + C(q, v) + G(q) = tau_passive(q, v) + B(q) u,  q' = E(q) v  (entries not listed are 0)",
        f"  q = ({', '.join(qn)}); v = ({', '.join(vn)}); u = ({', '.join(un) or 'none'})",
        "  parameters (the scene's values): " + (", ".join(
            f"{label} = {eqs.values[s]:g}" for label, s in eqs.parameters.items() if label in eqs.used_parameters())
            or "none"),
    ]
    lines += _entries("M", eqs.M, vn, vn, symmetric=True)
    lines += _entries("C", eqs.C, vn, None)
    lines += _entries("G", eqs.G, vn, None)
    lines += _entries("tau_passive", eqs.tau_passive, vn, None)
    lines += _entries("B", eqs.B, vn, un)
    if eqs.E == sp.eye(len(qn)):
        lines.append("E = identity (q' = v)")
    else:
        lines += _entries("E", eqs.E, qn, vn)
    sn = eqs.state_names
    for k, e in enumerate(eqs.equilibria):
        coords = ", ".join(f"{n} any" if n in e.free else f"{n} = {_value_text(val, e.exact)}" for n, val in zip(qn, e.q))
        lines.append(f"equilibrium {k}: {coords} ({'exact' if e.exact else 'numeric: no closed form found, the core value'})")
        nf = len(sn) // 2
        A, B = e.lin["A"], e.lin["B"]
        if A is not None:
            lines.append("  linearisation d[dq; dv]/dt = A [dq; dv] + B u, A = [[0, I], [A_q, A_v]], B = [[0], [B_v]]"
                         + ("" if e.exact else " (at the scene's values)") + ":")
            lines += ["  " + t for t in _entries("A_q", A[nf:, :nf], sn[nf:], sn[:nf])]
            lines += ["  " + t for t in _entries("A_v", A[nf:, nf:], sn[nf:], sn[nf:])]
            lines += ["  " + t for t in _entries("B_v", B[nf:, :], sn[nf:], un)]
        else:
            lines.append(f"  linearisation A = [[0, I], [-M*^-1 K*, -M*^-1 D*]], B = [[0], [M*^-1 B*]] (more than "
                         f"{EXPLICIT_INVERSE_MAX} coordinates: the inverse is left to the reader) with, at the point,"
                         " K* = d bias/dq E, D* = d bias/dv:")
            vf = sn[nf:]
            lines += ["  " + t for t in _entries("M*", e.lin["M"], vf, vf, symmetric=True)]
            lines += ["  " + t for t in _entries("K*", e.lin["K"], vf, sn[:nf])]
            lines += ["  " + t for t in _entries("D*", e.lin["D"], vf, vf)]
            lines += ["  " + t for t in _entries("B*", e.lin["B_tau"], vf, un)]
    if checked is not None:
        text = (f"check against the core at the scene's values: M, C + G, tau_passive, B, E at {checked['states']} states, "
                f"largest relative difference {checked['dynamics']:.1e}")
        if checked["linearization"] is not None:
            text += f"; A, B at {checked['equilibria']} equilibria against dojo analyze's, {checked['linearization']:.1e}"
        lines.append(text)
    return lines


def document(eqs: SymbolicEquations, checked: dict | None = None) -> dict:
    """The result as plain data (JSON): names, parameter values, every matrix as sympy
    strings and LaTeX, the equilibria, the check."""
    def strs(mat):
        return [[sp.sstr(mat[i, j]) for j in range(mat.shape[1])] for i in range(mat.shape[0])]

    used = eqs.used_parameters()
    return {
        "scene_name": eqs.scene_name,
        "q": [str(s) for s in eqs.q], "v": [str(s) for s in eqs.v], "u": [str(s) for s in eqs.u],
        "state_names": list(eqs.state_names),
        "parameters": {label: eqs.values[eqs.parameters[label]] for label in used},
        "M": strs(eqs.M), "C": strs(eqs.C), "G": strs(eqs.G), "tau_passive": strs(eqs.tau_passive),
        "B": strs(eqs.B), "E": strs(eqs.E),
        "equilibria": [
            {"q": [sp.sstr(v) for v in e.q], "exact": e.exact, "free": e.free, "x": e.x.tolist(),
             **{k: (None if m is None else strs(m)) for k, m in e.lin.items()}}
            for e in eqs.equilibria
        ],
        "check": checked,
    }
