"""Array models: a MILP as plain arrays (:class:`MatrixModel`) and its sparse matrix (:class:`CscArrays`).

The model builders (:mod:`~goodopt.formulations.config_matrix`,
:mod:`~goodopt.formulations.node_patterns`) fill these; the solver adapters
hand them to HiGHS as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from goodopt.arrays import Array


@dataclass(frozen=True, eq=False)
class MatrixModel:
    """A maximisation MILP ``max cost x  s.t.  row_lower <= A x <= row_upper, lower <= x <= upper``.

    ``integer`` marks integer columns; ``names`` labels each row's family
    (e.g. ``"R2"``) for reports. ``n_configs`` columns come first (z), then the
    objective's own columns. Shapes: cost, lower, upper, integer (n,); A (m, n)
    in compressed-column form; row_lower, row_upper (m,).
    """

    cost: Array
    lower: Array
    upper: Array
    integer: Array
    A: CscArrays
    row_lower: Array
    row_upper: Array
    names: tuple[str, ...]
    n_configs: int
    epigraph: bool
    pattern_types: tuple[int, ...] = ()
    aggregate_types: tuple[int, ...] = ()

    @property
    def n_columns(self) -> int:
        return len(self.cost)

    @property
    def n_rows(self) -> int:
        return self.A.shape[0]


@dataclass(frozen=True, eq=False)
class CscArrays:
    """A sparse matrix in compressed-column form (HiGHS's and scipy's ``indptr``, ``indices``, ``data``).

    Built with numpy alone: scipy.sparse costs about 0.6 s to import, more than a 64-GPU solve.
    """

    indptr: Array
    indices: Array
    data: Array
    shape: tuple[int, int]

    @classmethod
    def from_triplets(cls, rows: Array, cols: Array, vals: Array, shape: tuple[int, int]) -> CscArrays:
        """Duplicates (same row and column) are summed. Shapes: rows, cols, vals (nnz,)."""
        m, n = shape
        key = cols * max(m, 1) + rows
        uniq, inverse = np.unique(key, return_inverse=True)
        data = np.bincount(inverse, weights=vals, minlength=len(uniq))
        ucols, urows = uniq // max(m, 1), uniq % max(m, 1)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(ucols, minlength=n))]).astype(np.int64)
        return cls(indptr=indptr, indices=urows.astype(np.int64), data=data, shape=(m, n))
