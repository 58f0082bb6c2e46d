// The strategies and the coalescing buffers they share.
//
// Message format (packets strategy), after the active-message header:
//   u32 engine id | u32 round | packet*   (packets: detail/packet_format.hpp)
// Commit counts messages with global sums (O(1) memory, O(log P) time per
// step): repeated sums of (messages sent, messages applied) over all
// processes until the two agree.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "accrete/detail/packet_format.hpp"
#include "accrete/error.hpp"
#include "accrete/progress.hpp"
#include "assembly/common.hpp"
#include "assembly/exchange.hpp"

namespace accrete::detail {

std::unique_ptr<exchange> make_exchange(update_strategy s) {
  if (s == update_strategy::alltoall) return std::make_unique<alltoall_exchange>();
  return std::make_unique<packets_exchange>();
}

// ---- coalescing buffers -------------------------------------------------------------

std::size_t assembly_engine::max_packet_bytes() const noexcept {
  return std::min(shape_.buffer_cap / 2, max_message_bytes - am_header_bytes - message_prefix_bytes);
}

void assembly_engine::require_whole_piece(int target, std::int32_t nr, std::int32_t nc, std::size_t elem_size) const {
  const auto bytes = packet_bytes(std::size_t(nr), std::size_t(nc), elem_size);
  if (!bytes || *bytes > max_packet_bytes())
    throw std::invalid_argument(std::string(shape_.name) + ": with atomic_updates, the update's " + std::to_string(nr) +
                                " x " + std::to_string(nc) + " piece for part " + std::to_string(target) +
                                " must travel whole, but it exceeds the largest packet (" +
                                std::to_string(max_packet_bytes()) +
                                " bytes, half of buffer_cap): raise buffer_cap or split the update");
}

std::byte* assembly_engine::packet_slot(int part, std::size_t bytes) {
  if (const std::size_t have = buffered_for(part); have && have + bytes > max_message_bytes) flush_target(part);
  std::int32_t& b = box_of_[std::size_t(part)];
  if (b < 0) {
    b = std::int32_t(outbox_.size());
    outbox_.push_back({part, {}});
  }
  auto& box = outbox_[std::size_t(b)].bytes;
  const std::size_t cap0 = box.capacity();
  if (box.empty()) {
    // Room for the active-message header and the engine id / round words,
    // and capacity for a whole coalesced message (bounded, for users who
    // coalesce gigabytes): a box grown by doubling copied its bytes ~9
    // times on the way to 16 KiB. But at most an even share of buffer_cap
    // per part: with data for every part, P boxes of a whole coalescing
    // buffer each would hold P x coalesce_bytes of capacity that buffer_cap
    // (which counts bytes, not capacity) does not see -- 17 MiB per process
    // at P = 1024, 1.7 GB at P = 100,000. Below the share a box grows by
    // doubling from its first packet.
    const std::size_t first = am_header_bytes + message_prefix_bytes + bytes;
    const std::size_t whole = first + std::min<std::size_t>(shape_.coalesce_bytes, std::size_t{1} << 20);
    const std::size_t share = shape_.buffer_cap / box_of_.size();
    box.reserve(std::max(first, std::min(whole, share)));
    box.resize(am_header_bytes + message_prefix_bytes);
    buffered_ += box.size();
  }
  std::size_t at = box.size();
  box.resize(at + bytes);
  buffered_ += bytes;
  reserved_ += box.capacity() - cap0;
  stats_.peak_buffered = std::max(stats_.peak_buffered, buffered_ + am_inflight_bytes());
  stats_.peak_reserved = std::max(stats_.peak_reserved, reserved_);
  return box.data() + at;
}

void assembly_engine::flush_target(int part) {
  const std::int32_t b = box_of_[std::size_t(part)];
  if (b < 0) return;
  auto& box = outbox_[std::size_t(b)].bytes;
  const std::size_t cap = box.capacity();
  if (!box.empty()) {
    // Every packet of a box is of one round: commit flushes all boxes
    // before it moves round_ on, under the same lock.
    std::uint32_t hdr[2] = {id_, std::uint32_t(round_.load(std::memory_order_relaxed))};
    std::memcpy(box.data() + am_header_bytes, hdr, sizeof hdr);
    const std::size_t n = box.size();
    const int rank = world_of_[part];
    {
      scope_timer t{stats_.t_move};
      am_send_owned(rank, &assembly_engine::on_message, std::move(box));
    }
    // Counted only once sent: a send that throws leaves no phantom message
    // for the receiver to wait for.
    buffered_ -= n;
    stats_.bytes_sent += n;
    ++stats_.messages_sent;
    ++sent_;
  }
  reserved_ -= cap;
  // The part has no buffer now: the last one takes its place.
  if (std::size_t(b) + 1 != outbox_.size()) {
    outbox_[std::size_t(b)] = std::move(outbox_.back());
    box_of_[std::size_t(outbox_[std::size_t(b)].part)] = b;
  }
  outbox_.pop_back();
  box_of_[std::size_t(part)] = -1;
}

void assembly_engine::flush_all() {
  while (!outbox_.empty()) flush_target(outbox_.back().part);
}

void assembly_engine::wait_for_room(std::size_t bytes) {
  if (buffered_ + am_inflight_bytes() + bytes <= shape_.buffer_cap) return;
  // Send what is buffered, then let the sends drain (and keep applying what
  // arrives, so two processes waiting on each other both make headway).
  flush_all();
  scope_timer t{stats_.t_wait};
  unsigned spins = 0;
  while (buffered_ + am_inflight_bytes() + bytes > shape_.buffer_cap) {
    poll();
    if (buffered_ + am_inflight_bytes() + bytes > shape_.buffer_cap) idle_backoff(spins);
  }
}

// ---- packets --------------------------------------------------------------------------

void packets_exchange::reserve(assembly_engine& e, std::size_t bytes) {
  e.wait_for_room(bytes + am_header_bytes + message_prefix_bytes);
}

void packets_exchange::packed(assembly_engine& e, int part) {
  if (e.buffered_for(part) >= e.shape_.coalesce_bytes) e.flush_target(part);
}

void packets_exchange::updated(assembly_engine& e, std::size_t elements) {
  // Apply what has arrived for us, unless another thread is at it. Alone,
  // nothing can arrive (and a poll per small update costs more than it).
  if (e.world_of_.size() == 1) return;
  // At most one poll per 100 us of a thread's updating: a poll is several
  // MPI calls, and Open MPI's progress yields the processor when it finds
  // nothing on an oversubscribed node. Polling after every sparse element
  // (a few us each) made bench/fe_assembly's later rounds 20-30% slower at
  // P = 4 on 2 cores (`small`, slab and rcb); a large update (the Hessian's,
  // ~1 ms) still polls after each.
  // The clock itself is read only after 2048 elements (a few us of adds):
  // read after every element matrix it was 1-1.5% of a later round.
  constexpr double poll_gap_s = 100e-6;
  constexpr std::size_t clock_elements = 2048;
  ACCRETE_THREAD_LOCAL double last = -1.0;
  ACCRETE_THREAD_LOCAL std::size_t since_clock = 0;
  since_clock += elements;
  if (since_clock < clock_elements) return;
  since_clock = 0;
  const double t = now();
  if (t - last < poll_gap_s) return;
  last = t;
  std::unique_lock g(e.lock(), std::try_to_lock);
  if (g.owns_lock()) poll();
}

void packets_exchange::close_round(assembly_engine& e) {
  e.flush_all();
  closed_sent_ = e.sent_;
  e.sent_ = 0;
}

void packets_exchange::deliver(assembly_engine& e, double start) {
  // Termination by global sums: each step sums (messages this process sent
  // in the round, messages of the round it has applied) over all
  // processes, making progress (applying arrivals) while the sum runs. When
  // the totals agree, every message of the round has been applied, and
  // every process has entered this commit, so its direct stores are done
  // too: one reduction ends the round, with no barrier after it. A
  // round without messages (node-local direct stores) takes one step.
  for (unsigned spins = 0;;) {
    request r;
    {
      std::lock_guard g(e.lock());
      e.block_.sync();  // our applies and direct stores, before we report them
      mine_[0] = closed_sent_;
      mine_[1] = e.received_;
      r = world_iallreduce_sum(e.channel_, mine_, total_, 2);
    }
    e.wait(r, start, "commit");
    if (total_[1] > total_[0])
      throw error(std::string(e.shape_.name) + "::commit: " + std::to_string(total_[1]) +
                  " messages were applied but only " + std::to_string(total_[0]) + " were sent");
    if (total_[0] == total_[1]) break;
    // At least one poll per step: a sum that completes at once (P = 1)
    // returns from wait() without any.
    {
      std::lock_guard g(e.lock());
      poll();
    }
    idle_backoff(spins);
    e.check_timeout(start, "commit");
  }
  std::lock_guard g(e.lock());
  e.received_ = 0;
}

// ---- alltoall -------------------------------------------------------------------------

void alltoall_exchange::close_round(assembly_engine& e) {
  boxes_.assign(e.box_of_.size(), {});
  for (auto& b : e.outbox_) {
    e.box_of_[std::size_t(b.part)] = -1;
    boxes_[std::size_t(b.part)] = std::move(b.bytes);
  }
  e.outbox_.clear();
  e.buffered_ = 0;
  e.reserved_ = 0;
}

void alltoall_exchange::deliver(assembly_engine& e, double start) {
  // Blocks travel to world ranks: part k lives on world_of(k).
  const int np = int(boxes_.size());
  const std::size_t skip = am_header_bytes + message_prefix_bytes;
  std::vector<std::size_t> scount(np, 0), sdisp(np, 0), rcount, rdisp;
  for (int k = 0; k < np; ++k) scount[e.world_of(k)] = boxes_[k].empty() ? 0 : boxes_[k].size() - skip;
  std::size_t total = 0;
  for (int w = 0; w < np; ++w) {
    sdisp[w] = total;
    total += scount[w];
  }
  std::vector<std::byte> sbuf(total);
  for (int k = 0; k < np; ++k) {
    const int w = e.world_of(k);
    if (scount[w]) std::memcpy(sbuf.data() + sdisp[w], boxes_[k].data() + skip, scount[w]);
    boxes_[k] = std::vector<std::byte>();
  }
  auto rbuf = alltoallv_bytes(sbuf.data(), scount, sdisp, rcount, rdisp,
                              [&](request& r) { e.wait(r, start, "commit"); });
  {
    std::lock_guard g(e.lock());
    e.stats_.bytes_sent += total;
    scope_timer ta{e.stats_.t_apply};
    // Packets never straddle senders: apply each sender's part on its own.
    for (int w = 0; w < np; ++w) e.apply_packets(std::span<const std::byte>(rbuf.data() + rdisp[w], rcount[w]));
  }
  // Every part is complete once every process has applied its blocks.
  e.barrier_wait(start);
}

}  // namespace accrete::detail
