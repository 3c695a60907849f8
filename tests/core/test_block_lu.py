"""The compiled block-sparse LU (dojo_cli/core/linalg/block_lu.cpp, bound as dojo_cli._core.testing.BlockSystem) against dense numpy.

Patterns are the shapes of a step's Newton matrix: bodies (6 unknowns), joints (1-6 constraints plus 2 per
limit), contacts (2, 8 or 12), in the elimination order the core uses (contacts first, then each child body
before its parent joint, leaves to root, loop-closing joints last). Unknown indices are shuffled so that no
node's unknowns are contiguous. Values are random but shaped like the physics: a body's block is an inertia
plus a non-symmetric perturbation, body-joint blocks are rigid-body constraint Jacobians that differ on the
two sides (z2 vs z3), joint diagonals carry the 1e-10 regularisation (limit rows an O(1) diagonal).

Tolerances:
- BACKWARD: the normwise backward error |b - A x|_inf / (|A|_inf |x|_inf + |b|_inf). Pivoting only inside
  blocks of at most 14 unknowns allows more element growth than dense partial pivoting: measured (seeds below)
  <= 3e-15 on the physics-shaped systems (growth ~10, dense LAPACK: 2e-16) and 5e-15 on the random
  permutation-dominated blocks of test_every_block_size_needs_pivoting; 5e-14 is a 10x margin that still
  catches a wrong block (an O(1) error) by 13 orders of magnitude.
- FORWARD_PER_COND: the error against dense LAPACK (scipy lu_factor/lu_solve, numpy.linalg.solve's LU) is
  at most cond(A) times both solvers' backward errors: measured <= 5e-17 * cond(A), with LAPACK's 1-norm
  estimate of cond(A) (gecon: 1e2 to 5e3 here); checked against 1e-14 * cond(A), the bound with both
  backward errors at BACKWARD's order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from dojo_cli._core.testing import BlockSystem

BACKWARD = 5e-14  # normwise backward error (see the module docstring)
FORWARD_PER_COND = 1e-14  # forward error / cond(A): both solvers' backward errors times cond
REG = 1e-10  # the joint diagonal's regularisation, as in the step's Newton matrix


# ---------------------------------------------------------------------------
# Patterns


@dataclass
class Pattern:
    sizes: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # body, joint (its limit rows included), contact, other
    constraints: list[int] = field(default_factory=list)  # a joint's equality rows (the rest are limit rows)
    blocks: list[tuple[int, int]] = field(default_factory=list)
    order: list[int] = field(default_factory=list)

    def node(self, kind: str, size: int, constraints: int | None = None) -> int:
        self.sizes.append(size)
        self.kinds.append(kind)
        self.constraints.append(size if constraints is None else constraints)
        k = len(self.sizes) - 1
        self.blocks.append((k, k))
        return k

    def couple(self, i: int, j: int) -> None:
        self.blocks += [(i, j), (j, i)]

    def unknowns(self, rng: np.random.Generator) -> list[list[int]]:
        perm = rng.permutation(sum(self.sizes))
        out, start = [], 0
        for m in self.sizes:
            out.append([int(u) for u in perm[start : start + m]])
            start += m
        return out

    def system(self, rng: np.random.Generator) -> BlockSystem:
        return BlockSystem(self.unknowns(rng), self.blocks, self.order)


def joint_size(rng: np.random.Generator) -> tuple[int, int]:
    """(size, equality constraints): 1-6 constraints plus 2 per limit."""
    constraints = int(rng.integers(1, 7))
    limits = int(rng.integers(0, 3)) if rng.random() < 0.4 else 0
    return constraints + 2 * limits, constraints


def tree(rng: np.random.Generator, n_bodies: int, *, dampers: float = 0.0, joint_sizes=None, chain: bool = False):
    """Bodies with parents (body 0 on the world), a joint per body to its parent, optional damper couplings
    between a body and its parent; order: each child body, then its parent joint, leaves to root."""
    p = Pattern()
    parent = [-1] + [(k - 1 if chain else int(rng.integers(0, k))) for k in range(1, n_bodies)]
    bodies, joints = [], []
    for k in range(n_bodies):
        bodies.append(p.node("body", 6))
        size, constraints = joint_sizes(k) if joint_sizes else joint_size(rng)
        joints.append(p.node("joint", size, constraints))
    for k in range(n_bodies):
        p.couple(bodies[k], joints[k])
        if parent[k] >= 0:
            p.couple(bodies[parent[k]], joints[k])
            if rng.random() < dampers:
                p.couple(bodies[parent[k]], bodies[k])
    # parents have smaller indices: children (higher k) first
    for k in reversed(range(n_bodies)):
        p.order += [bodies[k], joints[k]]
    return p, bodies, joints


def chain(n_links: int, joint: int = 5):
    return tree(np.random.default_rng(0), n_links, chain=True, joint_sizes=lambda k: (joint, joint))


def add_contacts(p: Pattern, rng: np.random.Generator, pairs, sizes=(2, 8, 12)):
    """Contact nodes between a body and the ground (pair (a, None)) or two bodies, eliminated first."""
    contacts = []
    for a, b in pairs:
        c = p.node("contact", int(rng.choice(sizes)))
        p.couple(c, a)
        if b is not None:
            p.couple(c, b)
        contacts.append(c)
    p.order[:0] = contacts
    return contacts


def add_loops(p: Pattern, rng: np.random.Generator, pairs):
    """Loop-closing joints between two bodies, eliminated last."""
    loops = []
    for a, b in pairs:
        size, constraints = joint_size(rng)
        j = p.node("joint", size, constraints)
        p.couple(j, a)
        p.couple(j, b)
        loops.append(j)
    p.order += loops
    return loops


def box_with_contacts(n_contacts: int = 8, size: int = 8) -> Pattern:
    p = Pattern()
    body = p.node("body", 6)
    add_contacts(p, np.random.default_rng(0), [(body, None)] * n_contacts, sizes=(size,))
    p.order.append(body)
    return p


def reference_fill(p: Pattern) -> set[tuple[int, int]]:
    """Fill blocks of block elimination in p.order (sets, independent of the C++)."""
    pattern = set(p.blocks)
    pos = {k: q for q, k in enumerate(p.order)}
    fill = set()
    for q, k in enumerate(p.order):
        rows = [i for (i, j) in pattern if j == k and pos[i] > q]
        cols = [j for (i, j) in pattern if i == k and pos[j] > q]
        for i in rows:
            for j in cols:
                if (i, j) not in pattern:
                    pattern.add((i, j))
                    fill.add((i, j))
    return fill


# ---------------------------------------------------------------------------
# Values


def rigid_jacobian(rng: np.random.Generator, rows: int) -> np.ndarray:
    """A joint's or contact's Jacobian on one body's velocity (v, w): `rows` orthonormal directions of the
    velocity of a point at a random lever arm r (|r| < 1), as a rigid-body constraint is; scaled to O(1)."""
    r = rng.uniform(-0.6, 0.6, 3)
    transform = np.eye(6)
    transform[:3, 3:] = -np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    basis = np.linalg.qr(rng.normal(size=(6, 6)))[0][:rows]
    return basis @ transform


def physics_values(p: Pattern, system: BlockSystem, rng: np.random.Generator, *, reg: float = REG) -> np.ndarray:
    """Structural values shaped like a Newton matrix (see the module docstring): rigid-body Jacobians, so that
    the elimination's Schur complements are articulated inertias (bounded growth) as in a real step."""
    values = np.zeros(system.structural_size)
    offsets = system.block_offsets

    def put(i, j, block):
        o = offsets[system.find(i, j)]
        values[o : o + block.size] = block.ravel()

    for b in range(system.n_structural):
        i, j = int(system.block_rows[b]), int(system.block_cols[b])
        mi, mj = p.sizes[i], p.sizes[j]
        ki, kj = p.kinds[i], p.kinds[j]
        if i == j and ki == "body":
            rot = np.linalg.qr(rng.normal(size=(3, 3)))[0]
            inertia = rot @ np.diag(rng.uniform(0.05, 0.5, 3)) @ rot.T
            mass = rng.uniform(0.5, 2.0) * np.eye(3)
            put(i, i, np.block([[mass, np.zeros((3, 3))], [np.zeros((3, 3)), inertia]]) + 0.02 * rng.normal(size=(6, 6)))
        elif i == j and ki == "joint":
            block = np.zeros((mi, mi))
            nc = p.constraints[i]
            block[:nc, :nc] = -reg * np.eye(nc)  # the regularised equality constraints
            block[nc:, nc:] = np.diag(rng.uniform(0.5, 2.0, mi - nc)) + 0.1 * rng.normal(size=(mi - nc, mi - nc))
            put(i, i, block)
        elif i == j:  # contact: complementarity rows, well conditioned, not symmetric
            put(i, i, rng.normal(size=(mi, mi)) + 3 * np.eye(mi))
        elif ki == "body" and kj == "body":  # damper coupling
            put(i, j, 0.3 * rng.normal(size=(mi, mj)))
        elif kj == "body":  # constraint rows G(z3); the body rows get -G(z2)^T, a nearby Jacobian
            g3 = np.vstack([rigid_jacobian(rng, min(mi - r0, 6)) for r0 in range(0, mi, 6)])
            g2 = g3 + 0.01 * rng.normal(size=g3.shape)
            put(i, j, g3)
            put(j, i, -g2.T)
    return values


