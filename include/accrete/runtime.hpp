#pragma once
// Starting and stopping the accrete runtime.
#include <cstddef>
#include <optional>

namespace accrete {

/// Options for init(). Unset values come from the environment
/// (ACCRETE_SEGMENT_SIZE, ACCRETE_NODE_SIZE, ACCRETE_VERBOSE) or defaults.
struct init_options {
  /// Bytes of shared segment per process (default 256 MiB; the environment
  /// variable accepts suffixes K, M, G).
  std::optional<std::size_t> segment_size;
  /// Group processes into pretend nodes of this many consecutive ranks of a
  /// real node (1 = every process its own node), to exercise inter-node paths
  /// on one machine. 0 or unset: the real node layout.
  std::optional<int> node_size;
  /// Print the chosen configuration on rank 0.
  std::optional<bool> verbose;
};

/// Collective over MPI_COMM_WORLD. Initialises MPI (MPI_THREAD_SERIALIZED)
/// if the user has not, duplicates the communicators accrete works on,
/// allocates the shared segments and opens the windows. Calling init() twice
/// without finalize() throws accrete::collective_misuse.
void init(const init_options& opts = {});

/// Collective. Waits for outstanding operations, releases windows and
/// communicators, and finalises MPI only if init() initialised it.
void finalize();

/// True between init() and finalize().
bool initialized() noexcept;

/// This process's rank in the world team, and the number of processes.
int rank_me();
int rank_n();

/// RAII: init() in the constructor, finalize() in the destructor.
class runtime {
 public:
  explicit runtime(const init_options& opts = {}) { init(opts); }
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
  ~runtime() { finalize(); }
};

}  // namespace accrete
