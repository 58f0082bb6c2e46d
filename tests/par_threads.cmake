# The PAR thread mode: several threads communicate at once. Real node layout
# and node size 1 (every transfer through MPI); the tsan label puts it in
# CI's ThreadSanitizer pass.
accrete_add_mpi_test(par_threads_test SOURCES par_threads_test.cpp NP 1 2 3 NODE_SIZES 0 1
  ENV ACCRETE_THREAD_MODE=par LABELS tsan sanitize TIMEOUT 300)