def pivoting_values(p: Pattern, system: BlockSystem, rng: np.random.Generator) -> np.ndarray:
    """Diagonal blocks dominated by a random permutation (zeros on the diagonal: every block needs row swaps)."""
    values = np.zeros(system.structural_size)
    rows, cols, offsets = system.block_rows, system.block_cols, system.block_offsets
    for b in range(system.n_structural):
        i, j = int(rows[b]), int(cols[b])
        mi, mj = p.sizes[i], p.sizes[j]
        if i == j:
            perm = np.roll(np.eye(mi), 1, axis=1) if mi > 1 else np.eye(1)
            block = 4 * perm[rng.permutation(mi)] + 0.3 * rng.normal(size=(mi, mi))
            if mi > 1:
                block[np.diag_indices(mi)] *= (np.diag(block) ** 2 > 1.0)  # zero diagonal where small
                block[0, 0] = 0.0
        else:
            block = 0.5 * rng.normal(size=(mi, mj))
        values[offsets[b] : offsets[b] + mi * mj] = block.ravel()
    return values


# ---------------------------------------------------------------------------
# Checks


def backward_error(a: np.ndarray, x: np.ndarray, b: np.ndarray) -> float:
    r = b - a @ x
    return float(np.abs(r).max() / (np.abs(a).sum(axis=1).max() * np.abs(x).max() + np.abs(b).max()))


