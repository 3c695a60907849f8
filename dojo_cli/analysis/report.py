"""The analysis of one scene as `dojo analyze` reports it (docs/analysis.md): its unforced
equilibria with their stability, the linearisation at a point with its eigenvalues,
stability, controllability and accessibility ranks, and the variational step's own A, B.

``analyze_scene`` computes them (with dojo_cli.analysis.analyze) and gathers the result as
the dynamics-file document of `dojo analyze -o` (``vectors``, ``matrices``, ``meta``:
dojo_cli.io.dynamics_files); the command prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dojo_cli import __version__
from dojo_cli.analysis.analyze import (
    ACCESSIBILITY_TOL, CONTROLLABILITY_TOL, EIGEN_TOL, Equilibrium, Linearization, controllability_rank,
    discrete_linearization, equilibria, linearize, locked_names, stability, state_names, velocity_state_names,
)
from dojo_cli.errors import InputError


def eigenvalue_pairs(eig) -> list[list[float]]:
    """Eigenvalues as [real, imaginary] pairs (the document's form)."""
    return [[float(e.real), float(e.imag)] for e in np.asarray(eig, dtype=complex)]


@dataclass
class DiscreteLinearization:
    """The variational step's own linearisation at the scene's timestep (minimal coordinates)."""

    A: np.ndarray
    B: np.ndarray
    eigenvalues: np.ndarray
    stable: bool
    stability: str
    controllability_rank: int


@dataclass
class SceneAnalysis:
    """What `dojo analyze` found, and its document.

    Attributes:
        model: the scene's minimal-coordinate model (dojo_cli.minimal).
        equilibria: (equilibrium, its linearisation without accessibility) for each one found,
            sorted by potential energy; None when not asked.
        point: the phrase naming the point of the linearisation ("the scene's initial
            state", "equilibrium 0", ...), or None when none was asked.
        linearization: the linearisation there (None without a point).
        discrete: the variational step's (None unless asked).
        vectors, matrices, meta: the document (dojo_cli.io.dynamics_files.DynamicsFile).
    """

    model: object
    equilibria: list[tuple[Equilibrium, Linearization]] | None = None
    point: str | None = None
    linearization: Linearization | None = None
    discrete: DiscreteLinearization | None = None
    vectors: dict = field(default_factory=dict)
    matrices: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)


