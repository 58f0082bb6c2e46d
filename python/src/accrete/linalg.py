"""ScaLAPACK on assembled ConvergentMatrix objects, in place on their local
storage (accrete/matrix/linalg.hpp, shared with the C++ demo). Collective
over the matrices' grid; the matrices must share a grid (built with the same
grid=). Call after commit(). A ScaLAPACK failure raises RuntimeError naming
INFO; mismatched shapes or grids raise ValueError."""
from __future__ import annotations

import numpy as np

from . import _accrete

__all__ = ["posv", "gesv", "syevd", "gemm", "norm", "add_to_diagonal"]


def _same_dtype(*ms):
    if len({m.dtype for m in ms}) != 1:
        raise TypeError("accrete.linalg: the matrices have different dtypes: " + ", ".join(str(m.dtype) for m in ms))


def posv(A, B) -> None:
    """Solves A X = B, A symmetric positive definite (upper triangle read):
    A becomes its Cholesky factor, B becomes X."""
    _same_dtype(A, B)
    _accrete.linalg.posv(A._m, B._m)


def gesv(A, B) -> None:
    """Solves A X = B by LU with partial pivoting: A becomes its factors, B becomes X."""
    _same_dtype(A, B)
    _accrete.linalg.gesv(A._m, B._m)


def syevd(A, Z) -> np.ndarray:
    """Eigenvalues (ascending, every process) of symmetric A (upper triangle
    read, then destroyed); eigenvectors into Z. Square blocks required."""
    _same_dtype(A, Z)
    return _accrete.linalg.syevd(A._m, Z._m)[:, 0]


def gemm(transa: str, transb: str, alpha, A, B, beta, C) -> None:
    """C = alpha op(A) op(B) + beta C, op 'N' (as is) or 'T' (transposed)."""
    _same_dtype(A, B, C)
    _accrete.linalg.gemm(transa, transb, alpha, A._m, B._m, beta, C._m)


def norm(which: str, A) -> float:
    """'1' (largest absolute column sum), 'I' (row sum), 'F' (Frobenius) or 'M' (largest |a_ij|)."""
    return _accrete.linalg.norm(which, A._m)


def add_to_diagonal(A, alpha) -> None:
    """A += alpha I (local: each process updates the diagonal it owns)."""
    _accrete.linalg.add_to_diagonal(A._m, alpha)
