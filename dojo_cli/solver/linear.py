"""Newton matrices with a fixed sparsity pattern, assembled from value blocks.

The pattern (every (row, col) any block can touch, in a fixed order) is analysed
once per mechanism: duplicates are merged into slots, and the slots are laid
out in compressed-column order. Each assembly is then one ``bincount`` of the
block values into the slots. Small systems are factorised densely (LAPACK LU:
for a few hundred unknowns it beats a sparse factorisation's overhead); larger
ones with SuperLU, whose fill-reducing column ordering (COLAMD) is computed on
the first factorisation and reused afterwards (``permc_spec="NATURAL"`` on the
pre-permuted columns), so the ordering analysis is done once.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

# Up to this many unknowns a dense LU is faster than SuperLU here (measured with
# benchmarks/step_speed.py --linear dense|sparse on chains: dense wins at 110
# unknowns, sparse at 165).
DENSE_MAX = 128


class MatrixPattern:
    """A square sparse pattern built from source entries.

    Args:
        n: matrix size.
        rows, cols: (m,) row and column of every source entry, in the order the
            assembly will supply values; repeated positions are summed.
    """

    def __init__(self, n: int, rows: np.ndarray, cols: np.ndarray):
        self.n = int(n)
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        key = cols * self.n + rows  # column-major: slots come out in CSC order
        unique, self.slot = np.unique(key, return_inverse=True)
        self.nnz = unique.size
        self.csc_rows = (unique % self.n).astype(np.int32)
        csc_cols = unique // self.n
        self.indptr = np.searchsorted(csc_cols, np.arange(self.n + 1)).astype(np.int32)
        self.dense_flat = self.csc_rows.astype(np.int64) * self.n + csc_cols  # row-major flat index
        self.dense = self.n <= DENSE_MAX
        self._perm_c: np.ndarray | None = None
        self._perm_data: np.ndarray | None = None
        self._perm_rows: np.ndarray | None = None
        self._perm_indptr: np.ndarray | None = None

    def assemble(self, values: np.ndarray) -> np.ndarray:
        """Slot values (nnz,) from source values (m,)."""
        return np.bincount(self.slot, weights=values, minlength=self.nnz)

    def to_dense(self, data: np.ndarray) -> np.ndarray:
        """Dense (n, n) matrix from slot values."""
        out = np.zeros(self.n * self.n)
        out[self.dense_flat] = data
        return out.reshape(self.n, self.n)

    def to_csc(self, data: np.ndarray) -> scipy.sparse.csc_matrix:
        """Sparse CSC matrix from slot values."""
        return scipy.sparse.csc_matrix((data, self.csc_rows, self.indptr), shape=(self.n, self.n))

    def factorize(self, data: np.ndarray) -> Factorization:
        """LU factorisation of the matrix with these slot values."""
        if self.dense:
            return DenseFactorization(self.to_dense(data))
        return self._sparse_factorization(data)

    def _sparse_factorization(self, data: np.ndarray) -> Factorization:
        if self._perm_c is None:
            lu = scipy.sparse.linalg.splu(self.to_csc(data), permc_spec="COLAMD")
            self._set_column_order(lu.perm_c)
            return SparseFactorization(lu, None)
        mat = scipy.sparse.csc_matrix(
            (data[self._perm_data], self._perm_rows, self._perm_indptr), shape=(self.n, self.n)
        )
        lu = scipy.sparse.linalg.splu(mat, permc_spec="NATURAL")
        return SparseFactorization(lu, self._perm_c)

    def _set_column_order(self, perm_c: np.ndarray) -> None:
        # SuperLU's perm_c maps column j of A to column perm_c[j] of A Pc; the
        # permuted matrix's column k is A's column order[k].
        order = np.argsort(perm_c)
        counts = np.diff(self.indptr)[order]
        self._perm_indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        self._perm_data = np.concatenate([np.arange(self.indptr[c], self.indptr[c + 1]) for c in order])
        self._perm_rows = self.csc_rows[self._perm_data]
        self._perm_c = order


class Factorization:
    """A factorised Newton matrix: solve A x = b (and A^T x = b)."""

    def solve(self, b: np.ndarray, transpose: bool = False) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError


class DenseFactorization(Factorization):
    def __init__(self, matrix: np.ndarray):
        self.matrix = matrix
        self.lu = scipy.linalg.lu_factor(matrix, check_finite=False)

    def solve(self, b: np.ndarray, transpose: bool = False) -> np.ndarray:
        return scipy.linalg.lu_solve(self.lu, b, trans=1 if transpose else 0, check_finite=False)


class SparseFactorization(Factorization):
    def __init__(self, lu, order: np.ndarray | None):
        self.lu = lu
        self.order = order  # columns were permuted: unknown order[k] is solved as k

    def solve(self, b: np.ndarray, transpose: bool = False) -> np.ndarray:
        if self.order is None:
            return self.lu.solve(b, trans="T" if transpose else "N")
        # The factorised matrix is A P, whose column k is A's column order[k].
        if transpose:
            # (A P)^T y = P^T b  <=>  A^T y = b; (P^T b)_k = b[order[k]].
            return self.lu.solve(b[self.order], trans="T")
        y = self.lu.solve(b)  # A P y = b  ->  x = P y, x[order[k]] = y[k]
        out = np.empty_like(y)
        out[self.order] = y
        return out
