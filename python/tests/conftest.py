# Run under MPI: mpiexec -n P python -m pytest python/tests. Every process
# runs every test in the same order (the tests call collectives).
#
# A failure aborts the whole job at once. Otherwise the failing process
# would keep the test's objects alive in its traceback while the others
# destroy theirs, and their collective destructors (and the next test's
# constructors) would wait for each other forever.
import sys

from mpi4py import MPI

import accrete

accrete.init()


def pytest_runtest_logreport(report):
    if report.failed:
        sys.stderr.write(f"\n[rank {MPI.COMM_WORLD.Get_rank()}] FAILED {report.nodeid} ({report.when}):\n"
                         f"{report.longreprtext}\n")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
