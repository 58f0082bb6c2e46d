# Run under MPI: mpiexec -n P python -m pytest python/tests. Every process
# runs every test in the same order (the tests call collectives).
#
# A failure aborts the whole job at once. Otherwise the failing process
# would keep the test's objects alive in its traceback while the others
# destroy theirs, and their collective destructors (and the next test's
# constructors) would wait for each other forever.
#
# Objects caught in reference cycles (a traceback that refers to the frame
# holding it, say) are freed by Python's cyclic garbage collector, which
# runs when allocation counts say so: at different moments in different
# processes, so a collective destructor would wait for the others forever.
# The collector runs here only after each test, at the same point everywhere.
import gc
import sys

from mpi4py import MPI

import accrete

accrete.init()
gc.disable()


def pytest_runtest_teardown(item, nextitem):
    gc.collect()


def pytest_runtest_logreport(report):
    if report.failed:
        sys.stderr.write(f"\n[rank {MPI.COMM_WORLD.Get_rank()}] FAILED {report.nodeid} ({report.when}):\n"
                         f"{report.longreprtext}\n")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