def dense_reference(a: np.ndarray):
    """(solve(at, b, transpose), 1-norm condition estimate) from one LAPACK LU. LAPACK's condition estimate
    (gecon) instead of an SVD: on a loaded 2-core machine a multithreaded SVD of a 220 x 220 matrix was
    measured at 1.4 s median; the LU and the estimate stay ~1 ms."""
    from scipy.linalg import lu_factor, lu_solve
    from scipy.linalg.lapack import dgecon

    lu = lu_factor(a, check_finite=False)
    rcond, info = dgecon(lu[0], np.abs(a).sum(axis=0).max(), norm="1")
    assert info == 0 and rcond > 0
    return (lambda b, transpose: lu_solve(lu, b, trans=1 if transpose else 0, check_finite=False)), 1.0 / rcond


def check_solves(system: BlockSystem, values: np.ndarray, rng: np.random.Generator, *, nrhs=(1, 3, 37)):
    """Factor, then plain and transposed solves for 1 and several right-hand sides (37: more than one chunk
    of the solve's work buffer) against the dense matrix."""
    a = system.to_dense(values)
    assert system.factor(values)
    solve, cond = dense_reference(a)
    assert cond < 1e9, "the random system should be solvable to compare with numpy"
    for transpose in (False, True):
        at = a.T if transpose else a
        bs = [rng.normal(size=system.n) if k == 1 else rng.normal(size=(system.n, k)) for k in nrhs]
        refs = solve(np.column_stack(bs), transpose)
        start = 0
        for b in bs:
            x = system.solve(b, transpose=transpose)
            assert x.shape == b.shape
            k = 1 if b.ndim == 1 else b.shape[1]
            ref = refs[:, start : start + k].reshape(b.shape)
            start += k
            assert backward_error(at, x, b) < BACKWARD, (transpose, k)
            err = np.abs(x - ref).max() / np.abs(ref).max()
            assert err < FORWARD_PER_COND * cond, (transpose, k, err, cond)
    return a


