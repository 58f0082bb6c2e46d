"""accrete for Python: asynchronous assembly of distributed matrices
(ConvergentMatrix, dense; SparseMatrix, finite-element style) and
one-sided distributed arrays (DistArray, Counter) over MPI, with numpy
arrays in and out and mpi4py alongside.

    import numpy as np, accrete
    accrete.init()                       # MPI as mpi4py set it up; finalized at exit
    H = accrete.ConvergentMatrix(1000, 1000, dtype=np.float64)
    H.update(block, rows, cols)          # H[rows, cols] += block, from any process
    H.commit()                           # collective: every update everywhere applied

Semantics are those of the C++ classes (docs/semantics.md). Errors: a bad
value (index, shape, size) raises ValueError, a wrong dtype or a
non-contiguous array TypeError (never a silent conversion), anything else
RuntimeError.
"""
from __future__ import annotations

import atexit
from typing import Optional, Sequence, Tuple, Union

import numpy as np

from . import _accrete
from ._accrete import workload  # noqa: F401  (the hessian benchmark workload)

__all__ = [
    "init", "finalize", "initialized", "rank_me", "rank_n", "barrier", "world_comm",
    "ConvergentMatrix", "SparseMatrix", "DistArray", "Counter", "Handle", "linalg", "workload", "mpi_flavor", "__version__",
]

mpi_flavor: str = _accrete.mpi_flavor
#: accrete's version (also the C header's ACCRETE_VERSION_* and CMake's).
__version__: str = _accrete.__version__

_MATRIX_TYPES = {np.dtype(np.float32): _accrete.ConvergentMatrixF32, np.dtype(np.float64): _accrete.ConvergentMatrixF64,
                 np.dtype(np.complex64): _accrete.ConvergentMatrixC64,
                 np.dtype(np.complex128): _accrete.ConvergentMatrixC128}
_SPARSE_TYPES = {np.dtype(np.float32): _accrete.SparseMatrixF32, np.dtype(np.float64): _accrete.SparseMatrixF64,
                 np.dtype(np.complex64): _accrete.SparseMatrixC64, np.dtype(np.complex128): _accrete.SparseMatrixC128}
_ARRAY_TYPES = {
    np.dtype(np.float32): _accrete.DistArrayF32,
    np.dtype(np.float64): _accrete.DistArrayF64,
    np.dtype(np.complex64): _accrete.DistArrayC64,
    np.dtype(np.complex128): _accrete.DistArrayC128,
    np.dtype(np.int32): _accrete.DistArrayI32,
    np.dtype(np.int64): _accrete.DistArrayI64,
}


def _check_mpi4py() -> None:
    """mpi4py must run on the MPI accrete was built for: two MPI libraries in
    one process corrupt each other long before anything reports it."""
    from mpi4py import MPI

    lib = MPI.Get_library_version()
    theirs = "openmpi" if "Open MPI" in lib else "mpich" if "MPICH" in lib else lib.split("\n")[0]
    if theirs != mpi_flavor:
        raise ImportError(
            f"accrete was built for {mpi_flavor} but mpi4py uses {theirs}. Rebuild accrete with "
            f"MPI={theirs} pip install ., or install an mpi4py built for {mpi_flavor} "
            f"(MPICC=mpicc.{mpi_flavor} pip install --no-binary mpi4py mpi4py)."
        )


_check_mpi4py()


def init(comm=None) -> None:
    """Collective over MPI_COMM_WORLD: starts the runtime (MPI is initialised
    by mpi4py on import; accrete never finalizes it). `comm` may be None or
    MPI.COMM_WORLD: accrete spans the world. finalize() runs at exit."""
    from mpi4py import MPI

    if comm is not None and comm != MPI.COMM_WORLD and MPI.Comm.Compare(comm, MPI.COMM_WORLD) not in (
        MPI.IDENT, MPI.CONGRUENT,
    ):
        raise ValueError("accrete.init: comm must be None or MPI.COMM_WORLD (accrete spans every process)")
    if not MPI.Is_initialized():
        MPI.Init()
    _accrete.init()
    atexit.register(_finalize_at_exit)


def _finalize_at_exit() -> None:
    if _accrete.initialized():
        finalize()


