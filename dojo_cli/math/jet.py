"""Jets: arrays carrying their exact first derivatives (forward-mode differentiation).

A Jet holds ``value`` (shape S) and ``jac`` (shape S + (n,)): the derivative of
each entry with respect to n tangent coordinates. Geometry written with Jets
(collision distances, normals, contact points, wrenches) gets analytic
Jacobians by the chain rule, operation by operation; no finite differences.

The tangent coordinates used by the physics are, per pair of bodies a and b,
[x_a (3), t_a (3), x_b (3), t_b (3)]: world-frame position increments and
body-frame rotation increments (q -> q exp(t/2)). ``body_pose`` makes the Jets
of a body's position and the rotation of body-frame vectors.

Every operation broadcasts over the leading axes like numpy.
"""

from __future__ import annotations

import numpy as np

from dojo_cli.math.quaternion import cross as _cross
from dojo_cli.math.quaternion import matrix_from_quaternion, skew

# Below this norm, normalize() treats a vector as zero (its direction is undefined).
_TINY = 1e-300


class Jet:
    """An array with its Jacobian.

    Args:
        value: (S...) values.
        jac: (S..., n) derivatives with respect to n tangent coordinates.
    """

    __slots__ = ("value", "jac")
    __array_priority__ = 1000  # make ndarray (op) Jet defer to Jet's reflected operators

    def __init__(self, value, jac):
        self.value = np.asarray(value, dtype=float)
        self.jac = np.asarray(jac, dtype=float)

    @property
    def n(self) -> int:
        """Number of tangent coordinates."""
        return self.jac.shape[-1]

    @property
    def shape(self) -> tuple:
        return self.value.shape

    @staticmethod
    def constant(value, n: int) -> "Jet":
        """A Jet with zero derivatives."""
        value = np.asarray(value, dtype=float)
        return Jet(value, np.zeros(value.shape + (n,)))

    def __getitem__(self, idx) -> "Jet":
        """Index the value axes (the Jacobian axis is kept)."""
        if not isinstance(idx, tuple):
            idx = (idx,)
        # an explicit trailing slice keeps the Jacobian axis out of the indexing; compare
        # by identity (`in` would compare index arrays with Ellipsis elementwise)
        has_ellipsis = any(i is Ellipsis for i in idx)
        return Jet(self.value[idx], self.jac[idx + (slice(None),)] if has_ellipsis else self.jac[idx])

    # ----------------------------------------------------------- arithmetic
    def __add__(self, other) -> "Jet":
        if isinstance(other, Jet):
            return Jet(self.value + other.value, self.jac + other.jac)
        return Jet(self.value + other, self.jac + 0.0)

    __radd__ = __add__

    def __neg__(self) -> "Jet":
        return Jet(-self.value, -self.jac)

    def __sub__(self, other) -> "Jet":
        return self + (-other)

    def __rsub__(self, other) -> "Jet":
        return (-self) + other

    def __mul__(self, other) -> "Jet":
        if isinstance(other, Jet):
            return Jet(self.value * other.value, self.jac * other.value[..., None] + other.jac * self.value[..., None])
        other = np.asarray(other, dtype=float)
        return Jet(self.value * other, self.jac * other[..., None])

    __rmul__ = __mul__

    def __truediv__(self, other) -> "Jet":
        if isinstance(other, Jet):
            return self * other.reciprocal()
        return self * (1.0 / np.asarray(other, dtype=float))

    def reciprocal(self) -> "Jet":
        """1 / self."""
        inv = 1.0 / self.value
        return Jet(inv, -self.jac * (inv * inv)[..., None])

    # ------------------------------------------------------ vector algebra
    def dot(self, other) -> "Jet":
        """Inner product over the last value axis."""
        if isinstance(other, Jet):
            return Jet(
                np.sum(self.value * other.value, axis=-1),
                np.einsum("...i,...ik->...k", other.value, self.jac) + np.einsum("...i,...ik->...k", self.value, other.jac),
            )
        other = np.asarray(other, dtype=float)
        return Jet(np.sum(self.value * other, axis=-1), np.einsum("...i,...ik->...k", other, self.jac))

    def cross(self, other) -> "Jet":
        """Cross product over the last value axis (3)."""
        if isinstance(other, Jet):
            # d(a x b) = da x b + a x db = -[b]x da + [a]x db
            return Jet(
                _cross(self.value, other.value),
                -skew(other.value) @ self.jac + skew(self.value) @ other.jac,
            )
        other = np.asarray(other, dtype=float)
        other = np.broadcast_to(other, self.value.shape)
        return Jet(_cross(self.value, other), -skew(other) @ self.jac)

    def norm(self) -> "Jet":
        """Euclidean norm over the last value axis."""
        r = np.linalg.norm(self.value, axis=-1)
        unit = self.value / np.maximum(r, _TINY)[..., None]
        return Jet(r, np.einsum("...i,...ik->...k", unit, self.jac))

    def normalized(self) -> "Jet":
        """Unit vector along the last value axis: d(u/|u|) = (I - n n^T)/|u| du."""
        r = np.linalg.norm(self.value, axis=-1)
        safe = np.maximum(r, _TINY)
        unit = self.value / safe[..., None]
        proj = (np.eye(self.value.shape[-1]) - unit[..., :, None] * unit[..., None, :]) / safe[..., None, None]
        return Jet(unit, proj @ self.jac)

    def matmul(self, matrix) -> "Jet":
        """M @ self for constant matrices M (..., m, k) over the last value axis."""
        matrix = np.asarray(matrix, dtype=float)
        return Jet(np.einsum("...ij,...j->...i", matrix, self.value), matrix @ self.jac)

    def clip(self, lower, upper) -> "Jet":
        """Clamp entries to [lower, upper]; the derivative is zero where clamped."""
        value = np.clip(self.value, lower, upper)
        inside = (self.value > lower) & (self.value < upper)
        return Jet(value, self.jac * inside[..., None])

    def maximum(self, floor) -> "Jet":
        """max(self, floor) with floor constant."""
        above = self.value > floor
        return Jet(np.maximum(self.value, floor), self.jac * above[..., None])



