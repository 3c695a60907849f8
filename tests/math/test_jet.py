"""Jets against central finite differences over body tangent coordinates."""

from __future__ import annotations

import numpy as np

from dojo_cli.math import quaternion as quat
from dojo_cli.math.jet import Jet, body_pose, stack, unrotate

FD = 1e-6
TOL = 1e-7


def perturbed(x, q, t):
    """Body pose moved by tangent t = [dx, dtheta] (body-frame rotation)."""
    return x + t[:3], quat.multiply(q, quat.quaternion_from_rotation_vector(t[3:]))


def fd_check(fn, xa, qa, xb, qb):
    """fn(xa, qa, xb, qb) -> Jet; compare its jac with central differences."""
    jet = fn(xa, qa, xb, qb)
    numeric = np.zeros(jet.value.shape + (12,))
    for k in range(12):
        e = np.zeros(12)
        e[k] = FD
        plus = fn(*perturbed(xa, qa, e[:6]), *perturbed(xb, qb, e[6:])).value
        minus = fn(*perturbed(xa, qa, -e[:6]), *perturbed(xb, qb, -e[6:])).value
        numeric[..., k] = (plus - minus) / (2 * FD)
    err = np.max(np.abs(jet.jac - numeric))
    assert err < TOL, f"jet Jacobian error {err:.2e}"


def random_poses(seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=3), quat.normalize(rng.normal(size=4)), rng.normal(size=3), quat.normalize(rng.normal(size=4))


def test_composite_geometry():
    """A sphere-on-sphere style distance, normal, contact points and a wrench."""
    oa, ob = np.array([0.1, 0.2, -0.3]), np.array([-0.2, 0.0, 0.4])

    def geometry(xa, qa, xb, qb):
        pa, _, rot_a = body_pose(xa, qa, 0)
        pb, _, rot_b = body_pose(xb, qb, 6)
        ca, cb = pa + rot_a(oa), pb + rot_b(ob)
        diff = ca - cb
        n = diff.normalized()
        d = diff.norm() - 0.5
        force = n * 2.0 + n.cross(np.array([0.0, 0.0, 1.0]))
        lever = (ca - n * 0.3) - pa
        torque = unrotate(quat.matrix_from_quaternion(qa), 0, lever.cross(force))
        return stack([d, d * d, n.dot(cb), diff.dot(diff).reciprocal()], axis=-1), torque

    for seed in range(3):
        poses = random_poses(seed)
        fd_check(lambda *p: geometry(*p)[0], *poses)
        fd_check(lambda *p: geometry(*p)[1], *poses)


def test_clip_and_indexing():
    def f(xa, qa, xb, qb):
        pa, _, rot = body_pose(xa, qa, 0)
        v = rot(np.array([1.0, 2.0, 3.0])) + pa
        return stack([v[..., 0], v.clip(-0.5, 0.5)[..., 1], v.maximum(0.0)[..., 2]], axis=-1)

    fd_check(f, *random_poses(5))


def test_batched_broadcasting():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 3))
    q = quat.normalize(rng.normal(size=(4, 4)))
    p, rot, rotate = body_pose(x, q, 0)
    u = rotate(np.array([0.0, 0.0, 1.0]))
    assert u.value.shape == (4, 3) and u.jac.shape == (4, 3, 12)
    assert np.allclose(u.value, rot[:, :, 2])
    j = Jet.constant(np.ones(3), 12)
    assert (j * 2.0 + u).value.shape == (4, 3)
