#pragma once
/// \file
// Starting and stopping the accrete runtime.
#include <cstddef>
#include <optional>

namespace accrete {

/// How many threads use the runtime (init_options::threads).
enum class thread_mode {
  /// One thread (the one that called init()) makes every accrete call.
  seq,
  /// Several threads may communicate at once; docs/semantics.md, "Threads".
  par
};

/// Options for init(). Unset values come from the environment
/// (ACCRETE_SEGMENT_SIZE, ACCRETE_NODE_SIZE, ACCRETE_VERBOSE,
/// ACCRETE_PROGRESS_THREAD, ACCRETE_THREAD_MODE) or defaults. Every
/// ACCRETE_* variable follows one grammar (docs/semantics.md, "Environment
/// variables"): unset or empty means the default, anything malformed
/// throws accrete::error naming the variable, at init().
struct init_options {
  /// Bytes of shared segment per process (default 256 MiB; the environment
  /// variable accepts suffixes K, M, G, T). Segments of all the processes
  /// of a node must fit in its shared memory (/dev/shm) and RAM, or init()
  /// throws naming where the size came from.
  std::optional<std::size_t> segment_size;
  /// Group processes into pretend nodes of this many consecutive ranks of a
  /// real node (1 = every process its own node), to exercise inter-node paths
  /// on one machine. 0 or unset: the real node layout.
  std::optional<int> node_size;
  /// Print the chosen configuration on rank 0.
  std::optional<bool> verbose;
  /// Run a background progress thread (ACCRETE_PROGRESS_THREAD=1): it
  /// applies arriving convergent_matrix packets and completes accrete's
  /// own transfers while the program computes, so senders' buffers drain
  /// without waiting for the target to call accrete. It never runs user
  /// code: RPC bodies and callbacks still run only in the driving thread's
  /// progress. Needs MPI_THREAD_MULTIPLE: init() initialises MPI at that
  /// level if the user has not, and throws accrete::error when the MPI
  /// provides less (docs/semantics.md, "Progress thread").
  std::optional<bool> progress_thread;
  /// The thread mode (ACCRETE_THREAD_MODE=seq|par; default seq). In the
  /// par mode several threads may issue rput/rget, rpc/rpc_ff, atomics and
  /// progress at once; each operation's completion runs in the thread that
  /// started it (in the queue current there: UPC++'s persona), during that
  /// thread's user-level progress, and RPC bodies run in the thread that
  /// holds the master queue (the one that called init(), until it lets it
  /// go). Needs MPI_THREAD_MULTIPLE, as the progress thread does. Costs a
  /// lock per backend call and an allocation per completion.
  std::optional<thread_mode> threads;
};

/// Collective over MPI_COMM_WORLD. Initialises MPI (MPI_THREAD_SERIALIZED,
/// or MPI_THREAD_MULTIPLE with the progress thread) if the user has not, duplicates the communicators accrete works on,
/// allocates the shared segments and opens the windows. Calling init() twice
/// without finalize() throws accrete::collective_misuse.
void init(const init_options& opts = {});

/// Collective. First makes user-level progress until every active message
/// sent by any process has run (so RPCs and rpc_ffs that reach a process
/// already in finalize() still run, and are answered, as in UPC++, whose
/// finalize begins with a progress-making barrier); then waits for
/// outstanding operations, releases windows and communicators, and
/// finalises MPI only if init() initialised it.
/// Objects still alive (matrices, arrays, counters, dist_objects) belong to
/// the finalized runtime: afterwards, also under a later init(), using one
/// throws accrete::not_initialized and destroying one frees only its own
/// memory.
void finalize();

/// True between init() and finalize().
bool initialized() noexcept;

/// This process's rank in the world team, and the number of processes.
///@{
int rank_me();
int rank_n();
///@}

/// RAII: init() in the constructor, finalize() in the destructor.
class runtime {
 public:
  /// init(opts).
  explicit runtime(const init_options& opts = {}) { init(opts); }
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
  ~runtime() { finalize(); }
};

}  // namespace accrete