def finalize() -> None:
    """Collective: waits for outstanding operations and stops the runtime.
    Objects still alive raise RuntimeError on use afterwards."""
    _grids.clear()
    _accrete.finalize()


initialized = _accrete.initialized
rank_me = _accrete.rank_me
rank_n = _accrete.rank_n


def barrier() -> None:
    """Collective over every process (releases the GIL while waiting)."""
    _accrete.barrier()


def world_comm():
    """accrete's world communicator as an mpi4py Comm (a duplicate of
    MPI_COMM_WORLD that accrete owns: do not free it)."""
    from mpi4py import MPI

    return MPI.Comm.f2py(_accrete.world_comm_f())


def _prepare(what, prepare):
    """Runs this process's own checks and conversions before a collective
    constructor. If they fail, the process still takes part in the
    constructor's agreement (the others then raise too, naming this rank,
    instead of waiting for it), then raises its own error."""
    try:
        return prepare()
    except Exception as e:
        if _accrete.initialized():
            _accrete.reject(what, f"{what}: {type(e).__name__}: {e}")
        raise


def _typed(table, dtype, what):
    try:
        return table[np.dtype(dtype)]
    except (KeyError, TypeError):
        names = ", ".join(str(d) for d in table)
        raise TypeError(f"{what}: dtype {dtype!r} is not one of {names}") from None


_grids: dict = {}


def _block(x, dtype, what):
    """`x` as an array of `dtype`: an ndarray of another dtype is refused (no
    silent copy of a large block), other array-likes are converted once."""
    if isinstance(x, np.ndarray):
        if x.dtype != dtype:
            raise TypeError(f"{what}: the block's dtype is {x.dtype}, this object holds {np.dtype(dtype)} "
                            f"(convert it with .astype(np.{np.dtype(dtype).name}))")
        return x
    return np.asarray(x, dtype=dtype)


def _indices(ix, what, name):
    """Any integer sequence or array-like as int32/int64 indices, converted once."""
    if isinstance(ix, np.ndarray) and ix.dtype in (np.int32, np.int64) and ix.ndim == 1:
        return ix
    a = np.asarray(ix)
    if a.ndim != 1:
        raise TypeError(f"{what}: {name} must be one-dimensional, got shape {a.shape}")
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"{what}: {name} must be integers, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.int64)


