// Programs that end while the runtime is up (tests/lifecycle.cmake runs each
// mode and checks the exit status and the output):
//   return  every process returns from main without finalize(), an RPC
//           still in flight to its neighbour: the job ends with status 0
//           and every process's output intact, as under UPC++/GASNet;
//   exit3   process 0 calls exit(3) while the others wait for it in a
//           barrier: the job ends with a non-zero status, not a hang;
//   early   process 0 returns (status 0) while the others wait for it in a
//           barrier: the job ends, non-zero, naming the wait, not a hang;
//   fork    process 0 forks a child that calls exit(5): the child is not
//           an MPI process, so the job goes on and ends with status 0.
#include <upcxx/upcxx.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  upcxx::init();
  const char* mode = argc > 1 ? argv[1] : "";
  const int me = upcxx::rank_me(), n = upcxx::rank_n();
  if (std::strcmp(mode, "return") == 0) {
    // A strided put first: its MPI datatypes (to a process on another
    // node) are cached by the runtime, and the exit must close that cache
    // too, after static destructors have run.
    upcxx::dist_object<upcxx::global_ptr<int>> cells(upcxx::new_array<int>(64 * 64));
    const upcxx::global_ptr<int> next = cells.fetch((me + 1) % n).wait();
    std::vector<int> block(32 * 32, me);
    upcxx::rput_strided<2>(block.data(), {{sizeof(int), 32 * sizeof(int)}}, next, {{sizeof(int), 64 * sizeof(int)}},
                           {{32, 32}})
        .wait();
    upcxx::barrier();
    if (cells->local()[64 + 1] != (me + n - 1) % n) std::abort();
    std::vector<char> payload(1 << 20, 'x');
    upcxx::rpc_ff((me + 1) % n, [](const std::vector<char>& v) {
      if (v.size() != (1u << 20)) std::abort();
    }, payload);
    std::printf("rank %d of %d returns without finalize\n", me, n);
    return 0;
  }
  if (std::strcmp(mode, "fork") == 0) {
    if (me == 0) {
      std::fflush(nullptr);
      const pid_t child = fork();
      if (child == 0) std::exit(5);
      int status = 0;
      waitpid(child, &status, 0);
      std::printf("child exited with %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    upcxx::barrier();
    std::printf("rank %d of %d finalizes\n", me, n);
    upcxx::finalize();
    return 0;
  }
  if (std::strcmp(mode, "exit3") == 0 && me == 0) {
    std::printf("rank 0 calls exit(3)\n");
    std::exit(3);
  }
  if (std::strcmp(mode, "early") == 0 && me == 0) return 0;
  if (std::strcmp(mode, "exit3") != 0 && std::strcmp(mode, "early") != 0) {
    std::fprintf(stderr, "usage: exit_check_test return|exit3|early|fork\n");
    return 2;
  }
  upcxx::barrier();  // process 0 never comes
  std::printf("rank %d passed a barrier without rank 0\n", me);
  upcxx::finalize();
  return 4;
}