def analyze_scene(mech, scene_name: str, *, find_equilibria: bool, at: str | None, discrete: bool = False,
                  accessibility: bool = True, starts: int | None = None, seed: int = 0) -> SceneAnalysis:
    """The analysis `dojo analyze` prints, of a scene without contacts.

    Args:
        mech: the scene's mechanism.
        scene_name: for messages.
        find_equilibria: find the unforced equilibria (``equilibria``), each with its stability.
        at: the point of the linearisation: "initial", "equilibrium[:K]" (the K-th of the
            equilibria) or a state file (`dojo step -o` JSON); None: none.
        discrete: also the variational step's own A, B there.
        accessibility: the Lie-bracket accessibility rank too.
        starts, seed: the random Newton starts of ``equilibria``.

    Raises:
        InputError: the scene has contacts or loop-closing joints, a bad ``at``, or the
            linearisation fails (naming the scene).
    """
    from dojo_cli import minimal

    if mech.nc:
        names = ", ".join(str(getattr(c, "name", "") or f"#{i}") for i, c in enumerate(mech.contacts))
        raise InputError(f"{scene_name}: has contacts ({names}); dojo analyze takes scenes without contacts "
                         "(remove them, e.g. --set contacts=[])")
    model = minimal.build_model(mech)
    if model.loop_joints:
        raise InputError(f"{scene_name}: loop-closing joints ({', '.join(model.loop_joints)}) are not part of the tree dynamics dojo analyze uses")
    cache: dict = {}

    def eqs():
        if "eq" not in cache:
            cache["eq"] = equilibria(model, starts=starts, seed=seed)
        return cache["eq"]

    result = SceneAnalysis(model)
    result.meta = {
        "scene_name": scene_name, "nq": model.nq, "nv": model.nv,
        "state_names": state_names(model), "input_names": list(mech.input_names()),
        "config_names": list(model.config_names), "dojo_cli_version": __version__,
        "controllability_tol": CONTROLLABILITY_TOL, "accessibility_tol": ACCESSIBILITY_TOL,
        "eigen_tol": EIGEN_TOL,
        # locked joints (Drake's Lock): their coordinates are held, the analysis is of the others
        "locked_joints": list(model.locked_joints), "locked": locked_names(model),
    }
    meta, vectors, matrices = result.meta, result.vectors, result.matrices
    if find_equilibria:
        result.equilibria = []
        eq_list = []
        for e in eqs():
            lin = linearize(model, e.x, accessibility=False)
            result.equilibria.append((e, lin))
            eq_list.append({"q": e.x[: model.nq].tolist(), "stable": bool(lin.stable), "stability": lin.stability,
                            "eigenvalues": eigenvalue_pairs(lin.eigenvalues), "potential_energy": e.potential,
                            "residual": e.residual, "free": e.free, "family_dimension": e.family})
        meta["equilibria"] = eq_list
    if at is None:
        return result
    x, result.point = _point(at, model, mech, eqs)
    try:
        lin = result.linearization = linearize(model, x, accessibility=accessibility)
    except (ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
        raise InputError(f"{scene_name}: {exc}") from None
    sn, un = lin.state_names, lin.input_names
    vn = list(lin.velocity_names)  # the free velocities (all of them without locked joints)
    vectors["x"] = (lin.x, list(model.config_names) + velocity_state_names(model))
    vectors["bias"] = (lin.bias, vn)
    matrices["A"] = (lin.A, sn, sn)
    matrices["B"] = (lin.B, sn, un)
    matrices["M"] = (lin.M, vn, vn)
    matrices["B_tau"] = (lin.input_map.reshape(len(vn), len(un)), vn, un)
    meta.update({
        "at": result.point, "eigenvalues": eigenvalue_pairs(lin.eigenvalues), "stable": bool(lin.stable),
        "stability": lin.stability, "controllability_rank": lin.controllability_rank,
        "accessibility_rank": lin.accessibility_rank, "accessibility_depth": lin.accessibility_depth,
        "n_states": len(sn),
    })
    if discrete:
        try:
            Ad, Bd, dn, dun = discrete_linearization(model, x)
        except (ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
            raise InputError(f"{scene_name}: {exc}") from None
        eig_d = np.linalg.eigvals(Ad)
        stable_d, why_d = stability(Ad, discrete=True)
        rank_d = controllability_rank(Ad, Bd)
        result.discrete = DiscreteLinearization(Ad, Bd, eig_d, stable_d, why_d, rank_d)
        matrices["A_discrete"] = (Ad, dn, dn)
        matrices["B_discrete"] = (Bd, dn, list(dun))
        meta.update({"timestep": float(mech.timestep), "discrete_eigenvalues": eigenvalue_pairs(eig_d),
                     "discrete_stable": bool(stable_d), "discrete_stability": why_d,
                     "discrete_controllability_rank": rank_d})
    return result


def _point(at: str, model, mech, eqs_fn):
    """(x, phrase) of an --at value."""
    from dojo_cli import minimal

    if at == "initial":
        return minimal.init_state(model), "the scene's initial state"
    if at == "equilibrium" or at.startswith("equilibrium:"):
        text = at.partition(":")[2] or "0"
        try:
            k = int(text)
        except ValueError:
            raise InputError(f"--at {at}: expected equilibrium:K with K an integer, got {text!r}") from None
        eqs = eqs_fn()
        if not -len(eqs) <= k < len(eqs):
            raise InputError(f"--at {at}: {len(eqs)} equilibri{'um' if len(eqs) == 1 else 'a'} found (K in 0..{len(eqs) - 1})")
        return eqs[k].x.copy(), f"equilibrium {k % len(eqs)}"
    path = Path(at)
    if not path.exists():
        raise InputError(f"--at {at}: not initial, equilibrium[:K] or an existing state file")
    from dojo_cli.io.state_files import read_state_file

    try:
        z, _ = read_state_file(mech, path)
    except InputError as exc:
        raise InputError(str(exc).replace("--state", "--at", 1)) from None
    return model.state_from_maximal(z), f"the state in {path}"
