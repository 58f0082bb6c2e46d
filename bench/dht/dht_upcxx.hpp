#pragma once
// The DHT of the UPC++ paper (Bachan et al., IPDPS 2019) as a UPC++ program
// writes it: only <upcxx/upcxx.hpp> and upcxx:: names. bench_dht runs these
// beside the accrete-native tables of examples/dht/dht.hpp (the same two
// designs, the same key placement), so the difference is the UPC++ layer.
//
//   table_rpc  insert: one rpc carrying the value as a view; find: one rpc
//              returning the value.
//   table_lz   insert: an rpc allocates a landing zone at the owner and
//              returns its global_ptr; the value follows by rput with
//              operation_cx::as_future() | remote_cx::as_rpc(commit, ...).
//              Call quiesce() (collective) before finding.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include <upcxx/upcxx.hpp>

#include "dht_hash.hpp"

namespace dht_upcxx {

class table_rpc {
 public:
  using map_t = std::unordered_map<std::uint64_t, std::string>;

  upcxx::future<> insert(std::uint64_t key, const char* value, std::size_t n) {
    return upcxx::rpc(
        dht::owner_of(key, upcxx::rank_n()),
        [](upcxx::dist_object<map_t>& m, std::uint64_t k, upcxx::view<char> v) { (*m)[k].assign(v.begin(), v.end()); },
        map_, key, upcxx::make_view(value, value + n));
  }

  upcxx::future<std::optional<std::string>> find(std::uint64_t key) {
    return upcxx::rpc(
        dht::owner_of(key, upcxx::rank_n()),
        [](upcxx::dist_object<map_t>& m, std::uint64_t k) -> std::optional<std::string> {
          auto it = m->find(k);
          if (it == m->end()) return std::nullopt;
          return it->second;
        },
        map_, key);
  }

  void clear_local() { map_->clear(); }

 private:
  upcxx::dist_object<map_t> map_{map_t{}};
};

class table_lz {
 public:
  struct entry {
    upcxx::global_ptr<char> where;
    std::uint64_t bytes = 0;
  };
  struct state {
    std::unordered_map<std::uint64_t, entry> map;
    std::uint64_t commits_run = 0, commits_sent = 0;
  };

  ~table_lz() { clear_local(); }

  upcxx::future<> insert(std::uint64_t key, const char* value, std::size_t n) {
    return upcxx::rpc(
               dht::owner_of(key, upcxx::rank_n()),
               [](std::uint64_t bytes) { return upcxx::allocate<char>(bytes ? bytes : 1); }, std::uint64_t(n))
        .then([this, key, value, n](upcxx::global_ptr<char> lz) {
          ++st_->commits_sent;
          return upcxx::rput(value, lz, n,
                             upcxx::operation_cx::as_future() |
                                 upcxx::remote_cx::as_rpc(&commit, st_, key, lz, std::uint64_t(n)));
        });
  }

  upcxx::future<std::optional<std::string>> find(std::uint64_t key) {
    return upcxx::rpc(
        dht::owner_of(key, upcxx::rank_n()),
        [](upcxx::dist_object<state>& s, std::uint64_t k) -> std::optional<std::string> {
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
      upcxx::reduce_all(c, c, 2, upcxx::op_fast_add).wait();
      if (c[0] == c[1]) return;
    }
  }

  void clear_local() {
    for (auto& [k, e] : st_->map) upcxx::deallocate(e.where);
    st_->map.clear();
  }

 private:
  static void commit(upcxx::dist_object<state>& s, std::uint64_t key, upcxx::global_ptr<char> lz,
                     std::uint64_t bytes) {
    auto [it, fresh] = s->map.try_emplace(key, entry{lz, bytes});
    if (!fresh) {
      upcxx::deallocate(it->second.where);
      it->second = entry{lz, bytes};
    }
    ++s->commits_run;
  }

  upcxx::dist_object<state> st_{state{}};
};

}  // namespace dht_upcxx
