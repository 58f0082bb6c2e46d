// Initialisation orders, driven by argv[1]:
//   accrete-first : accrete::init() initialises MPI and finalize() ends it.
//   user-first    : the user owns MPI; accrete can start and stop twice.
// Also: use before init / after finalize, and double init, throw.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include <mpi.h>

#include "accrete/accrete.hpp"
#include "accrete/array/counter.hpp"
#include "accrete/array/dist_array.hpp"

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

template <class E, class F>
bool throws(F&& f) {
  try {
    f();
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

int failures = 0;

// One round of real work through the runtime: a ring of rputs.
void ring() {
  auto cell = accrete::new_<int>(-1);
  std::vector<accrete::global_ptr<int>> all(accrete::rank_n());
  MPI_Allgather(&cell, sizeof cell, MPI_BYTE, all.data(), sizeof cell, MPI_BYTE, accrete::world().mpi_comm());
  accrete::rput(accrete::rank_me(), all[(accrete::rank_me() + 1) % accrete::rank_n()]).wait();
  accrete::barrier();
  CHECK(*cell.local() == (accrete::rank_me() + accrete::rank_n() - 1) % accrete::rank_n());
  accrete::barrier();
  accrete::delete_(cell);
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  CHECK(!accrete::initialized());
  CHECK(throws<accrete::not_initialized>([] { accrete::rank_me(); }));
  CHECK(throws<accrete::not_initialized>([] { accrete::allocate(8); }));
  CHECK(throws<accrete::not_initialized>([] { accrete::barrier(); }));
  CHECK(throws<accrete::not_initialized>([] { accrete::finalize(); }));
  CHECK(throws<accrete::not_initialized>([] { accrete::deallocate(accrete::global_ptr<std::byte>()); }));
  int mpi_up = 0;
  if (mode == "accrete-first") {
    accrete::init();
    MPI_Initialized(&mpi_up);
    CHECK(mpi_up);
    CHECK(throws<accrete::collective_misuse>([] { accrete::init(); }));
    ring();
    // Memory still allocated at finalize: releasing it afterwards does
    // nothing (the segment went with the runtime), whereas before the first
    // init it was an error.
    auto one = accrete::new_<int>(1);
    auto many = accrete::new_array<std::string>(2);
    auto raw = accrete::allocate(16);
    accrete::finalize();
    int fin = 0;
    MPI_Finalized(&fin);
    CHECK(fin);
    CHECK(throws<accrete::not_initialized>([] { accrete::progress(); }));
    CHECK(throws<accrete::not_initialized>([] { accrete::rank_me(); }));
    accrete::delete_(one);
    accrete::delete_array(many);
    accrete::deallocate(raw);
  } else if (mode == "user-first") {
    MPI_Init(&argc, &argv);
    // Structures that outlive the runtime throw on use, and are destroyed
    // safely afterwards.
    std::unique_ptr<accrete::dist_array<double>> arr;
    std::unique_ptr<accrete::counter> ctr;
    for (int round = 0; round < 2; ++round) {
      accrete::runtime rt;
      ring();
      if (round == 1) {
        arr = std::make_unique<accrete::dist_array<double>>(4, 4);
        ctr = std::make_unique<accrete::counter>();
      }
    }
    double x = 0;
    CHECK(throws<accrete::not_initialized>([&] { arr->get({0, 1, 0, 1}, &x, 1); }));
    CHECK(throws<accrete::not_initialized>([&] { arr->access(); }));
    CHECK(throws<accrete::not_initialized>([&] { ctr->fetch_add(1); }));
    arr.reset();
    ctr.reset();
    int fin = 0;
    MPI_Finalized(&fin);
    CHECK(!fin);
    CHECK(throws<accrete::not_initialized>([] { accrete::world(); }));
    // The progress thread needs MPI_THREAD_MULTIPLE, which MPI_Init does
    // not give here: init refuses, names the level, leaves nothing behind,
    // and the runtime starts without the thread afterwards.
    int level = 0;
    MPI_Query_thread(&level);
    accrete::init_options with_thread;
    with_thread.progress_thread = true;
    if (level < MPI_THREAD_MULTIPLE) {
      std::string msg;
      try {
        accrete::init(with_thread);
      } catch (const accrete::error& e) {
        msg = e.what();
      }
      CHECK(msg.find("MPI_THREAD_MULTIPLE") != std::string::npos);
      CHECK(!accrete::initialized());
      {
        accrete::runtime rt;
        ring();
      }
    } else {  // an MPI that gives MULTIPLE anyway: the thread must work
      accrete::runtime rt(with_thread);
      ring();
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    failures = total;
    MPI_Finalize();
  } else {
    std::fprintf(stderr, "usage: init_order_test accrete-first|user-first\n");
    return 2;
  }
  if (failures == 0) std::printf("init_order_test %s: ok\n", mode.c_str());
  return failures ? 1 : 0;
}
