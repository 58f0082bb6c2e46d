// A UPCXX_ASSERT_ALWAYS that fails: the condition, the place, the rank and
// the streamed message on stderr, then abort (tests/upcxx.cmake matches
// the line). With the argument "fatal", upcxx::fatal_error instead; with
// "segv", a store through a null pointer (the backtrace tests).
#include <upcxx/upcxx.hpp>

#include <cstring>

int main(int argc, char** argv) {
  upcxx::init();
  int parts = 3;
  if (argc > 1 && std::strcmp(argv[1], "fatal") == 0) upcxx::fatal_error("parts = " + std::to_string(parts));
  if (argc > 1 && std::strcmp(argv[1], "segv") == 0) {
    int* volatile nowhere = nullptr;
    *nowhere = parts;
  }
  UPCXX_ASSERT_ALWAYS(parts == 4, "parts = " << parts);
  upcxx::finalize();
  return 0;
}
