"""The Python package under mpiexec -n P: exact results against numpy
references every process computes, threads with the GIL released, zero-copy
views, error mapping, linalg, and mpi4py calls between accrete calls."""
import threading

import numpy as np
import pytest
from mpi4py import MPI

import accrete

ME, P = accrete.rank_me(), accrete.rank_n()
COMM = MPI.COMM_WORLD


def contribution(p, m, n, dtype):
    """Process p's dense contribution to an m x n matrix (multiples of 0.25: sums are exact)."""
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    return (0.25 * ((i * 7 + j * 3 + p) % 11 + 1)).astype(dtype)


def reference(m, n, dtype):
    return sum(contribution(p, m, n, np.float64) for p in range(P)).astype(dtype)


def test_runtime_matches_mpi4py():
    assert ME == COMM.Get_rank() and P == COMM.Get_size()
    assert accrete.initialized()
    wc = accrete.world_comm()
    assert wc.Get_size() == P and wc.Get_rank() == ME
    # mpi4py between accrete calls, on both communicators.
    assert COMM.allreduce(1) == P
    assert wc.allreduce(ME) == P * (P - 1) // 2
    accrete.barrier()
    assert accrete.mpi_flavor in ("openmpi", "mpich")
    # One version: the extension's (from CMake) and the installed package's.
    from importlib.metadata import version
    assert accrete.__version__ == version("accrete")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_matrix_updates_exact(dtype, order, itype):
    m, n = 37, 29
    H = accrete.ConvergentMatrix(m, n, dtype=dtype, block=(4, 3), buffer_cap=4096)
    mine = contribution(ME, m, n, np.float64)
    # 5 x 4 tiles, the first row of each repeated with half the value each time.
    for r0 in range(0, m, 4):
        for c0 in range(0, n, 4):
            rows = np.arange(r0, min(r0 + 4, m))
            cols = np.arange(c0, min(c0 + 4, n))
            blk = mine[np.ix_(rows, cols)].copy()
            blk[0, :] *= 0.5
            rows = np.concatenate([rows, rows[:1]]).astype(itype)
            blk = np.vstack([blk, blk[:1]])
            H.update(np.array(blk, dtype=dtype, order=order), rows, cols.astype(itype))
    H.commit()
    full = H.to_numpy(root=0)
    if ME == 0:
        np.testing.assert_array_equal(full, reference(m, n, dtype))
    else:
        assert full is None
    assert H.get(m - 1, n - 1) == reference(m, n, dtype)[m - 1, n - 1]
    stats = H.stats()
    assert stats["updates"] > 0 and stats["elements"] > 0


def test_reproducible_same_bits_any_order_and_grid():
    """reproducible=True: the same multiset of updates, dealt to processes in
    two different ways and orders on two grids, gives the same bits; each
    random value (30 orders of magnitude) also arrives negated, so the exact
    sum is the payload, which the default mode generally misses."""
    m, n = 23, 17
    rng = np.random.default_rng(5)
    vals = rng.uniform(1, 2, (40, 3, 4)) * 10.0 ** rng.integers(-15, 16, (40, 3, 4)) * rng.choice([-1, 1], (40, 3, 4))
    rows = rng.integers(0, m, (40, 3))
    cols = rng.integers(0, n, (40, 4))
    payload = rng.uniform(1, 2, (m, n)) * 2.0 ** rng.integers(20, 41, (m, n))
    results = []
    for grid, deal in (((1, P), 0), ((P, 1), 1)):
        A = accrete.ConvergentMatrix(m, n, np.float64, grid=grid, block=(3, 2), reproducible=True)
        jobs = [(u, s) for u in range(40) for s in (1.0, -1.0) if (u * 7 + (s > 0) + deal) % P == ME]
        order = np.random.default_rng(ME + 10 * deal).permutation(len(jobs))
        for k in order:
            u, s = jobs[k]
            A.update(s * vals[u], rows[u], cols[u])
        if ME == deal % P:
            A.update(payload, np.arange(m), np.arange(n))
        A.commit()
        results.append(A.to_numpy(root=0))
    if ME == 0:
        assert results[0].tobytes() == results[1].tobytes()
        assert np.array_equal(results[0], payload)


