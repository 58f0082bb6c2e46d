// Distributed hash table benchmark (issue 3, motif 1).
//
// Each process inserts N keys (8-byte keys, values of 8 B, 512 B, 8 KiB),
// then finds them all, blocking on every operation (latency-bound), and
// verifies every value. Five tables in one run:
//   mpi  plain MPI baseline: request/reply messages on a duplicated
//        communicator, served by a polling loop (MPI_Iprobe + MPI_Recv,
//        replies by MPI_Isend) that yields the CPU when idle, as accrete's
//        wait() does;
//   rpc  accrete dht_rpc (insert = one RPC with a view of the value);
//   lz   accrete dht_lz (RPC allocates a landing zone, rput + remote
//        completion commits; the insert phase includes the final quiesce()).
//   upcxx_rpc, upcxx_lz
//        the same two designs written against <upcxx/upcxx.hpp>
//        (dht_upcxx.hpp), as a UPC++ program writes them.
// Every operation goes through the table, also for keys the caller owns.
// Reports operations per second per process (N / slowest process's phase
// time), median over repetitions, as a table and as JSON.
//
//   NP=2 ./x bench dht [--reps 3] [--n8 50000] [--n512 20000] [--n8k 5000]
//                      [--sizes 8,512,8192] [--json FILE]
//                      [--tables mpi,rpc,lz,upcxx_rpc,upcxx_lz]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include <sched.h>

#include "harness.hpp"
#include "dht.hpp"
#include "dht_upcxx.hpp"

using bench::median;
using bench::now;

namespace {

// bench::now(): the simulated clock under SMPI.
double seconds_since(double t0) { return now() - t0; }

// ---- plain-MPI baseline -----------------------------------------------------------

class mpi_table {
 public:
  mpi_table() {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_rank(comm_, &me_);
    MPI_Comm_size(comm_, &n_);
  }
  ~mpi_table() {
    drain_sends(true);
    MPI_Comm_free(&comm_);
  }

  void insert(std::uint64_t key, const char* v, std::size_t n) {
    std::vector<char> msg(sizeof key + n);
    std::memcpy(msg.data(), &key, sizeof key);
    std::memcpy(msg.data() + sizeof key, v, n);
    send(dht::owner_of(key, n_), tag_insert, std::move(msg));
    wait_reply(nullptr);
  }

  std::optional<std::string> find(std::uint64_t key) {
    std::vector<char> msg(sizeof key);
    std::memcpy(msg.data(), &key, sizeof key);
    send(dht::owner_of(key, n_), tag_find, std::move(msg));
    std::optional<std::string> out;
    wait_reply(&out);
    return out;
  }

  /// Collective: serve until every process has finished its operations.
  void end_phase() {
    for (int r = 0; r < n_; ++r)
      if (r != me_) send(r, tag_done, {});
    unsigned spins = 0;
    while (done_seen_ < n_ - 1)
      if (!poll()) idle(spins);
    done_seen_ = 0;
    drain_sends(false);
    MPI_Barrier(comm_);
  }

  void clear_local() { map_.clear(); }

 private:
  enum : int { tag_insert = 1, tag_find, tag_ack, tag_value, tag_missing, tag_done };

  static void idle(unsigned& spins) {
    // The same policy as accrete's wait(): yield while waiting.
    ++spins;
    sched_yield();
  }

  void send(int to, int tag, std::vector<char>&& buf) {
    sends_.push_back({MPI_REQUEST_NULL, std::move(buf)});
    auto& s = sends_.back();
    MPI_Isend(s.buf.data(), int(s.buf.size()), MPI_BYTE, to, tag, comm_, &s.req);
  }

  void drain_sends(bool all) {
    while (!sends_.empty()) {
      int done = 0;
      MPI_Test(&sends_.front().req, &done, MPI_STATUS_IGNORE);
      if (!done) {
        if (!all) return;
        MPI_Wait(&sends_.front().req, MPI_STATUS_IGNORE);
      }
      sends_.pop_front();
    }
  }

