"""accrete.SparseMatrix under mpiexec -n P: every process builds every
process's elements, so each checks its own rows exactly against a dense
reference: the CSR views, the scipy view (writes go through) and copies (local_csr, scipy,
a petsc4py Mat where petsc4py is installed),
rounds on the frozen pattern, a growing pattern, reproducible sums against
math.fsum, and errors."""
import math

import numpy as np
import pytest
from mpi4py import MPI

import accrete

ME, P = accrete.rank_me(), accrete.rank_n()
NE = 4  # unknowns per element


def local_rows_of(p):
    return 0 if (P >= 3 and p == 1) else 4 + p % 3  # uneven; rank 1 empty at P >= 3


M = sum(local_rows_of(p) for p in range(P))
R0 = sum(local_rows_of(p) for p in range(ME))
R1 = R0 + local_rows_of(ME)


def elements(p, round_=0, exact=True):
    """Process p's elements: NE rows in [1, M - 1) (repeats allowed; rows 0
    and M - 1 stay empty) and an NE x NE block; multiples of 0.25 when
    `exact`, else values whose sums round."""
    rng = np.random.RandomState(1000 + p)
    out = []
    for _ in range(25):
        ix = rng.randint(1, M - 1, size=NE).astype(np.int64)
        if exact:
            B = 0.25 * rng.randint(1, 14, size=(NE, NE)) * (round_ + 1)
        else:
            B = rng.uniform(-1, 1, size=(NE, NE)) * 10.0 ** rng.randint(-8, 9, size=(NE, NE))
        out.append((ix, B))
    return out


def reference(round_=0):
    """Dense rows [R0, R1) x M, and which entries were touched."""
    ref = np.zeros((R1 - R0, M))
    touched = np.zeros((R1 - R0, M), dtype=bool)
    for p in range(P):
        for ix, B in elements(p, round_):
            for a in range(NE):
                if R0 <= ix[a] < R1:
                    np.add.at(ref[ix[a] - R0], ix, B[a, :])  # ix may repeat
                    touched[ix[a] - R0, ix] = True
    return ref, touched


def from_blocks(A):
    """The dense own rows, and the stored-entry mask, from the CSR views."""
    got = np.zeros((R1 - R0, M), dtype=A.dtype)
    stored = np.zeros((R1 - R0, M), dtype=bool)
    c0, c1 = A.col_range
    cmap = A.col_map()
    for which in ("diag", "offdiag"):
        indptr, indices, data = A.block(which)
        assert indptr.dtype == np.int64 and indices.dtype == np.int32 and data.dtype == A.dtype
        assert len(indptr) == R1 - R0 + 1 and indptr[-1] == len(data)
        for i in range(R1 - R0):
            cols = indices[indptr[i]:indptr[i + 1]]
            assert np.all(np.diff(cols) > 0)  # ascending
            glob = cols + c0 if which == "diag" else cmap[cols]
            inside = (glob >= c0) & (glob < c1)
            assert inside.all() if which == "diag" else not inside.any()
            assert not np.any(stored[i, glob])
            got[i, glob] = data[indptr[i]:indptr[i + 1]]
            stored[i, glob] = True
    return got, stored