@pytest.mark.parametrize("merge", ["max", "min"])
def test_merge_max_min(merge):
    m, n = 9, 7
    A = accrete.ConvergentMatrix(m, n, np.float64, block=(2, 3), merge=merge)
    A.local[...] = -np.inf if merge == "max" else np.inf
    accrete.barrier()  # before any process's updates reach this part
    vals = [np.arange(m * n, dtype=np.float64).reshape(m, n) * (p + 1) * (1 if p % 2 else -1) for p in range(P)]
    A.update(vals[ME], np.arange(m), np.arange(n))
    A.commit()
    full = A.to_numpy(root=0)
    if ME == 0:
        want = np.maximum.reduce(vals) if merge == "max" else np.minimum.reduce(vals)
        assert np.array_equal(full, want)
    with pytest.raises(ValueError):
        accrete.ConvergentMatrix(4, 4, merge="product")


def test_update_symmetric_and_fill_lower():
    n = 23
    S = accrete.ConvergentMatrix(n, n, dtype=np.float64, block=(4, 4))
    def ix_of(p):
        return np.array([(p * 5 + a * 4) % n for a in range(6)], dtype=np.int64)
    def blk_of(ix):
        return 0.25 * (1 + (ix[:, None] + ix[None, :]) % 5)
    S.update_symmetric(blk_of(ix_of(ME)), ix_of(ME))
    S.commit()
    S.fill_lower()
    want = np.zeros((n, n))
    for p in range(P):
        ix = ix_of(p)
        b = blk_of(ix)
        for a in range(6):
            for c in range(6):
                if ix[a] <= ix[c]:
                    want[ix[a], ix[c]] += b[a, c]
    want = np.triu(want) + np.triu(want, 1).T
    full = S.to_numpy()
    if ME == 0:
        np.testing.assert_array_equal(full, want)


def test_threads_update_with_gil_released():
    m = 64
    H = accrete.ConvergentMatrix(m, m, dtype=np.float64, block=(8, 8))
    nthreads, per = 4, 50

    def work(t):
        rng = np.random.default_rng(1000 * ME + t)
        for _ in range(per):
            ix = np.sort(rng.choice(m, size=6, replace=False)).astype(np.int64)
            H.update(np.full((6, 6), 0.25), ix, ix)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    H.commit()
    want = np.zeros((m, m))
    for p in range(P):
        for t in range(nthreads):
            rng = np.random.default_rng(1000 * p + t)
            for _ in range(per):
                ix = np.sort(rng.choice(m, size=6, replace=False))
                want[np.ix_(ix, ix)] += 0.25
    full = H.to_numpy()
    if ME == 0:
        np.testing.assert_array_equal(full, want)


