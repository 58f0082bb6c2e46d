# The PAR thread mode: several threads communicate at once. Real node layout
# and node size 1 (every transfer through MPI); the tsan label puts it in
# CI's ThreadSanitizer pass.
accrete_add_mpi_test(par_threads_test SOURCES par_threads_test.cpp par_threads_upcxx.cpp NP 1 2 3 NODE_SIZES 0 1
  ENV ACCRETE_THREAD_MODE=par LABELS tsan sanitize TIMEOUT 300)
# Several processes on each of several nodes (2 + 1, 2 + 2): one thread's
# operations reach node peers by direct stores and rings and the others
# through MPI in the same run.
accrete_add_mpi_test(par_threads_test NP 3 4 NODE_SIZES 2 ENV ACCRETE_THREAD_MODE=par TIMEOUT 300)