def where(mask: np.ndarray, a: Jet, b: Jet) -> Jet:
    """a where mask, else b, for Jets of equal shape.

    Args:
        mask: booleans over the leading value axes (e.g. (nc,) for values (nc, 3));
            broadcast over the remaining value axes and the Jacobian axis.
    """
    m = np.asarray(mask, dtype=bool)
    m = m.reshape(m.shape + (1,) * (a.value.ndim - m.ndim))
    return Jet(np.where(m, a.value, b.value), np.where(m[..., None], a.jac, b.jac))


def stack(jets: list[Jet], axis: int = -1) -> Jet:
    """Stack Jets along a new value axis (the Jacobian axis stays last)."""
    ax = axis if axis >= 0 else axis - 1
    return Jet(np.stack([j.value for j in jets], axis=axis), np.stack([j.jac for j in jets], axis=ax))


def body_pose(x: np.ndarray, q: np.ndarray, columns: int, n: int = 12):
    """Jets of a body's position and a function rotating body-frame vectors.

    Args:
        x: (..., 3) positions; q: (..., 4) orientations.
        columns: index of the body's first tangent column (0 for body a, 6 for b):
            position columns [columns, columns+3), rotation [columns+3, columns+6).
        n: total tangent coordinates.

    Returns:
        (position Jet (..., 3), rotation matrices (..., 3, 3), rotate) where
        rotate(u) is the Jet of R(q) u for a body-frame vector u (array or Jet):
        R(q exp(t/2)) u = R(q)(u + t x u), so d/dt = -R(q) [u]x.
    """
    x = np.asarray(x, dtype=float)
    rot = matrix_from_quaternion(q)
    jac = np.zeros(x.shape + (n,))
    jac[..., :, columns : columns + 3] = np.eye(3)
    position = Jet(x, jac)

    def rotate(u) -> Jet:
        if isinstance(u, Jet):
            value = np.einsum("...ij,...j->...i", rot, u.value)
            out = rot @ u.jac
            out[..., :, columns + 3 : columns + 6] += -rot @ skew(u.value)
            return Jet(value, out)
        u = np.broadcast_to(np.asarray(u, dtype=float), x.shape)
        value = np.einsum("...ij,...j->...i", rot, u)
        out = np.zeros(x.shape + (n,))
        out[..., :, columns + 3 : columns + 6] = -rot @ skew(u)
        return Jet(value, out)

    return position, rot, rotate


def unrotate(rot: np.ndarray, columns: int, w: Jet) -> Jet:
    """Jet of R(q)^T w (world vector w into the body frame) for body rotation ``rot``.

    R(q exp(t/2))^T w = (I - [t]x) R^T w, so d/dt = [R^T w]x.
    """
    value = np.einsum("...ji,...j->...i", rot, w.value)
    out = np.swapaxes(rot, -1, -2) @ w.jac
    out[..., :, columns + 3 : columns + 6] += skew(value)
    return Jet(value, out)