# ---------------------------------------------------------------------------
# Tests


def test_chain_matches_dense_and_has_no_fill():
    rng = np.random.default_rng(1)
    p, _, _ = chain(20)
    system = p.system(rng)
    assert (system.n, system.fill) == (220, 0)
    assert system.total_size == system.structural_size
    values = physics_values(p, system, rng)
    check_solves(system, values, rng)


@pytest.mark.parametrize("seed", range(6))
def test_branching_trees_with_dampers_have_no_fill(seed):
    rng = np.random.default_rng(100 + seed)
    p, _, _ = tree(rng, int(rng.integers(2, 25)), dampers=0.5)
    system = p.system(rng)
    assert system.fill == 0 and reference_fill(p) == set()
    check_solves(system, physics_values(p, system, rng), rng)


@pytest.mark.parametrize("seed", range(6))
def test_contacts_between_bodies_and_loops(seed):
    """Contacts (ground and body-body) first, loop-closing joints last: the fill is exactly the block
    elimination's (a set computation here), and the solves match dense."""
    rng = np.random.default_rng(200 + seed)
    p, bodies, _ = tree(rng, int(rng.integers(3, 12)), dampers=0.3)
    pairs = [(int(rng.choice(bodies)), None) for _ in range(int(rng.integers(0, 4)))]
    pairs += [tuple(int(b) for b in rng.choice(bodies, 2, replace=False)) for _ in range(int(rng.integers(1, 4)))]
    add_contacts(p, rng, pairs)
    add_loops(p, rng, [tuple(int(b) for b in rng.choice(bodies, 2, replace=False)) for _ in range(int(rng.integers(1, 3)))])
    system = p.system(rng)
    expected = reference_fill(p)
    got = {(int(i), int(j)) for i, j in zip(system.block_rows[system.n_structural :], system.block_cols[system.n_structural :])}
    assert got == expected and system.fill == len(expected)
    check_solves(system, physics_values(p, system, rng), rng)


def test_box_with_eight_contacts():
    rng = np.random.default_rng(3)
    p = box_with_contacts(8, 8)
    system = p.system(rng)
    assert (system.n, system.fill) == (70, 0)
    check_solves(system, physics_values(p, system, rng), rng)


def test_four_bar_fill():
    """Crank (B1 on the world by J1), coupler (B2 on B1 by J2), rocker (B3 on the world by J3), loop joint L
    (B2-B3) last, order B2 J2 B1 J1 B3 J3 L: eliminating B2, J2, B1 and B3 each couples L with their later
    neighbour (J2, B1, J1, J3), both ways: 8 fill blocks."""
    p, (b1, b2, b3, j1, j2, j3, loop) = four_bar_pattern()
    system = p.system(np.random.default_rng(0))
    fill = {(int(i), int(j)) for i, j in zip(system.block_rows[system.n_structural :], system.block_cols[system.n_structural :])}
    expected = {(x, loop) for x in (j2, b1, j1, j3)} | {(loop, x) for x in (j2, b1, j1, j3)}
    assert fill == expected == reference_fill(p)
    assert system.fill == 8