  // Receives and handles one message if there is one.
  bool poll() {
    drain_sends(false);
    int flag = 0;
    MPI_Status s;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &s);
    if (!flag) return false;
    int count = 0;
    MPI_Get_count(&s, MPI_BYTE, &count);
    rbuf_.resize(std::size_t(count));
    MPI_Recv(rbuf_.data(), count, MPI_BYTE, s.MPI_SOURCE, s.MPI_TAG, comm_, MPI_STATUS_IGNORE);
    switch (s.MPI_TAG) {
      case tag_insert: {
        std::uint64_t k;
        std::memcpy(&k, rbuf_.data(), sizeof k);
        map_[k].assign(rbuf_.data() + sizeof k, rbuf_.size() - sizeof k);
        send(s.MPI_SOURCE, tag_ack, {});
        break;
      }
      case tag_find: {
        std::uint64_t k;
        std::memcpy(&k, rbuf_.data(), sizeof k);
        auto it = map_.find(k);
        if (it == map_.end())
          send(s.MPI_SOURCE, tag_missing, {});
        else
          send(s.MPI_SOURCE, tag_value, std::vector<char>(it->second.begin(), it->second.end()));
        break;
      }
      case tag_ack:
      case tag_missing:
        got_reply_ = true;
        break;
      case tag_value:
        got_reply_ = true;
        if (reply_) *reply_ = std::string(rbuf_.data(), rbuf_.size());
        break;
      case tag_done:
        ++done_seen_;
        break;
      default:
        std::fprintf(stderr, "bench_dht: unexpected tag %d\n", s.MPI_TAG);
        std::abort();
    }
    return true;
  }

  void wait_reply(std::optional<std::string>* out) {
    reply_ = out;
    got_reply_ = false;
    unsigned spins = 0;
    while (!got_reply_)
      if (!poll()) idle(spins);
    reply_ = nullptr;
  }

  struct pending {
    MPI_Request req;
    std::vector<char> buf;
  };
  MPI_Comm comm_ = MPI_COMM_NULL;
  int me_ = 0, n_ = 1;
  std::unordered_map<std::uint64_t, std::string> map_;
  std::vector<char> rbuf_;
  std::deque<pending> sends_;
  bool got_reply_ = false;
  std::optional<std::string>* reply_ = nullptr;
  int done_seen_ = 0;
};

// ---- workload -----------------------------------------------------------------------

struct workload {
  std::size_t bytes = 0, n = 0;
  std::vector<std::uint64_t> keys;
  std::vector<char> values;  // n * bytes, value i at i * bytes
  const char* value(std::size_t i) const { return values.data() + i * bytes; }
};

workload make_workload(std::size_t bytes, std::size_t n, int me) {
  workload w;
  w.bytes = bytes;
  w.n = n;
  w.keys.resize(n);
  w.values.resize(n * bytes);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t k = (std::uint64_t(me) << 40) | i;
    w.keys[i] = k;
    std::uint64_t x = k;
    for (std::size_t b = 0; b < bytes; b += 8) {
      x = dht::mix(x + b);
      std::memcpy(&w.values[i * bytes + b], &x, std::min<std::size_t>(8, bytes - b));
    }
  }
  return w;
}

struct phase_times {
  double insert = 0, find = 0;
  long bad = 0;
};

// Runs insert then find for one table; times are this process's own.
// `after` runs inside the timed insert phase (lz: quiesce); `end` after
// each timed loop, before the barrier (mpi: keep serving until all are done).
template <class Insert, class Find, class AfterInsert, class End>
phase_times run_phases(const workload& w, Insert&& ins, Find&& fnd, AfterInsert&& after, End&& end) {
  phase_times t;
  accrete::barrier();
  double t0 = now();
  for (std::size_t i = 0; i < w.n; ++i) ins(w.keys[i], w.value(i), w.bytes);
  after();
  t.insert = seconds_since(t0);
  end();
  accrete::barrier();
  t0 = now();
  for (std::size_t i = 0; i < w.n; ++i) {
    std::optional<std::string> v = fnd(w.keys[i]);
    if (!v || v->size() != w.bytes || std::memcmp(v->data(), w.value(i), w.bytes) != 0) ++t.bad;
  }
  t.find = seconds_since(t0);
  end();
  accrete::barrier();
  return t;
}