def test_local_is_a_zero_copy_view():
    m, b = 20, 3
    H = accrete.ConvergentMatrix(m, m, dtype=np.float64, block=(b, b))
    H.commit()
    view = H.local
    assert np.shares_memory(view, H.local)
    view[...] = ME + 1  # writing through the view changes the matrix
    accrete.barrier()
    full = H.to_numpy()
    pr, pc = H.grid
    if ME == 0:
        i = np.arange(m)[:, None]
        j = np.arange(m)[None, :]
        owner = (i // b % pr) * pc + (j // b % pc)  # block-cyclic, row-major grid
        np.testing.assert_array_equal(full, owner + 1.0)
    desc = H.descriptor()
    assert desc[2] == m and desc[3] == m and desc[8] == H._m.lld


def test_errors_map_to_python_exceptions():
    H = accrete.ConvergentMatrix(8, 8, dtype=np.float64, block=(2, 2))
    ix = np.array([0, 1], dtype=np.int64)
    with pytest.raises(ValueError, match="row index 8"):
        H.update(np.ones((2, 2)), np.array([0, 8]), ix)
    with pytest.raises(ValueError, match="the block is 3 x 2"):
        H.update(np.ones((3, 2)), ix, ix)
    with pytest.raises(TypeError):
        H.update(np.ones((2, 2), dtype=np.float32), ix, ix)  # float32 into a float64 matrix: no silent copy
    with pytest.raises(TypeError, match="not contiguous"):
        H.update(np.ones((2, 4))[:, ::2], ix, ix)
    with pytest.raises(TypeError):
        H.update(np.ones((2, 2)), ix.astype(np.float64), ix)
    with pytest.raises(ValueError, match="strategy"):
        accrete.ConvergentMatrix(4, 4, strategy="carrier-pigeon")
    with pytest.raises(TypeError, match="dtype"):
        accrete.ConvergentMatrix(4, 4, dtype=np.int32)
    A = accrete.DistArray(4, 4)
    with pytest.raises(ValueError, match="row_hi = 5"):
        A.get((0, 5, 0, 1))
    with pytest.raises(ValueError, match="inverted"):
        A.get((3, 1, 0, 1))
    with pytest.raises(TypeError):
        A.put((0, 2, 0, 2), np.ones((2, 2), dtype=np.int64))
    with pytest.raises(RuntimeError, match="release without access"):
        A.release()
    H.commit()
    A.sync()


def test_save_load_round_trip(tmp_path_factory):
    m, n = 30, 17
    H = accrete.ConvergentMatrix(m, n, dtype=np.float64, block=(4, 4))
    rows, cols = np.arange(m), np.arange(n)
    H.update(contribution(ME, m, n, np.float64), rows, cols)
    H.commit()
    path = COMM.bcast(str(tmp_path_factory.mktemp("io") / "h.bin") if ME == 0 else None)
    H.save(path)
    G = accrete.ConvergentMatrix(m, n, dtype=np.float64, grid=(1, P), block=(5, 2))
    G.load(path)
    A = accrete.DistArray(m, n, dtype=np.float64, distribution="element_cyclic")
    A.load(path)
    full = G.to_numpy()
    whole = A[:, :]
    np.testing.assert_array_equal(whole, reference(m, n, np.float64))
    if ME == 0:
        np.testing.assert_array_equal(full, reference(m, n, np.float64))
    with pytest.raises(RuntimeError, match="h.bin"):
        accrete.ConvergentMatrix(m + 1, n, dtype=np.float64).load(path)
    accrete.barrier()


DISTRIBUTIONS = [
    dict(distribution="block"),
    dict(distribution="block_cyclic", block=(3, 2)),
    dict(distribution="element_cyclic"),
    dict(distribution="irregular", row_bounds=[0] + [min(19, 3 * k) for k in range(1, P)] + [19],
         col_bounds=[0, 13], grid=(P, 1)),
]


@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d["distribution"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int64, np.float32])
def test_distarray_put_get_acc(dist, dtype):
    rows, cols = 19, 13
    A = accrete.DistArray(rows, cols, dtype=dtype, **dist)
    base = (np.arange(rows)[:, None] * 13 + np.arange(cols)[None, :] * 5) % 17
    base = base.astype(dtype) * (1 + 1j if np.iscomplexobj(np.zeros(1, dtype)) else 1)
    if ME == 0:
        A[:, :] = np.asfortranarray(base)
    A.sync()
    np.testing.assert_array_equal(A[2:rows - 1, 1:cols], base[2:rows - 1, 1:cols])
    assert A[rows - 1, cols - 1] == base[rows - 1, cols - 1]
    assert A[3:3, :].shape == (0, cols)
    A.sync()
    A.acc((0, rows, 0, cols), np.ones((rows, cols), dtype=dtype, order="C"), alpha=2)
    h = A.acc_nb((1, 2, 0, 1), np.ones((1, 1), dtype=dtype))
    h.wait()
    A.flush()
    A.sync()
    want = base + 2 * P
    want[1, 0] += P
    np.testing.assert_array_equal(A[:, :], want)
    out = np.zeros((2, 3), dtype=dtype)  # C order
    A.get((4, 6, 2, 5), out)
    np.testing.assert_array_equal(out, want[4:6, 2:5])
    part = A.access()
    owned = part.size
    A.release()
    total = COMM.allreduce(owned)
    assert total >= rows * cols  # lld may pad the parts
    A.sync()


