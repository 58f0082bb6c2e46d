#pragma once
/// \file
// Vocabulary of assembly: how update blocks are laid out, how updates
// travel, and what a process counts while assembling. Shared by every data
// structure built on the assembly engine (convergent_matrix today).
#include <cstddef>
#include <cstdint>

namespace accrete {

/// Storage order of an update block.
enum class matrix_layout { col_major, row_major };

/// How updates travel (the default is the fastest; the other exists for
/// comparison). An MPI_Accumulate strategy existed before 0.3 and was
/// removed: it was 2.5-17x slower than `packets` and slower than the plain
/// MPI_Accumulate baseline in bench/hessian, MPI forbids the overlapping
/// target entries that repeated indices need, and it could not hold back a
/// fast process's next-round contributions without a remote read per
/// target (docs/semantics.md, "Rounds").
enum class update_strategy {
  /// Per-target packets of (row list, column list, dense sub-block):
  /// node-local targets are updated directly by the origin under the
  /// target's column-stripe locks; remote targets receive coalesced
  /// messages and apply them during progress.
  packets,
  /// Bin everything locally; one all-to-all exchange at commit. Buffers
  /// without bound (the memory cap does not apply).
  alltoall,
};

/// How an update combines with an element (convergent_matrix_options::merge).
/// Every one is associative and commutative, so the committed result does
/// not depend on the order in which updates arrive.
enum class merge_op {
  sum,  ///< A += v (the default)
  max,  ///< A = max(A, v); NaN wins (as the default quiet NaN), and -0 < +0
  min,  ///< A = min(A, v); likewise
  /// A = f(A, v) for an element-wise function the matrix was constructed
  /// with (convergent_matrix's constructor taking a merge_function).
  user,
};

/// Counters and time spent (seconds) by this process since construction or
/// the last reset_stats().
struct assembly_stats {
  std::uint64_t updates = 0;           ///< update calls
  std::uint64_t elements = 0;          ///< update elements submitted
  std::uint64_t direct_packets = 0;    ///< applied by this process into node-local storage
  std::uint64_t messages_sent = 0;     ///< coalesced messages to remote targets
  std::uint64_t packets_received = 0;  ///< packets applied on behalf of remote origins
  std::uint64_t bytes_sent = 0;        ///< payload bytes sent to remote targets
  std::size_t peak_buffered = 0;       ///< highest buffered + in-flight bytes
  /// Highest memory the coalescing buffers held (their capacity): at most
  /// about buffer_cap plus the first packet of each part with data, whatever P.
  std::size_t peak_reserved = 0;
  double t_bin = 0,  ///< seconds binning updates by owner
      t_move = 0,     ///< seconds sending and receiving
      t_apply = 0,    ///< seconds applying contributions to storage
      t_wait = 0;     ///< seconds waiting (for buffer space, or in commit)
};

}  // namespace accrete
