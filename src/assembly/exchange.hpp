#pragma once
// How updates for other processes' parts travel: one small type per
// strategy behind one interface, so the update loop has no strategy
// branches (src/assembly/exchange.cpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "accrete/detail/assembly_engine.hpp"

namespace accrete::detail {

class exchange {
 public:
  virtual ~exchange() = default;
  /// Whether node-local parts open for the round take updates directly
  /// (stored by the origin) instead of as packets.
  virtual bool direct() const noexcept = 0;
  /// Before a packet of `bytes` is written into a part's buffer (lock held).
  virtual void reserve(assembly_engine& e, std::size_t bytes) = 0;
  /// After a packet was written into `part`'s buffer (lock held).
  virtual void packed(assembly_engine& e, int part) = 0;
  /// At the end of an update of `elements` elements, applied or packed
  /// (lock not held).
  virtual void updated(assembly_engine& e, std::size_t elements) = 0;
  /// Commit, lock held: ends this process's round (sends or takes what is
  /// buffered; afterwards new updates belong to the next round).
  virtual void close_round(assembly_engine& e) = 0;
  /// Commit, lock not held: returns once every contribution of the closed
  /// round has been applied on every process (collective).
  virtual void deliver(assembly_engine& e, double start) = 0;
};

/// Packets: node-local parts are stored into directly; remote ones get
/// coalesced messages, under the memory cap; commit sums message counts.
class packets_exchange final : public exchange {
 public:
  bool direct() const noexcept override { return true; }
  void reserve(assembly_engine& e, std::size_t bytes) override;
  void packed(assembly_engine& e, int part) override;
  void updated(assembly_engine& e, std::size_t elements) override;
  void close_round(assembly_engine& e) override;
  void deliver(assembly_engine& e, double start) override;

 private:
  std::uint64_t closed_sent_ = 0;               // messages this process sent in the closed round
  std::uint64_t mine_[2] = {}, total_[2] = {};  // the step's (sent, applied), and their sums
};

/// Alltoall: everything is binned locally and exchanged at commit.
class alltoall_exchange final : public exchange {
 public:
  bool direct() const noexcept override { return false; }
  void reserve(assembly_engine&, std::size_t) override {}
  void packed(assembly_engine&, int) override {}
  void updated(assembly_engine&, std::size_t) override {}
  void close_round(assembly_engine& e) override;
  void deliver(assembly_engine& e, double start) override;

 private:
  std::vector<std::vector<std::byte>> boxes_;  // per part, taken at close_round
};

std::unique_ptr<exchange> make_exchange(update_strategy s);

}  // namespace accrete::detail