def test_counter_hands_out_every_task_once():
    tasks = 10000
    c = accrete.Counter()
    seen = accrete.DistArray(tasks, 1, dtype=np.int64)
    seen.zero()
    one = np.ones((1, 1), dtype=np.int64)
    mine = 0
    while True:
        t = c.fetch_add(1)
        if t >= tasks:
            break
        seen.acc((t, t + 1, 0, 1), one)
        mine += 1
    seen.sync()
    assert COMM.allreduce(mine) == tasks
    np.testing.assert_array_equal(seen[:, :], np.ones((tasks, 1), dtype=np.int64))
    seen.sync()
    c.reset(7)
    assert c.fetch_add(0) == 7
    accrete.barrier()


def spd(n):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, n))
    return x @ x.T + n * np.eye(n)


def from_numpy(a, grid=None, block=(8, 8)):
    """A ConvergentMatrix holding a (rank 0 adds it all)."""
    M = accrete.ConvergentMatrix(a.shape[0], a.shape[1], dtype=a.dtype, grid=grid, block=block)
    if ME == 0:
        M.update(np.asfortranarray(a), np.arange(a.shape[0]), np.arange(a.shape[1]))
    M.commit()
    return M


def test_linalg_posv_gesv_gemm_syevd():
    n = 40
    a = spd(n)
    b = np.arange(2 * n, dtype=np.float64).reshape(n, 2)
    A, B = from_numpy(a), from_numpy(b)
    accrete.linalg.posv(A, B)
    x = B.to_numpy()
    if ME == 0:
        np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10)
    g = a + np.triu(np.ones((n, n)))  # not symmetric
    A, B = from_numpy(g), from_numpy(b)
    accrete.linalg.gesv(A, B)
    x = B.to_numpy()
    if ME == 0:
        np.testing.assert_allclose(x, np.linalg.solve(g, b), rtol=1e-10)
    A, B, C = from_numpy(g), from_numpy(a), from_numpy(np.ones((n, n)))
    accrete.linalg.gemm("T", "N", 2.0, A, B, 0.5, C)
    c = C.to_numpy()
    if ME == 0:
        np.testing.assert_allclose(c, 2.0 * g.T @ a + 0.5, rtol=1e-12)
    A, Z = from_numpy(a), from_numpy(np.zeros((n, n)))
    w = accrete.linalg.syevd(A, Z)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-10)
    if P > 1:
        with pytest.raises(ValueError, match="different process grids"):
            accrete.linalg.posv(from_numpy(a), from_numpy(b, grid=(P, 1)))
    with pytest.raises(ValueError, match="B has 1 rows"):
        accrete.linalg.posv(from_numpy(a), from_numpy(b[:1, :]))