def four_bar_pattern():
    p = Pattern()
    b1, b2, b3 = (p.node("body", 6) for _ in range(3))
    j1, j2, j3, loop = (p.node("joint", 5) for _ in range(4))
    p.couple(b1, j1)
    p.couple(b1, j2)
    p.couple(b2, j2)
    p.couple(b3, j3)
    p.couple(b2, loop)
    p.couple(b3, loop)
    p.order = [b2, j2, b1, j1, b3, j3, loop]
    return p, (b1, b2, b3, j1, j2, j3, loop)


def revolute_jacobian(point, center):
    """The 5 rows of a revolute joint about z at `point` on a body with centre `center`, on that body's
    velocity (v, w): the point's velocity (3 rows) and the angular velocity about x and y."""
    r = np.asarray(point, float) - np.asarray(center, float)
    cross = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
    g = np.zeros((5, 6))
    g[:3, :3] = np.eye(3)
    g[:3, 3:] = -cross
    g[3, 3] = g[4, 4] = 1.0
    return g


def four_bar_values(p, nodes, system, rng, geometry):
    """A planar four-bar's Newton matrix: inertias on the bodies, revolute Jacobians at two nearby
    configurations (body rows -G(z2)^T, joint rows G(z3)), joint diagonals -1e-10 I. All axes are parallel,
    so 3 of the loop's 5 constraints are redundant: the matrix is singular up to the regularisation."""
    b1, b2, b3, j1, j2, j3, loop = nodes
    values = np.zeros(system.structural_size)

    def put(i, j, block):
        o, (mi, mj) = system.block_offsets[system.find(i, j)], block.shape
        values[o : o + mi * mj] = block.ravel()

    pts = [{k: np.array(v, float) for k, v in g.items()} for g in geometry]
    centres = [{b1: (g["p0"] + g["p1"]) / 2, b2: (g["p1"] + g["p2"]) / 2, b3: (g["p3"] + g["p2"]) / 2} for g in pts]
    for b in (b1, b2, b3):
        put(b, b, np.diag([1.0, 1.0, 1.0, 0.1, 0.2, 0.3]) + 1e-3 * rng.normal(size=(6, 6)))
    joints = [(j1, b1, None, "p0"), (j2, b1, b2, "p1"), (j3, b3, None, "p3"), (loop, b2, b3, "p2")]
    for j, a, b, point in joints:
        put(j, j, -REG * np.eye(5))
        for body, sign in ((a, 1.0), (b, -1.0)):
            if body is None:
                continue
            g2 = sign * revolute_jacobian(pts[0][point], centres[0][body])
            g3 = sign * revolute_jacobian(pts[1][point], centres[1][body])
            put(body, j, -g2.T)
            put(j, body, g3)
    return values


