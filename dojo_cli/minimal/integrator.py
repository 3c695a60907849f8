"""RigidBodyDynamics.jl's ``OdeIntegrators`` as a Python API: ``ButcherTableau``,
``MuntheKaasIntegrator`` with a user ``dynamics`` callback, results sinks, ``integrate`` and
``step``, and additional states (docs/minimal.md, "The integrator, part by part").

``minimal.simulate`` is the fast path (the whole loop in the core, classic RK4). This module is
RBD's lower-level interface: any explicit tableau, the loop in Python, one dynamics call per
stage. The Munthe-Kaas coordinate maps are the core's (core/minimal/rk4.h:
``rk4_global_coordinates``, ``rk4_local_rates``), and so are the default dynamics
(``Rk4.dynamics``); this module only combines stages with the tableau's coefficients
(Iserles et al., "Lie-group methods", 2000, sec. 5; other_systems_notes.md 1.4).
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from dojo_cli import _core
from dojo_cli.minimal.model import MinimalModel
from dojo_cli.minimal.simulate import Rk4, normalize_state
from dojo_cli.minimal.states import init_state

# The order conditions hold to this (a tableau's rational coefficients in floating point,
# e.g. 1/6 + 1/3 + 1/3 + 1/6 = 1 - 1e-16).
ORDER_TOLERANCE = 1e-12
# The highest order checked: the eight conditions of orders 1-4 (Butcher 2016, sec. 31;
# Hairer, Norsett and Wanner I, sec. II.2, table 2.2).
MAX_CHECKED_ORDER = 4


def _order_conditions(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> list[tuple[int, float, Fraction]]:
    """(order, sum, its target) of every rooted-tree condition up to order 4 (c = A 1)."""
    ac = a @ c
    return [
        (1, b.sum(), Fraction(1)),
        (2, b @ c, Fraction(1, 2)),
        (3, b @ c**2, Fraction(1, 3)),
        (3, b @ ac, Fraction(1, 6)),
        (4, b @ c**3, Fraction(1, 4)),
        (4, b @ (c * ac), Fraction(1, 8)),
        (4, b @ (a @ c**2), Fraction(1, 12)),
        (4, b @ (a @ ac), Fraction(1, 24)),
    ]


class ButcherTableau:
    """An explicit Runge-Kutta tableau (RBD's ``ButcherTableau``), its order checked.

    Args:
        a: (s, s) the stage coefficients, strictly lower triangular (explicit).
        b: (s,) the weights.
        c: (s,) the nodes; default the row sums of a, which they must equal otherwise.

    ``order`` is the highest p <= 4 whose order conditions (and all lower ones) hold to
    ``ORDER_TOLERANCE``; a tableau of order 0 (weights not summing to 1) is refused: it is
    not consistent, its steps do not converge to the solution.
    """

    def __init__(self, a, b, c=None):
        a = np.array(a, dtype=float)
        b = np.array(b, dtype=float).reshape(-1)
        s = b.size
        if s == 0 or a.shape != (s, s):
            raise ValueError(f"ButcherTableau: a must be (s, s) for s = len(b) = {s} stages, got shape {a.shape}")
        row_sums = a.sum(axis=1)
        c = row_sums.copy() if c is None else np.array(c, dtype=float).reshape(-1)
        if c.size != s:
            raise ValueError(f"ButcherTableau: c must have {s} entries, got {c.size}")
        for name, arr in (("a", a), ("b", b), ("c", c)):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"ButcherTableau: {name} is not finite: {arr.tolist()}")
        upper = np.triu(a)
        if np.any(upper != 0.0):
            i, j = np.argwhere(upper != 0.0)[0]
            raise ValueError(f"ButcherTableau: a[{i}][{j}] = {a[i, j]}: only explicit tableaux (a strictly "
                             "lower triangular) are integrated")
        bad = np.flatnonzero(np.abs(c - row_sums) > ORDER_TOLERANCE)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"ButcherTableau: c[{i}] = {c[i]} but row {i} of a sums to {row_sums[i]} "
                             "(the order conditions assume c = A 1)")
        self.a, self.b, self.c = a, b, c
        order = 0
        for p in range(1, MAX_CHECKED_ORDER + 1):
            if all(abs(value - float(target)) <= ORDER_TOLERANCE
                   for q, value, target in _order_conditions(a, b, c) if q == p):
                order = p
            else:
                break
        if order == 0:
            raise ValueError(f"ButcherTableau: the weights b sum to {b.sum()}, not 1: the method is not "
                             "consistent (order 0)")
        self.order = order

    @property
    def num_stages(self) -> int:
        return self.b.size

    def __repr__(self) -> str:
        return f"ButcherTableau(stages={self.num_stages}, order={self.order})"


def runge_kutta_4() -> ButcherTableau:
    """The classic fourth-order tableau (RBD's ``runge_kutta_4``; the core's rk4_step has it built in)."""
    a = np.zeros((4, 4))
    a[1, 0] = a[2, 1] = 0.5
    a[3, 2] = 1.0
    return ButcherTableau(a, [1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0])


# ---------------------------------------------------------------- the state


class MechanismState:
    """What the integrator advances and the callbacks read (RBD's ``MechanismState`` as its
    integrator sees it): ``q`` (nq,), ``v`` (nv,) and the additional states ``s`` (ns,).

    Args:
        model: the minimal model.
        x: (nx,) [q; v] (quaternions are normalised); default ``init_state(model)``.
        s: the additional states (e.g. a controller's integral); default none.
    """

    def __init__(self, model: MinimalModel, x=None, s=()):
        self.model = model
        x = init_state(model) if x is None else normalize_state(model, x)
        self.q = np.ascontiguousarray(x[: model.nq])
        self.v = np.ascontiguousarray(x[model.nq:])
        self.s = np.array(s, dtype=float).reshape(-1)
        if not np.all(np.isfinite(self.s)):
            raise ValueError(f"additional states are not finite: {self.s.tolist()}")

    @property
    def x(self) -> np.ndarray:
        """(nx,) a copy of [q; v]."""
        return np.concatenate([self.q, self.v])

    def __repr__(self) -> str:
        return f"MechanismState(nq={self.q.size}, nv={self.v.size}, ns={self.s.size})"


def configuration(state: MechanismState) -> np.ndarray:
    """The configuration q (global coordinates; the state's own array)."""
    return state.q


def velocity(state: MechanismState) -> np.ndarray:
    """The velocity v (the state's own array)."""
    return state.v


def additional_state(state: MechanismState) -> np.ndarray:
    """The additional states s (the state's own array)."""
    return state.s


def _set(dst: np.ndarray, value, what: str) -> None:
    value = np.asarray(value, dtype=float).reshape(-1)
    if value.size != dst.size:
        raise ValueError(f"{what}: expected {dst.size} entries, got {value.size}")
    dst[:] = value


def set_configuration(state: MechanismState, q) -> None:
    """q <- q (quaternions normalised)."""
    q = np.asarray(q, dtype=float).reshape(-1)
    if q.size != state.q.size:
        raise ValueError(f"configuration: expected {state.q.size} entries, got {q.size}")
    state.q[:] = normalize_state(state.model, np.concatenate([q, state.v]))[: q.size]


def set_velocity(state: MechanismState, v) -> None:
    """v <- v (RBD's ``set_velocity!``)."""
    _set(state.v, v, "velocity")


def set_additional_state(state: MechanismState, s) -> None:
    """s <- s (RBD's ``set_additional_state!``; its size is fixed when the state is made)."""
    _set(state.s, s, "additional state")


def global_coordinates(model: MinimalModel, q0, phi) -> np.ndarray:
    """q (nq,) = global(q0, phi), the Munthe-Kaas map of local coordinates phi (nv,) around
    q0 (RBD's ``global_coordinates!``; the core's, per joint as in rk4.h: q0 + phi on vector
    coordinates, q0 exp(phi) on a spherical joint, T0 exp(phi) in SE(3) on a floating one)."""
    return _core.rk4_global_coordinates(model.tree, _vec(q0), _vec(phi))


def local_coordinate_rates(model: MinimalModel, q, phi, v) -> np.ndarray:
    """phidot (nv,): the rate of the local coordinates phi around q0 at q = global(q0, phi)
    moving with velocity v (the ϕd of RBD's ``local_coordinates!``; dexp^-1 of the joint's
    group, the core's)."""
    return _core.rk4_local_rates(model.tree, _vec(q), _vec(phi), _vec(v))


def _vec(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=float).reshape(-1)


# ---------------------------------------------------------------- results sinks


def initialize(sink, state: MechanismState) -> None:
    """RBD's ``initialize(sink, state)``: called once with the initial state before the first step."""
    sink.initialize(state)


def process(sink, t: float, state: MechanismState) -> None:
    """RBD's ``process(sink, t, state)``: called after every step with its time and state."""
    sink.process(t, state)


class RingBufferStorage:
    """A sink keeping the last ``n`` states (RBD's ``RingBufferStorage``).

    ``ts``, ``qs``, ``vs``, ``ss`` are the buffers (row ``k % n`` holds the k-th state,
    the initial one k = 0); ``last_index`` is the row written last; ``ordered()`` gives
    the kept states oldest first."""

    def __init__(self, model: MinimalModel, n: int, ns: int = 0):
        if int(n) != n or n < 1:
            raise ValueError(f"RingBufferStorage: n must be an integer >= 1, got {n}")
        self.n = int(n)
        self.ts = np.zeros(self.n)
        self.qs = np.zeros((self.n, model.nq))
        self.vs = np.zeros((self.n, model.nv))
        self.ss = np.zeros((self.n, ns))
        self.count = 0  # states processed since initialize
        self.last_index = -1

    def initialize(self, state: MechanismState) -> None:
        self.count = 0
        self.process(0.0, state)

    def process(self, t: float, state: MechanismState) -> None:
        k = self.count % self.n
        self.ts[k], self.qs[k], self.vs[k] = t, state.q, state.v
        if self.ss.shape[1]:
            self.ss[k] = state.s
        self.last_index = k
        self.count += 1

    def ordered(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ts, qs, vs) of the kept states, oldest first."""
        kept = min(self.count, self.n)
        rows = np.arange(self.count - kept, self.count) % self.n
        return self.ts[rows], self.qs[rows], self.vs[rows]


class ExpandingStorage:
    """A sink keeping every state (RBD's ``ExpandingStorage``): ``ts`` (T,), ``qs`` (T, nq),
    ``vs`` (T, nv), ``ss`` (T, ns), the initial state first. ``n`` is a capacity hint
    (RBD's sizehint!): the buffers double when full."""

    def __init__(self, model: MinimalModel, n: int = 1024, ns: int = 0):
        if int(n) != n or n < 1:
            raise ValueError(f"ExpandingStorage: n must be an integer >= 1, got {n}")
        self._t = np.zeros(int(n))
        self._q = np.zeros((int(n), model.nq))
        self._v = np.zeros((int(n), model.nv))
        self._s = np.zeros((int(n), ns))
        self.count = 0

    def initialize(self, state: MechanismState) -> None:
        self.count = 0
        self.process(0.0, state)

    def process(self, t: float, state: MechanismState) -> None:
        if self.count == self._t.size:
            self._t, self._q, self._v, self._s = (np.concatenate([a, np.zeros_like(a)])
                                                  for a in (self._t, self._q, self._v, self._s))
        k = self.count
        self._t[k], self._q[k], self._v[k] = t, state.q, state.v
        if self._s.shape[1]:
            self._s[k] = state.s
        self.count += 1

    ts = property(lambda self: self._t[: self.count])
    qs = property(lambda self: self._q[: self.count])
    vs = property(lambda self: self._v[: self.count])
    ss = property(lambda self: self._s[: self.count])


# ---------------------------------------------------------------- the integrator


class CoreDynamics:
    """The core's dynamics as a callback (RBD's ``dynamics!`` of a ``DynamicsResult``):
    vdot of ``Rk4.dynamics`` (tree, springs, dampers, loop joints with their Baumgarte gains)
    with the generalized forces of ``control(torques, t, state)`` added, when given.

    Called ``(vd, t, state)``; with additional states ``(vd, sd, t, state)`` leaves sd to
    ``additional(sd, t, state)`` (zero without it)."""

    def __init__(self, model: MinimalModel, control: Callable | None = None, additional: Callable | None = None,
                 stabilization_gains="default"):
        self.model = model
        self.rk4 = Rk4(model, stabilization_gains)
        self.control = control
        self.additional = additional
        self._tau = np.zeros(model.nv)

    def __call__(self, vd, *args) -> None:
        if len(args) == 3:
            sd, t, state = args
        else:
            (t, state), sd = args, None
        tau = None
        if self.control is not None:
            self._tau[:] = 0.0
            self.control(self._tau, t, state)
            tau = self._tau
        vd[:] = self.rk4.dynamics(state.x, None, t, tau=tau)
        if sd is not None:
            sd[:] = 0.0
            if self.additional is not None:
                self.additional(sd, t, state)


def _arity(fn) -> int | None:
    """The number of positional parameters fn takes (None when it cannot be read or is open)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


class MuntheKaasIntegrator:
    """RBD's ``MuntheKaasIntegrator(state, dynamics!, tableau, sink)``.

    Args:
        state: a ``MechanismState``, or a ``MinimalModel`` (its ``init_state``, no additional
            states); the integrator advances this object in place.
        dynamics: ``dynamics(vd, t, state)`` fills the accelerations vd (nv,) at t and state,
            or ``dynamics(vd, sd, t, state)`` (RBD's current signature) also the additional
            states' derivatives sd (ns,); the buffers are zeroed before each call. Default:
            ``CoreDynamics(model)``, the core's passive dynamics.
        tableau: an explicit ``ButcherTableau``; default ``runge_kutta_4()``.
        sink: an object with ``initialize(state)`` and ``process(t, state)`` methods
            (``RingBufferStorage``, ``ExpandingStorage`` or one's own); default an
            ``ExpandingStorage``.
    """

    def __init__(self, state, dynamics: Callable | None = None, tableau: ButcherTableau | None = None, sink=None):
        if isinstance(state, MinimalModel):
            state = MechanismState(state)
        if not isinstance(state, MechanismState):
            raise TypeError(f"MuntheKaasIntegrator: state must be a MechanismState or a MinimalModel, got "
                            f"{type(state).__name__}")
        self.state = state
        self.model = model = state.model
        ns = state.s.size
        self.dynamics = CoreDynamics(model) if dynamics is None else dynamics
        if not callable(self.dynamics):
            raise TypeError("MuntheKaasIntegrator: dynamics must be callable: dynamics(vd, t, state) or "
                            "dynamics(vd, sd, t, state)")
        arity = 4 if dynamics is None and ns else (3 if dynamics is None else _arity(self.dynamics))
        if arity is None:
            arity = 4 if ns else 3
        if arity not in (3, 4):
            raise TypeError(f"MuntheKaasIntegrator: dynamics takes {arity} positional arguments; it must be "
                            "dynamics(vd, t, state) or dynamics(vd, sd, t, state)")
        if ns and arity == 3:
            raise TypeError(f"MuntheKaasIntegrator: the state has {ns} additional states: dynamics must be "
                            "dynamics(vd, sd, t, state) to give their derivatives sd")
        self._with_sd = arity == 4
        self.tableau = runge_kutta_4() if tableau is None else tableau
        if not isinstance(self.tableau, ButcherTableau):
            raise TypeError("MuntheKaasIntegrator: tableau must be a ButcherTableau, got "
                            f"{type(self.tableau).__name__}")
        self.sink = ExpandingStorage(model, ns=ns) if sink is None else sink
        missing = [m for m in ("initialize", "process") if not callable(getattr(self.sink, m, None))]
        if missing:
            raise TypeError(f"MuntheKaasIntegrator: the sink {type(self.sink).__name__} has no "
                            f"{' and no '.join(missing)} method (initialize(state), process(t, state))")
        nstage = self.tableau.num_stages
        # the stage buffers, allocated once: vd, phid (S, nv), sd (S, ns)
        self._vd = np.zeros((nstage, model.nv))
        self._phid = np.zeros((nstage, model.nv))
        self._sd = np.zeros((nstage, ns))


def step(integrator: MuntheKaasIntegrator, t: float, dt: float) -> None:
    """One Munthe-Kaas step of the tableau from the integrator's state at t (RBD's ``step``).

    Stage i: phi_i = dt sum_j a_ij phidot_j (local coordinates around q0),
    q_i = global(q0, phi_i), v_i = v0 + dt sum_j a_ij vdot_j, s_i = s0 + dt sum_j a_ij sdot_j;
    the dynamics at t + c_i dt give vdot_i (and sdot_i), the core the rates phidot_i of
    the local coordinates at (q_i, v_i). Then phi = dt sum_i b_i phidot_i, q = global(q0, phi)
    and v, s likewise (rk4.h's scheme with the tableau's coefficients)."""
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"step: dt must be finite and > 0, got {dt}")
    it = integrator
    st, tab, model = it.state, it.tableau, it.model
    if model.locked_v.any():
        st.v[model.locked_v] = 0.0  # Drake's Lock, as the core's rk4_step: a locked joint stays still
    q0, v0, s0 = st.q.copy(), st.v.copy(), st.s.copy()
    vd, phid, sd = it._vd, it._phid, it._sd
    for i in range(tab.num_stages):
        ai = tab.a[i, :i]
        if i == 0:
            phi = np.zeros(model.nv)
            st.q[:], st.v[:], st.s[:] = q0, v0, s0
        else:
            phi = dt * (ai @ phid[:i])
            st.v[:] = v0 + dt * (ai @ vd[:i])
            st.s[:] = s0 + dt * (ai @ sd[:i])
            st.q[:] = global_coordinates(model, q0, phi)
        vd[i] = 0.0
        sd[i] = 0.0
        ti = t + tab.c[i] * dt
        if it._with_sd:
            it.dynamics(vd[i], sd[i], ti, st)
        else:
            it.dynamics(vd[i], ti, st)
        phid[i] = local_coordinate_rates(model, st.q, phi, st.v)
    b = tab.b
    phi = dt * (b @ phid)
    st.v[:] = v0 + dt * (b @ vd)
    st.s[:] = s0 + dt * (b @ sd)
    st.q[:] = global_coordinates(model, q0, phi)


def integrate(integrator: MuntheKaasIntegrator, final_time: float, dt: float,
              max_realtime_rate: float = math.inf) -> None:
    """RBD's ``integrate``: ``initialize(sink, state)``, then ``while t < final_time``: step,
    ``t += dt``, ``process(sink, t, state)``; t starts at 0 (the times are
    ``minimal.simulate``'s). ``max_realtime_rate``: at most that many simulated seconds per
    wall-clock second.

    Raises FloatingPointError when the state stops being finite (naming the step and time)."""
    if not (math.isfinite(final_time) and final_time >= 0):
        raise ValueError(f"integrate: final_time must be finite and >= 0, got {final_time}")
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"integrate: dt must be finite and > 0, got {dt}")
    if not (max_realtime_rate > 0):
        raise ValueError(f"integrate: max_realtime_rate must be > 0, got {max_realtime_rate}")
    st = integrator.state
    initialize(integrator.sink, st)
    throttled = math.isfinite(max_realtime_rate)
    started = time.perf_counter()
    t, k = 0.0, 0
    while t < final_time:
        step(integrator, t, dt)
        t += dt
        k += 1
        if not (np.all(np.isfinite(st.q)) and np.all(np.isfinite(st.v)) and np.all(np.isfinite(st.s))):
            raise FloatingPointError(f"integrate: the state is no longer finite after step {k} (t = {t:.6g} s); "
                                     "a smaller dt?")
        process(integrator.sink, t, st)
        if throttled:
            ahead = t / max_realtime_rate - (time.perf_counter() - started)
            if ahead > 0:
                time.sleep(ahead)
