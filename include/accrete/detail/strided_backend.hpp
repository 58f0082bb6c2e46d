#pragma once
// Backend half of the non-contiguous transfers (rma_strided.hpp,
// rma_irregular.hpp). The public templates reduce every call to byte
// sections and fragment lists; validation, the node-local copy and the MPI
// path (derived datatypes or batched contiguous MPI_Put/MPI_Get on the
// segment window) live in src/backend/mpi/strided.cpp.
#include "accrete/detail/internal.hpp"
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "accrete/detail/backend.hpp"

namespace accrete::detail {

/// One dimension of a normalised section: `extent` runs, `local_stride`
/// bytes apart in the caller's memory and `remote_stride` bytes apart in the
/// target segment.
struct strided_dim {
  std::size_t extent;
  std::ptrdiff_t local_stride;
  std::ptrdiff_t remote_stride;
};

/// A validated section: `runs()` contiguous runs of `run` bytes. Dimensions
/// that are contiguous on both sides are folded into `run`, extents of 1
/// are dropped. `empty` when some extent is 0 (nothing moves).
struct strided_plan {
  std::size_t run = 0;
  std::vector<strided_dim> dims;  // outer dimensions, as given (first = dim 0)
  bool empty = false;
  std::size_t runs() const noexcept {
    std::size_t n = 1;
    for (auto& d : dims) n *= d.extent;
    return n;
  }
  std::size_t bytes() const noexcept { return empty ? 0 : run * runs(); }
};

/// Validates a section and normalises it. `put` says which side is remote
/// (put: the destination) for error messages. Extents are element counts,
/// strides bytes. Throws accrete::bad_global_ptr naming the offending
/// dimension for: more than 2^63-1 elements in a dimension ("negative"),
/// products or offsets that overflow, a remote section that runs outside
/// rank's segment. Nothing moves before this returns.
strided_plan plan_strided(const char* what, bool put, int rank, std::uint64_t remote_offset, std::size_t elem,
                          std::size_t dims, const std::ptrdiff_t* local_strides, const std::ptrdiff_t* remote_strides,
                          const std::size_t* extents);

/// Moves a planned section. Node-local targets are copied directly and the
/// call returns true (complete; `done` is not used). Other targets are
/// reached through the segment window; `done` runs at user-level progress
/// once the data is at the target (put) or in the local buffer (get), and
/// the call returns false.
bool strided_put(int rank, std::uint64_t remote_offset, const std::byte* src, const strided_plan& plan,
                 completion done);
bool strided_get(int rank, std::uint64_t remote_offset, std::byte* dst, const strided_plan& plan, completion done);

/// Whether a put of `plan` to `rank` (not node-local) goes as one active
/// message. Such a put carries its remote completion in the same message
/// (strided_put_message), instead of sending it after the data.
bool strided_by_message(int rank, const strided_plan& plan) noexcept;
/// The message path of a put: the section is packed before return (the
/// source may be reused at once); the target unpacks it during its
/// progress, then queues the remote completion `rcx` with `rcx_payload`
/// (when `rcx` is not null) for its user-level progress and acknowledges;
/// `done` runs at the origin's user-level progress on the acknowledgement.
void strided_put_message(int rank, std::uint64_t remote_offset, const std::byte* src, const strided_plan& plan,
                         completion done, am_handler rcx, std::span<const std::byte> rcx_payload);

/// Fragment lists of an irregular transfer, in bytes.
struct local_frag {
  const std::byte* ptr;
  std::size_t bytes;
};
struct remote_frag {
  std::uint64_t offset;
  std::size_t bytes;
};

/// Validates an irregular transfer whose remote fragments are all on
/// `rank`: each remote fragment inside the segment, totals equal (else the
/// first fragment whose data has no counterpart is named), no overflow.
/// `elem` converts byte positions back to element counts in messages.
void check_irregular(const char* what, bool put, int rank, std::size_t elem, const std::vector<local_frag>& local,
                     const std::vector<remote_frag>& remote);

/// Moves a checked irregular transfer; same completion contract as
/// strided_put/strided_get.
bool irregular_put(int rank, const std::vector<local_frag>& src, const std::vector<remote_frag>& dst, completion done);
bool irregular_get(int rank, const std::vector<remote_frag>& src, const std::vector<local_frag>& dst, completion done);

/// How non-contiguous data reaches another node. `automatic` picks by the
/// measured thresholds (docs/noncontig.md); the others force one method
/// (benchmarks, tests): one MPI operation with derived datatypes, a batch
/// of contiguous MPI operations, or (strided sections only; irregular
/// transfers then pick automatically) one active message that the
/// target's progress unpacks. Also settable with
/// ACCRETE_NONCONTIG=auto|datatype|batched|message.
enum class noncontig_method { automatic, datatype, batched, message };
void set_noncontig_method(noncontig_method m) noexcept;
noncontig_method get_noncontig_method() noexcept;
/// ACCRETE_NONCONTIG as set (auto when unset or empty); throws
/// accrete::error naming the variable for any other value. init() calls it,
/// so a bad value fails there and not at the first transfer.
noncontig_method noncontig_method_from_env();
/// The method `automatic` picks for `runs` runs of `run_bytes` each.
noncontig_method choose_noncontig(std::size_t runs, std::size_t run_bytes) noexcept;

}  // namespace accrete::detail
