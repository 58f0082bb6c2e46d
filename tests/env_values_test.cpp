// Run with one malformed ACCRETE_* variable set; argv[1] names it. Passes
// (exit 0) only if accrete throws accrete::error naming that variable,
// either at init or, for the commit timeout, at the first commit. With
// argv[1] = "accept", passes only if init and two commits succeed (for
// values that must be taken, such as empty ones, which mean unset).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/statvfs.h>
#include <unistd.h>

#include <mpi.h>

#include "accrete/accrete.hpp"
#include "accrete/matrix/convergent_matrix.hpp"
#include "accrete/segment.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string var = argc > 1 ? argv[1] : "?";
  int rc = 1;
  if (var == "after_finalize") {
    // Members of a matrix that outlived the runtime throw, not crash.
    accrete::convergent_matrix<double>* A = nullptr;
    {
      accrete::runtime rt;
      accrete::process_grid grid(accrete::world().mpi_comm());
      A = new accrete::convergent_matrix<double>(4, 4, grid, 2, 2);  // leaked on purpose
    }
    int thrown = 0;
    try {
      (void)A->local();
    } catch (const accrete::not_initialized&) {
      ++thrown;
    }
    try {
      (void)A->get(0, 0);
    } catch (const accrete::not_initialized&) {
      ++thrown;
    }
    try {
      A->reset();
    } catch (const accrete::not_initialized&) {
      ++thrown;
    }
    try {
      A->update(1.0, 0, 0);
    } catch (const accrete::not_initialized&) {
      ++thrown;
    }
    std::printf("after finalize: %d of 4 members threw not_initialized\n", thrown);
    MPI_Finalize();
    return thrown == 4 ? 0 : 1;
  }
  if (var == "share") {
    // ACCRETE_SEGMENT_SIZE=P%: each process's segment is P percent of the
    // node's shared memory (RAM, or /dev/shm if smaller) over the processes
    // of the real node, in 64-byte multiples.
    const std::string text = std::getenv("ACCRETE_SEGMENT_SIZE");
    const unsigned pct = unsigned(std::stoul(text.substr(0, text.size() - 1)));
    unsigned __int128 have = (unsigned __int128)sysconf(_SC_PHYS_PAGES) * std::uint64_t(sysconf(_SC_PAGE_SIZE));
    struct statvfs fs {};
    if (statvfs("/dev/shm", &fs) == 0 && fs.f_blocks > 0)
      have = std::min(have, (unsigned __int128)fs.f_blocks * fs.f_frsize);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int on_node = 1;
    MPI_Comm_size(node, &on_node);
    MPI_Comm_free(&node);
    const std::size_t expect = (std::size_t(have * pct / 100 / unsigned(on_node)) + 63) / 64 * 64;
    std::size_t got = 0;
    {
      accrete::runtime rt;
      got = accrete::segment_size();
    }
    std::printf("%s: segment %zu bytes, expected %zu (%d processes on the node)\n", text.c_str(), got, expect, on_node);
    MPI_Finalize();
    return got == expect ? 0 : 1;
  }
  // "accept": the variables set (empty ones among them) must be taken.
  const bool accept = var == "accept";
  try {
    accrete::runtime rt;
    accrete::process_grid grid(accrete::world().mpi_comm());
    accrete::convergent_matrix<double> A(4, 4, grid, 2, 2);
    A.update(1.0, 0, 0);
    A.commit();
    A.commit();
    std::printf("accepted: no error for %s\n", var.c_str());
    if (accept) rc = A.get(0, 0) == double(accrete::rank_n()) ? 0 : 1;
  } catch (const accrete::error& e) {
    std::printf("error: %s\n", e.what());
    rc = !accept && std::string(e.what()).find(var) != std::string::npos ? 0 : 1;
  }
  MPI_Finalize();
  return rc;
}
