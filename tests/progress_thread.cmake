# The progress thread (issue 12, part 2). Node size 1: every contribution to
# another process is a message, so only the thread can apply it while the
# target computes. The tsan label puts it in CI's ThreadSanitizer pass.
accrete_add_mpi_test(progress_thread_test SOURCES progress_thread_test.cpp NP 2 3 NODE_SIZES 1
  ENV ACCRETE_PROGRESS_THREAD=1 LABELS tsan sanitize TIMEOUT 300)
# The real node layout: the thread alongside direct stores and rings.
accrete_add_mpi_test(progress_thread_test NP 3 ENV ACCRETE_PROGRESS_THREAD=1 LABELS tsan TIMEOUT 300)
# Several processes on each of several nodes (2 + 1, 2 + 2): the thread
# applies the MPI path's packets while node peers store directly.
accrete_add_mpi_test(progress_thread_test NP 3 4 NODE_SIZES 2 ENV ACCRETE_PROGRESS_THREAD=1 TIMEOUT 300)