// The machine's 1-minute load average (the benchmark shares its cores).
double load_average() {
  double l = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

std::string mpi_name() {
  char ver[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(ver, &len);
  std::string v(ver, std::size_t(len));
  if (v.find("Open MPI") != std::string::npos) return "openmpi";
  if (v.find("MPICH") != std::string::npos) return "mpich";
  return "other";
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 3;
  std::size_t n8 = 50000, n512 = 20000, n8k = 5000;
  std::vector<std::size_t> sizes = {8, 512, 8192};
  std::string json_path, tables = "mpi,rpc,lz,upcxx_rpc,upcxx_lz";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_dht: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--reps")
      reps = std::atoi(next().c_str());
    else if (a == "--n8")
      n8 = std::size_t(std::atoll(next().c_str()));
    else if (a == "--n512")
      n512 = std::size_t(std::atoll(next().c_str()));
    else if (a == "--n8k")
      n8k = std::size_t(std::atoll(next().c_str()));
    else if (a == "--json")
      json_path = next();
    else if (a == "--tables")
      tables = next();
    else if (a == "--sizes") {
      sizes.clear();
      std::string s = next();
      for (std::size_t p = 0; p < s.size();) {
        std::size_t q = s.find(',', p);
        sizes.push_back(std::size_t(std::atoll(s.substr(p, q - p).c_str())));
        p = q == std::string::npos ? s.size() : q + 1;
      }
    } else {
      std::fprintf(stderr, "usage: bench_dht [--reps R] [--n8 N] [--n512 N] [--n8k N] [--sizes a,b,..] [--json F]\n");
      return 2;
    }
  }

  accrete::runtime rt;
  const int me = accrete::rank_me(), P = accrete::rank_n();
  const bool node_local_all = [&] {
    for (int r = 0; r < P; ++r)
      if (!accrete::detail::is_node_local(r)) return false;
    return true;
  }();
  const char* ns = std::getenv("ACCRETE_NODE_SIZE");
  const std::string mpi = mpi_name();

  const double load_before = load_average();
  mpi_table base;
  dht::dht_rpc trpc;
  dht::dht_lz tlz;
  dht_upcxx::table_rpc urpc;
  dht_upcxx::table_lz ulz;
  const std::vector<std::string> variants = {"mpi", "rpc", "lz", "upcxx_rpc", "upcxx_lz"};
  const std::size_t nv = variants.size();
  auto wanted = [&](const std::string& v) { return ("," + tables + ",").find("," + v + ",") != std::string::npos; };

  struct result {
    std::string variant;
    std::size_t bytes, n;
    std::vector<double> ins, fnd;
  };
  std::vector<result> results;
  long total_bad = 0;

  for (std::size_t bytes : sizes) {
    std::size_t n = bytes <= 8 ? n8 : bytes <= 512 ? n512 : n8k;
    workload w = make_workload(bytes, n, me);
    std::size_t first = results.size();
    for (const auto& v : variants) results.push_back({v, bytes, n, {}, {}});
    for (int rep = 0; rep < reps; ++rep) {
      // A fresh order per repetition (the same on every process), so
      // drifting load and the previous table's footprint hit all alike.
      std::vector<std::size_t> order(nv);
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::shuffle(order.begin(), order.end(), std::mt19937(unsigned(rep + 1) * 7919u + unsigned(bytes)));
      for (const std::size_t vi : order) {
        if (!wanted(variants[vi])) {
          results[first + vi].ins.push_back(0);
          results[first + vi].fnd.push_back(0);
          continue;
        }
        phase_times t;
        if (vi == 0) {
          t = run_phases(
              w, [&](std::uint64_t k, const char* p, std::size_t b) { base.insert(k, p, b); },
              [&](std::uint64_t k) { return base.find(k); }, [] {},
              // The baseline's servers must keep serving until all are done.
              [&] { base.end_phase(); });
          base.clear_local();
        } else if (vi == 1) {
          t = run_phases(
              w, [&](std::uint64_t k, const char* p, std::size_t b) { trpc.insert(k, p, b).wait(); },
              [&](std::uint64_t k) { return trpc.find(k).wait(); }, [] {}, [] {});
          trpc.clear_local();
        } else if (vi == 2) {
          t = run_phases(
              w, [&](std::uint64_t k, const char* p, std::size_t b) { tlz.insert(k, p, b).wait(); },
              [&](std::uint64_t k) { return tlz.find(k).wait(); }, [&] { tlz.quiesce(); }, [] {});
          tlz.clear_local();
        } else if (vi == 3) {
          t = run_phases(
              w, [&](std::uint64_t k, const char* p, std::size_t b) { urpc.insert(k, p, b).wait(); },
              [&](std::uint64_t k) { return urpc.find(k).wait(); }, [] {}, [] {});
          urpc.clear_local();
        } else {
          t = run_phases(
              w, [&](std::uint64_t k, const char* p, std::size_t b) { ulz.insert(k, p, b).wait(); },
              [&](std::uint64_t k) { return ulz.find(k).wait(); }, [&] { ulz.quiesce(); }, [] {});
          ulz.clear_local();
        }
        accrete::barrier();
        double ti = accrete::reduce_all(t.insert, accrete::op_fast_max).wait();
        double tf = accrete::reduce_all(t.find, accrete::op_fast_max).wait();
        total_bad += accrete::reduce_all(t.bad, accrete::op_fast_add).wait();
        results[first + vi].ins.push_back(double(n) / ti);
        results[first + vi].fnd.push_back(double(n) / tf);
      }
    }
  }

  const double load_after = load_average();
  if (me == 0) {
    std::printf("DHT, %s, P = %d (%s), node size %s, median of %d reps, ops/s per process (load avg %.1f -> %.1f)\n",
                mpi.c_str(), P, node_local_all ? "all node-local" : "some remote", ns ? ns : "real", reps, load_before,
                load_after);
    // upcxx-x: the UPC++-written table's time over the native one's for
    // the same phase (> 1: the UPC++ layer is slower), the median of the
    // per-repetition ratios.
    std::printf("%-8s %-10s %8s %14s %14s %10s %10s %9s %9s\n", "value", "table", "N", "inserts/s", "finds/s",
                "ins/mpi", "find/mpi", "ins-upx", "find-upx");
    // A table left out by --tables has no times: no row, no JSON entry, no
    // ratio (a 0 would read as a measurement).
    std::vector<double> slowdowns;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      const std::size_t k = i % nv;
      if (!wanted(variants[k])) continue;
      double mi = median(r.ins), mf = median(r.fnd);
      std::printf("%-8zu %-10s %8zu %14.0f %14.0f", r.bytes, r.variant.c_str(), r.n, mi, mf);
      if (wanted(variants[0])) {
        const auto& b = results[i - k];
        std::printf(" %10.2f %10.2f", mi / median(b.ins), mf / median(b.fnd));
      } else {
        std::printf(" %10s %10s", "-", "-");
      }
      if (k >= 3 && wanted(variants[k - 2])) {
        const auto& native = results[i - k + (k - 2)];  // upcxx_rpc -> rpc, upcxx_lz -> lz
        // Rates: native over UPC++-written is the time ratio, per repetition.
        const double si = bench::median_ratio(native.ins, r.ins), sf = bench::median_ratio(native.fnd, r.fnd);
        slowdowns.push_back(si);
        slowdowns.push_back(sf);
        std::printf(" %9.3f %9.3f", si, sf);
      }
      std::printf("\n");
    }
    const double worst = slowdowns.empty() ? 0 : *std::max_element(slowdowns.begin(), slowdowns.end());
    if (!slowdowns.empty())
      std::printf("upcxx-x (UPC++-written time / native time): median %.3f, max %.3f over %zu cells\n",
                  median(slowdowns), worst, slowdowns.size());
    std::printf("verification: %ld wrong values\n", total_bad);
    std::string js = "{\"bench\": \"dht\", \"mpi\": \"" + mpi + "\", \"P\": " + std::to_string(P) +
                     ", \"node_size\": \"" + (ns ? ns : "real") + "\", \"reps\": " + std::to_string(reps) +
                     ", \"load_avg\": [" + std::to_string(load_before) + ", " + std::to_string(load_after) + "]" +
                     ", \"wrong_values\": " + std::to_string(total_bad) + ", \"results\": [";
    bool first_result = true;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      if (!wanted(r.variant)) continue;
      auto list = [](const std::vector<double>& v) {
        std::string s = "[";
        for (std::size_t j = 0; j < v.size(); ++j) s += (j ? ", " : "") + std::to_string(long(v[j]));
        return s + "]";
      };
      js += std::string(first_result ? "" : ", ") + "{\"table\": \"" + r.variant +
            "\", \"value_bytes\": " + std::to_string(r.bytes) + ", \"n\": " + std::to_string(r.n) +
            ", \"inserts_per_s\": " + std::to_string(long(median(r.ins))) +
            ", \"finds_per_s\": " + std::to_string(long(median(r.fnd))) + ", \"insert_reps\": " + list(r.ins) +
            ", \"find_reps\": " + list(r.fnd) + "}";
      first_result = false;
    }
    // Without a UPC++-written table and its native one there is no slowdown.
    const bool any = !slowdowns.empty();
    js += "], \"summary\": {\"upcxx_slowdown_median\": " + (any ? bench::num(median(slowdowns)) : "null") +
          ", \"upcxx_slowdown_max\": " + (any ? bench::num(worst) : "null") +
          ", \"cells\": " + std::to_string(slowdowns.size()) + "}}\n";
    if (!json_path.empty()) {
      if (FILE* f = std::fopen(json_path.c_str(), "w")) {
        std::fputs(js.c_str(), f);
        std::fclose(f);
      }
    }
    std::printf("JSON %s", js.c_str());
  }
  accrete::barrier();
  return total_bad == 0 ? 0 : 1;
}