class ConvergentMatrix:
    """A dense m x n matrix (float32, float64, complex64 or complex128), 2D block-cyclic over a
    pr x pc grid of all processes (default: as square as P allows) with
    mb x nb blocks, assembled by asynchronous indexed-slice += updates.

    Matrices with the same grid share one BLACS context, so accrete.linalg
    can combine them.

    reproducible=True: the committed matrix is bitwise identical for the
    same multiset of updates, whatever P, grid, blocks, strategy, threads
    or arrival order: each element is its exact sum rounded once
    (docs/semantics.md, "Reproducible assembly").

    merge="max" or "min": updates combine as A = max(A, v) or min(A, v)
    instead of A += v (NaN wins, -0 < +0: order-independent; real dtypes).

    atomic_updates=True: each update's contribution to one process's part
    is applied as one unit with respect to every other update and to
    snapshot_local() (docs/semantics.md, "Whole-update atomicity").

    Complex matrices are Hermitian for fill_lower (the lower triangle gets
    conjugates), symmetrize ((A + A^H) / 2) and linalg.posv."""

    def __init__(self, m: int, n: int, dtype=np.float64, grid: Optional[Tuple[int, int]] = None,
                 block: Tuple[int, int] = (64, 64), strategy: str = "packets", buffer_cap: int = 64 << 20,
                 reproducible: bool = False, merge: str = "sum", atomic_updates: bool = False):
        def prepare():
            cls = _typed(_MATRIX_TYPES, dtype, "ConvergentMatrix")
            key = tuple(int(x) for x in grid) if grid is not None else (0, 0)
            if key not in _grids:
                _grids[key] = _accrete.Grid(*key)
            return cls, (int(m), int(n), _grids[key], int(block[0]), int(block[1]), str(strategy), int(buffer_cap),
                         bool(reproducible), str(merge), bool(atomic_updates))

        cls, args = _prepare("ConvergentMatrix", prepare)
        self._m = cls(*args)
        self.dtype = np.dtype(dtype)

    shape = property(lambda self: self._m.shape)
    grid = property(lambda self: self._m.grid)

    def update(self, block: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> None:
        """A[rows[i], cols[j]] += block[i, j]. block: C or Fortran order of the
        matrix's dtype; rows, cols: int32 or int64. Releases the GIL, so several
        threads may update at once. The block may be reused on return. Any
        integer sequence works for rows and cols (converted once)."""
        w = "ConvergentMatrix.update"
        self._m.update(_block(block, self.dtype, w), _indices(rows, w, "rows"), _indices(cols, w, "cols"))

    def update_symmetric(self, block: np.ndarray, ix: np.ndarray) -> None:
        """For ix[i] <= ix[j] only: A[ix[i], ix[j]] += block[i, j] (the upper triangle)."""
        w = "ConvergentMatrix.update_symmetric"
        self._m.update_symmetric(_block(block, self.dtype, w), _indices(ix, w, "ix"))

    def commit(self) -> None:
        """Collective: ends the round; every update issued before it, anywhere, is applied."""
        self._m.commit()

    def reopen(self) -> None:
        self._m.reopen()

    def reset(self) -> None:
        """Collective, between rounds: every element becomes zero."""
        self._m.reset()

    def fill_lower(self) -> None:
        self._m.fill_lower()

    def symmetrize(self) -> None:
        self._m.symmetrize()

    def get(self, i: int, j: int):
        """One element, read from its owner."""
        return self._m.get(i, j)

    def snapshot_local(self) -> np.ndarray:
        """A copy of this process's part (lld x local columns, Fortran order),
        taken while no update is being applied to it: with atomic_updates it
        holds each update's contribution to this part entirely or not at all.
        Non-collective; callable during a round."""
        return self._m.snapshot_local()

    @property
    def local(self) -> np.ndarray:
        """This process's part: a zero-copy view (Fortran order, leading
        dimension lld). Writing to it changes the matrix."""
        return self._m.local

    def local_indices(self) -> Tuple[np.ndarray, np.ndarray]:
        """(rows, cols): int64 arrays of the global indices of this process's
        part, so that local[i, j] is A[rows[i], cols[j]] (and
        A[np.ix_(rows, cols)] is local). Non-collective."""
        r, c = self._m.local_indices()
        return np.asarray(r, dtype=np.int64), np.asarray(c, dtype=np.int64)

    def descriptor(self) -> list:
        """The ScaLAPACK descriptor (collective on a grid's first call)."""
        return list(self._m.descriptor())

    def save(self, path: str) -> None:
        self._m.save(path)

    def load(self, path: str) -> None:
        self._m.load(path)

    def stats(self) -> dict:
        return self._m.stats()

    def to_numpy(self, root: int = 0) -> Optional[np.ndarray]:
        """Collective: the whole matrix on `root` (None elsewhere). For small matrices."""
        return self._m.to_numpy(root)


class SparseMatrix:
    """A distributed sparse matrix (float32, float64, complex64 or complex128)
    assembled from asynchronous indexed-slice updates, an element matrix per
    call (accrete/sparse/sparse_matrix.hpp; docs/semantics.md, "sparse_matrix").

    Collective. Each process owns `local_rows` consecutive rows and
    `local_cols` "diagonal" columns, in rank order (PETSc's MPIAIJ ownership):
    rows [row_range[0], row_range[1]). Round 0 (until the first commit)
    discovers the nonzero pattern; the first commit freezes it, unless
    growing_pattern=True. Later rounds (reset() or reopen(), updates,
    commit()) add into its slots; an entry outside a frozen pattern raises.

    reproducible=True: every stored value is the exact sum of its
    contributions rounded once, the same bits for any P, partition, thread
    count or arrival order. merge="max"/"min": A = max(A, v) (real dtypes).
    cache_slots (default True): an own-row update repeated in the next
    round at the same position of the sequence adds without a search.

    After a commit, this process's rows are two CSR blocks, the layout of
    PETSc's MatCreateMPIAIJWithSplitArrays: block("diag") (columns local to
    col_range) and block("offdiag") (columns indexing col_map()). They are
    views of the matrix's own arrays, valid until the next commit or reset;
    writing to the values changes the matrix. scipy_block() wraps a block
    as a scipy.sparse.csr_matrix over the same values; local_csr(),
    to_scipy() and to_petsc4py() copy the rows out with global columns."""

    def __init__(self, local_rows: int, local_cols: int, dtype=np.float64, strategy: str = "packets",
                 buffer_cap: int = 64 << 20, reproducible: bool = False, merge: str = "sum",
                 growing_pattern: bool = False, cache_slots: bool = True):
        def prepare():
            cls = _typed(_SPARSE_TYPES, dtype, "SparseMatrix")
            return cls, (int(local_rows), int(local_cols), str(strategy), int(buffer_cap), bool(reproducible),
                         str(merge), bool(growing_pattern), bool(cache_slots))

        cls, args = _prepare("SparseMatrix", prepare)
        self._m = cls(*args)
        self.dtype = np.dtype(dtype)

    shape = property(lambda self: self._m.shape)
    #: (first, one past the last) row of this process
    row_range = property(lambda self: self._m.row_range)
    #: (first, one past the last) diagonal column of this process
    col_range = property(lambda self: self._m.col_range)
    round = property(lambda self: self._m.round)
    pattern_frozen = property(lambda self: self._m.pattern_frozen)
    #: stored entries of this process's rows (both blocks)
    local_nnz = property(lambda self: self._m.local_nnz)

    def update(self, block: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> None:
        """A[rows[i], cols[j]] op= block[i, j], global indices (may repeat).
        block: C or Fortran order of the matrix's dtype. Releases the GIL, so
        several threads may update at once. The block may be reused on return."""
        w = "SparseMatrix.update"
        self._m.update(_block(block, self.dtype, w), _indices(rows, w, "rows"), _indices(cols, w, "cols"))

    def commit(self) -> None:
        """Collective: ends the round (every update issued anywhere is applied);
        lays out or extends the pattern. Raises RuntimeError on every process,
        naming the entry, if an update fell outside a frozen pattern."""
        self._m.commit()

    def reopen(self) -> None:
        """This process is done reading; the next round's contributions may land."""
        self._m.reopen()

    def reset(self) -> None:
        """Collective, between rounds: every stored value becomes zero; the pattern stays."""
        self._m.reset()

    def get(self, i: int, j: int):
        """The stored A[i, j] of a row of this process (zero outside the pattern)."""
        return self._m.get(i, j)

    def block(self, which: str = "diag") -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr int64, indices int32, data) of this process's rows in the
        diagonal columns ("diag", indices local: global - col_range[0]) or the
        others ("offdiag", indices into col_map()). Zero-copy views, valid
        until the next commit or reset; indptr and indices are read-only."""
        if which not in ("diag", "offdiag"):
            raise ValueError(f"SparseMatrix.block: which = {which!r} is neither 'diag' nor 'offdiag'")
        return self._m.block(which == "offdiag")

    def col_map(self) -> np.ndarray:
        """The ascending global columns of the off-diagonal block (a read-only view)."""
        return self._m.col_map()

    def scipy_block(self, which: str = "diag"):
        """block(which) as a scipy.sparse.csr_matrix whose data is the
        matrix's own value array (writes go through; scipy may copy the index
        arrays to one integer type). Shape: local rows x local diagonal
        columns, or x len(col_map()). Valid until the next commit or reset."""
        import scipy.sparse

        indptr, indices, data = self.block(which)
        ncols = self.col_range[1] - self.col_range[0] if which == "diag" else len(self.col_map())
        A = scipy.sparse.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, ncols), copy=False)
        A.has_sorted_indices = True
        return A

    def local_csr(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A copy of this process's rows as (indptr int64, indices int64, data)
        with global columns, ascending in each row (both blocks merged)."""
        dp, dc, dv = self.block("diag")
        op, oc, ov = self.block("offdiag")
        nl = len(dp) - 1
        rows = np.concatenate([np.repeat(np.arange(nl), np.diff(dp)), np.repeat(np.arange(nl), np.diff(op))])
        cols = np.concatenate([dc.astype(np.int64) + self.col_range[0], self.col_map()[oc]])
        order = np.lexsort((cols, rows))
        indptr = np.zeros(nl + 1, dtype=np.int64)
        np.cumsum(np.diff(dp) + np.diff(op), out=indptr[1:])
        return indptr, cols[order], np.concatenate([dv, ov])[order]

    def to_scipy(self):
        """A copy of this process's rows as a scipy.sparse.csr_matrix with global
        columns: shape (local rows, N). Stored zeros stay entries."""
        import scipy.sparse

        indptr, indices, data = self.local_csr()
        return scipy.sparse.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, self.shape[1]))

    def to_petsc4py(self):
        """Collective: the matrix as a petsc4py MPIAIJ Mat (PETSc's row and
        diagonal-column ownership are this matrix's), its values copied
        (petsc4py has no constructor over split CSR arrays; in C++,
        accrete/sparse/petsc.hpp hands the matrix over without a copy). Needs
        petsc4py built for the same MPI and scalar type."""
        from petsc4py import PETSc

        if np.dtype(PETSc.ScalarType) != self.dtype:
            raise TypeError(f"SparseMatrix.to_petsc4py: PETSc's scalar type is {np.dtype(PETSc.ScalarType)}, "
                            f"this matrix holds {self.dtype}")
        indptr, indices, data = self.local_csr()
        it = PETSc.IntType
        nl, nc = len(indptr) - 1, self.col_range[1] - self.col_range[0]
        M = PETSc.Mat().createAIJ(size=((nl, self.shape[0]), (nc, self.shape[1])),
                                  csr=(indptr.astype(it), indices.astype(it), data), comm=world_comm())
        M.assemble()
        return M

    def stats(self) -> dict:
        return self._m.stats()


