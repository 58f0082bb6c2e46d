// Collectives over accrete's private world communicator for data
// structures (their constructors, commits and exchanges), and the opaque
// request handle they return.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "accrete/error.hpp"
#include "backend/mpi/mpi_types.hpp"
#include "backend/mpi/state.hpp"

namespace accrete::detail {

static_assert(sizeof(MPI_Request) <= 8 && alignof(MPI_Request) <= 8, "request::handle_ must hold an MPI_Request");

// The one place that turns the opaque handle into an MPI_Request.
struct request_access {
  static MPI_Request* raw(request& r) noexcept { return reinterpret_cast<MPI_Request*>(r.handle_); }
  // Marks `r` pending and returns where MPI writes the new request.
  static MPI_Request* start(request& r) noexcept {
    r.pending_ = true;
    return raw(r);
  }
};

request::request(request&& o) noexcept { *this = std::move(o); }

request& request::operator=(request&& o) noexcept {
  std::memcpy(handle_, o.handle_, sizeof handle_);
  pending_ = std::exchange(o.pending_, false);
  return *this;
}

bool request::test() {
  if (!pending_) return true;
  int done = 0;
  ACCRETE_MPI(MPI_Test(request_access::raw(*this), &done, MPI_STATUS_IGNORE));
  if (done) pending_ = false;
  return done != 0;
}

void request::wait() {
  if (!pending_) return;
  ACCRETE_MPI(MPI_Wait(request_access::raw(*this), MPI_STATUS_IGNORE));
  pending_ = false;
}

// With one process these complete at once; MPI's nonblocking collectives
// still build and progress a schedule (several microseconds per commit,
// which was most of a small commit's time at P = 1).
int open_channel() {
  require_initialized("open_channel");
  MPI_Comm c;
  ACCRETE_MPI(MPI_Comm_dup(st.world, &c));
  backend_guard g;
  for (std::size_t i = 0; i < st.channels.size(); ++i)
    if (st.channels[i] == MPI_COMM_NULL) {
      st.channels[i] = c;
      return int(i);
    }
  st.channels.push_back(c);
  return int(st.channels.size() - 1);
}

void close_channel(int channel) noexcept {
  if (!st.up || channel < 0 || std::size_t(channel) >= st.channels.size()) return;
  backend_guard g;
  if (st.channels[std::size_t(channel)] != MPI_COMM_NULL) MPI_Comm_free(&st.channels[std::size_t(channel)]);
}

request world_iallreduce_sum(int channel, const std::uint64_t* in, std::uint64_t* out, int n) {
  request r;
  if (st.size == 1) {
    std::copy_n(in, n, out);
    return r;
  }
#ifdef ACCRETE_SMPI
  sim_iallreduce_sum(st.channels.at(std::size_t(channel)), in, out, n, request_access::start(r));
#else
  ACCRETE_MPI(MPI_Iallreduce(in, out, n, MPI_UINT64_T, MPI_SUM, st.channels.at(std::size_t(channel)),
                             request_access::start(r)));
#endif
  return r;
}

void ibarrier(MPI_Comm comm, MPI_Request* r) {
#ifdef ACCRETE_SMPI
  // SimGrid SMPI 3.32's MPI_Ibarrier is no barrier: the root sends its
  // release to everyone on entry, so a process can leave before another
  // has arrived (3 processes, one entering 1 ms late: another left at
  // 0.3 ms; bench_dht then cleared its table under a peer's finds).
  sim_iallreduce_sum(comm, nullptr, nullptr, 0, r);
#else
  ACCRETE_MPI(MPI_Ibarrier(comm, r));
#endif
}

request world_ibarrier(int channel) {
  request r;
  if (st.size == 1) return r;
  ibarrier(st.channels.at(std::size_t(channel)), request_access::start(r));
  return r;
}

void wait_collective(request& r, const collective_ticket& t) {
  if (!r.pending()) return;
  wait_request(request_access::raw(r), t);
  r = request();
}

// The blocking world collectives of data structures: non-blocking MPI
// waited for with internal progress, so that ACCRETE_COLLECTIVE_TIMEOUT can
// name a process that never calls them.
namespace {
template <class Start>
void timed(const char* what, Start&& start) {
  const collective_ticket t = collective_begin(what);
  MPI_Request r;
  {
    backend_guard g;
    start(&r);
  }
  wait_request(&r, t);
  collective_end(t);
}
}  // namespace

std::vector<std::int64_t> world_allgather(std::span<const std::int64_t> mine, const char* what) {
  const int k = int(mine.size());
  std::vector<std::int64_t> all(std::size_t(st.size) * mine.size());
  timed(what, [&](MPI_Request* r) {
    ACCRETE_MPI(MPI_Iallgather(mine.data(), k, MPI_INT64_T, all.data(), k, MPI_INT64_T, st.world, r));
  });
  return all;
}

void world_allreduce_sum(void* inout, int count, scalar_type t, const char* what) {
  timed(what, [&](MPI_Request* r) {
    ACCRETE_MPI(MPI_Iallreduce(MPI_IN_PLACE, inout, count, mpi_type(t), MPI_SUM, st.world, r));
  });
}

std::int64_t world_min(std::int64_t mine, const char* what) {
  std::int64_t out = 0;
  timed(what, [&](MPI_Request* r) {
    ACCRETE_MPI(MPI_Iallreduce(&mine, &out, 1, MPI_INT64_T, MPI_MIN, st.world, r));
  });
  return out;
}

void world_abort(int code) {
  st.aborting.store(true);
  // The launcher forwards a process's output on its own schedule: MPICH's
  // Hydra, tearing the job down on the abort, may drop the diagnostic this
  // process wrote just before (seen on a loaded machine). A moment first.
  std::fflush(nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  // MPI_COMM_WORLD: also called on the way out, when the runtime's own
  // communicators may already be freed.
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

std::vector<std::byte> alltoallv_bytes(const std::byte* sbuf, const std::vector<std::size_t>& scount,
                                       const std::vector<std::size_t>& sdisp, std::vector<std::size_t>& rcount,
                                       std::vector<std::size_t>& rdisp, const std::function<void(request&)>& wait,
                                       std::size_t int_limit) {
  int_limit = std::min<std::size_t>(int_limit, INT_MAX);
  const MPI_Comm comm = st.world;
  const int np = st.size;
  static_assert(sizeof(std::size_t) == sizeof(std::uint64_t));
  rcount.assign(std::size_t(np), 0);
  {
    request r;
    ACCRETE_MPI(MPI_Ialltoall(scount.data(), 1, MPI_UINT64_T, rcount.data(), 1, MPI_UINT64_T, comm,
                              request_access::start(r)));
    wait(r);
  }
  rdisp.assign(std::size_t(np) + 1, 0);
  for (int k = 0; k < np; ++k) rdisp[k + 1] = rdisp[k] + rcount[k];
  std::vector<std::byte> rbuf(rdisp[np]);
  // Largest per-pair block anywhere decides the number of rounds, so that
  // every process runs the same sequence of collectives.
  // [0]: largest block of one pair; [1]: largest displacement end.
  std::uint64_t big[2] = {0, 0}, all_big[2];
  for (int k = 0; k < np; ++k) {
    big[0] = std::max<std::uint64_t>({big[0], scount[k], rcount[k]});
    big[1] = std::max<std::uint64_t>({big[1], sdisp[k] + scount[k], rdisp[k + 1]});
  }
  {
    request r;
    ACCRETE_MPI(MPI_Iallreduce(big, all_big, 2, MPI_UINT64_T, MPI_MAX, comm, request_access::start(r)));
    wait(r);
  }
  std::vector<int> sc(np), sd(np), rc(np), rd(np);
  if (all_big[0] <= int_limit && all_big[1] <= int_limit) {
    for (int k = 0; k < np; ++k) {
      sc[k] = int(scount[k]), sd[k] = int(sdisp[k]);
      rc[k] = int(rcount[k]), rd[k] = int(rdisp[k]);
    }
    request r;
    ACCRETE_MPI(MPI_Ialltoallv(sbuf, sc.data(), sd.data(), MPI_BYTE, rbuf.data(), rc.data(), rd.data(), MPI_BYTE,
                               comm, request_access::start(r)));
    wait(r);
    return rbuf;
  }
  // Rounds: each moves at most `piece` bytes per pair, staged through
  // buffers of at most np * piece bytes (int displacements).
  const std::size_t piece = std::max<std::size_t>(1, int_limit / std::size_t(np) / 2);
  const std::uint64_t rounds = (all_big[0] + piece - 1) / piece;
  std::vector<std::byte> stage_s, stage_r;
  for (std::uint64_t t = 0; t < rounds; ++t) {
    const std::size_t lo = std::size_t(t) * piece;
    int sat = 0, rat = 0;
    for (int k = 0; k < np; ++k) {
      sc[k] = int(scount[k] > lo ? std::min(piece, scount[k] - lo) : 0);
      rc[k] = int(rcount[k] > lo ? std::min(piece, rcount[k] - lo) : 0);
      sd[k] = sat, rd[k] = rat;
      sat += sc[k], rat += rc[k];
    }
    stage_s.resize(std::size_t(sat));
    stage_r.resize(std::size_t(rat));
    for (int k = 0; k < np; ++k)
      if (sc[k]) std::memcpy(stage_s.data() + sd[k], sbuf + sdisp[k] + lo, std::size_t(sc[k]));
    request r;
    ACCRETE_MPI(MPI_Ialltoallv(stage_s.data(), sc.data(), sd.data(), MPI_BYTE, stage_r.data(), rc.data(), rd.data(),
                               MPI_BYTE, comm, request_access::start(r)));
    wait(r);
    for (int k = 0; k < np; ++k)
      if (rc[k]) std::memcpy(rbuf.data() + rdisp[k] + lo, stage_r.data() + rd[k], std::size_t(rc[k]));
  }
  return rbuf;
}

}  // namespace accrete::detail
