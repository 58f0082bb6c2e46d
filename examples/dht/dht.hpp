#pragma once
// A distributed hash table on accrete, in the two styles of the UPC++ paper
// (Bachan et al., IPDPS 2019):
//
//   dht_rpc  insert: one RPC carrying the value (as a view) into the owner's
//            std::unordered_map; find: one RPC returning the value.
//   dht_lz   insert: an RPC allocates a landing zone in the owner's shared
//            segment and returns its global pointer; the value follows by
//            rput, whose remote completion (an RPC run after the data has
//            landed) commits {key -> landing zone} at the owner; find: one
//            RPC returning the value (copied out of the segment).
//
// Keys are 64-bit; a key's owner is a hash of it modulo the team size.
// Every call returns a future; the tables are collective objects
// (dist_object) over world.
//
// Completion: dht_rpc::insert's future is ready when the owner has stored
// the value. dht_lz::insert's future is ready when the value has landed in
// the owner's segment and the commit RPC has been sent; the commit itself
// runs at the owner's next user-level progress — call quiesce()
// (collective) before relying on every insert being findable everywhere.
// find() of a missing key yields std::nullopt.
//
// Thread-safety: none (one thread per process drives accrete).
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>

#include <accrete/accrete.hpp>
#include <accrete/collectives.hpp>
#include <accrete/remote_completion.hpp>

#include "dht_hash.hpp"

namespace dht {

/// RPC-only table: values live in the owner's std::unordered_map.
class dht_rpc {
 public:
  using map_t = std::unordered_map<std::uint64_t, std::string>;

  dht_rpc() : map_(map_t{}) {}

  /// Stores `n` bytes at `value` under `key` (the bytes are copied into the
  /// RPC message before insert returns). Ready once the owner stored them.
  accrete::future<> insert(std::uint64_t key, const char* value, std::size_t n) {
    return accrete::rpc(
        owner_of(key, accrete::rank_n()),
        [](accrete::dist_object<map_t>& m, std::uint64_t k, accrete::view<char> v) {
          (*m)[k].assign(v.begin(), v.end());
        },
        map_, key, accrete::make_view(value, value + n));
  }

  /// The value under `key`, or nullopt.
  accrete::future<std::optional<std::string>> find(std::uint64_t key) {
    return accrete::rpc(
        owner_of(key, accrete::rank_n()),
        [](accrete::dist_object<map_t>& m, std::uint64_t k) -> std::optional<std::string> {
          auto it = m->find(k);
          if (it == m->end()) return std::nullopt;
          return it->second;
        },
        map_, key);
  }

  /// Local: entries this process owns; clear() empties them.
  std::size_t local_size() const { return map_->size(); }
  void clear_local() { map_->clear(); }

 private:
  accrete::dist_object<map_t> map_;
};

/// Landing-zone table: values live in the owner's shared segment.
class dht_lz {
 public:
  struct entry {
    accrete::global_ptr<char> where;
    std::uint64_t bytes = 0;
  };
  struct state {
    std::unordered_map<std::uint64_t, entry> map;
    std::uint64_t commits_run = 0;   // commit RPCs executed here
    std::uint64_t commits_sent = 0;  // commit RPCs this process sent
  };

  dht_lz() : st_(state{}) {}
  ~dht_lz() { clear_local(); }

  /// Stores `n` bytes at `value` under `key`. `value` must stay valid until
  /// the returned future is ready (the rput reads it).
  accrete::future<> insert(std::uint64_t key, const char* value, std::size_t n) {
    const int owner = owner_of(key, accrete::rank_n());
    return accrete::rpc(
               owner,
               [](std::uint64_t bytes) {
                 return accrete::reinterpret_pointer_cast<char>(
                     accrete::allocate(bytes ? bytes : 1, alignof(std::max_align_t)));
               },
               std::uint64_t(n))
        .then([this, key, value, n](accrete::global_ptr<char> lz) {
          ++st_->commits_sent;
          return accrete::rput(value, lz, n, accrete::remote_cx::as_rpc(&commit, st_, key, lz, std::uint64_t(n)));
        });
  }

  /// The value under `key`, or nullopt (copied out of the owner's segment).
  accrete::future<std::optional<std::string>> find(std::uint64_t key) {
    return accrete::rpc(
        owner_of(key, accrete::rank_n()),
        [](accrete::dist_object<state>& s, std::uint64_t k) -> std::optional<std::string> {
          auto it = s->map.find(k);
          if (it == s->map.end()) return std::nullopt;
          return std::string(it->second.where.local(), it->second.bytes);
        },
        st_, key);
  }

  /// Collective: returns once every commit sent by any process has run.
  void quiesce() {
    for (;;) {
      std::uint64_t c[2] = {st_->commits_sent, st_->commits_run};
      accrete::reduce_all(c, c, 2, accrete::op_fast_add).wait();
      if (c[0] == c[1]) return;
    }
  }

  std::size_t local_size() const { return st_->map.size(); }
  /// Local: frees this process's landing zones and forgets its entries.
  void clear_local() {
    for (auto& [k, e] : st_->map) accrete::deallocate(e.where);
    st_->map.clear();
  }

 private:
  static void commit(accrete::dist_object<state>& s, std::uint64_t key, accrete::global_ptr<char> lz,
                     std::uint64_t bytes) {
    auto [it, fresh] = s->map.try_emplace(key, entry{lz, bytes});
    if (!fresh) {  // overwrite: release the old landing zone
      accrete::deallocate(it->second.where);
      it->second = entry{lz, bytes};
    }
    ++s->commits_run;
  }

  accrete::dist_object<state> st_;
};

}  // namespace dht