def test_workload_matches_its_checksum():
    prm = accrete.workload.preset("tiny")
    total = 0.0
    for u in range(prm.U):
        ix, B = accrete.workload.make_update(prm, ME, u)
        assert ix.dtype == np.int64 and B.dtype == np.float32 and B.shape == (prm.n, prm.n)
        assert np.all(np.diff(ix) > 0)
        total += float(B.sum(dtype=np.float64))
    assert COMM.allreduce(total) == accrete.workload.expected_checksum(prm, P)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_matrix_hermitian_solve(dtype):
    """Complex assembly is exact (parts are multiples of 0.25); fill_lower
    mirrors conjugates; posv solves a Hermitian positive definite system."""
    m = 23
    mine = contribution(ME, m, m, np.float64) + 1j * contribution(ME + 3, m, m, np.float64)
    H = accrete.ConvergentMatrix(m, m, dtype=dtype, block=(4, 3), buffer_cap=4096)
    H.update(np.asfortranarray(mine.astype(dtype)), np.arange(m), np.arange(m))
    H.commit()
    want = sum(contribution(p, m, m, np.float64) + 1j * contribution(p + 3, m, m, np.float64) for p in range(P))
    full = H.to_numpy()
    if ME == 0:
        assert full.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(full, want.astype(dtype))
    H.fill_lower()
    full = H.to_numpy()
    if ME == 0:
        up = np.triu(want, 1)
        np.testing.assert_array_equal(full, (up + up.conj().T + np.diag(np.diag(want))).astype(dtype))
    # A Hermitian positive definite system, solved in place.
    rng = np.random.default_rng(5)
    n = 30
    x = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    a = (x @ x.conj().T + n * np.eye(n)).astype(dtype)
    b = (np.arange(2 * n) + 1j).reshape(n, 2).astype(dtype)
    A, B = from_numpy(a), from_numpy(b)
    accrete.linalg.posv(A, B)
    got = B.to_numpy()
    if ME == 0:
        tol = 1e-4 if dtype == np.complex64 else 1e-10
        np.testing.assert_allclose(got, np.linalg.solve(a.astype(np.complex128), b), rtol=tol)
    with pytest.raises(ValueError, match="no order"):
        accrete.ConvergentMatrix(4, 4, dtype=dtype, merge="max")


def test_atomic_updates_snapshots_see_whole_updates():
    """atomic_updates=True: every update adds one constant to the whole
    matrix, so any snapshot of a part shows equal elements."""
    m, n = 31, 27
    A = accrete.ConvergentMatrix(m, n, np.float64, block=(3, 2), atomic_updates=True)
    rng = np.random.default_rng(ME)
    for k in range(20):
        rows, cols = rng.permutation(m), rng.permutation(n)
        A.update(np.full((m, n), float(ME + 1)), rows, cols)
        snap = A.snapshot_local()
        part = snap[: A.local.shape[0], :]
        if part.size:
            assert np.all(part == part.flat[0])
    A.commit()
    assert A.get(m - 1, 0) == 20 * P * (P + 1) / 2
    with pytest.raises(ValueError, match="atomic_updates"):
        accrete.ConvergentMatrix(4, 4, np.float64, atomic_updates=True, reproducible=True)


@pytest.mark.skipif(P < 2, reason="needs two processes to disagree")
def test_collective_arguments_that_differ_raise_everywhere():
    # A dtype only the last process gets wrong: it raises its own TypeError,
    # the others a RuntimeError naming its rank; none waits for the others.
    odd = P - 1
    with pytest.raises(TypeError if ME == odd else RuntimeError) as e:
        accrete.DistArray(4, 4, dtype=np.float16 if ME == odd else np.float64)
    if ME != odd:
        assert f"rejected on rank {odd}" in str(e.value)
    # Valid but different shapes: every process raises, naming the argument.
    with pytest.raises(RuntimeError, match="cols = 40000 on rank"):
        accrete.DistArray(4, 40000 if ME == odd else 4)
    with pytest.raises((ValueError, RuntimeError), match="merge"):
        accrete.ConvergentMatrix(8, 8, merge="avg" if ME == odd else "sum")
    with pytest.raises(RuntimeError, match="initial = 3 on rank"):
        accrete.Counter(3 if ME == odd else 0)
    # A collective member: roots that differ.
    H = accrete.ConvergentMatrix(8, 8)
    H.commit()
    with pytest.raises(RuntimeError, match=f"root = {odd} on rank {odd}"):
        H.to_numpy(root=odd if ME == odd else 0)
    # Afterwards the same calls, agreed, work.
    assert (H.to_numpy(root=odd) == 0).all() if ME == odd else H.to_numpy(root=odd) is None
    A = accrete.DistArray(4, 4)
    A[0:4, 0:4] = 1.0
    A.sync()
    assert A.norm() == 4.0