def _patch(key, shape) -> Tuple[int, int, int, int, bool]:
    """(r0, r1, c0, c1, scalar) of A[key] for integer or unit-step slice keys."""
    if not isinstance(key, tuple) or len(key) != 2:
        raise ValueError("DistArray: index with two keys, A[i, j] or A[i0:i1, j0:j1]")
    out = []
    scalar = True
    for k, n, name in ((key[0], shape[0], "row"), (key[1], shape[1], "column")):
        if isinstance(k, slice):
            lo, hi, step = k.indices(n)
            if step != 1:
                raise ValueError(f"DistArray: {name} slice step {k.step} (only 1 is supported)")
            out += [lo, max(lo, hi)]
            scalar = False
        else:
            i = int(k)
            if i < 0:
                i += n
            out += [i, i + 1]
    return out[0], out[1], out[2], out[3], scalar


class Handle:
    """A non-blocking operation: wait() returns once the buffer may be reused
    (put, acc) or holds the data (get). It keeps the buffer alive until then."""

    def __init__(self, buf):
        self._buf = buf

    def wait(self):
        return self._buf

    def test(self) -> bool:
        return True


class DistArray:
    """A rows x cols array (float32/64, complex64/128, int32/64) dealt over
    every process, with one-sided put/get/acc on patches (Global Arrays).

    distribution: "block" (default), "irregular" (row_bounds, col_bounds:
    ascending boundaries from 0 to rows / cols), "block_cyclic" (block =
    (mb, nb)) or "element_cyclic". grid = (pr, pc), default as square as P
    allows.

    A[i0:i1, j0:j1] reads a patch (a new Fortran-order array, with the data),
    A[i0:i1, j0:j1] = x writes one (returns once x may be reused; visible to
    others after flush() and a barrier, or sync()). acc adds, atomically per
    element with respect to every other acc."""

    def __init__(self, rows: int, cols: int, dtype=np.float64, distribution: str = "block",
                 grid: Optional[Tuple[int, int]] = None, block: Tuple[int, int] = (64, 64),
                 row_bounds: Sequence[int] = (), col_bounds: Sequence[int] = ()):
        def prepare():
            cls = _typed(_ARRAY_TYPES, dtype, "DistArray")
            pr, pc = (int(x) for x in grid) if grid is not None else (0, 0)
            return cls, (str(distribution), int(rows), int(cols), pr, pc, int(block[0]), int(block[1]),
                         [int(x) for x in row_bounds], [int(x) for x in col_bounds])

        cls, args = _prepare("DistArray", prepare)
        self._a = cls(*args)
        self.dtype = np.dtype(dtype)

    shape = property(lambda self: self._a.shape)

    def locate(self, i: int, j: int) -> int:
        return self._a.locate(i, j)

    def __getitem__(self, key):
        r0, r1, c0, c1, scalar = _patch(key, self.shape)
        out = self._a.get(r0, r1, c0, c1)
        return out[0, 0] if scalar else out

    def __setitem__(self, key, value) -> None:
        r0, r1, c0, c1, _ = _patch(key, self.shape)
        if np.isscalar(value):
            value = np.full((r1 - r0, c1 - c0), value, dtype=self.dtype, order="F")
        self._a.put(r0, r1, c0, c1, np.asarray(value, dtype=self.dtype))  # numpy's assignment casting

    def get(self, patch, out: Optional[np.ndarray] = None) -> np.ndarray:
        """patch = (r0, r1, c0, c1), half-open; into `out` (C or Fortran order) if given."""
        if out is None:
            return self._a.get(*patch)
        self._a.get_into(*patch, _block(out, self.dtype, "DistArray.get"))
        return out

    def put(self, patch, x: np.ndarray) -> None:
        self._a.put(*patch, _block(x, self.dtype, "DistArray.put"))

    def acc(self, patch, x: np.ndarray, alpha=1) -> None:
        """A[patch] += alpha * x."""
        self._a.acc(*patch, _block(x, self.dtype, "DistArray.acc"), alpha)

    def put_nb(self, patch, x: np.ndarray) -> Handle:
        x = _block(x, self.dtype, "DistArray.put_nb")
        self._a.put(*patch, x)
        return Handle(x)

    def get_nb(self, patch, out: Optional[np.ndarray] = None) -> Handle:
        return Handle(self.get(patch, out))

    def acc_nb(self, patch, x: np.ndarray, alpha=1) -> Handle:
        x = _block(x, self.dtype, "DistArray.acc_nb")
        self._a.acc(*patch, x, alpha)
        return Handle(x)

    def flush(self, rank: Optional[int] = None) -> None:
        """Remote completion of this process's puts and accs (to `rank`)."""
        if rank is None:
            self._a.flush()
        else:
            self._a.flush_rank(rank)

    def flush_local(self) -> None:
        self._a.flush_local()

    def sync(self) -> None:
        """Collective: every process's operations complete, then a barrier."""
        self._a.sync()

    def zero(self) -> None:
        self._a.zero()

    def fill(self, value) -> None:
        self._a.fill(value)

    def scale(self, alpha) -> None:
        self._a.scale(alpha)

    def norm(self) -> float:
        return self._a.norm()

    def dot(self, other: "DistArray"):
        return self._a.dot(other._a)

    def local_indices(self) -> Tuple[np.ndarray, np.ndarray]:
        """(rows, cols): int64 arrays of the global indices of this process's
        part, so that access()[i, j] is A[rows[i], cols[j]]. Non-collective."""
        r, c = self._a.local_indices()
        return np.asarray(r, dtype=np.int64), np.asarray(c, dtype=np.int64)

    def access(self) -> np.ndarray:
        """This process's part as a zero-copy view; end with release() or
        release_update() (after writing to it)."""
        return self._a.access()

    def release(self) -> None:
        self._a.release()

    def release_update(self) -> None:
        self._a.release_update()

    def save(self, path: str) -> None:
        self._a.save(path)

    def load(self, path: str) -> None:
        self._a.load(path)


class Counter:
    """One global 64-bit integer (NGA_Read_inc): fetch_add(n) returns the value
    before adding. Construction and reset() are collective."""

    def __init__(self, initial: int = 0):
        self._c = _accrete.Counter(_prepare("Counter", lambda: int(initial)))

    def fetch_add(self, n: int = 1) -> int:
        return self._c.fetch_add(n)

    def reset(self, value: int = 0) -> None:
        self._c.reset(value)


from . import linalg  # noqa: E402  (needs the classes above)
