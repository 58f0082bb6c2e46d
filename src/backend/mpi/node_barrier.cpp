// The node barrier: a counter and a generation in node-shared memory.
// Why: MPI_Ibarrier + test costs several microseconds on one node.
#include <atomic>
#include <cstring>

#include "accrete/progress.hpp"
#include "backend/mpi/state.hpp"

namespace accrete::detail {

void open_node_sync() {
  int me = 0;
  MPI_Comm_rank(st.node, &me);
  void* base = nullptr;
  allocate_shared(me == 0 ? 128 : 0, MPI_INFO_NULL, st.node, &base, &st.sync_win);
  if (me == 0) std::memset(base, 0, 128);
  MPI_Aint sz;
  int du;
  void* p = nullptr;
  ACCRETE_MPI(MPI_Win_shared_query(st.sync_win, 0, &sz, &du, &p));
  st.sync_count = static_cast<std::uint64_t*>(p);
  st.sync_gen = st.sync_count + 8;
  ACCRETE_MPI(MPI_Barrier(st.node));
}

void close_node_sync() {
  if (st.sync_win != MPI_WIN_NULL) MPI_Win_free(&st.sync_win);
  st.sync_count = st.sync_gen = nullptr;
}

bool world_on_one_node() noexcept { return st.world_is_node; }

void node_barrier(const collective_ticket* t) {
  require_initialized("barrier()");
  memory_sync();
  const std::uint64_t g = std::atomic_ref(*st.sync_gen).load(std::memory_order_acquire);
  if (std::atomic_ref(*st.sync_count).fetch_add(1, std::memory_order_acq_rel) == std::uint64_t(st.node_n - 1)) {
    // Last to arrive: reset for the next barrier, then release the others.
    std::atomic_ref(*st.sync_count).store(0, std::memory_order_relaxed);
    std::atomic_ref(*st.sync_gen).store(g + 1, std::memory_order_release);
  } else {
    unsigned spins = 0;
    while (std::atomic_ref(*st.sync_gen).load(std::memory_order_acquire) == g) {
      user_progress();
      idle_backoff(spins);
      if (t) collective_check(*t);
    }
  }
  memory_sync();
}

}  // namespace accrete::detail
