// Run by hosts.sh across pretend hosts (network namespaces): the node is the
// host. ACCRETE_TEST_PPN says how many processes each host runs; the test
// asserts that accrete's node (local_team) is exactly the processes of one
// host, that locality answers follow it, and that data moves both ways between
// hosts (over TCP there) and within one (shared memory).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mpi.h>

#include "accrete/accrete.hpp"

namespace {

std::vector<std::string> all_hostnames() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  const int P = accrete::rank_n();
  std::vector<char> all(std::size_t(P) * sizeof name);
  MPI_Allgather(name, sizeof name, MPI_CHAR, all.data(), sizeof name, MPI_CHAR, accrete::world().mpi_comm());
  std::vector<std::string> out;
  for (int r = 0; r < P; ++r) out.emplace_back(all.data() + std::size_t(r) * sizeof name);
  return out;
}

int expected_ppn() {
  const char* e = std::getenv("ACCRETE_TEST_PPN");
  return e ? std::atoi(e) : 0;
}

// The host hosts.sh placed world rank r on: blocks of ppn ranks, or ranks
// dealt over the hosts in turn (ACCRETE_MH_MAP=cyclic); with
// ACCRETE_MH_NP below hosts x ppn the hosts hold different numbers.
int placed_host(int r, int ppn) {
  const char* map = std::getenv("ACCRETE_MH_MAP");
  const char* h = std::getenv("ACCRETE_MH_HOSTS");
  const int hosts = h ? std::atoi(h) : 0;
  return map && std::string(map) == "cyclic" && hosts > 0 ? r % hosts : r / ppn;
}

TEST(Multihost, NodeIsTheHost) {
  const int ppn = expected_ppn();
  ASSERT_GT(ppn, 0) << "ACCRETE_TEST_PPN must say how many processes each host runs";
  const auto names = all_hostnames();
  const int me = accrete::rank_me(), P = accrete::rank_n();
  int same_host = 0, placed_with_me = 0;
  for (int r = 0; r < P; ++r) {
    same_host += names[r] == names[me];
    placed_with_me += placed_host(r, ppn) == placed_host(me, ppn);
  }
  EXPECT_LE(same_host, ppn) << "host " << names[me];
  EXPECT_EQ(same_host, placed_with_me) << "host " << names[me];
  ASSERT_EQ(accrete::local_team().rank_n(), same_host);
  // Every member of my node team has my hostname.
  std::vector<int> members(std::size_t(accrete::local_team().rank_n()));
  MPI_Group wg, lg;
  MPI_Comm_group(accrete::world().mpi_comm(), &wg);
  MPI_Comm_group(accrete::local_team().mpi_comm(), &lg);
  std::vector<int> lr(members.size());
  for (std::size_t i = 0; i < lr.size(); ++i) lr[i] = int(i);
  MPI_Group_translate_ranks(lg, int(lr.size()), lr.data(), wg, members.data());
  MPI_Group_free(&wg);
  MPI_Group_free(&lg);
  for (int r : members) EXPECT_EQ(names[r], names[me]) << "world rank " << r << " shares my node";
  // The placement is the one hosts.sh asked for: two ranks share a host
  // exactly when they were placed on the same one.
  for (int q = 0; q < P; ++q)
    for (int r = q + 1; r < P; ++r)
      EXPECT_EQ(names[q] == names[r], placed_host(q, ppn) == placed_host(r, ppn)) << "ranks " << q << " and " << r;
}

// Each rank puts a 1 MiB block into every rank's array (slot = writer), so
// at least 1 MiB crosses between any two hosts; hosts.sh checks the links saw
// it (ACCRETE_MH_MIN_BYTES).
TEST(Multihost, LocalityAndDataAcrossHosts) {
  constexpr std::size_t block = std::size_t{1} << 17;  // int64 elements: 1 MiB
  const auto names = all_hostnames();
  const int me = accrete::rank_me(), P = accrete::rank_n();
  accrete::dist_object<accrete::global_ptr<std::int64_t>> cell(accrete::new_array<std::int64_t>(block * P));
  auto value = [](int writer, int target, std::size_t i) {
    return std::int64_t(writer) * 1'000'000'000 + std::int64_t(target) * 1'000'000 + std::int64_t(i);
  };
  std::vector<std::int64_t> src(block);
  for (int r = 0; r < P; ++r) {
    const auto gp = cell.fetch(r).wait();
    EXPECT_EQ(gp.is_local(), names[r] == names[me]) << "rank " << r << " on " << names[r];
    for (std::size_t i = 0; i < block; ++i) src[i] = value(me, r, i);
    accrete::rput(src.data(), gp + block * me, block).wait();
  }
  accrete::barrier();
  const std::int64_t* mine = cell->local();
  std::size_t wrong = 0;
  for (int s = 0; s < P; ++s)
    for (std::size_t i = 0; i < block; ++i) wrong += mine[block * s + i] != value(s, me, i);
  EXPECT_EQ(wrong, 0u);
  accrete::barrier();
  accrete::delete_array(*cell);
}

}  // namespace
