// SimGrid SMPI builds only (ACCRETE_SMPI): the nonblocking sum and barrier
// that commits and barriers wait on, as recursive doubling over
// point-to-point messages behind an MPI generalized request.
//
// Why: SMPI 3.32 implements MPI_Iallreduce as every process sending to
// every other (P - 1 sends and receives each, P^2 messages in all; its
// MPI_Ibarrier is a root that releases everyone on entry, not a barrier).
// Real MPIs use O(log P) schedules. Measured under SMPI at P = 32 on two
// simulated nodes: one commit step's 16-byte MPI_Iallreduce took 0.55-1.6
// ms of simulated time after the last process had entered it, a third of
// the Hessian round, and the simulation's host time grew with P^2. This
// stand-in takes ceil(log2 P) (+2 when P is not a power of two) rounds of
// one message each way, as a real MPI's recursive doubling does, so what
// the simulation charges for a commit's sums is what a real machine pays.
#ifdef ACCRETE_SMPI

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/mpi/state.hpp"

namespace accrete::detail {
namespace {

// Tags on the collective's communicator: base + 32 x (sequence mod 256) +
// round. Below the broadcast tags (collectives.cpp); the communicators
// used here carry no other point-to-point traffic in that range.
constexpr int sim_tag_base = 0x4000;
constexpr int last_round = 31;  // the fold's result back to the extra rank

// One round: send our vector and/or receive one (-1: none), each with its
// round number in the tag.
struct round_op {
  int send_to, send_round, recv_from, recv_round;
  bool replace;  // the received vector is the result (else: add it)
};

struct sim_sum {
  MPI_Comm comm = MPI_COMM_NULL;
  int tag = 0;
  std::vector<std::uint64_t> acc, in;
  std::uint64_t* out = nullptr;
  std::vector<round_op> ops;
  std::size_t next = 0;
  bool posted = false;
  MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Request outer = MPI_REQUEST_NULL;

  // Moves on as far as the messages allow; true once complete.
  bool advance() {
    for (;;) {
      if (posted) {
        int done = 0;
        ACCRETE_MPI(MPI_Testall(2, rq, &done, MPI_STATUSES_IGNORE));
        if (!done) return false;
        const round_op& o = ops[next];
        if (o.recv_from >= 0) {
          if (o.replace)
            acc = in;
          else
            for (std::size_t k = 0; k < acc.size(); ++k) acc[k] += in[k];
        }
        posted = false;
        ++next;
      }
      if (next == ops.size()) {
        std::copy(acc.begin(), acc.end(), out);
        ACCRETE_MPI(MPI_Grequest_complete(outer));
        return true;
      }
      const round_op& o = ops[next];
      const int n = int(acc.size());
      if (o.send_to >= 0)
        ACCRETE_MPI(MPI_Isend(acc.data(), n, MPI_UINT64_T, o.send_to, tag + o.send_round, comm, &rq[0]));
      if (o.recv_from >= 0)
        ACCRETE_MPI(MPI_Irecv(in.data(), n, MPI_UINT64_T, o.recv_from, tag + o.recv_round, comm, &rq[1]));
      posted = true;
    }
  }
};

std::vector<std::unique_ptr<sim_sum>> running;
int seq_keyval = MPI_KEYVAL_INVALID;

// The schedule lives in `running` until it completes; MPI only needs the
// status, so the request keeps no pointer to it.
int query_status(void*, MPI_Status* s) {
  MPI_Status_set_elements(s, MPI_BYTE, 0);
  MPI_Status_set_cancelled(s, 0);
  s->MPI_SOURCE = MPI_UNDEFINED;
  s->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}
int free_nothing(void*) { return MPI_SUCCESS; }
int cancel_nothing(void*, int) { return MPI_SUCCESS; }

}  // namespace

void sim_iallreduce_sum(MPI_Comm comm, const std::uint64_t* in, std::uint64_t* out, int n, MPI_Request* r) {
  auto s = std::make_unique<sim_sum>();
  int rank = 0, size = 1;
  ACCRETE_MPI(MPI_Comm_rank(comm, &rank));
  ACCRETE_MPI(MPI_Comm_size(comm, &size));
  s->comm = comm;
  s->tag = sim_tag_base + 32 * int(comm_sequence(comm, seq_keyval) % 256);
  s->acc.assign(in, in + n);
  s->in.resize(std::size_t(n));
  s->out = out;
  // Recursive doubling among the largest power of two p2 <= P; each of
  // the P - p2 others first folds its vector into rank - p2 and gets the
  // result back at the end.
  int p2 = 1, rounds = 0;
  while (p2 * 2 <= size) p2 *= 2, ++rounds;
  const int extra = size - p2;
  if (rank >= p2) {
    s->ops.push_back({rank - p2, 0, rank - p2, last_round, true});
  } else {
    if (rank < extra) s->ops.push_back({-1, 0, rank + p2, 0, false});
    for (int k = 0; k < rounds; ++k) s->ops.push_back({rank ^ (1 << k), 1 + k, rank ^ (1 << k), 1 + k, false});
    if (rank < extra) s->ops.push_back({rank + p2, last_round, -1, 0, false});
  }
  ACCRETE_MPI(MPI_Grequest_start(&query_status, &free_nothing, &cancel_nothing, nullptr, r));
  s->outer = *r;
  if (!s->advance()) running.push_back(std::move(s));
}

bool sim_collectives_progress() {
  const std::size_t before = running.size();
  std::erase_if(running, [](const std::unique_ptr<sim_sum>& s) { return s->advance(); });
  return running.size() != before;
}

}  // namespace accrete::detail

#endif  // ACCRETE_SMPI