@pytest.mark.parametrize("dtype", [np.float64, np.complex64])
def test_rounds_on_the_frozen_pattern(dtype):
    A = accrete.SparseMatrix(local_rows_of(ME), local_rows_of(ME), dtype=dtype)
    assert A.shape == (M, M) and A.row_range == (R0, R1)
    for round_ in range(3):
        if round_:
            A.reset()
        for k, (ix, B) in enumerate(elements(ME, round_)):
            block = (B - 0.5j * B).astype(dtype) if np.iscomplexobj(np.zeros(1, dtype)) else B.astype(dtype)
            A.update(block if k % 2 else np.asfortranarray(block), ix, ix)  # both orders
        A.commit()
        assert A.pattern_frozen and A.round == round_ + 1
        ref, touched = reference(round_)
        want = (ref - 0.5j * ref).astype(dtype) if np.iscomplexobj(np.zeros(1, dtype)) else ref
        got, stored = from_blocks(A)
        assert np.array_equal(stored, touched)
        assert np.array_equal(got, want)
        assert A.local_nnz == touched.sum()
        for i in range(R0, R1):
            assert A.get(i, M // 2) == want[i - R0, M // 2]
    # An entry outside the frozen pattern, on every process (row 0 is one
    # process's own row, another's remote row): nothing applied anywhere.
    A.reset()
    with pytest.raises(RuntimeError, match=r"\(row 0, column 0\).*not in the frozen pattern"):
        A.update(np.ones((1, 1), dtype=dtype), [0], [0])
    A.commit()
    got, _ = from_blocks(A)
    assert not got.any()


def test_scipy_view_and_copy():
    scipy_sparse = pytest.importorskip("scipy.sparse")
    A = accrete.SparseMatrix(local_rows_of(ME), local_rows_of(ME))
    for ix, B in elements(ME):
        A.update(B, ix, ix)
    A.commit()
    ref, touched = reference()
    c0, c1 = A.col_range
    D = A.scipy_block("diag")
    assert isinstance(D, scipy_sparse.csr_matrix) and D.shape == (R1 - R0, c1 - c0)
    assert np.array_equal(D.toarray(), ref[:, c0:c1])
    O = A.scipy_block("offdiag")
    assert O.shape == (R1 - R0, len(A.col_map()))
    if O.shape[1]:
        assert np.array_equal(O.toarray(), ref[:, A.col_map()])
    C = A.to_scipy()
    assert C.shape == (R1 - R0, M) and C.nnz == touched.sum()
    assert np.array_equal(C.toarray(), ref)
    # The view's data is the matrix's: a write shows in get().
    if D.nnz:
        i = int(np.searchsorted(D.indptr, 0, side="right")) - 1
        j = int(D.indices[D.indptr[i]])
        D.data[D.indptr[i]] = 42.0
        assert A.get(R0 + i, c0 + j) == 42.0


def test_local_csr_and_petsc4py():
    A = accrete.SparseMatrix(local_rows_of(ME), local_rows_of(ME))
    for ix, B in elements(ME):
        A.update(B, ix, ix)
    A.commit()
    ref, touched = reference()
    indptr, indices, data = A.local_csr()
    got = np.zeros_like(ref)
    for i in range(R1 - R0):
        cols = indices[indptr[i]:indptr[i + 1]]
        assert np.all(np.diff(cols) > 0)
        assert np.array_equal(cols, np.nonzero(touched[i])[0])
        got[i, cols] = data[indptr[i]:indptr[i + 1]]
    assert np.array_equal(got, ref)
    pytest.importorskip("petsc4py.PETSc")  # Debian's python3-petsc4py (Open MPI); ./x deps does not install it
    P4 = A.to_petsc4py()
    assert P4.getSize() == A.shape and P4.getOwnershipRange() == (R0, R1)
    for i in range(R0, R1):
        cols, vals = P4.getRow(i)
        assert np.array_equal(cols, np.nonzero(touched[i - R0])[0])
        assert np.array_equal(vals, ref[i - R0, cols])
    x, y = P4.createVecs()
    x.set(1.0)
    P4.mult(x, y)  # the row sums, through PETSc's own communication
    assert np.array_equal(y.getArray(), ref.sum(axis=1))  # multiples of 1/4: exact in any order
    P4.destroy()


def test_growing_pattern():
    A = accrete.SparseMatrix(local_rows_of(ME), local_rows_of(ME), growing_pattern=True)
    for ix, B in elements(ME):
        A.update(B, ix, ix)
    A.commit()
    assert not A.pattern_frozen
    A.reopen()
    corners = np.array([0, M - 1])
    V = np.array([[1.5, 2.5], [3.5, 4.5]])
    if ME == 0:
        A.update(V, corners, corners)
    A.commit()
    ref, touched = reference()
    for a in range(2):
        if R0 <= corners[a] < R1:
            np.add.at(ref[corners[a] - R0], corners, V[a])
            touched[corners[a] - R0, corners] = True
    got, stored = from_blocks(A)
    assert np.array_equal(stored, touched)
    assert np.array_equal(got, ref)


def test_reproducible_is_the_exact_sum_rounded_once():
    A = accrete.SparseMatrix(local_rows_of(ME), local_rows_of(ME), reproducible=True)
    for ix, B in elements(ME, exact=False):
        A.update(B, ix, ix)
    A.commit()
    parts = {}
    for p in range(P):
        for ix, B in elements(p, exact=False):
            for a in range(NE):
                if R0 <= ix[a] < R1:
                    for b in range(NE):
                        parts.setdefault((int(ix[a]), int(ix[b])), []).append(B[a, b])
    rounded = 0
    for (i, j), xs in parts.items():
        assert A.get(i, j) == math.fsum(xs), (i, j)
        rounded += sum(xs) != math.fsum(xs)  # entries where a plain sum would differ
    assert MPI.COMM_WORLD.allreduce(rounded) > 0  # the check has teeth


def test_errors():
    with pytest.raises(TypeError, match="SparseMatrix: dtype"):
        accrete.SparseMatrix(2, 2, dtype=np.int32)
    with pytest.raises(ValueError, match="merge 'mean'"):
        accrete.SparseMatrix(2, 2, merge="mean")
    A = accrete.SparseMatrix(2, 2)
    with pytest.raises(ValueError, match="the block is 2 x 2 but there are 3 rows"):
        A.update(np.ones((2, 2)), [0, 1, 1], [0, 1])
    with pytest.raises(TypeError, match="dtype is float32"):
        A.update(np.ones((2, 2), dtype=np.float32), [0, 1], [0, 1])
    with pytest.raises(ValueError, match=str(2 * P)):
        A.update(np.ones((1, 1)), [2 * P], [0])
    A.update(np.ones((1, 1)), [2 * ME], [2 * ME])
    A.commit()
    with pytest.raises(ValueError, match="neither 'diag' nor 'offdiag'"):
        A.block("upper")
    with pytest.raises(ValueError, match="not in this process's rows"):
        A.get((2 * ME + 2) % (2 * P) if P > 1 else 5, 0)
    indptr, indices, _ = A.block("diag")
    assert not indptr.flags.writeable and not indices.flags.writeable