def test_regularised_redundant_four_bar_solves_like_dense_lu():
    """Pivoting inside the blocks copes with the redundant loop: after the tree, the loop joint's block is
    singular but for the 1e-10 regularisation. Measured (seeds 0-3): backward error <= 1.1e-15 (dense LAPACK
    1.2e-16); for a right-hand side consistent with the unregularised constraints (a Newton residual of a
    mechanism whose redundant constraints agree), the residual against the unregularised matrix is 4-6e-11
    relative, the same as dense partial pivoting's to two digits."""
    from scipy.linalg import lu_factor, lu_solve

    rng = np.random.default_rng(4)
    p, nodes = four_bar_pattern()
    system = p.system(rng)
    geometry = [
        {"p0": (0.0, 0.0, 0.0), "p1": (0.3, 1.0, 0.0), "p2": (1.8, 1.2, 0.0), "p3": (2.0, 0.0, 0.0)},
        {"p0": (0.0, 0.0, 0.0), "p1": (0.31, 0.99, 0.0), "p2": (1.81, 1.21, 0.0), "p3": (2.0, 0.0, 0.0)},
    ]
    values = four_bar_values(p, nodes, system, rng, geometry)
    unregularised = values.copy()
    for j in nodes[3:]:
        o = system.block_offsets[system.find(j, j)]
        unregularised[o : o + 25] = 0.0
    a, a0 = system.to_dense(values), system.to_dense(unregularised)
    s = np.linalg.svd(a, compute_uv=False)
    assert s[-3] / s[0] < 1e-9 and s[-4] / s[0] > 1e-3, "3 redundant constraints: singular up to the regularisation"
    assert system.factor(values)
    dense = lu_factor(a)
    for transpose in (False, True):
        at, a0t = (a.T, a0.T) if transpose else (a, a0)
        b = rng.normal(size=system.n)  # the solution is ~1e10 along the near-null space
        x = system.solve(b, transpose=transpose)
        assert np.abs(x).max() > 1e8
        assert backward_error(at, x, b) < BACKWARD, transpose
        b = a0t @ rng.normal(size=system.n)  # consistent: the solution stays O(1)
        x = system.solve(b, transpose=transpose)
        ref = lu_solve(dense, b, trans=1 if transpose else 0)
        assert backward_error(at, x, b) < BACKWARD, transpose
        res = np.linalg.norm(a0t @ x - b) / np.linalg.norm(b)
        res_dense = np.linalg.norm(a0t @ ref - b) / np.linalg.norm(b)
        # ~1e-10: what the regularisation costs, not roundoff (which is ~1e-15 here)
        assert res < 1e-9 and res < 1.5 * res_dense, (transpose, res, res_dense)


def test_multiply_matches_dense():
    rng = np.random.default_rng(5)
    p, bodies, _ = tree(rng, 8, dampers=0.5)
    add_contacts(p, rng, [(bodies[1], bodies[4]), (bodies[2], None)])
    p.blocks += [p.blocks[3], p.blocks[0]]  # duplicates are merged into the first appearance
    system = p.system(rng)
    assert system.n_structural == len(set(p.blocks))
    values = rng.normal(size=system.structural_size)
    a = system.to_dense(values)
    x = rng.normal(size=system.n)
    assert np.allclose(system.multiply(values, x), a @ x, rtol=0, atol=1e-13)
    assert np.allclose(system.multiply(values, x, transpose=True), a.T @ x, rtol=0, atol=1e-13)
    xs = rng.normal(size=(system.n, 4))
    assert np.allclose(system.multiply(values, xs), a @ xs, rtol=0, atol=1e-13)


def test_every_block_size_needs_pivoting():
    """Node sizes 1-14 (the compiled sizes 1-8 and 12, the run-time path for the others), diagonal blocks
    with zeros on the diagonal (row swaps inside every block), a random coupling pattern with fill."""
    rng = np.random.default_rng(6)
    p = Pattern()
    for m in list(range(1, 15)) * 2:
        p.node("other", m)
    nn = len(p.sizes)
    for _ in range(40):
        i, j = (int(v) for v in rng.choice(nn, 2, replace=False))
        p.blocks.append((i, j))  # structurally unsymmetric too
    p.order = [int(k) for k in rng.permutation(nn)]
    system = p.system(rng)
    assert system.fill > 0
    check_solves(system, pivoting_values(p, system, rng), rng)


def test_refactor_resets_fill_and_keeps_values():
    rng = np.random.default_rng(7)
    p, bodies, _ = tree(rng, 6)
    add_loops(p, rng, [(bodies[5], bodies[0])])
    system = p.system(rng)
    assert system.fill > 0
    first = physics_values(p, system, rng)
    second = physics_values(p, system, rng)
    kept = first.copy()
    assert system.factor(first)
    assert np.array_equal(first, kept), "factor copies the values"
    check_solves(system, second, rng, nrhs=(1,))  # fill from the first factorisation must not leak in