def test_errors_in_python_words():
    """Bad input raises naming the Python call and the bad value, never a C++ name."""
    H = accrete.ConvergentMatrix(8, 6, block=(2, 2))
    A = accrete.DistArray(12, 4)
    cases = [
        (TypeError, "float64", lambda: H.update(np.ones((2, 2), dtype=np.float32), [0, 1], [0, 1])),
        (TypeError, "must be integers", lambda: H.update(np.ones((2, 2)), [0.0, 1.0], [0, 1])),
        (ValueError, "ConvergentMatrix.update: row index 8", lambda: H.update(np.ones((2, 2)), [0, 8], [0, 1])),
        (ValueError, "ConvergentMatrix.get: i = 8", lambda: H.get(8, 0)),
        (ValueError, "ConvergentMatrix: m = -1", lambda: accrete.ConvergentMatrix(-1, 4)),
        (ValueError, "DistArray.put: the patch is inverted", lambda: A.put((5, 3, 0, 1), np.ones((2, 1)))),
        (ValueError, "DistArray.get: row_hi = 13", lambda: A.get((0, 13, 0, 1))),
        (TypeError, "convert it with .astype(np.float64)", lambda: A.put((0, 2, 0, 2), np.ones((2, 2), np.int32))),
        (ValueError, "row index 12", lambda: A.locate(12, 0)),
        (ValueError, "rows = -5", lambda: accrete.DistArray(-5, 4)),
    ]
    for kind, text, call in cases:
        # No `pytest.raises(...) as e`: e's traceback would hold this frame,
        # and so H and A, until a garbage collection that runs at another
        # moment on each process, while their destructors are collective.
        try:
            call()
            msg = "no exception"
        except kind as err:
            msg = str(err)
        assert text in msg and "::" not in msg, msg
    H.commit()
    A.sync()


def test_index_sequences():
    """Lists, tuples, ranges and int32/int64/uint arrays all work as indices."""
    H = accrete.ConvergentMatrix(6, 6, block=(2, 2))
    for ix in ([0, 1], (2, 3), range(4, 6), np.array([0, 1], np.int32), np.array([2, 3], np.uint64)):
        H.update(np.ones((2, 2)), ix, ix)
    H.update_symmetric(np.ones((2, 2)), [0, 5])
    H.commit()
    full = H.to_numpy()
    if ME == 0:
        want = np.zeros((6, 6))
        for ix in ([0, 1], [2, 3], [4, 5], [0, 1], [2, 3]):
            want[np.ix_(ix, ix)] += P
        want[0, 0] += P
        want[0, 5] += P
        want[5, 5] += P
        np.testing.assert_array_equal(full, want)


@pytest.mark.parametrize("distribution", ["block", "block_cyclic", "element_cyclic"])
def test_local_indices(distribution):
    """Every local element is the global one local_indices() names."""
    m, n = 11, 5
    full = 1000.0 * np.arange(m)[:, None] + np.arange(n)[None, :]
    A = accrete.DistArray(m, n, distribution=distribution, block=(2, 2))
    if ME == 0:
        A.put((0, m, 0, n), np.asfortranarray(full))
    A.sync()
    rows, cols = A.local_indices()
    part = A.access()
    np.testing.assert_array_equal(part, full[np.ix_(rows, cols)])
    A.release()
    H = accrete.ConvergentMatrix(m, n, block=(3, 2))
    if ME == 0:
        H.update(np.asfortranarray(full), np.arange(m), np.arange(n))
    H.commit()
    rows, cols = H.local_indices()
    assert rows.dtype == np.int64 and len(rows) == H.local.shape[0] and len(cols) == H.local.shape[1]
    np.testing.assert_array_equal(H.local, full[np.ix_(rows, cols)])