def test_singular_or_nonfinite_pivot_returns_false():
    rng = np.random.default_rng(8)
    p = box_with_contacts(3, 8)
    system = p.system(rng)
    values = physics_values(p, system, rng)
    assert system.factor(values)
    c = p.order[0]  # eliminated first: its diagonal block is the pivot block as given
    o = system.block_offsets[system.find(c, c)]
    singular = values.copy()
    singular[o + 3 * 8 : o + 4 * 8] = 0.0  # a zero row
    assert not system.factor(singular)
    with pytest.raises(RuntimeError):
        system.solve(np.ones(system.n))
    singular = values.copy()
    block = singular[o : o + 64].reshape(8, 8)
    block[:, 5] = 2.0 * block[:, 2]  # dependent columns: an exactly zero pivot after elimination
    block[:, 2] = 0.5 * block[:, 5]
    assert not system.factor(singular)
    body = p.order[-1]  # the body's block becomes singular only through the Schur complements
    ob = system.block_offsets[system.find(body, body)]
    nan = values.copy()
    nan[ob + 7] = np.nan
    assert not system.factor(nan)
    inf = values.copy()
    inf[o + 9] = np.inf
    assert not system.factor(inf)
    for i, j in ((c, body), (body, c)):  # off the diagonal: a U block, an L block; both reach the body's pivots
        bad = values.copy()
        bad[system.block_offsets[system.find(i, j)] + 5] = np.nan
        assert not system.factor(bad), (i, j)
    assert system.factor(values)  # a good matrix after failures
    b = rng.normal(size=system.n)
    assert backward_error(system.to_dense(values), system.solve(b), b) < BACKWARD


def test_zero_size_nodes_and_find():
    rng = np.random.default_rng(9)
    # node 1 has no unknowns (a joint without constraints): it takes part in nothing
    system = BlockSystem([[0, 3], [], [1, 2, 4]], [(0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (2, 0), (0, 2)], [1, 0, 2])
    assert (system.n, system.fill) == (5, 0)
    assert system.find(0, 2) == 6 and system.find(2, 1) == -1
    values = rng.normal(size=system.structural_size) + 0.0
    for k, m in ((0, 2), (2, 3)):
        o = system.block_offsets[system.find(k, k)]
        values[o : o + m * m] += 4 * np.eye(m).ravel()
    check_solves(system, values, rng, nrhs=(1, 2))


@pytest.mark.parametrize(
    "nodes,blocks,order,message",
    [
        ([[0], [1]], [(0, 0)], [0, 1], "diagonal"),
        ([[0], [1]], [(0, 0), (1, 1), (0, 2)], [0, 1], "outside"),
        ([[0], [1]], [(0, 0), (1, 1)], [0, 0], "twice"),
        ([[0], [1]], [(0, 0), (1, 1)], [0], "order"),
        ([[0], [1]], [(0, 0), (1, 1)], [0, 2], "not a node"),
        ([[0, 1], [1]], [(0, 0), (1, 1)], [0, 1], "belongs to nodes"),
        ([[0, 1], [3]], [(0, 0), (1, 1)], [0, 1], "outside"),
        ([[0, -1], [2]], [(0, 0), (1, 1)], [0, 1], "outside"),
    ],
)
def test_inconsistent_patterns_are_rejected(nodes, blocks, order, message):
    with pytest.raises(ValueError, match=message):
        BlockSystem(nodes, blocks, order)


def test_wrong_value_and_rhs_shapes_are_rejected():
    system = BlockSystem([[0], [1]], [(0, 0), (1, 1)], [0, 1])
    with pytest.raises(ValueError):
        system.factor(np.ones(3))
    assert system.factor(np.ones(2))
    with pytest.raises(ValueError):
        system.solve(np.ones(3))
    assert np.array_equal(system.solve(np.array([2.0, 3.0])), [2.0, 3.0])
